"""target_log_probs (t2t-decoder --score_file): the teacher-forced log-probability of a
target equals the one the incremental decoder, which beam search runs, assigns it."""
import numpy as np
import tensorflow as tf

from t2t_lite.data.encoders import EOS_ID, PAD_ID, TokenTextEncoder
from t2t_lite.decoding.likelihood import target_log_probs
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.models.transformer import Transformer

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
    tf.keras.utils.set_random_seed(3)
    hparams = transformer_tiny()
    hparams.override_from_dict({"hidden_size": 16, "filter_size": 32, "num_heads": 2})
    model = Transformer(hparams, ENCODER.vocab_size)
    pairs = [("a b c", "d d"), ("b", "a b c d a"), ("c c c c", "")]
    scores = target_log_probs(model, pairs, ENCODER, batch_size=2)  # padding in each batch
    expected = [incremental_log_prob(model, source, target) for source, target in pairs]
    np.testing.assert_allclose(scores, expected, rtol=1e-4)
    assert scores[2] < 0 and len(set(np.round(scores, 4))) == 3
