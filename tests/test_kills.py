"""kill -9 at seeded random moments: what is left behind never looks complete."""
import json
import logging
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, train_tiny
from t2t_lite.bin import t2t_datagen, t2t_trainer


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("kills"))


def test_a_killed_decoder_leaves_no_output_that_looks_complete(trained, tmp_path):
    _, output_dir = trained
    # Long enough that no decode ends before its kill (a fast CPU decoded 180 lines
    # before the kill, and the kill path went untested).
    lines = ["0 1 1 0 1 1 0 1", "1 0 0 1", "1 1 1 0 0 0 1"] * 600
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines))
    target = tmp_path / "out.txt"
    command = [sys.executable, "-m", "t2t_lite.bin.t2t_decoder", f"--output_dir={output_dir}",
               f"--t2t_usr_dir={USR_DIR}", f"--decode_from_file={source}",
               f"--decode_to_file={target}", "--decode_hparams=beam_size=2,batch_size=4"]
    # The run is killed at a seeded random moment after the decoder has taken its
    # output (its lock is there): a kill while the TensorFlow start still ran, as the
    # fixed moments of 2 to 11.5 s mostly gave on this machine, reached no output at
    # all, and each such run cost its moment in full. One run (it was two): the
    # 1,800 lines are one read window (read_window_lines, 4,096), so the output is
    # written once, at its end, and a second kill before it took the same path again,
    # for a TensorFlow start more.
    rng = random.Random(13)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while process.poll() is None and os.listdir(tmp_path) == ["in.txt"]:
        assert time.time() < deadline, "the decoder never took its output"
        time.sleep(0.02)
    seconds = rng.uniform(0.0, 1.5)
    time.sleep(seconds)
    finished = process.poll() is not None
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    leftovers = sorted(os.listdir(tmp_path))
    # out.txt exists only whole (it may have appeared just before the kill); anything
    # else left is a temporary file under another name, the folder's record of the
    # commands' outputs or a released lock (output_paths).
    if "out.txt" in leftovers:
        assert len(target.read_text().splitlines()) == len(lines), \
            f"killed {seconds:.2f} s after it took its output"
    assert all(name in ("in.txt", "out.txt") or ".tmp-" in name
               or name.startswith(".t2t-lite-") for name in leftovers)
    assert not finished  # the test exercised the kill path


@pytest.mark.slow
def test_kills_resume_to_the_weights_of_an_uninterrupted_run(trained, tmp_path, capsys,
                                                            caplog):
    """kill -9 twice at seeded random moments (in a step, a save or an
    evaluation); each restart resumes from the last complete checkpoint, which is
    always readable, the step never goes back, the last run says where it resumed,
    and the end equals a run never killed: the input continues where it was
    (RunCheckpoints), dropout is off. So does the best checkpoint by the dev loss
    (best_checkpoint.py): each evaluation recorded once, the same best kept.
    (It killed ten times, then four, then three, until the suite had to fit in 10
    minutes on slower machines: each kill costs a TensorFlow start, 10-15 s. The
    second kill is of a resumed run, so the last run resumes from a checkpoint that a
    resumed run wrote; that last run, never killed, runs in this process, a start
    less, as does the reference. 8 steps, not 10: the kills land in the first few.)"""
    data_dir, _ = trained
    steps, output_dir = 8, tmp_path / "killed"
    flags = COMMON + [f"--data_dir={data_dir}", "--save_checkpoints_steps=1",
                      "--eval_every_steps=3", "--eval_batches=1", "--log_every_steps=1",
                      "--hparams=layer_prepostprocess_dropout=0.0",
                      "--best_checkpoint_metric=loss", "--patience=100"]
    argv = flags + [f"--output_dir={output_dir}", f"--train_steps={steps}"]
    command = [sys.executable, "-m", "t2t_lite.bin.t2t_trainer", *argv]
    rng = random.Random(2026)
    last_step = 0
    for _ in range(2):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        start_step = last_step
        while process.poll() is None and saved_step(output_dir) <= start_step:
            time.sleep(0.05)  # wait until this run trains, then kill it soon after
        time.sleep(rng.uniform(0.0, 0.6))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        step = saved_step(output_dir)
        assert step >= last_step  # never back past the last checkpoint
        reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(output_dir)))
        assert all(np.all(np.isfinite(reader.get_tensor(name)))
                   for name, dtype in reader.get_variable_to_dtype_map().items()
                   if dtype.is_floating)
        last_step = step
        if step == steps:
            break
    capsys.readouterr()
    with caplog.at_level(logging.INFO):
        assert t2t_trainer.main(argv) == 0
    assert saved_step(output_dir) == steps
    if last_step < steps:  # it said where it resumed, and printed the final metrics
        assert f"resumed from {output_dir}/ckpt-{last_step} at step {last_step}" in caplog.text
        assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["step"] == steps
    # The same run, never killed.
    reference = tmp_path / "reference"
    assert t2t_trainer.main(flags + [f"--output_dir={reference}",
                                     f"--train_steps={steps}"]) == 0
    for path in (output_dir, reference):
        assert not os.path.exists(path / ".trainer.lock")
    killed = tf.train.load_checkpoint(str(output_dir / f"ckpt-{steps}"))
    uninterrupted = tf.train.load_checkpoint(str(reference / f"ckpt-{steps}"))
    assert_same_model(killed, uninterrupted)
    records = [json.loads((path / "best.json").read_text()) for path in (output_dir, reference)]
    assert [e["step"] for e in records[0]["history"]] == [e["step"] for e in records[1]["history"]]
    np.testing.assert_allclose([e["value"] for e in records[0]["history"]],
                               [e["value"] for e in records[1]["history"]], rtol=1e-5)
    assert records[0]["best"]["step"] == records[1]["best"]["step"]
    best = f"best/ckpt-{records[1]['best']['step']}"
    assert_same_model(*(tf.train.load_checkpoint(str(path / best))
                        for path in (output_dir, reference)))


