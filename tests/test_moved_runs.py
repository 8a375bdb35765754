"""Runs whose folders moved (issue 85): a run's input state names its shards, not their
folder, so a resume on renamed data continues the input exactly (it failed with
"Failed to restore dataset iterator", naming the shards' old folder); states saved
before (which held whole paths) restore too; a state TensorFlow will not restore
restarts the input in one line; and a command reading a run whose data moved, with no
--data_dir, refuses in one line naming it. (tests/test_fuzz_commands.py draws every
way a run and its data move, for every command that reads a run.)"""
from __future__ import annotations

import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, Said
from t2t_lite.bin import t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.data import tfrecords

FLAGS = COMMON + ["--save_checkpoints_steps=2", "--schedule=train",
                  "--hparams=layer_prepostprocess_dropout=0.0"]


@pytest.fixture(scope="module")
def trained_elsewhere(tmp_path_factory):
    """A run trained for 2 steps and the same run trained for 4 without a stop, in a
    folder that is gone since (so no path saved in them leads anywhere); each test
    copies it."""
    root = tmp_path_factory.mktemp("moved_runs")
    origin = root / "origin"
    assert t2t_datagen.main(["--problem=tiny_reverse_binary", f"--t2t_usr_dir={USR_DIR}",
                             f"--data_dir={origin / 'data'}"]) == 0
    for name, steps in (("run", 2), ("straight", 4)):
        assert t2t_trainer.main(FLAGS + [f"--data_dir={origin / 'data'}",
                                         f"--output_dir={origin / name}",
                                         f"--train_steps={steps}"]) == 0
    template = root / "template"
    os.rename(origin, template)
    return template


def resume(argv: list[str]) -> tuple[int, list[str]]:
    said, logger = Said(), logging.getLogger()
    level = logger.level
    logger.addHandler(said)
    logger.setLevel(logging.INFO)
    try:
        return t2t_trainer.main(argv), said.lines
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)


def model_weights(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if "model" in name}


def test_a_run_resumed_on_renamed_data_trains_as_if_never_stopped(trained_elsewhere, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(trained_elsewhere, ws)
    os.rename(ws / "data", ws / "renamed")
    code, said = resume(FLAGS + [f"--data_dir={ws / 'renamed'}", f"--output_dir={ws / 'run'}",
                                 "--train_steps=4"])
    assert code == 0
    assert "the input continues where step 2 left it" in said, said
    resumed, straight = (model_weights(str(ws / name / "ckpt-4")) for name in ("run", "straight"))
    assert resumed.keys() == straight.keys() and resumed
    for name, value in straight.items():
        np.testing.assert_allclose(resumed[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_an_input_state_tensorflow_will_not_restore_restarts_the_input_in_one_line(
        trained_elsewhere, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    shutil.copytree(trained_elsewhere, ws)
    real_read = tf.train.Checkpoint.read

    def refuse_input_states(self, path, *args, **kwargs):
        if os.sep + "input_state" + os.sep in str(path):
            raise tf.errors.NotFoundError(None, None, "Failed to restore dataset iterator")
        return real_read(self, path, *args, **kwargs)

    monkeypatch.setattr(tf.train.Checkpoint, "read", refuse_input_states)
    code, said = resume(FLAGS + [f"--data_dir={ws / 'data'}", f"--output_dir={ws / 'run'}",
                                 "--train_steps=3"])
    assert code == 0
    assert ("no usable input state for step 2 (it would not restore: Failed to restore "
            "dataset iterator): the input restarts, reshuffled") in said, said
    assert tf.train.latest_checkpoint(str(ws / "run")).endswith("ckpt-3")


def test_a_reader_of_a_run_whose_data_moved_asks_for_data_dir(trained_elsewhere, tmp_path,
                                                               capsys):
    ws = tmp_path / "ws"
    shutil.copytree(trained_elsewhere, ws)
    (ws / "in.txt").write_text("0 1 1\n")
    argv = [f"--t2t_usr_dir={USR_DIR}", f"--output_dir={ws / 'run'}",
            f"--decode_from_file={ws / 'in.txt'}", f"--decode_to_file={ws / 'out.txt'}"]
    assert t2t_decoder.main(argv) == 2  # its hparams.json names origin/data, gone
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.endswith("which is not there now; if it moved, give --data_dir=the folder "
                         "it is in now") and str(trained_elsewhere.parent / "origin") in line
    assert t2t_decoder.main(argv + [f"--data_dir={ws / 'data'}"]) == 0
    assert len((ws / "out.txt").read_text().splitlines()) == 1


# --- the reader's saved position, without training ---------------------------------

KEYS = ["inputs", "targets"]


def write_split(folder) -> list[str]:
    paths = [str(folder / f"toy-train-{i:05d}-of-00004") for i in range(4)]
    os.makedirs(folder)
    tfrecords.write_shards(({"inputs": [i, i + 1], "targets": [i]} for i in range(40)), paths)
    return paths


def before_issue_85(paths: list[str], seed: int) -> tf.data.Dataset:
    """``tfrecords.read_shards(paths, KEYS, shuffle_files=True, seed=seed)`` as it was
    before issue 85: a ``tf.data.TFRecordDataset`` a shard, whose saved state holds the
    shard's whole path."""
    folder = os.path.dirname(os.path.abspath(paths[0]))
    features = {key: tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)
                for key in KEYS}
    files = tf.data.Dataset.from_tensor_slices([os.path.basename(p) for p in paths])
    records = files.shuffle(len(paths), seed=seed).interleave(
        lambda name: tf.data.TFRecordDataset(tf.strings.join([folder, name], separator=os.sep)),
        cycle_length=len(paths), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return records.map(lambda record: {key: tf.cast(value, tf.int32) for key, value in
                                       tf.io.parse_single_example(record, features).items()},
                       num_parallel_calls=tf.data.AUTOTUNE)


def targets(iterator, count: int) -> list[int]:
    return [int(next(iterator)["targets"][0]) for _ in range(count)]


@pytest.mark.parametrize("saved_by", ["read_shards", "before_issue_85"])
def test_a_saved_position_restores_over_the_same_shards_in_another_folder(tmp_path, saved_by):
    paths = write_split(tmp_path / "data")
    build = {"read_shards": lambda p: tfrecords.read_shards(p, KEYS, shuffle_files=True, seed=5),
             "before_issue_85": lambda p: before_issue_85(p, seed=5)}[saved_by]
    whole = targets(iter(build(paths)), 40)
    iterator = iter(build(paths))
    first = targets(iterator, 13)
    prefix = tf.train.Checkpoint(iterator=iterator).write(str(tmp_path / "state" / "ckpt"))
    if saved_by == "read_shards":  # the state names no folder
        with open(prefix + ".data-00000-of-00001", "rb") as f:
            assert str(tmp_path).encode() not in f.read()
    os.rename(tmp_path / "data", tmp_path / "moved")
    moved = [path.replace(str(tmp_path / "data"), str(tmp_path / "moved")) for path in paths]
    restored = iter(tfrecords.read_shards(moved, KEYS, shuffle_files=True, seed=5))
    tf.train.Checkpoint(iterator=restored).read(prefix).assert_consumed()
    assert first + targets(restored, 27) == whole
