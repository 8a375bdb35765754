"""Samples encoded by worker processes: the same records, in order, as one process."""
import glob
import os

import pytest

from t2t_lite.data import parallel_encoding
from t2t_lite.registry import problems


def _tagged(sample):
    return f"{sample}:{os.getpid()}".encode()


def test_workers_return_every_record_in_order(monkeypatch):
    monkeypatch.setattr(parallel_encoding, "CHUNK_SAMPLES", 7)
    records = list(parallel_encoding.encoded_records(range(100), _tagged, processes=2))
    assert [int(r.split(b":")[0]) for r in records] == list(range(100))
    pids = {r.split(b":")[1] for r in records}
    # Encoded by the workers (on a busy machine one of the two may take every chunk).
    assert str(os.getpid()).encode() not in pids and 1 <= len(pids) <= 2


def test_input_under_one_chunk_is_encoded_here(monkeypatch):
    monkeypatch.setattr(parallel_encoding, "CHUNK_SAMPLES", 50)
    records = list(parallel_encoding.encoded_records(range(49), _tagged, processes=2))
    assert {r.split(b":")[1] for r in records} == {str(os.getpid()).encode()}


def _fails_on_13(sample):
    if sample == 13:
        raise ValueError("sample 13 is bad")
    return b"ok"


def test_a_workers_error_reaches_the_caller_and_the_pool_stops(monkeypatch):
    monkeypatch.setattr(parallel_encoding, "CHUNK_SAMPLES", 4)
    records = parallel_encoding.encoded_records(range(1000), _fails_on_13, processes=2)
    with pytest.raises(ValueError, match="sample 13 is bad"):
        list(records)


def test_fewer_than_one_process_is_refused():
    with pytest.raises(ValueError, match="at least 1, not 0"):
        list(parallel_encoding.encoded_records(range(3), _tagged, processes=0))


def test_default_is_the_cpus_this_process_may_use():
    assert 1 <= parallel_encoding.available_processes() <= parallel_encoding.MAX_AUTO_PROCESSES


def test_translate_files_shards_are_the_same_bytes_with_workers(tmp_path, monkeypatch):
    """A subword vocabulary, a corpus tag and alignments: the shards two workers
    write are byte for byte one process's."""
    monkeypatch.setattr(parallel_encoding, "CHUNK_SAMPLES", 16)
    words = "a man rides a red bike down the hill while two dogs run".split()
    for name, lines in (("train", 150), ("dev", 20)):
        en = [" ".join(words[(i + j) % len(words)] for j in range(3 + i % 5))
              for i in range(lines)]
        (tmp_path / f"{name}.en").write_text("".join(line + "\n" for line in en))
        (tmp_path / f"{name}.de").write_text("".join(line.upper() + "\n" for line in en))
        if name == "train":
            (tmp_path / "train.align").write_text(
                "".join(" ".join(f"{k}-{k}" for k in range(len(line.split()))) + "\n"
                        for line in en))
    from t2t_lite.data import data_options
    shards = {}
    for processes in (1, 2):
        data_dir = str(tmp_path / f"data{processes}")
        problem = problems["translate_files"]()
        problem.encode_processes = processes
        options = data_options.prepare(problem, data_dir, (
            f"train={tmp_path}/train,train_alignments={tmp_path}/train.align,"
            f"train2={tmp_path}/dev,train2_tag=<T>,dev={tmp_path}/dev,"
            "source_lang=en,target_lang=de,vocab_size=320"), data_dir)
        data_options.generate(problem, data_dir, data_dir, options)
        shards[processes] = {os.path.basename(path): open(path, "rb").read()
                             for path in sorted(glob.glob(f"{data_dir}/*-of-*"))}
    assert len(shards[1]) > 2 and shards[1] == shards[2]


ORPHANED = '''
import os, sys, time
from t2t_lite.data import parallel_encoding
parallel_encoding.CHUNK_SAMPLES = 2

def slow(sample):
    time.sleep(0.05)
    return str(os.getpid()).encode()

for record in parallel_encoding.encoded_records(range(10**6), slow, processes=2):
    print(record.decode(), flush=True)
'''


def test_workers_end_when_their_parent_is_killed(tmp_path):
    """kill -9 of the command (the OOM killer): its workers do not live on."""
    import signal
    import subprocess
    import sys
    import time
    script = tmp_path / "orphaned.py"
    script.write_text(ORPHANED)
    import t2t_lite
    here = os.path.dirname(os.path.dirname(t2t_lite.__file__))  # the t2t_lite under test
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": here})
    workers = set()
    while len(workers) < 2:
        workers.add(int(parent.stdout.readline()))
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def test_an_interrupted_first_datagen_keeps_its_vocabulary_and_goes_on(tmp_path, monkeypatch):
    """Ctrl-C while a split is written, in the call that recorded the options: the
    vocabulary and the record stay (as the interrupt's line says), the shard being
    written goes, and the same command again writes what the uninterrupted one does."""
    from t2t_lite.data import data_options, problem as problem_lib
    monkeypatch.setattr(parallel_encoding, "CHUNK_SAMPLES", 16)
    lines = [f"word{i % 41} thing{i % 17} item{i % 13}" for i in range(120)]
    for name in ("train", "dev"):
        (tmp_path / f"{name}.en").write_text("".join(line + "\n" for line in lines))
        (tmp_path / f"{name}.de").write_text("".join(line.upper() + "\n" for line in lines))
    text = (f"train={tmp_path}/train,dev={tmp_path}/dev,source_lang=en,target_lang=de,"
            "vocab_size=300")
    data_dir = str(tmp_path / "data")
    checked = problem_lib.Text2TextProblem._checked_samples

    def interrupted_in_train(self, data_dir, tmp_dir, split):
        for index, sample in enumerate(checked(self, data_dir, tmp_dir, split)):
            if split == "train" and index == 50:
                raise KeyboardInterrupt
            yield sample
    monkeypatch.setattr(problem_lib.Text2TextProblem, "_checked_samples", interrupted_in_train)
    problem = problems["translate_files"]()
    with pytest.raises(KeyboardInterrupt):
        data_options.generate(problem, data_dir, data_dir,
                              data_options.prepare(problem, data_dir, text, data_dir))
    kept = sorted(os.listdir(data_dir))
    assert "vocab.translate_files.model" in kept and "translate_files.data_options.json" in kept
    assert not [name for name in kept if "-train-" in name]
    monkeypatch.setattr(problem_lib.Text2TextProblem, "_checked_samples", checked)
    vocabulary = open(f"{data_dir}/vocab.translate_files.model", "rb").read()
    problem = problems["translate_files"]()
    data_options.generate(problem, data_dir, data_dir,
                          data_options.prepare(problem, data_dir, text, data_dir))
    assert open(f"{data_dir}/vocab.translate_files.model", "rb").read() == vocabulary
    assert len(glob.glob(f"{data_dir}/*-train-*-of-*")) == 10
