"""TreeConstraint: the TF logits mask against the NumPy rules, and constrained beam / greedy
search over an untrained Transformer and a toy model always giving well-formed trees."""
import functools

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.decoding.sampling import SamplingOptions
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.hparams.lstm import lstm_attention_base
from t2t_lite.models.luong import LSTMSeq2seqAttentionLuong
from t2t_lite.parsing.linearize import (Kind, LinearizationConstraint, SlotToken, delinearize,
                                        linearize, token_kinds)
from t2t_lite.parsing.tree_constraint import TreeConstraint
from toy_models import ToyRecurrentModel
from toys import tiny_transformer

ENCODER = TokenTextEncoder(["(S", "(NP", "(VP", ")", "XX", "the", "dog", "barks", "loudly"])
TOKENS = ENCODER.tokens
SENTENCES = ["the dog barks loudly", "dog", "the zebra barks", "barks the dog the dog"]


def encode(sentences):
    rows = [ENCODER.encode(sentence) + [EOS_ID] for sentence in sentences]
    batch = np.full((len(rows), max(map(len, rows))), PAD_ID, np.int32)
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return batch


def random_walk(constraint, num_words, max_decode_length, seed, on_step=None):
    """Random allowed ids per row until EOS -> the length of each row (EOS included; 0 if
    unfinished). ``on_step(allowed [rows, V], numpy trackers, done)`` sees every step."""
    rng = np.random.default_rng(seed)
    inputs = encode([" ".join(["dog"] * n) for n in num_words])
    state = constraint.initial_state(tf.constant(inputs), 1, tf.constant(max_decode_length))
    trackers = [LinearizationConstraint(n, TOKENS) for n in num_words]
    lengths = np.zeros(len(num_words), int)
    for step in range(max_decode_length):
        allowed = constraint.allowed(state).numpy()
        if on_step:
            on_step(allowed, trackers, lengths > 0)
        ids = np.array([rng.choice(np.flatnonzero(row)) for row in allowed], np.int32)
        for row, tracker in enumerate(trackers):
            if not lengths[row]:
                tracker.update(int(ids[row]))
                lengths[row] = step + 1 if ids[row] == EOS_ID else 0
        state = constraint.update(state, tf.constant(ids))
        if lengths.all():
            break
    return lengths


def test_mask_matches_the_numpy_rules_on_random_walks():
    deepest = []

    def compare(allowed, trackers, done):
        for row, tracker in enumerate(trackers):
            if not done[row]:
                np.testing.assert_array_equal(allowed[row], tracker.allowed_ids())
                deepest.append(tracker.open_depth)

    lengths = random_walk(TreeConstraint(TOKENS), [1, 2, 3, 5, 8] * 4, 400, 0, compare)
    assert lengths.all()
    assert max(deepest) >= 3, "walks should reach depth 3 to cover every depth class"


@pytest.mark.parametrize("num_words", [1, 3, 8])
@pytest.mark.parametrize("slack", [0, 1, 4])
def test_every_allowed_path_finishes_within_max_decode_length(num_words, slack):
    # The shortest tree of n words is "(S XX .. XX )" + EOS: n + 3 tokens.
    max_decode_length = num_words + 3 + slack
    lengths = random_walk(TreeConstraint(TOKENS), [num_words] * 16, max_decode_length,
                          seed=slack)
    assert lengths.all() and lengths.max() <= max_decode_length
    if slack == 0:
        assert (lengths == max_decode_length).all()


def is_tree(ids, words):
    """Whether ``ids`` end in EOS and are exactly a linearized tree over ``words``."""
    tokens = ENCODER.decode(ids).split()
    return (EOS_ID in list(ids) and tokens.count("XX") == len(words)
            and linearize(delinearize(tokens, words)) == tokens)


def assert_well_formed_trees(ids, scores, sentences):
    """Every returned beam (finite score) is a well-formed tree of its sentence."""
    for row, sentence in enumerate(sentences):
        for beam in range(ids.shape[1]):
            if np.isfinite(scores[row, beam]):
                assert is_tree(ids[row, beam].tolist(), sentence.split()), \
                    ENCODER.decode(ids[row, beam].tolist())


def untrained_transformer():
    return tiny_transformer(ENCODER.vocab_size, seed=3, num_encoder_layers=1,
                            num_decoder_layers=1)


def untrained_luong():
    tf.keras.utils.set_random_seed(3)
    hparams = lstm_attention_base().parse(
        "hidden_size=16,embedding_size=8,num_encoder_layers=1,num_decoder_layers=1,"
        "attention_scope=local_p,initializer_gain=0.3")
    return LSTMSeq2seqAttentionLuong(hparams, ENCODER.vocab_size)


@pytest.mark.parametrize("beam_size", [1, 4])
@pytest.mark.parametrize("make_model", [untrained_transformer, untrained_luong,
                                        lambda: ToyRecurrentModel(len(TOKENS), seed=4)],
                         ids=["transformer", "lstm_luong", "toy"])
