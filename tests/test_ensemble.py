"""Ensemble: the mean of its models' next-token distributions, searched like one model."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.ensemble import Ensemble

from toy_models import ToyRecurrentModel

INPUTS = tf.constant([[2, 3, 4, 1], [5, 2, 1, 0]])


def _first_steps(model, steps=3):
    """log P(next token) of ``model`` after feeding ids 2, 3, ... for ``steps`` steps."""
    state = model.initial_decode_state(model.encode(INPUTS), tf.constant(8))
    out = []
    for step in range(steps):
        logits, state = model.decode_step(tf.constant([step + 2, step + 2]), tf.constant(step),
                                          state)
        out.append(tf.nn.log_softmax(logits).numpy())
    return np.stack(out)


def test_each_step_is_the_mean_of_the_models_probabilities():
    first, second = ToyRecurrentModel(seed=0), ToyRecurrentModel(seed=1)
    expected = np.log((np.exp(_first_steps(first)) + np.exp(_first_steps(second))) / 2)
    np.testing.assert_allclose(_first_steps(Ensemble([first, second])), expected, atol=1e-5)


def test_an_ensemble_of_one_model_with_itself_decodes_as_the_model():
    model = ToyRecurrentModel(seed=3)
    alone = BeamSearchDecoder(model, beam_size=3, alpha=0.6)(INPUTS, 6)
    twice = BeamSearchDecoder(Ensemble([model, model]), beam_size=3, alpha=0.6)(INPUTS, 6)
    np.testing.assert_array_equal(alone[0], twice[0])
    np.testing.assert_allclose(alone[1], twice[1], atol=1e-5)


def test_an_ensemble_of_different_models_is_neither_alone():
    models = [ToyRecurrentModel(seed=0), ToyRecurrentModel(seed=1)]
    ensemble = BeamSearchDecoder(Ensemble(models), beam_size=2, alpha=0.6)(INPUTS, 6)
    each = [BeamSearchDecoder(m, beam_size=2, alpha=0.6)(INPUTS, 6) for m in models]
    assert all(not np.allclose(ensemble[1], scores) for _, scores in each)


def test_models_of_other_vocabularies_are_refused():
    with pytest.raises(ValueError, match=r"vocabulary sizes differ: \[6, 7\]"):
        Ensemble([ToyRecurrentModel(vocab_size=6), ToyRecurrentModel(vocab_size=7)])
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])