def assert_same_model(reader, expected_reader) -> None:
    names = [name for name in expected_reader.get_variable_to_shape_map() if "model" in name]
    assert names
    for name in names:
        np.testing.assert_allclose(reader.get_tensor(name), expected_reader.get_tensor(name),
                                   rtol=1e-5, atol=1e-6, err_msg=name)


def saved_step(output_dir) -> int:
    latest = tf.train.latest_checkpoint(str(output_dir))
    return int(latest.rsplit("-", 1)[1]) if latest else 0


KILLING_PROBLEM = '''
import os, signal
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40
from t2t_lite.registry import register_problem


@register_problem
class KilledReverseBinary(AlgorithmicReverseBinary40):
    """Kills its own datagen (SIGKILL, as the OOM killer does) at sample
    T2T_KILL_AT=split:index, when that is set."""
    split_sizes = {"train": 400, "dev": 40, "test": 40}

    def generate_samples(self, data_dir, tmp_dir, split):
        kill_split, _, kill_index = os.environ.get("T2T_KILL_AT", "::").partition(":")
        for index, sample in enumerate(super().generate_samples(data_dir, tmp_dir, split)):
            if split == kill_split and index == int(kill_index):
                os.kill(os.getpid(), signal.SIGKILL)
            yield sample
'''


@pytest.mark.slow
def test_a_killed_datagen_run_again_writes_each_shard_once_and_whole(tmp_path,
                                                                     usr_dir_import):
    """Killed in the middle of train, then (run again) of test, and run again: the
    shards that look complete always are, and the data at the end is the data of a
    run never killed, example for example (none twice, none lost). (A kill in dev
    too, between the two, took the second kill's path: a split of one shard after
    complete ones, for a TensorFlow start more. The runs not killed run in this
    process, a start less each.)"""
    usr_dir = tmp_path / "usr"
    usr_dir.mkdir()
    (usr_dir / "__init__.py").write_text(KILLING_PROBLEM)
    problem = "--problem=killed_reverse_binary"

    def datagen(data_dir, kill_at):
        environment = dict(os.environ, T2T_KILL_AT=kill_at)
        return subprocess.run([sys.executable, "-m", "t2t_lite.bin.t2t_datagen", problem,
                               f"--data_dir={data_dir}", f"--t2t_usr_dir={usr_dir}"],
                              env=environment, capture_output=True, text=True).returncode

    def examples(path):
        # Parsed, not bytes: protobuf does not fix the order of an Example's features.
        parsed = [tf.train.Example.FromString(record.numpy())
                  for record in tf.data.TFRecordDataset(str(path))]
        return [tuple(tuple(example.features.feature[key].int64_list.value)
                      for key in ("inputs", "targets")) for example in parsed]

    def complete_shards(data_dir):
        return {name: examples(data_dir / name) for name in os.listdir(data_dir)
                if "-of-" in name and not name.endswith(".incomplete")}

    clean, killed = tmp_path / "clean", tmp_path / "killed"
    usr_dir_import(str(usr_dir))  # the run never killed: in this process, a start less
    assert t2t_datagen.main([problem, f"--data_dir={clean}"]) == 0
    expected = complete_shards(clean)
    assert len(expected) == 12  # 10 train shards, one dev, one test
    for split, done_before in (("train", 0), ("test", 11)):
        assert datagen(killed, kill_at=f"{split}:{20 if split != 'train' else 250}") == -9
        shards = complete_shards(killed)
        assert not any(f"-{split}-" in name for name in shards), f"killed in {split}"
        assert len(shards) == done_before
        assert all(expected[name] == data for name, data in shards.items())
    assert t2t_datagen.main([problem, f"--data_dir={killed}"]) == 0  # not killed: in here
    assert complete_shards(killed) == expected
    assert not [name for name in os.listdir(killed) if name.endswith(".incomplete")]
