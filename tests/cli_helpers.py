"""What the CLI tests share: the user's registrations (and importing them for one test
only), a tiny trained output dir, the one-line error of a failed command, and a
folder's files to compare before and after (by size and time, or by content)."""
import atexit
import contextlib
import gzip
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from typing import Callable, Iterator

from t2t_lite import registry
from t2t_lite.bin import t2t_datagen, t2t_trainer

USR_DIR = os.path.join(os.path.dirname(__file__), "usr_dir_example")
COMMON = ["--problem=tiny_reverse_binary", "--model=transformer",
          "--hparams_set=my_very_small_transformer", f"--t2t_usr_dir={USR_DIR}"]


def with_flags(flags: list[str], *changes: str) -> list[str]:
    """``flags`` with each of ``changes`` in place of the flag of its name (or added):
    the commands refuse a flag given twice with two values."""
    names = {change.split("=", 1)[0] for change in changes}
    return [flag for flag in flags if flag.split("=", 1)[0] not in names] + list(changes)


_trained_once: list[str] = []  # the first run's data and output dirs, copied after


def train_tiny(root):
    """A data dir and an output dir under ``root``, trained for a few steps (trained
    once per test session, then copied: each caller gets its own dirs)."""
    data_dir, output_dir = str(root / "data"), str(root / "train")
    if not _trained_once:
        template = tempfile.mkdtemp(prefix="t2t_tiny_run_")
        atexit.register(shutil.rmtree, template, True)
        first_data, first_output = os.path.join(template, "data"), os.path.join(template, "train")
        assert t2t_datagen.main(["--problem=tiny_reverse_binary", f"--data_dir={first_data}",
                                 f"--t2t_usr_dir={USR_DIR}"]) == 0
        assert t2t_trainer.main(COMMON + [
            f"--data_dir={first_data}", f"--output_dir={first_output}", "--train_steps=4",
            "--save_checkpoints_steps=2", "--log_every_steps=2"]) == 0
        _trained_once.extend([first_data, first_output])
    shutil.copytree(_trained_once[0], data_dir)
    shutil.copytree(_trained_once[1], output_dir)
    record_path = os.path.join(output_dir, "hparams.json")
    with open(record_path) as f:
        record = json.load(f)
    record["data_dir"] = data_dir  # the copy's own data
    with open(record_path, "w") as f:
        json.dump(record, f)
    return data_dir, output_dir


def train_copy_run(root) -> None:
    """``root/copy_data`` and ``root/copy_run``: tiny_copy_binary, a problem of another
    name with the same architecture and vocabulary as the tiny runs, trained 2 steps."""
    assert t2t_datagen.main(["--problem=tiny_copy_binary", f"--t2t_usr_dir={USR_DIR}",
                             f"--data_dir={root / 'copy_data'}"]) == 0
    assert t2t_trainer.main(with_flags(COMMON, "--problem=tiny_copy_binary",
                                       f"--data_dir={root / 'copy_data'}",
                                       f"--output_dir={root / 'copy_run'}", "--train_steps=2",
                                       "--schedule=train")) == 0


def error_of(capsys, main, argv):
    """The last stderr line of ``main(argv)``, which must fail with exit status 2."""
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    return err[-1]


def _entries(root: str, folders: bool = False) -> Iterator[tuple[str, str]]:
    """(path relative to ``root``, path) of every file under ``root``, and with
    ``folders`` of every folder too."""
    for folder, dirs, names in os.walk(root):
        for name in (dirs + names if folders else names):
            path = os.path.join(folder, name)
            yield os.path.relpath(path, root), path


