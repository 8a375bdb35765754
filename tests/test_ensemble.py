"""Ensemble: the mean of its models' next-token distributions, searched like one model."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.ensemble import Ensemble
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions

from toy_models import ToyRecurrentModel
from toys import tiny_transformer

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


def _forced_outputs(model, input_row, tokens, max_length):
    """What ``model.decode_step`` returns [len(tokens), V] when fed ``tokens`` one at a
    time (PAD first), as the search would along that hypothesis."""
    state = model.initial_decode_state(model.encode(input_row[None]), tf.constant(max_length))
    outputs, previous = [], PAD_ID
    for step, token in enumerate(tokens):
        output, state = model.decode_step(tf.constant([previous]), tf.constant(step), state)
        outputs.append(output.numpy()[0])
        previous = token
    return np.array(outputs, np.float64)


def _through_eos(ids):
    ids = [int(i) for i in ids]
    return ids[:ids.index(EOS_ID) + 1] if EOS_ID in ids else ids


def _decode(model, beam_size=3, alpha=0.6):
    return [t.numpy() for t in BeamSearchDecoder(model, SearchOptions(beam_size=beam_size,
                                                                      alpha=alpha))(INPUTS, 6)]


def test_each_step_is_the_mean_of_the_models_probabilities():
    first, second = ToyRecurrentModel(seed=0), ToyRecurrentModel(seed=1)
    expected = np.log((np.exp(_first_steps(first)) + np.exp(_first_steps(second))) / 2)
    np.testing.assert_allclose(_first_steps(Ensemble([first, second])), expected, atol=1e-5)


def test_an_ensemble_of_one_model_with_itself_decodes_as_the_model():
    """The mean of one distribution is itself; and every member counts alike, so the
    order of the members changes nothing (an ensemble that kept its first member's
    distribution would decode [a, b] as a and [b, a] as b)."""
    model, other = ToyRecurrentModel(seed=3), ToyRecurrentModel(seed=4)
    alone, twice = _decode(model), _decode(Ensemble([model, model]))
    np.testing.assert_array_equal(alone[0], twice[0])
    np.testing.assert_allclose(alone[1], twice[1], atol=1e-5)
    pair, swapped = _decode(Ensemble([model, other])), _decode(Ensemble([other, model]))
    np.testing.assert_array_equal(pair[0], swapped[0])
    np.testing.assert_allclose(pair[1], swapped[1], atol=1e-5)
    assert not np.allclose(pair[1], alone[1]) and not np.allclose(pair[1], _decode(other)[1])


def test_an_ensemble_of_different_models_is_neither_alone():
    """Each hypothesis the ensemble's search returns scores the sum of its tokens' log
    mean probability over the members, recomputed here from the members themselves,
    and the ensemble's own step gives those log-probabilities as they are (not a max,
    a sum or a mean of logits, which the search's renormalization could hide)."""
    models = [ToyRecurrentModel(seed=0), ToyRecurrentModel(seed=1)]
    ensemble = Ensemble(models)
    ids, scores = _decode(ensemble, beam_size=2, alpha=0.0)  # scores: plain log-probs
    assert np.isfinite(scores[:, 0]).all()
    for row in range(len(INPUTS)):
        for beam in np.flatnonzero(np.isfinite(scores[row])):
            tokens = _through_eos(ids[row, beam])
            steps = np.arange(len(tokens))
            members = [tf.nn.log_softmax(_forced_outputs(m, INPUTS[row], tokens, 6)).numpy()
                       for m in models]
            mean = np.log(np.mean(np.exp(members), axis=0))
            np.testing.assert_allclose(_forced_outputs(ensemble, INPUTS[row], tokens, 6), mean,
                                       atol=1e-5)
            assert scores[row, beam] == pytest.approx(mean[steps, tokens].sum(), abs=1e-4)
    for model in models:
        assert not np.allclose(scores, _decode(model, beam_size=2, alpha=0.0)[1])


def test_models_of_other_vocabularies_are_refused():
    with pytest.raises(ValueError, match=r"vocabularies; theirs differ: 6 -> 6 ids \(shared\), "
                                         r"7 -> 7 ids \(shared\)$"):
        Ensemble([ToyRecurrentModel(vocab_size=6), ToyRecurrentModel(vocab_size=7)])
    # A source vocabulary of their own (even of the target's size) is another one.
    separate = [tiny_transformer(6, input_vocab_size=size) for size in (6, 5)]
    for others in ([separate[0], tiny_transformer(6)], separate):
        with pytest.raises(ValueError, match=r"theirs differ: 5 -> 6 ids, 6 -> 6 ids$|"
                                             r"theirs differ: 6 -> 6 ids, 6 -> 6 ids \(shared\)$"):
            Ensemble(others)
    assert Ensemble([separate[1], tiny_transformer(6, input_vocab_size=5)]).input_vocab_size == 5
    with pytest.raises(ValueError, match="at least one model"):
        Ensemble([])
