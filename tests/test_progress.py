"""Progress of long work: a bar on a terminal, periodic plain lines otherwise; and
TensorFlow's start-up noise kept off stderr unless --verbosity asks for it."""
import logging
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_lite.bin.common import start_tensorflow
from t2t_lite.progress import Progress, format_duration, progress


def test_plain_lines_give_count_rate_and_eta(caplog):
    caplog.set_level(logging.INFO, logger="t2t_lite")
    with Progress("decoding in.txt", total=10, unit="lines", log_every_s=0.0,
                  terminal=False) as bar:
        bar.update(4)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("decoding in.txt: 4/10 lines (40%), ") and "ETA" in lines[0]
    assert lines[-1].startswith("decoding in.txt: 4 lines in 0:00 (")


def test_unknown_totals_count_without_eta(caplog):
    caplog.set_level(logging.INFO, logger="t2t_lite")
    assert list(progress(iter("abc"), "writing", unit="examples")) == ["a", "b", "c"]
    assert caplog.records[-1].getMessage().startswith("writing: 3 examples in ")


def test_a_terminal_gets_a_bar_on_stderr(capsys):
    with Progress("averaging", total=3, unit="tensors", terminal=True) as bar:
        bar.update(3)
    captured = capsys.readouterr()
    assert captured.out == "" and "averaging" in captured.err and "3/3" in captured.err


def test_durations_read_as_clocks():
    assert [format_duration(s) for s in (0, 59.6, 61, 3725)] == ["0:00", "1:00", "1:01",
                                                                  "1:02:05"]


@pytest.mark.slow  # a TensorFlow start in a fresh process
def test_tensorflow_starts_quietly(tmp_path):
    """At the default verbosity no C++ start-up line (I0000 ..., E0000 ... cuInit,
    absl's "WARNING: All log messages before ...") reaches stderr; a bad-input error
    still does. One run (it was two, a --registry_help beside it): the problem is
    looked up after TensorFlow has started and the models are loaded, so its stderr
    is the start's noise, if any, and the error alone."""
    command = [sys.executable, "-m", "t2t_lite.bin.t2t_trainer"]
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    failing = subprocess.run(command + ["--data_dir=d", f"--output_dir={tmp_path}",
                                        "--problem=nope", "--model=transformer",
                                        "--hparams_set=transformer_tiny"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert failing.returncode == 2
    # The error, then its list of the registered problems (indented), and nothing else.
    lines = failing.stderr.splitlines()
    assert lines[0].startswith("t2t-trainer: error: unknown problem 'nope'"), failing.stderr
    assert all(line.startswith("  ") for line in lines[1:]), failing.stderr


def test_sweep_decode_starts_tensorflow_as_the_commands_do(tmp_path):
    """benchmarks/sweep_decode.py (the README's tuning step) imported TensorFlow on
    load, before its flags: every start-up line showed. Now a bad input is its one
    line, TensorFlow started (quietly) before it is found."""
    script = os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks",
                          "sweep_decode.py")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    failing = subprocess.run([sys.executable, script, f"--output_dir={tmp_path}",
                              f"--source={tmp_path}/none.en", "--reference=none.de"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert failing.returncode == 2
    assert failing.stderr.splitlines() == [
        f"sweep_decode.py: error: --source={tmp_path}/none.en: no such file"]


def loaded_without_tensorflow(find_modules: str) -> list[str]:
    """Runs ``find_modules`` (Python that sets ``modules``) in a fresh process, then
    imports each module in turn; fails naming the first that loads TensorFlow.
    Returns the modules loaded."""
    script = (find_modules + "\n"
              "import importlib, sys\n"
              "for module in modules:\n"
              "    importlib.import_module(module)\n"
              "    if 'tensorflow' in sys.modules:\n"
              "        sys.exit(f'{module} imports tensorflow when loaded')\n"
              "print(' '.join(modules))\n")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    return loaded.stdout.split()


def test_no_command_imports_tensorflow_before_its_flags():
    """start_tensorflow keeps TensorFlow's start-up lines quiet only when it is what
    imports TensorFlow; a command whose module imports it on load (t2t-avg-all did)
    printed them all. Every installed t2t-* command, loaded in a fresh process."""
    modules = loaded_without_tensorflow(
        "from importlib.metadata import entry_points\n"
        "modules = sorted({e.value.split(':')[0] for e in entry_points(group='console_scripts')\n"
        "                  if e.value.startswith('t2t_lite.bin.')})")
    assert len(modules) >= 8  # every t2t-* command was loaded


def test_no_benchmark_imports_tensorflow_before_its_flags():
    """The same for the benchmark scripts the README and docs tell users to run
    (reverse_main_job.py printed every start-up line): each one that does not import
    TensorFlow on purpose at its top (the timing scripts) loads without it."""
    folder = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
    scripts = sorted(name[:-3] for name in os.listdir(folder) if name.endswith(".py"))
    on_purpose = [name for name in scripts
                  if "\nimport tensorflow as tf" in open(os.path.join(folder, name + ".py")).read()]
    modules = loaded_without_tensorflow(f"import sys\nsys.path.insert(0, {folder!r})\n"
                                        f"modules = {sorted(set(scripts) - set(on_purpose))!r}")
    assert len(modules) >= 6


def test_checkpoints_log_no_tensorflow_info_at_default_verbosity(tmp_path, caplog):
    """TensorFlow logs "Sharding callback duration" at INFO on every save; the
    commands log at INFO, so at verbosity 0 that line must not reach their log."""
    start_tensorflow(0)
    checkpoint = tf.train.Checkpoint(v=tf.Variable(1.0))
    with caplog.at_level(logging.INFO):
        checkpoint.write(str(tmp_path / "ckpt"))
    assert not [r.getMessage() for r in caplog.records if r.name in ("tensorflow", "absl")]
    start_tensorflow(1)
    with caplog.at_level(logging.INFO):
        checkpoint.write(str(tmp_path / "ckpt2"))
    assert any("Sharding" in r.getMessage() for r in caplog.records)
    start_tensorflow(0)
