"""``import tensor2tensor.X`` resolved to ``t2t_lite.compat.tensor2tensor.X``.

A meta-path finder hands Python the already imported twin module itself (not a
second copy executed again), so ``tensor2tensor.utils.registry`` *is*
``t2t_lite.compat.tensor2tensor.utils.registry``. A T2T module without a twin is
refused in one line at the user's import (``refusals``). Installed once a process,
before a usr_dir is imported, and only when no real tensor2tensor is installed:
then the user's imports get the real one, which is said in one warning line.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from types import ModuleType

from t2t_lite.compat.refusals import module_refusal

logger = logging.getLogger(__name__)

T2T = "tensor2tensor"
TWINS = "t2t_lite.compat.tensor2tensor"
class _TwinLoader(importlib.abc.Loader):
    def __init__(self, twin: str):
        self.twin = twin

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.twin)

    def exec_module(self, module: ModuleType) -> None:
        """The twin ran when it was imported."""


class _TwinFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path, target=None):
        if fullname != T2T and not fullname.startswith(T2T + "."):
            return None
        twin = TWINS + fullname[len(T2T):]
        if importlib.util.find_spec(twin) is None:
            raise module_refusal(fullname)
        return importlib.util.spec_from_loader(fullname, _TwinLoader(twin),
                                               is_package=twin_is_package(twin))


def twin_is_package(twin: str) -> bool:
    spec = importlib.util.find_spec(twin)
    return bool(spec and spec.submodule_search_locations is not None)


_FINDER = _TwinFinder()


def install() -> bool:
    """Puts the twins in place of ``tensor2tensor`` (once); False, with one warning,
    when a real tensor2tensor is installed, whose modules the user then gets."""
    if _FINDER in sys.meta_path:
        return True
    real = importlib.util.find_spec(T2T) if T2T not in sys.modules else None
    if real is not None:
        logger.warning("a real tensor2tensor is installed (%s): a usr_dir's tensor2tensor "
                       "imports get it, not t2t-lite's twins, and what it registers with "
                       "T2T's registry is not seen by t2t-lite", real.origin)
        return False
    sys.meta_path.insert(0, _FINDER)
    _tf1_names()
    return True


def _tf1_names() -> None:
    """``tf.gfile`` and ``tf.logging``, which T2T code calls, where TensorFlow 2 has
    them only under ``tf.compat.v1`` (the same functions)."""
    import tensorflow as tf

    for name in ("gfile", "logging"):
        if not hasattr(tf, name):
            setattr(tf, name, getattr(tf.compat.v1, name))
