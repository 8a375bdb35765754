"""Tests for t2t_lite.parsing.linearize: the scheme, its inverse with repair, the decoding constraint."""
import os

import numpy as np
import pytest

from t2t_lite.parsing.linearize import (
    Kind, LinearizationConstraint, SlotToken, allowed_kinds, delinearize, linearize,
    linearize_example, next_state, token_kinds, with_placeholder_tags)
from t2t_lite.parsing.trees import Tree, file_range_files, parse_trees, read_treebank

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTB_SAMPLE = os.path.join(REPO_ROOT, "..", "shared", "data", "ptb_sample", "combined")

DOG = parse_trees("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))")[0]
WORDS = ["John", "has", "a", "dog", "."]


def test_linearize_scheme():
    assert " ".join(linearize(DOG)) == "(S (NP XX ) (VP XX (NP XX XX ) ) XX )"
    assert " ".join(linearize(DOG, labelled_closers=True)) == (
        "(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S")
    assert " ".join(linearize(DOG, SlotToken.POS)) == (
        "(S (NP (NNP John ) (VP (VBZ has (NP (DT a (NN dog ) ) (. . )")
    assert linearize_example(DOG) == {"inputs": "John has a dog .",
                                      "targets": "(S (NP XX ) (VP XX (NP XX XX ) ) XX )"}


def test_lexical_targets_spell_the_words_and_round_trip():
    tokens = linearize(DOG, SlotToken.WORD)
    assert " ".join(tokens) == "(S (NP John ) (VP has (NP a dog ) ) . )"
    # Word slots take the sentence's words whatever the model wrote there.
    assert delinearize(tokens, WORDS, SlotToken.WORD) == with_placeholder_tags(DOG)
    unknown = ["<UNK>" if t == "John" else t for t in tokens]
    assert delinearize(unknown, WORDS, SlotToken.WORD) == with_placeholder_tags(DOG)
    # With placeholder slots the words would be unknown tokens, dropped and appended.
    assert delinearize(tokens, WORDS) != with_placeholder_tags(DOG)


@pytest.mark.parametrize("slot_token", [SlotToken.PLACEHOLDER, SlotToken.POS])
@pytest.mark.parametrize("labelled_closers", [False, True])
def test_round_trip(slot_token, labelled_closers):
    tokens = linearize(DOG, slot_token, labelled_closers)
    expected = DOG if slot_token is SlotToken.POS else with_placeholder_tags(DOG)
    assert delinearize(tokens, WORDS, slot_token) == expected
    assert delinearize(" ".join(tokens), WORDS, slot_token) == expected


@pytest.mark.parametrize("prediction,words,expected", [
    # Extra word slots are dropped.
    ("(S (NP XX XX XX ) )", "a b", "(S (NP (XX a) (XX b)))"),
    # Missing words go to the innermost open constituent; open brackets are closed.
    ("(S (VP XX (NP XX", "a b c d", "(S (VP (XX a) (NP (XX b) (XX c) (XX d))))"),
    # Nothing open: missing words join the top level, and a TOP root wraps the pieces.
    ("(S (NP XX ) )", "a b", "(TOP (S (NP (XX a))) (XX b))"),
    # A closer with nothing open is dropped.
    (") (S XX ) )", "a", "(S (XX a))"),
    # Unknown tokens (a word, a bare bracket, a reserved symbol) are dropped.
    ("(S foo ( XX <unk> )", "a", "(S (XX a))"),
    # Closing an empty constituent drops it.
    ("(S (NP ) XX (VP (PP ) ) )", "a", "(S (XX a))"),
    # A trailing opener left empty is dropped.
    ("(S XX ) (NP", "a", "(S (XX a))"),
    # Several top-level constituents are wrapped in TOP.
    ("(NP XX ) (VP XX )", "a b", "(TOP (NP (XX a)) (VP (XX b)))"),
    # A labelled closer closes the innermost constituent whatever its label.
    ("(S (NP XX )VP XX )S", "a b", "(S (NP (XX a)) (XX b))"),
    # Empty predictions still give trees.
    ("", "a b", "(TOP (XX a) (XX b))"),
    ("", "a", "(TOP (XX a))"),
    ("(S XX )", "a", "(S (XX a))"),
])
def test_repairs(prediction, words, expected):
    assert str(delinearize(prediction, words.split())) == expected


