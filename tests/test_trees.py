"""Tests for t2t_lite.parsing.trees: reader, preprocessing, printer, splits, the real PTB sample."""
import os
import re

import pytest

from t2t_lite.parsing.trees import (
    MAX_DEPTH, TreebankFormatError, file_range_files, parse_trees, preprocess, read_tree_file,
    read_treebank, replace_tags, strip_function_tag, wsj_split_files)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTB_SAMPLE = os.path.join(REPO_ROOT, "..", "shared", "data", "ptb_sample", "combined")
# Trees in the NLTK Penn Treebank sample, by number of files present: the full
# sample (wsj_0001..wsj_0199) has 3914; the shared copy holds wsj_0001..wsj_0179.
EXPECTED_TREES = {199: 3914, 179: 3669}

MRG_TEXT = """\
( (S 
    (NP-SBJ-1 (NNP Pierre) (NNP Vinken) )
    (VP (VBD said) 
      (SBAR (-NONE- 0) 
        (S (-NONE- *T*-2) )))
    (. .) ))
( (S (NP-SBJ=2 (-LRB- -LRB-) (NN it) (-RRB- -RRB-) )
    (VP (VBZ works) (PP-LOC=3 (IN in) (NP (NN practice) )))) )
"""


def test_parse_multiline_trees_and_print_one_a_line():
    first, second = parse_trees(MRG_TEXT)
    assert first.label == "" and first.children[0].label == "S"
    assert first.words() == ["Pierre", "Vinken", "said", "0", "*T*-2", "."]
    assert second.tags() == ["-LRB-", "NN", "-RRB-", "VBZ", "IN", "NN"]
    assert str(second).startswith("( (S (NP-SBJ=2 (-LRB- -LRB-) (NN it) (-RRB- -RRB-)) (VP")
    assert parse_trees(str(first) + "\n" + str(second)) == [first, second]


def test_preprocess_removes_empty_elements_tags_and_outer_bracket():
    first, second = (preprocess(tree) for tree in parse_trees(MRG_TEXT))
    # The SBAR holds only -NONE- elements (directly and through its S): it goes.
    assert str(first) == "(S (NP (NNP Pierre) (NNP Vinken)) (VP (VBD said)) (. .))"
    # Function tags and coindexation go; POS tags such as -LRB- stay intact.
    assert str(second) == ("(S (NP (-LRB- -LRB-) (NN it) (-RRB- -RRB-)) "
                           "(VP (VBZ works) (PP (IN in) (NP (NN practice)))))")


def test_preprocess_keeps_a_top_root_over_several_pieces_and_rejects_wordless_trees():
    tree = parse_trees("(TOP (NP (NN a)) (. .))")[0]
    assert str(preprocess(tree)) == "(TOP (NP (NN a)) (. .))"
    assert str(preprocess(parse_trees("(TOP (S-HLN (NN a)))")[0])) == "(S (NN a))"
    assert str(preprocess(parse_trees("( (NN Yes) )")[0])) == "(TOP (NN Yes))"
    assert preprocess(parse_trees("( (S (-NONE- *)) )")[0]) is None


@pytest.mark.parametrize("label,expected", [
    ("NP-SBJ-1", "NP"), ("PP-LOC=2", "PP"), ("NP=3", "NP"), ("S-TPC-1", "S"),
    ("ADVP|PRT", "ADVP"), ("-NONE-", "-NONE-"), ("-LRB-", "-LRB-"), ("NP", "NP"), ("", "")])
def test_strip_function_tag(label, expected):
    assert strip_function_tag(label) == expected


@pytest.mark.parametrize("text,message", [
    ("( (S (NN a)) ))\n", r"<string>:1: unbalanced brackets: '\)' closes nothing"),
    ("\n\n( (S (NN a)\n", r"<string>:3: unbalanced brackets: the '\(' opened here is never closed"),
    ("(S (NN a))\nword\n", r"<string>:2: text 'word' outside any bracket"),
    ("(S\n (NN a b))", r"<string>:2: bracket 'NN' has more than one word"),
    ("(S (NP) (NN a))", r"<string>:1: empty bracket '\(NP\)'"),
    ("(S (NN a) b)", r"<string>:1: bracket 'S' has more than one word or mixes"),
    ("(S a (NN b))", r"<string>:1: bracket 'S' holds both a word and a constituent"),
    ("  \n \n", r"<string>: no trees found"),
])
def test_malformed_text_names_the_line(text, message):
    with pytest.raises(TreebankFormatError, match=message):
        parse_trees(text)


def test_read_treebank_errors_name_the_file(tmp_path):
    good = tmp_path / "wsj_0001.mrg"
    good.write_text(MRG_TEXT)
    empty = tmp_path / "wsj_0002.mrg"
    empty.write_text("\n")
    with pytest.raises(TreebankFormatError, match=re.escape(f"{empty}: no trees found")):
        read_treebank([str(good), str(empty)])
    wordless = tmp_path / "wsj_0003.mrg"
    wordless.write_text(MRG_TEXT + "\n( (S (-NONE- *)) )\n")
    with pytest.raises(TreebankFormatError, match=re.escape(f"{wordless}:10: tree has no words")):
        read_treebank([str(wordless)])
    assert len(read_treebank([str(good)])) == 2


