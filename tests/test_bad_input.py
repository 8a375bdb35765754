"""Every bad input we know of, in one table (docs/RELIABILITY.md, "Every bad input"): each
command exits with status 2 and one error line that says what is wrong and what to do,
and leaves every file it was given, the output dir included, as it was."""
import dataclasses
import gzip
import json
import os
import shutil

import pytest
import tensorflow as tf

import bad_input_cases
import bad_output_cases
from cli_helpers import snapshot, train_copy_run, train_tiny
from message_truth import untrue
from t2t_lite.bin import t2t_avg_all, t2t_datagen

CASES = bad_input_cases.CASES + bad_output_cases.CASES


@dataclasses.dataclass
class Workspace:
    root: str
    data_dir: str
    output_dir: str
    usr_dirs: str  # outside root: importing writes __pycache__ beside the code

    def path(self, name: str) -> str:
        return os.path.join(self.root, "files", name)


@pytest.fixture(scope="session")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    data_dir, output_dir = train_tiny(root)
    files = root / "files"
    files.mkdir()
    (files / "in.txt").write_text("0 1 1\n1 0\n")
    (files / "one_line.txt").write_text("1 1 0\n")
    (files / "blank_line.txt").write_text("0 1\n\n")
    (files / "latin1.txt").write_bytes(b"0 1\ncaf\xe9\n")
    (files / "empty.txt").write_text("")
    (files / "no_tab.txt").write_text("0 1\t1 0\n0 1 1\n")
    (files / "gold.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n")
    (files / "unbalanced.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks))\n")
    (files / "two.trees").write_text("(S (NP (NN a)))\n(S (NP (NN b)))\n")
    with gzip.open(files / "latin1.gz", "wb") as f:
        f.write(b"ok\n\xff\n")
    (root / "empty_dir").mkdir()
    corrupt = root / "truncated_data"
    shutil.copytree(data_dir, corrupt)
    shard = corrupt / "tiny_reverse_binary-train-00003-of-00010"
    shard.write_bytes(shard.read_bytes()[:-5])
    rebuilt = root / "rebuilt_vocab_data"  # the vocabulary rebuilt after the shards
    shutil.copytree(data_dir, rebuilt)
    vocab = rebuilt / "vocab.tiny_reverse_binary.txt"
    tokens = vocab.read_text().splitlines()
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]
    vocab.write_text("\n".join(tokens) + "\n")
    (root / "broken_run").mkdir()
    (root / "broken_run" / "hparams.json").write_text("{not json")
    (files / "nul.txt").write_bytes(b"0 1\n1\x000\n")
    (files / "lone_cr.txt").write_bytes(b"0 1\n1 0\r1\n")
    (files / "plain.gz").write_text("0 1\n1 0\n")
    (files / "packed.trees").write_bytes(gzip.compress(b"(S (NN a))\n"))
    (files / "damaged.gz").write_bytes(gzip.compress(b"0 1\n" * 1000)[:-20])
    (files / "a_folder").mkdir()
    (files / "ref.fr").write_text("0 1 1\n1 0\n")
    (files / "tiny_reverse_binary.test.inputs").write_text("a user's file of that name\n")
    (root / "raw_multi30k").mkdir()  # Multi30k files of another version (sha256 differs)
    for language in ("en", "de"):
        (root / "raw_multi30k" / f"train.{language}.gz").write_bytes(gzip.compress(b"a b\n"))
    (files / "huge_line.txt").write_text("0 1\n" + "1 " * (1 << 20) + "\n")
    (files / "long_target.txt").write_text("0 1\t1 0\n1\t" + "0 " * 300 + "\n")
    (files / "deep.trees").write_text("(S (NN a))\n" + "(X " * 5000 + "(NN a)" + ")" * 5000 + "\n")
    usr_dirs = tmp_path_factory.mktemp("bad_usr_dirs")
    for name, source in (("usr_raises", "import os\nraise RuntimeError('no config found')\n"),
                         ("usr_syntax", "def my_hparams(:\n    pass\n"),
                         ("json", "raise RuntimeError('never imported: json is taken')\n")):
        (usr_dirs / name).mkdir()
        (usr_dirs / name / "__init__.py").write_text(source)
    (root / "export_taken").mkdir()
    (root / "export_taken" / "saved_model.pb").write_text("an earlier export")
    for name, dropout in (("edited_run", 2.0), ("nan_run", float("nan"))):
        (root / name).mkdir()
        record = json.loads((root / "train" / "hparams.json").read_text())
        record["hparams"]["layer_prepostprocess_dropout"] = dropout  # edited by hand
        (root / name / "hparams.json").write_text(json.dumps(record))
    damaged_runs(root, output_dir)
    (root / "links").mkdir()
    os.symlink("../files/a_folder", root / "links" / "up")
    os.symlink("../nowhere", root / "links" / "dangling_dir")
    other_shards = root / "other_shards_data"  # the same vocabulary, other examples
    shutil.copytree(data_dir, other_shards)
    for shard in other_shards.glob("*-train-*"):
        records = list(tf.data.TFRecordDataset(str(shard)).as_numpy_iterator())
        with tf.io.TFRecordWriter(str(shard)) as writer:
            for record in records[::-1]:
                writer.write(record)
    tf.train.Checkpoint(model=tf.Module()).write(str(files / "other_model" / "ckpt-1"))
    other = tf.Module()
    other.w = tf.Variable([1.0])
    tf.train.Checkpoint(model=other).write(str(files / "other_model" / "ckpt-2"))
    # A run of another problem with the same architecture and vocabulary size.
    train_copy_run(root)
    # NumberWordsToDigits (tests/toys.py): words in, digits out, a vocabulary each.
    assert t2t_datagen.main(["--problem=number_words_to_digits",
                             f"--data_dir={root / 'words_digits_data'}"]) == 0
    shutil.copytree(output_dir, root / "train_copy")
    assert t2t_avg_all.main([f"--model_dir={output_dir}", f"--output_dir={root}/average"]) == 0
    return Workspace(str(root), data_dir, output_dir, str(usr_dirs))