def test_constrained_search_gives_well_formed_trees(make_model, beam_size):
    model = make_model()
    inputs = encode(SENTENCES)
    unconstrained_ids, _ = BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, alpha=0.3))(
        inputs, inputs.shape[1] + 12)
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, alpha=0.3,
                                                     constraint=TreeConstraint(TOKENS)))
    ids, scores = (t.numpy() for t in decoder(inputs, inputs.shape[1] + 12))
    assert np.isfinite(scores[:, 0]).all()
    assert_well_formed_trees(ids, scores, SENTENCES)
    # The untrained model alone does not produce trees: the constraint does the work.
    assert not all(is_tree(row[0].tolist(), sentence.split())
                   for row, sentence in zip(unconstrained_ids.numpy(), SENTENCES))


@pytest.mark.parametrize("make_model", [untrained_transformer,
                                        lambda: ToyRecurrentModel(len(TOKENS), seed=4)],
                         ids=["transformer", "toy"])
def test_constrained_samples_are_well_formed_trees(make_model):
    """Sampling draws from the constrained scores: every sample, even drawn flat
    (temperature 3), is a tree of its sentence."""
    options = SamplingOptions(temperature=3.0, num_samples=4)
    decoder = BeamSearchDecoder(make_model(), SearchOptions(beam_size=1,
                                                            constraint=TreeConstraint(TOKENS),
                                                            sampling=options))
    inputs = encode(SENTENCES)
    ids, scores = (t.numpy() for t in decoder(inputs, inputs.shape[1] + 12))
    assert ids.shape[1] == 4 and np.isfinite(scores).all()
    assert_well_formed_trees(ids, scores, SENTENCES)
    assert len({tuple(row) for row in ids[0]}) > 1  # four draws, not one tree four times


@pytest.mark.parametrize("beam_size", [1, 4])
def test_lexical_constraint_copies_the_input_words_in_order(beam_size):
    constraint = TreeConstraint(TOKENS, slot_token=SlotToken.WORD)
    decoder = BeamSearchDecoder(untrained_transformer(),
                                SearchOptions(beam_size=beam_size, alpha=0.3, constraint=constraint))
    inputs = encode(SENTENCES)
    ids, scores = (t.numpy() for t in decoder(inputs, inputs.shape[1] + 12))
    assert np.isfinite(scores[:, 0]).all()
    for row, sentence in enumerate(SENTENCES):
        tokens = ENCODER.decode(ids[row, 0].tolist()).split()
        words = [t for t in tokens if not t.startswith(("(", ")"))]
        expected = ENCODER.decode(ENCODER.encode(sentence)).split()  # zebra -> <UNK>
        assert words == expected, sentence
        # Well-formed: with each word as XX it is exactly a linearized tree, ended by EOS.
        as_slots = " ".join("XX" if t in words else t for t in tokens)
        assert is_tree(ENCODER.encode(as_slots) + [EOS_ID], sentence.split()), tokens


TAGGED_ENCODER = TokenTextEncoder(["(S", "(NP", "(VP", ")", "(DT", "(NN", "(VBZ", "the", "dog",
                                   "barks", "loudly"])


@functools.lru_cache(maxsize=None)
def tagged_decoder(beam_size):
    """The constrained search with POS-tag targets of an untrained Transformer (seed 3),
    built once a beam size: a decoder traces its search once for every batch and decode
    length (a trace is most of a decode's second here), and it keeps no state between
    calls, so the three tagged decodes of beam 4 share one."""
    model = tiny_transformer(TAGGED_ENCODER.vocab_size, seed=3, num_encoder_layers=1,
                             num_decoder_layers=1)
    constraint = TreeConstraint(TAGGED_ENCODER.tokens, slot_token=SlotToken.POS)
    return BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, alpha=0.3,
                                                  constraint=constraint))


def tagged_decode(beam_size, sentences, max_decode_length):
    """An untrained Transformer's constrained decodes of ``sentences`` with POS-tag targets."""
    rows = [TAGGED_ENCODER.encode(sentence) + [EOS_ID] for sentence in sentences]
    inputs = np.full((len(rows), max(map(len, rows))), PAD_ID, np.int32)
    for i, row in enumerate(rows):
        inputs[i, :len(row)] = row
    ids, scores = tagged_decoder(beam_size)(inputs, max_decode_length)
    return ids.numpy(), scores.numpy()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_tagged_constraint_puts_a_tag_before_each_input_word(beam_size):
    sentences = ["the dog barks loudly", "dog", "barks the dog the dog"]
    ids, scores = tagged_decode(beam_size, sentences, 40)
    assert np.isfinite(scores[:, 0]).all()
    tags = {"(DT", "(NN", "(VBZ"}
    for row, sentence in enumerate(sentences):
        tokens = TAGGED_ENCODER.decode(ids[row, 0].tolist()).split()
        words = [t for t in tokens if not t.startswith(("(", ")"))]
        assert words == sentence.split(), tokens
        assert all(tokens[tokens.index(t, i) - 1] in tags for i, t in enumerate(tokens)
                   if t in words)
        tree = delinearize(tokens, sentence.split(), SlotToken.POS)
        assert linearize(tree, SlotToken.POS) == tokens and ids[row, 0].tolist().count(EOS_ID)


