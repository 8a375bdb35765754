"""A full disk at checkpoint time: one line that names the checkpoint kept, nothing
half-written left behind, and a re-run, once there is room, resumes from it.

Two ways to fill the disk: a real tmpfs, where this user may mount one, and
elsewhere a patched writer that fails as TensorFlow does on a full file system
(observed on a 200 KiB tmpfs: ResourceExhaustedError "No space left on device"
from SaveV2, with ``ckpt-N_temp/`` left behind).
"""
import logging
import os
import shutil
import subprocess

import pytest
import tensorflow as tf

from cli_helpers import COMMON, error_of, train_tiny
from t2t_lite.bin import t2t_trainer


def full_disk_writer(monkeypatch, failing_step: int) -> None:
    """``CheckpointManager.save`` of ``failing_step`` writes part of a checkpoint
    and fails as SaveV2 does when the file system is full."""
    real_save = tf.train.CheckpointManager.save

    def save(manager, checkpoint_number=None, **kwargs):
        if checkpoint_number != failing_step:
            return real_save(manager, checkpoint_number=checkpoint_number, **kwargs)
        temp = os.path.join(manager.directory, f"ckpt-{failing_step}_temp")
        os.makedirs(temp)
        part = os.path.join(temp, "part-00000-of-00001.data-00000-of-00001.tempstate1")
        with open(part, "wb") as f:
            f.write(b"\0" * 1000)
        raise tf.errors.ResourceExhaustedError(
            None, None, "{{function_node __wrapped__SaveV2_dtypes_3_device_/job:localhost/"
            f"replica:0/task:0/device:CPU:0}} {part}; No space left on device [Op:SaveV2]")
    monkeypatch.setattr(tf.train.CheckpointManager, "save", save)


def mounted_tmpfs(path: str, size: str) -> bool:
    os.makedirs(path)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                          capture_output=True).returncode == 0


def fill(path: str, leave_bytes: int) -> str:
    """Fills the file system of ``path`` up to ``leave_bytes`` free; returns the filler."""
    filler = os.path.join(path, "filler")
    stat = os.statvfs(path)
    with open(filler, "wb") as f:
        f.write(b"\0" * max(stat.f_bavail * stat.f_frsize - leave_bytes, 0))
    return filler


def train_more(output_dir: str, data_dir: str) -> list[str]:
    return COMMON + [f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=8",
                     "--save_checkpoints_steps=2", "--log_every_steps=100"]


def assert_kept_and_resumable(capsys, caplog, output_dir: str, data_dir: str, error: str,
                              failed_step: int) -> None:
    kept = os.path.join(output_dir, "ckpt-4")
    assert error.startswith(f"t2t-trainer: error: could not write checkpoint {failed_step} ")
    assert "No space left on device" in error and f"{kept} is the last complete" in error
    assert tf.train.latest_checkpoint(output_dir) == kept
    leftovers = [name for name in os.listdir(output_dir) if name.startswith(f"ckpt-{failed_step}")]
    assert leftovers == []  # ckpt-N_temp/ and any data file without its index are gone
    tf.train.load_checkpoint(kept)  # and the kept one reads
    with caplog.at_level(logging.INFO):
        assert t2t_trainer.main(train_more(output_dir, data_dir)) == 0
    assert "resumed from " + kept in caplog.text
    assert tf.train.latest_checkpoint(output_dir).endswith("ckpt-8")


@pytest.mark.slow
def test_a_full_disk_keeps_the_last_checkpoint(tmp_path, capsys, caplog, monkeypatch):
    """On a real tmpfs filled to 8 KiB where this user may mount one (root), else with
    the patched writer: one of the two, as each costs two trainings."""
    data_dir, trained = train_tiny(tmp_path)  # checkpoints 2 and 4
    mount = str(tmp_path / "tmpfs")
    if mounted_tmpfs(mount, "64m"):
        try:
            output_dir = os.path.join(mount, "train")
            shutil.copytree(trained, output_dir)
            fill(mount, leave_bytes=8 << 10)
            error = error_of(capsys, t2t_trainer.main, train_more(output_dir, data_dir))
            os.remove(os.path.join(mount, "filler"))  # the user makes room
            assert_kept_and_resumable(capsys, caplog, output_dir, data_dir, error, 6)
        finally:
            subprocess.run(["umount", mount], check=False)
    else:
        with monkeypatch.context() as patch:
            full_disk_writer(patch, failing_step=6)
            error = error_of(capsys, t2t_trainer.main, train_more(trained, data_dir))
        assert_kept_and_resumable(capsys, caplog, trained, data_dir, error, 6)