def test_repairs_pos_slots():
    # Words take the tag just before them; a tag without its word, or a word
    # without a tag (XX), is repaired like any other malformed prediction.
    tree = delinearize("(S (NN x (NP (JJ y (DT (NP z", ["a", "b", "c"], SlotToken.POS)
    assert str(tree) == "(S (NN a) (NP (JJ b) (NP (XX c))))"
    # A tag's opener is not a constituent: words of the shared vocabulary that
    # spell a tag ("," is a word and a tag) stay words.
    assert str(delinearize("(S (, , (NN NN )", [",", "NN"], SlotToken.POS)) == "(S (, ,) (NN NN))"


def test_delinearize_needs_words():
    with pytest.raises(ValueError, match="at least one word"):
        delinearize("(S XX )", [])


def _is_well_formed(tree: Tree) -> bool:
    if tree.is_preterminal:
        return True
    return bool(tree.children) and all(map(_is_well_formed, tree.children))


def test_random_predictions_always_give_trees_over_the_words():
    rng = np.random.default_rng(0)
    pieces = ["(S", "(NP", "(VP", ")", ")NP", "XX", "XX", "XX", "junk", "("]
    for _ in range(300):
        words = [f"w{i}" for i in range(rng.integers(1, 6))]
        prediction = list(rng.choice(pieces, size=rng.integers(0, 15)))
        tree = delinearize(prediction, words)
        assert tree.words() == words and _is_well_formed(tree)
        # A repaired tree is a fixed point: it linearizes to a sequence needing no repair.
        assert delinearize(linearize(tree), words) == tree


def test_allowed_kinds_rules():
    def allowed(placed, depth, last_open, num_words, last_tag=False, tagged=False):
        mask = allowed_kinds(placed, depth, last_open, num_words, last_tag, tagged)
        return {kind.name for kind in Kind if mask[kind]}

    assert allowed(0, 0, False, 2) == {"OPEN"}                    # start: only the root opens
    assert allowed(0, 1, True, 2) == {"OPEN", "WORD"}             # just opened: no closer
    assert allowed(1, 2, False, 2) == {"OPEN", "WORD", "CLOSE"}
    assert allowed(1, 1, False, 2) == {"OPEN", "WORD"}            # the root can't close early
    assert allowed(2, 2, False, 2) == {"CLOSE"}                   # all placed: only close
    assert allowed(2, 1, False, 2) == {"CLOSE"}
    assert allowed(2, 0, False, 2) == {"EOS"}                     # done
    # Tagged words: a tag goes where a word could, and only the word follows it.
    assert allowed(0, 1, True, 2, tagged=True) == {"OPEN", "TAG"}
    assert allowed(1, 2, False, 2, tagged=True) == {"OPEN", "TAG", "CLOSE"}
    assert allowed(1, 2, False, 2, last_tag=True, tagged=True) == {"WORD"}
    assert allowed(2, 1, False, 2, tagged=True) == {"CLOSE"}


def test_allowed_kinds_is_vectorized():
    placed, depth, last_open = np.meshgrid(np.arange(4), np.arange(4), [False, True], indexing="ij")
    batch = allowed_kinds(placed, depth, last_open, 3)
    assert batch.shape == (4, 4, 2, len(Kind))
    for index in np.ndindex(placed.shape):
        assert (batch[index] == allowed_kinds(placed[index], depth[index], last_open[index], 3)).all()
    placed, depth, last, tag = next_state(np.array([0, 1, 1, 1]), np.array([1, 1, 2, 1]),
                                          np.array([Kind.OPEN, Kind.WORD, Kind.CLOSE, Kind.TAG]))
    assert placed.tolist() == [0, 2, 1, 1] and depth.tolist() == [2, 1, 1, 1]
    assert last.tolist() == [True, False, False, False]
    assert tag.tolist() == [False, False, False, True]