def test_tagged_paths_finish_within_max_decode_length():
    # The shortest tagged tree of n words is "(S" + a tag and a word each + ")" + EOS.
    sentences = ["the dog barks", "dog the dog the dog"]
    for slack in (0, 2):
        ids, scores = tagged_decode(4, sentences, 2 * 5 + 3 + slack)
        assert np.isfinite(scores[:, 0]).all()
        for row, sentence in enumerate(sentences):
            tokens = TAGGED_ENCODER.decode(ids[row, 0].tolist()).split()
            assert [t for t in tokens if t[0] not in "()"] == sentence.split()


def constrained_scores(constraint, sentence, prefix, log_probs):
    """``constraint.constrain`` for one hypothesis after the target tokens ``prefix``."""
    state = constraint.initial_state(tf.constant(encode([sentence])), 1, tf.constant(50))
    for token in prefix:
        state = constraint.update(state, tf.constant(ENCODER.encode(token), tf.int32))
    return constraint.constrain(state, tf.constant(log_probs[None, :], tf.float32)).numpy()[0]


def test_allowed_ids_keep_the_model_log_probs_unrenormalized():
    log_probs = np.log(np.random.default_rng(0).dirichlet(np.ones(len(TOKENS))))
    scores = constrained_scores(TreeConstraint(TOKENS), "the dog", ["(S"], log_probs)
    allowed = np.isfinite(scores)
    assert allowed[ENCODER.encode("XX")[0]] and not allowed[ENCODER.encode(")")[0]]
    # A model that puts mass on forbidden ids keeps paying for it: no renormalization.
    np.testing.assert_allclose(scores[allowed], log_probs[allowed], rtol=1e-6)
    assert np.logaddexp.reduce(scores[allowed]) < -0.01


def test_lexical_word_slot_scores_the_whole_word_mass():
    log_probs = np.log(np.random.default_rng(1).dirichlet(np.ones(len(TOKENS))))
    scores = constrained_scores(TreeConstraint(TOKENS, slot_token=SlotToken.WORD), "the dog barks",
                                ["(S", "(NP", "the"], log_probs)
    word_ids = token_kinds(TOKENS, slot_token=SlotToken.WORD) == Kind.WORD   # words, XX and <UNK>
    dog, the = ENCODER.encode("dog")[0], ENCODER.encode("the")[0]
    np.testing.assert_allclose(scores[dog], np.logaddexp.reduce(log_probs[word_ids]),
                               rtol=1e-6)
    assert np.isneginf(scores[the])
    for token in ("(VP", ")"):   # brackets keep their own log-prob
        token_id = ENCODER.encode(token)[0]
        np.testing.assert_allclose(scores[token_id], log_probs[token_id], rtol=1e-6)
    # Once the words are placed, EOS keeps its own log-prob too.
    scores = constrained_scores(TreeConstraint(TOKENS, slot_token=SlotToken.WORD), "the dog",
                                ["(S", "the", "dog", ")"], log_probs)
    assert np.flatnonzero(np.isfinite(scores)).tolist() == [EOS_ID]
    np.testing.assert_allclose(scores[EOS_ID], log_probs[EOS_ID], rtol=1e-6)


def test_tight_max_length_still_finishes_every_tree():
    model = ToyRecurrentModel(len(TOKENS), seed=5)
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=3, alpha=0.3,
                                                     constraint=TreeConstraint(TOKENS)))
    longest = max(len(sentence.split()) for sentence in SENTENCES)
    ids, scores = (t.numpy() for t in decoder(encode(SENTENCES), longest + 3))
    assert_well_formed_trees(ids, scores, SENTENCES)
    # The longest sentence fits only as a flat tree: root, its words, closer, EOS.
    row = next(i for i, s in enumerate(SENTENCES) if len(s.split()) == longest)
    tokens = ENCODER.decode(ids[row, 0].tolist()).split()
    assert tokens[1:] == ["XX"] * longest + [")"]


def test_constraint_rejects_bad_setups():
    with pytest.raises(ValueError, match="allow_eos=False cannot be combined"):
        SearchOptions(beam_size=2, constraint=TreeConstraint(TOKENS), allow_eos=False)
    with pytest.raises(ValueError, match="no OPEN tokens"):
        TreeConstraint(TokenTextEncoder(["XX", ")", "dog"]).tokens)
    # A tagged problem's data from before its targets kept the words (bare tags).
    with pytest.raises(ValueError, match="no POS-tag openers .* Run t2t-datagen again"):
        TreeConstraint(TokenTextEncoder(["(S", ")", "NN", "dog"]).tokens,
                       slot_token=SlotToken.POS)