def damaged_runs(root, output_dir) -> None:
    """Copies of the trained run (checkpoints 2 and 4) with their checkpoint state damaged."""
    def copy(name):
        shutil.copytree(output_dir, root / name)
        return root / name
    for name in ("missing_ckpt", "no_index"):
        copy(name)
    for path in (root / "missing_ckpt").glob("ckpt-4.*"):
        path.unlink()
    (root / "no_index" / "checkpoint").unlink()
    data = copy("truncated_ckpt") / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-5])
    (copy("garbage_index") / "checkpoint").write_text("garbage {{{")
    (copy("broken_best") / "best.json").write_text("{not json")
    (copy("best_without_record") / "best").mkdir()
    record = copy("edited_hparams") / "hparams.json"
    record.write_text(record.read_text().replace('"num_heads": 4', '"num_heads": 8'))


def test_at_least_thirty_cases_with_distinct_names():
    assert len(CASES) >= 30 and len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_fails_in_one_line_and_changes_nothing(ws, case, capsys, monkeypatch):
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if case.machine:
        case.machine(monkeypatch)
    before = snapshot(ws.root)
    argv = case.argv(ws)
    try:
        code = case.main(argv)
    except SystemExit as exit_info:  # argparse's own errors
        code = exit_info.code
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert code == 2
    assert len(errors) == 1 and case.says in errors[0], errors
    assert snapshot(ws.root) == before
    # What the line claims is true: its flags exist, its paths exist or were given.
    assert untrue(errors[0], argv) == [], errors[0]


def test_the_reliability_page_lists_every_case():
    page = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "docs", "RELIABILITY.md")
    text = open(page, encoding="utf-8").read()
    section = text[text.index("## Every bad input"):]
    assert [case.name for case in CASES if f"| {case.name} |" not in section] == []
