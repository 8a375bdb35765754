"""One trainer per output dir: a live holder refuses the next one in one line; a
killed holder leaves nothing stale."""
import signal
import subprocess
import sys

import pytest

from cli_helpers import COMMON, error_of, train_tiny
from t2t_lite.bin import t2t_trainer
from t2t_lite.training.output_lock import OutputDirInUseError, OutputDirLock


def test_a_held_dir_refuses_a_second_holder_until_released(tmp_path):
    first = OutputDirLock(str(tmp_path))
    first.acquire()
    with pytest.raises(OutputDirInUseError, match=r"in use by a running t2t-trainer \(.*pid"):
        OutputDirLock(str(tmp_path)).acquire()
    first.release()
    with OutputDirLock(str(tmp_path)):
        pass


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    script = ("import sys, time\n"
              "from t2t_lite.training.output_lock import OutputDirLock\n"
              f"lock = OutputDirLock({str(tmp_path)!r})\n"
              "lock.acquire()\n"
              "print('held', flush=True)\n"
              "time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputDirInUseError, match=f"pid\\W+{holder.pid}"):
            OutputDirLock(str(tmp_path)).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    with OutputDirLock(str(tmp_path)):  # taken at once: the kernel dropped the dead one's
        pass


def test_a_second_trainer_is_refused_in_one_line(tmp_path_factory, capsys):
    data_dir, output_dir = train_tiny(tmp_path_factory.mktemp("locked"))
    with OutputDirLock(output_dir):  # as a live trainer holds it
        error = error_of(capsys, t2t_trainer.main, COMMON + [
            f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=8"])
    assert error.startswith("t2t-trainer: error: ") and "is in use by a running" in error
