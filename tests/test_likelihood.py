"""target_log_probs (t2t-decoder --score_file): the teacher-forced log-probability of a
target equals the one the incremental decoder, which beam search runs, assigns it."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.decoding.likelihood import score_file, target_log_probs
from t2t_lite.decoding.word_alignment import Aligner
from toys import tiny_transformer

ENCODER = TokenTextEncoder(["a", "b", "c", "d"])


def incremental_log_prob(model, source: str, target: str) -> float:
    """Sum of log P(token) over decode_step calls fed the target's own tokens."""
    inputs = tf.constant([ENCODER.encode(source) + [EOS_ID]])
    ids = ENCODER.encode(target) + [EOS_ID]
    state = model.initial_decode_state(model.encode(inputs), tf.constant(len(ids)))
    previous, total = PAD_ID, 0.0
    for step, token in enumerate(ids):
        logits, state = model.decode_step(tf.constant([previous]), tf.constant(step), state)
        total += float(tf.nn.log_softmax(logits)[0, token])
        previous = token
    return total


def test_teacher_forced_scores_equal_the_incremental_decoders():
    model = tiny_model()
    pairs = [("a b c", "d d"), ("b", "a b c d a"), ("c c c c", "")]
    scores, _ = target_log_probs(model, pairs, ENCODER, batch_size=2)  # padding in each batch
    expected = [incremental_log_prob(model, source, target) for source, target in pairs]
    np.testing.assert_allclose(scores, expected, rtol=1e-4)
    assert scores[2] < 0 and len(set(np.round(scores, 4))) == 3


def tiny_model(**overrides):
    return tiny_transformer(ENCODER.vocab_size, seed=3, **overrides)


def test_score_file_counts_unknown_tokens_of_both_sides(tmp_path, caplog):
    path = tmp_path / "pairs.tsv"
    path.write_text("a b\tc d\nzz a\tb yy\r\na\tb\n")
    model = tiny_model()
    scores = score_file(model, str(path), ENCODER)
    assert scores == target_log_probs(model, [("a b", "c d"), ("zz a", "b yy"), ("a", "b")],
                                      ENCODER)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{path}: 2 tokens in 1 line are not in the vocabulary (first: 'zz' line 2, 'yy' "
        "line 2); they were scored as <UNK>"]


def test_long_sources_are_cut_and_long_targets_refused(caplog):
    model = tiny_model(position_embedding="learned", max_length=4)
    long = "a b c d a b"
    assert target_log_probs(model, [(long, "a"), ("a", "b")], ENCODER, max_length=4,
                            name="f.tsv") == target_log_probs(
        model, [("a b c", "a"), ("a", "b")], ENCODER, max_length=4)
    assert "f.tsv: 1 of 2 input lines are longer than the 3 tokens" in caplog.text
    with pytest.raises(ValueError, match=r"f\.tsv:2: the target has 6 tokens, more than the 3 "
                                         "this model takes"):
        target_log_probs(model, [("a", "b"), ("a", long)], ENCODER, max_length=4, name="f.tsv")


def test_given_pairs_are_aligned_as_each_pair_alone():
    model = tiny_model()
    aligner = Aligner(model, ENCODER, ENCODER)
    pairs = [("a b c", "d d"), ("b", "a b c d a"), ("c c c c", "")]
    scores, alignments = target_log_probs(model, pairs, ENCODER, batch_size=2, aligner=aligner)
    assert scores == target_log_probs(model, pairs, ENCODER, batch_size=2)[0]
    alone = [target_log_probs(model, [pair], ENCODER, aligner=aligner)[1][0] for pair in pairs]
    assert alignments == alone and alignments[2] == ""
    assert [len(one.split()) for one in alignments[:2]] == [2, 5]  # a link a target word