def snapshot(root: str) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime) by relative path."""
    stats = {relative: os.lstat(path) for relative, path in _entries(root)}  # links as such
    return {relative: (stat.st_size, stat.st_mtime_ns) for relative, stat in stats.items()}


def stat_tree(root: str) -> dict[str, tuple[int, int, int, int, int]]:
    """Every entry under ``root`` (folders too, links as themselves): inode, mode, size,
    mtime and ctime. Any write, chmod, rename over or utime changes one of them (ctime
    cannot be set back), so an unchanged stat tree is an unchanged tree."""
    stats = {relative: os.lstat(path) for relative, path in _entries(root, folders=True)}
    return {relative: (stat.st_ino, stat.st_mode, stat.st_size, stat.st_mtime_ns,
                       stat.st_ctime_ns) for relative, stat in stats.items()}


def digest_tree(root: str) -> dict[str, str]:
    """Every file under ``root``: its sha256 by relative path (byte for byte, as
    ``snapshot`` is not); a link: where it points."""
    found = {}
    for relative, path in _entries(root):
        if os.path.islink(path):  # a link as itself: replaced by a file, it shows
            found[relative] = "link to " + os.readlink(path)
            continue
        with open(path, "rb") as f:
            found[relative] = hashlib.sha256(f.read()).hexdigest()
    return found


@contextlib.contextmanager
def usr_dir_imports() -> Iterator[Callable[[str], None]]:
    """``registry.import_usr_dir`` whose effects end with the block: the registries and
    ``sys.path`` are as they were, and the user's modules are forgotten, so a later
    import registers them again (a module left in ``sys.modules`` would not)."""
    registries = (registry.problems, registry.models, registry.hparams_sets, registry.metrics)
    saved_entries = [(dict(each._entries), dict(each._withheld)) for each in registries]
    saved_path, loaded_before, packages = list(sys.path), set(sys.modules), set()

    def import_usr_dir(usr_dir: str) -> None:
        packages.add(os.path.basename(os.path.abspath(usr_dir.rstrip("/"))))
        registry.import_usr_dir(usr_dir)
    try:
        yield import_usr_dir
    finally:
        for each, (entries, withheld) in zip(registries, saved_entries):
            each._entries, each._withheld = entries, withheld
        sys.path[:] = saved_path
        for name in set(sys.modules) - loaded_before:
            if name.split(".")[0] in packages:
                del sys.modules[name]


def full_disk(monkeypatch) -> None:
    """The file system reports 0 bytes free (t2t_lite/disk_space.py reads it so)."""
    monkeypatch.setattr(shutil, "disk_usage",
                        lambda path: shutil._ntuple_diskusage(1 << 30, 1 << 30, 0))


class Said(logging.Handler):
    """Every message logged while it is attached (at INFO and above)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def sweep_decode_lines(monkeypatch, capsys, flags):
    """benchmarks/sweep_decode.py run with ``flags``: its printed lines."""
    capsys.readouterr()  # what earlier commands printed
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks", "sweep_decode.py")
    spec = importlib.util.spec_from_file_location("sweep_decode", path)
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    monkeypatch.setattr(sys, "argv", ["sweep_decode.py", f"--t2t_usr_dir={USR_DIR}", *flags])
    sweep.main()
    return capsys.readouterr().out.splitlines()


def train_and_resume_files_run(data_dir: str, output_dir, hparams: str = "") -> None:
    """A tiny translate_files run of 2 steps, then resumed to 4 (its input state saved
    and restored): the trainer's path for a problem of the user's files."""
    import tensorflow as tf

    tiny = "num_hidden_layers=1,hidden_size=16,filter_size=16,num_heads=2"
    flags = ["--problem=translate_files", "--model=transformer", "--hparams_set=transformer_tiny",
             f"--data_dir={data_dir}", f"--output_dir={output_dir}",
             f"--hparams={','.join(filter(None, (tiny, hparams)))}",
             "--save_checkpoints_steps=2", "--log_every_steps=2", "--eval_batches=1"]
    assert t2t_trainer.main(flags + ["--train_steps=2"]) == 0
    assert t2t_trainer.main(flags + ["--train_steps=4"]) == 0
    assert tf.train.latest_checkpoint(str(output_dir)).endswith("-4")


CORPUS_WORDS = "the a cat dog sat ran on mat fast slow big small red blue house tree".split()


def corpus_sentences(count: int, seed: int) -> list[str]:
    """``count`` sentences of 2-6 of 16 words, by ``seed``: a corpus for the files problems."""
    words = CORPUS_WORDS
    return [" ".join(words[(seed + i * 7 + j * 3) % len(words)] for j in range(2 + i % 5))
            for i in range(count)]


def write_lines(path, lines, gz: bool = False) -> None:
    """``lines`` into ``path``, one a line (gzipped with ``gz``)."""
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
