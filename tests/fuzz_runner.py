"""What the command fuzzers share (tests/test_fuzz_commands.py, tests/test_fuzz_moved_runs.py):
the workspace every draw copies (trained once a session: conftest's fuzz_template),
a command run in this process with its exit and stderr, and a refusal's untrue claims."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
from typing import Callable

import tensorflow as tf

from cli_helpers import COMMON, digest_tree, stat_tree, train_copy_run, train_tiny
from fuzz_cases import RUN_ARGS
from message_truth import untrue
from t2t_lite.bin import t2t_attention, t2t_avg_all, t2t_decoder, t2t_trainer



def build_workspace(root) -> str:
    """The template every draw copies: see the module docstring."""
    data_dir, run_dir = train_tiny(root)
    os.rename(run_dir, root / "run")
    files = root / "files"
    files.mkdir()
    (files / "in.txt").write_text("0 1 1\n1 0\n")
    (files / "ref.txt").write_text("1 1 0\n0 1\n")
    (files / "notes.txt").write_text("a user's own notes\n")
    (files / "empty.txt").write_text("")
    (files / "bom.txt").write_bytes(b"\xef\xbb\xbf0 1 1\n1 0\n")
    (files / "nul.txt").write_bytes(b"0 1\x00 1\n1 0\n")
    (files / "crlf.txt").write_bytes(b"0 1 1\r\n1 0\r\n")
    (files / "latin1.txt").write_bytes(b"0 1\ncaf\xe9\n")
    (files / "plain.gz").write_text("not gzip at all\n")
    (files / "deep.trees").write_text("(S " * 5000 + "(NN a)" + ")" * 5000 + "\n")
    (files / "pairs.tsv").write_text("0 1\t1 0\n1 1\t1 1\n")
    (files / "gold.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n")
    (files / "test.trees").write_text("(S (NP (DT The)) (VP (NN dog) (VBZ barks)))\n")
    (files / "a_dir").mkdir()
    (root / "user_folder").mkdir()
    (root / "user_folder" / "thesis.tex").write_text("\\documentclass{article}\n")
    # A user's files named as t2t-datagen names its eval files.
    (root / "user_folder" / "tiny_reverse_binary.test.inputs").write_text("my inputs\n")
    (root / "user_folder" / "tiny_reverse_binary.dev.targets").write_text("my targets\n")
    (root / "empty_dir").mkdir()
    (root / "home").mkdir()  # HOME in a draw: a ~ that is expanded stays in the workspace
    links = root / "links"
    links.mkdir()
    for name, target in (("in.txt", "../files/in.txt"), ("dangling.txt", "../files/gone.txt"),
                         ("up", "../files/a_dir"), ("run", "../run"),
                         ("dangling_dir", "../nowhere")):
        os.symlink(target, links / name)
    run = str(root / "run")
    assert t2t_decoder.main(RUN_ARGS[:1] + [f"--output_dir={run}",
                                            f"--decode_from_file={files / 'in.txt'}",
                                            f"--decode_to_file={files / 'prev.decoded'}"]) == 0
    assert t2t_avg_all.main([f"--model_dir={run}", f"--output_dir={root / 'avg'}",
                             "--n=2"]) == 0
    assert t2t_attention.main(RUN_ARGS[:1] + [f"--output_dir={run}", "--input=0 1",
                                              "--target=1 0", f"--to={root / 'attention'}",
                                              "--dpi=20"]) == 0
    # A run of another problem with the same shapes and vocabulary.
    train_copy_run(root)
    # A run trained with relative paths in a folder that is gone since (no path a
    # checkpoint or input state saved may lead anywhere: issue 85's traceback hid behind
    # shards still at the old path), and data of the same vocabulary, other train shards.
    origin = root / "origin"
    shutil.copytree(root / "data", origin / "data")
    cwd = os.getcwd()
    os.chdir(origin)
    try:
        assert t2t_trainer.main(COMMON + ["--data_dir=data", "--output_dir=rel_run",
                                          "--train_steps=2", "--schedule=train"]) == 0
    finally:
        os.chdir(cwd)
    os.rename(origin / "rel_run", root / "rel_run")
    shutil.rmtree(origin)
    shutil.copytree(root / "data", root / "other_data")
    for shard in (root / "other_data").glob("*-train-*"):
        records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
        with tf.io.TFRecordWriter(str(shard)) as writer:
            for record in records[::-1]:
                writer.write(record)
    # Another run: same files, another problem.
    shutil.copytree(run, root / "other_run")
    record = (root / "other_run" / "hparams.json").read_text()
    (root / "other_run" / "hparams.json").write_text(
        record.replace('"tiny_reverse_binary"', '"algorithmic_identity_binary40"'))
    # Damaged runs: no index; an index naming a missing checkpoint; a truncated one.
    shutil.copytree(run, root / "no_index_run")
    os.remove(root / "no_index_run" / "checkpoint")
    shutil.copytree(run, root / "missing_ckpt_run")
    for suffix in (".index", ".data-00000-of-00001"):
        os.remove(root / "missing_ckpt_run" / f"ckpt-4{suffix}")
    shutil.copytree(run, root / "truncated_run")
    data = root / "truncated_run" / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])
    return str(root)


_template_digests: dict[str, tuple[dict, dict[str, str]]] = {}


def template_digest(template: str) -> dict[str, str]:
    """``digest_tree(template)``, which is the digest of each draw's fresh copy of it:
    hashed again only when the template's stat tree changed since (a few hundred lstat
    calls, not 30 MB of checkpoints and input states hashed every draw)."""
    stats = stat_tree(template)
    cached = _template_digests.get(template)
    if cached is None or cached[0] != stats:
        cached = _template_digests[template] = (stats, digest_tree(template))
    return dict(cached[1])


@dataclasses.dataclass
class Outcome:
    code: object
    err: str
    escaped: BaseException | None


def run_in_process(main: Callable, argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    escaped = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code
        except Exception as error:  # noqa: BLE001 - a traceback is what we look for
            code, escaped = None, error
    return Outcome(code, err.getvalue(), escaped)


def untrue_error(outcome: Outcome, argv: list[str], cwd: str) -> list[str]:
    """What a refusal's line claims that is false (tests/message_truth.py)."""
    if outcome.code != 2:
        return []
    errors = [line for line in outcome.err.splitlines() if ": error: " in line]
    return [f"untrue line ({claim}): {errors[-1][:200]}"
            for claim in (untrue(errors[-1], argv, cwd) if errors else [])]


def report_violations(violations: list[str], summary: str) -> None:
    """Prints a family's ``summary`` and each failing draw, then fails on any."""
    print(summary)
    for line in violations:
        print("  " + line)
    assert not violations, "\n".join(violations[:20])
