"""Two t2t-trainer workers on localhost under TF_CONFIG (MultiWorkerMirroredStrategy on
CPU): they agree with each other and with one process on the same global batch, only
the chief writes checkpoints and summaries, and a killed run resumes."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, train_tiny
from multi_worker_step import one_step
from t2t_lite.training.distribute import read_tf_config

STEP_SCRIPT = os.path.join(os.path.dirname(__file__), "multi_worker_step.py")


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def worker_envs(count=2):
    workers = [f"localhost:{port}" for port in free_ports(count)]
    return [{**os.environ, "TF_CONFIG": json.dumps({"cluster": {"worker": workers},
                                                    "task": {"type": "worker", "index": i}})}
            for i in range(count)]


def run_workers(command_of, timeout=300):
    """Starts one process per worker; returns their CompletedProcess-like results."""
    processes = [subprocess.Popen(command_of(i), env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for i, env in enumerate(worker_envs())]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        results.append((process.returncode, out, err))
    return results


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("multi_worker"))


@pytest.mark.slow
def test_two_workers_agree_with_each_other_and_with_one_process(trained, tmp_path,
                                                                 usr_dir_import):
    data_dir, _ = trained
    results = run_workers(lambda i: [sys.executable, STEP_SCRIPT, data_dir,
                                     str(tmp_path / f"worker{i}.npz"), USR_DIR])
    for code, _, err in results:
        assert code == 0, err[-3000:]
    assert "TF_CONFIG" not in os.environ  # so this process has one replica
    one_step(data_dir, str(tmp_path / "single.npz"), USR_DIR, usr_dir_import)
    weights = [np.load(tmp_path / f"{name}.npz") for name in ("worker0", "worker1", "single")]
    for key in weights[0].files:
        np.testing.assert_array_equal(weights[0][key], weights[1][key])
        np.testing.assert_allclose(weights[0][key], weights[2][key], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_only_the_chief_writes_and_a_killed_run_resumes(trained, tmp_path):
    data_dir, _ = trained
    output_dir = tmp_path / "run"

    def command(steps):
        return lambda i: [sys.executable, "-m", "t2t_lite.bin.t2t_trainer"] + COMMON + [
            f"--data_dir={data_dir}", f"--output_dir={output_dir}", f"--train_steps={steps}",
            "--save_checkpoints_steps=2", "--eval_every_steps=1000", "--log_every_steps=1"]
    # Kill worker 1 in the middle of a run; both are restarted and resume.
    envs = worker_envs()
    processes = [subprocess.Popen(command(400)(i), env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for i, env in enumerate(envs)]
    deadline = time.time() + 240
    def saved_step():
        latest = tf.train.latest_checkpoint(str(output_dir))
        return int(latest.rsplit("-", 1)[1]) if latest else 0

    # Killed once the first checkpoint is there (it waited for the second: two steps
    # more of both workers, which took no other path).
    while saved_step() < 2:
        assert time.time() < deadline, "the run wrote no checkpoint"
        time.sleep(0.2)
    processes[1].send_signal(signal.SIGKILL)
    for process in processes:  # worker 0 fails in its next collective, or is stopped
        try:  # (1 s: a worker waiting on its dead peer may hang, and on a 2-core machine
            # it took 11 s to fail, so 5 s only bought a later kill; it used to wait 30)
            process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
    saved = saved_step()
    assert saved >= 2
    for code, _, err in run_workers(command(saved + 2)):
        assert code == 0, err[-3000:]
        assert f"at step {saved}" in err
        assert "eagerly has significant overhead" not in err  # no strategy.run per step
    assert tf.train.latest_checkpoint(str(output_dir)).endswith(f"ckpt-{saved + 2}")
    # Only the chief wrote into the output dir: checkpoints, one event file a chief run.
    names = sorted(os.listdir(output_dir))
    assert "ckpt-2.index" in names and "hparams.json" in names
    assert ".worker_saves" not in names and ".trainer.lock" not in names
    assert len(os.listdir(output_dir / "train")) == 2


WORKERS = {"worker": ["host1:2222", "host2:2222"]}


@pytest.mark.parametrize("tf_config, message", [
    ("{not json", "TF_CONFIG is not JSON"),
    ('["host1:2222"]', "TF_CONFIG must be a JSON object"),
    ('{"task": {"type": "worker", "index": 0}}', 'TF_CONFIG has no "cluster"'),
    (json.dumps({"cluster": WORKERS}), 'TF_CONFIG has no "task"'),
    (json.dumps({"cluster": WORKERS, "task": {"type": "worker", "index": 2}}),
     "TF_CONFIG: task index 2 is not one of the 2 worker addresses (0 to 1)"),
    (json.dumps({"cluster": WORKERS, "task": {"type": "evaluator", "index": 0}}),
     "TF_CONFIG: task type 'evaluator' is not a job of the cluster (worker)"),
    (json.dumps({"cluster": {"ps": ["h:1"], **WORKERS}, "task": {"type": "worker"}}),
     "TF_CONFIG: cluster job 'ps' is not one of"),
    (json.dumps({"cluster": {"worker": "host1:2222"}, "task": {"type": "worker"}}),
     "TF_CONFIG: cluster job 'worker' must list 'host:port' addresses"),
])
def test_malformed_tf_config_is_one_error_that_says_tf_config(monkeypatch, tf_config, message):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(ValueError) as info:
        read_tf_config()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize("tf_config", ["", "  ", "{}", '{"cluster": {}, "task": {}}'])
def test_an_empty_tf_config_means_one_machine(monkeypatch, tf_config):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    assert read_tf_config() == {}


def test_a_well_formed_tf_config_is_read(monkeypatch):
    config = {"cluster": {"chief": ["h0:1"], **WORKERS}, "task": {"type": "worker", "index": 1}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    assert read_tf_config() == config