def test_trees_written_one_a_line_read_back(tmp_path):
    trees = read_treebank([_write(tmp_path / "a.mrg", MRG_TEXT)])
    path = str(tmp_path / "trees.txt")
    (tmp_path / "trees.txt").write_text("".join(f"{tree}\n" for tree in trees))
    assert len(open(path).read().splitlines()) == 2
    assert read_tree_file(path) == trees


def test_replace_tags():
    tree = preprocess(parse_trees(MRG_TEXT)[0])
    replaced = replace_tags(tree, ["A", "B", "C", "D"])
    assert replaced.tags() == ["A", "B", "C", "D"] and replaced.words() == tree.words()
    assert tree.tags() == ["NNP", "NNP", "VBD", "."]
    with pytest.raises(ValueError, match="got 1 tags for a tree of 4 words"):
        replace_tags(tree, ["A"])


def test_wsj_split_files_ldc_layout(tmp_path):
    wsj = tmp_path / "parsed" / "mrg" / "wsj"
    for section in ("00", "02", "21", "22", "23", "24"):
        for number in ("00", "01"):
            _write(wsj / section / f"wsj_{section}{number}.mrg", MRG_TEXT)
    names = lambda split: [os.path.basename(p) for p in wsj_split_files(str(tmp_path), split)]
    assert names("train") == ["wsj_0200.mrg", "wsj_0201.mrg", "wsj_2100.mrg", "wsj_2101.mrg"]
    assert names("dev") == ["wsj_2200.mrg", "wsj_2201.mrg"]
    assert names("test") == ["wsj_2300.mrg", "wsj_2301.mrg"]
    assert wsj_split_files(str(wsj), "dev") == wsj_split_files(str(tmp_path), "dev")
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        wsj_split_files(str(tmp_path), "valid")
    with pytest.raises(FileNotFoundError, match="no WSJ sections"):
        wsj_split_files(str(tmp_path / "parsed"), "train")


def test_file_range_files(tmp_path):
    for number in range(1, 6):
        _write(tmp_path / f"wsj_{number:04d}.mrg", MRG_TEXT)
    _write(tmp_path / "README", "not a treebank file")
    paths = file_range_files(str(tmp_path), "wsj_0002", "wsj_0004")
    assert [os.path.basename(p) for p in paths] == ["wsj_0002.mrg", "wsj_0003.mrg", "wsj_0004.mrg"]
    with pytest.raises(FileNotFoundError, match="no .mrg files named wsj_0100.mrg"):
        file_range_files(str(tmp_path), "wsj_0100", "wsj_0199")


def _write(path, text) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return str(path)


@pytest.fixture(scope="module")
def sample_files():
    if not os.path.isdir(PTB_SAMPLE):
        pytest.skip(f"Penn Treebank sample not found at {os.path.normpath(PTB_SAMPLE)}")
    return file_range_files(PTB_SAMPLE, "wsj_0001", "wsj_0199")


def test_real_sample_reads_completely_and_cleanly(sample_files):
    trees = read_treebank(sample_files)
    # Independent count: in LDC files every tree, and nothing else, starts in column 0.
    starts = sum(line.startswith("(") for path in sample_files for line in open(path))
    assert len(trees) == starts
    assert len(trees) == EXPECTED_TREES[len(sample_files)]
    phrase_label = re.compile(r"^[A-Z]+$")
    for tree in trees:
        assert "-NONE-" not in tree.tags()
        stack = [tree]
        while stack:
            node = stack.pop()
            if not node.is_preterminal:
                assert phrase_label.match(node.label), f"function tag left in {node.label!r}"
                assert node.children, "empty constituent left"
                stack.extend(node.children)


def nested(depth: int) -> str:
    return "(X " * (depth - 1) + "(NN word)" + ")" * (depth - 1)


def test_trees_as_deep_as_max_depth_go_through_every_recursive_walk(tmp_path):
    from t2t_lite.parsing.evalb import evalb
    from t2t_lite.parsing.linearize import linearize
    tree = parse_trees(nested(MAX_DEPTH))[0]
    assert str(tree) == nested(MAX_DEPTH)
    assert len(linearize(preprocess(tree))) > MAX_DEPTH
    assert evalb([tree], [tree]).all.f1 == 100.0


def test_deeper_trees_are_refused_with_file_and_line(tmp_path):
    path = _write(tmp_path / "deep.trees", "(S (NN a))\n" + nested(50_000) + "\n")
    with pytest.raises(TreebankFormatError,
                       match=re.escape(f"{path}:2: brackets nested more than {MAX_DEPTH} deep")):
        read_tree_file(path)
    with pytest.raises(TreebankFormatError, match=r"deep\.trees:2: brackets nested"):
        read_treebank([path])


def test_tree_files_are_read_strictly_with_tabs_as_white_space(tmp_path):
    path = str(tmp_path / "tabs.trees")
    open(path, "wb").write("\ufeff(S\t(NN a))\r\n".encode())
    assert [str(t) for t in read_tree_file(path)] == ["(S (NN a))"]
    with pytest.raises(ValueError, match=r"nul\.trees:1: control character U\+0000"):
        read_tree_file(_write(tmp_path / "nul.trees", "(S (NN a\x00))\n"))
    plain = _write(tmp_path / "plain.gz", "(S (NN a))\n")
    with pytest.raises(ValueError, match="is named .gz but is not gzip data"):
        read_tree_file(plain)
