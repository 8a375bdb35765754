"""Tests for problems/parsing_files.py: parsing from the user's own trees."""
import json
import os

import pytest

from cli_helpers import error_of
from t2t_lite import registry
from t2t_lite.bin import t2t_datagen
from t2t_lite.parsing.tree_constraint import TreeConstraint
from treebank_files import TREES

PTB_SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "..", "shared", "data", "ptb_sample")


@pytest.fixture
def treebank(tmp_path):
    """wsj_0200.mrg .. wsj_2300.mrg in one folder, and dev trees one a line."""
    folder = tmp_path / "trees"
    folder.mkdir()
    for section, text in TREES.items():
        (folder / f"wsj_{section}00.mrg").write_text(text)
    (tmp_path / "dev.txt").write_text("(S (NP (NNP Kim)) (VP (VBZ runs)))\n\n"
                                      "(S (NP (DT The) (NN dog)) (VP (VBD slept)))\n")
    return tmp_path


def _datagen(data_dir, options):
    return t2t_datagen.main(["--problem=parsing_files", f"--data_dir={data_dir}",
                             f"--data_options={options}"])


def _examples(problem, data_dir, split):
    encoder = problem.feature_encoders(str(data_dir))["targets"]
    return [{key: encoder.decode(ids.numpy().tolist()) for key, ids in example.items()}
            for example in problem.dataset(split, str(data_dir))]


def test_folder_range_and_tree_lines(treebank):
    options = (f"train={treebank}/trees,train_range=wsj_0200..wsj_2200,"
               f"dev={treebank}/dev.txt,test={treebank}/trees/wsj_23*.mrg,linearization=tagged")
    assert _datagen(treebank / "data", options) == 0
    problem = registry.problems["parsing_files"]()
    data = treebank / "data"
    train = _examples(problem, data, "train")
    assert [example["inputs"] for example in train] == [
        "The dog barks .", "It slept .", "Kim runs fast ."]  # -NONE- gone, 2300 left out
    assert "(NNP Kim )" in train[2]["targets"]  # tagged: each word's POS tag
    assert [example["inputs"] for example in _examples(problem, data, "dev")] == [
        "Kim runs", "The dog slept"]
    assert [example["inputs"] for example in _examples(problem, data, "test")] == [
        "<UNK> <UNK> <UNK> ."]  # words of the test file only
    assert isinstance(problem.decode_constraint(str(data)), TreeConstraint)
    dev = _examples(problem, data, "dev")
    assert "(NP (NNP Kim)) (VP (VBZ runs))" in problem.postprocess_decode(  # the tagged way
        "Kim runs", dev[0]["targets"])
    record = json.loads((data / "parsing_files.data_options.json").read_text())
    assert record["train"] == str(treebank / "trees") and record["linearization"] == "tagged"


def test_labelled_closers_option(treebank):
    options = f"train={treebank}/trees,dev={treebank}/dev.txt,closers=labelled"
    assert _datagen(treebank / "data", options) == 0
    problem = registry.problems["parsing_files"]()
    [kim, _] = _examples(problem, treebank / "data", "dev")
    assert kim["targets"] == "(S (NP XX )NP (VP XX )VP )S"
    assert problem.postprocess_decode("Kim runs", kim["targets"]) == (
        "(S (NP (XX Kim)) (VP (XX runs)))")


def test_no_test_split_and_other_options_refused(treebank, capsys):
    options = f"train={treebank}/trees,dev={treebank}/dev.txt,vocab_size=64"
    assert _datagen(treebank / "data", options) == 0
    problem = registry.problems["parsing_files"]()
    with pytest.raises(FileNotFoundError, match="no test data: no test files were given"):
        problem.dataset("test", str(treebank / "data"))
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=parsing_files", f"--data_dir={treebank}/data",
        f"--data_options={options},linearization=lexical"])
    assert "other options (linearization='xx' -> 'lexical';" in line


@pytest.mark.parametrize("options, says", [
    ("dev={c}/dev.txt", "no train trees"),
    ("train={c}/nope,dev={c}/dev.txt", "train: no such file or folder"),
    ("train={c}/trees/*.txt,dev={c}/dev.txt", "names no tree files"),
    ("train={c}/trees,train_range=wsj_9000..wsj_9999,dev={c}/dev.txt",
     "none of the 3 files is named in that range"),
    ("train={c}/trees,train_range=wsj_9000,dev={c}/dev.txt", "is not FIRST..LAST"),
    ("train={c}/trees,dev={c}/bad.txt", "bad.txt:2"),
    ("train={c}/trees,dev={c}/empty.txt", "dev holds no trees"),
    ("train={c}/trees,dev={c}/dev.txt,linearization=words", "'linearization' must be one of"),
    ("train={c}/trees,dev={c}/dev.txt,closers=named", "'closers' must be one of"),
])
def test_bad_trees_and_options_write_nothing(treebank, capsys, options, says):
    (treebank / "bad.txt").write_text("(S (NN a))\n(S (NN b)\n")
    (treebank / "empty.txt").write_text("")
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=parsing_files", f"--data_dir={treebank}/data",
        f"--data_options={options.format(c=treebank)}"])
    assert says in line
    assert not os.path.exists(treebank / "data" / "parsing_files.data_options.json")


def test_treebank_sample_gives_the_registered_problems_data(tmp_path):
    combined = os.path.join(PTB_SAMPLE, "combined")
    if not os.path.isdir(combined):
        pytest.skip(f"treebank sample not found in {os.path.abspath(PTB_SAMPLE)}")
    registered = registry.problems["parsing_english_ptb_sample_lexical"]()
    theirs = str(tmp_path / "registered")
    registered.generate_data(theirs, PTB_SAMPLE)
    ranges = registered.split_ranges
    assert _datagen(tmp_path / "files", ",".join(
        f"{split}={combined},{split}_range={first}..{last}"
        for split, (first, last) in ranges.items()) + ",vocab_size=8192,linearization=lexical") == 0
    files = registry.problems["parsing_files"]()
    ours = str(tmp_path / "files")
    assert files.vocab_fingerprint(ours) == registered.vocab_fingerprint(theirs)
    for split in ranges:
        for a, b in zip(files.shard_paths(ours, split), registered.shard_paths(theirs, split),
                        strict=True):
            with open(a, "rb") as f, open(b, "rb") as g:
                assert f.read() == g.read(), a