VOCAB = ["<pad>", "<EOS>", "(S", "(NP", ")", "XX", ")NP", "foo", "("]


def test_token_kinds():
    assert token_kinds(VOCAB, eos_id=1, pad_id=0).tolist() == [
        Kind.OTHER, Kind.EOS, Kind.OPEN, Kind.OPEN, Kind.CLOSE, Kind.WORD, Kind.CLOSE,
        Kind.OTHER, Kind.OTHER]
    with_pos = token_kinds(VOCAB + ["NN", "(NN"], eos_id=1, pad_id=0, slot_token=SlotToken.POS)
    assert with_pos[7] == Kind.WORD and with_pos[9] == Kind.WORD and with_pos[0] == Kind.OTHER
    assert with_pos[10] == Kind.TAG and with_pos[3] == Kind.OPEN


@pytest.mark.parametrize("slot_token", [SlotToken.PLACEHOLDER, SlotToken.POS])
def test_constrained_random_walks_give_well_formed_sequences(slot_token):
    """Sampling only allowed ids never stalls and always yields a sequence needing no repair."""
    rng = np.random.default_rng(1)
    tagged = slot_token is SlotToken.POS
    # With tags, "XX" and "foo" are words (targets spell them) and "(NN" a tag.
    vocab = VOCAB + ["(NN"] if tagged else VOCAB
    never = [0, 8] if tagged else [0, 7, 8]
    for _ in range(200):
        num_words = int(rng.integers(1, 6))
        constraint = LinearizationConstraint(num_words, vocab, eos_id=1, pad_id=0,
                                             slot_token=slot_token)
        tokens = []
        while True:
            allowed = np.flatnonzero(constraint.allowed_ids())
            assert allowed.size, f"stalled after {tokens}"
            assert not set(never) & set(allowed)
            token_id = int(rng.choice(allowed))
            if token_id == 1:
                break
            constraint.update(token_id)
            tokens.append(vocab[token_id])
            assert len(tokens) < 500
        words = [f"w{i}" for i in range(num_words)]
        tree = delinearize(tokens, words, slot_token)
        expected = [")" if t == ")NP" else t for t in tokens]
        if tagged:   # the words of the tree replace those the walk wrote
            expected = [f"w{sum(1 for u in tokens[:i] if u in ('XX', 'foo'))}"
                        if t in ("XX", "foo") else t for i, t in enumerate(expected)]
        assert linearize(tree, slot_token) == expected


def test_constraint_accepts_gold_and_rejects_bad_ids():
    vocab = VOCAB + ["(VP"]
    constraint = LinearizationConstraint(len(WORDS), vocab, eos_id=1, pad_id=0)
    for token in linearize(DOG):
        constraint.update(vocab.index(token))
    assert np.flatnonzero(constraint.allowed_ids()).tolist() == [1]
    fresh = LinearizationConstraint(2, vocab)   # PAD_ID 0 and EOS_ID 1 by default
    with pytest.raises(ValueError, match=r"token id 5 \(WORD\) is not allowed after 0 of 2 words"):
        fresh.update(5)


def test_real_sample_round_trips():
    if not os.path.isdir(PTB_SAMPLE):
        pytest.skip(f"Penn Treebank sample not found at {os.path.normpath(PTB_SAMPLE)}")
    # Every fourth file of the sample (about 900 trees): the suite's time.
    trees = read_treebank(file_range_files(PTB_SAMPLE, "wsj_0001", "wsj_0199")[::4])
    for tree in trees:
        words = tree.words()
        assert delinearize(linearize(tree), words) == with_placeholder_tags(tree)
        assert delinearize(linearize(tree, SlotToken.POS, labelled_closers=True), words,
                           SlotToken.POS) == tree
