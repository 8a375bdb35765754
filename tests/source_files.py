"""The package's source files, for the tests that read code instead of running it
(the import layers, the security scan)."""
from __future__ import annotations

import os
from typing import Iterator

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Source folders -> the package they are installed as (setup.py's package_dir).
PACKAGE_DIRS = {"t2t_lite": "t2t_lite", "problems": "t2t_lite.problems",
                "hparams": "t2t_lite.hparams", "bin": "t2t_lite.bin"}


def module_files(dirs: dict[str, str] = PACKAGE_DIRS) -> Iterator[tuple[str, str]]:
    """(module name, path) of every module under ``dirs`` (source folder -> package),
    by default the package's."""
    for folder, package in dirs.items():
        top = os.path.join(REPO_ROOT, folder)
        for root, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(names):
                if name.endswith(".py"):
                    relative = os.path.relpath(os.path.join(root, name), top)[:-3]
                    parts = [p for p in relative.split(os.sep) if p != "__init__"]
                    yield ".".join([package] + parts), os.path.join(root, name)
