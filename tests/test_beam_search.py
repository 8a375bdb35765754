"""Beam and greedy search against exhaustive enumeration on tiny toy models."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.beam_search import beam_search, greedy_search
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.top_k import block_length, top_k_by_blocks
from toy_models import InputLengthModel, ScriptedModel, ToyRecurrentModel

INPUTS = np.array([[2, 3, 4, 1], [5, 1, 0, 0], [3, 3, 5, 1], [4, 2, 1, 0]], np.int32)


def penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def start_state(model, input_row, rows, max_len):
    inputs = np.repeat(np.asarray([input_row], np.int32), rows, axis=0)
    return model.initial_decode_state(model.encode(inputs), tf.constant(max_len))


def all_finished_scores(model, input_row, max_len, alpha):
    """{sequence ending in EOS: length-penalized score} for every length <= max_len."""
    vocab = model.vocab_size
    tokens = np.array([t for t in range(vocab) if t != EOS_ID])
    prefixes, log_probs, prev = [()], np.zeros(1), np.array([PAD_ID])
    state = start_state(model, input_row, 1, max_len)
    scores = {}
    for step in range(max_len):
        logits, state = model.decode_step(tf.constant(prev, tf.int32), tf.constant(step), state)
        step_log_probs = log_softmax(logits)
        for row, prefix in enumerate(prefixes):
            scores[prefix + (EOS_ID,)] = ((log_probs[row] + step_log_probs[row, EOS_ID])
                                          / penalty(step + 1, alpha))
        rows = np.repeat(np.arange(len(prefixes)), len(tokens))
        prev = np.tile(tokens, len(prefixes))
        prefixes = [prefixes[r] + (int(t),) for r, t in zip(rows, prev)]
        log_probs = log_probs[rows] + step_log_probs[rows, prev]
        state = tf.nest.map_structure(lambda t: tf.gather(t, rows), state)
    return scores


def sequence_log_prob(model, input_row, seq):
    """Log-prob of ``seq`` under the model's teacher-forced ``call``."""
    features = {"inputs": np.asarray([input_row], np.int32),
                "targets": np.asarray([seq], np.int32)}
    log_probs = log_softmax(model(features)[0])
    return log_probs[np.arange(len(seq)), list(seq)].sum()


def through_eos(ids):
    """The ids up to and including the first EOS (all of them if there is none)."""
    ids = [int(i) for i in ids]
    return tuple(ids[:ids.index(EOS_ID) + 1]) if EOS_ID in ids else tuple(ids)


def stepwise_argmax(model, input_row, max_len):
    state = start_state(model, input_row, 1, max_len)
    prev, out = PAD_ID, []
    for step in range(max_len):
        logits, state = model.decode_step(tf.constant([prev]), tf.constant(step), state)
        prev = int(np.argmax(logits[0]))
        out.append(prev)
        if prev == EOS_ID:
            break
    return tuple(out)


def test_beam_of_one_is_greedy_and_greedy_is_stepwise_argmax():
    model = ToyRecurrentModel(seed=2)
    greedy = greedy_search(model, INPUTS, tf.constant(10)).numpy()
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=1, alpha=0.6))(INPUTS, 10)
    np.testing.assert_array_equal(ids.numpy()[:, 0], greedy)
    lengths = set()
    for row, input_row in enumerate(INPUTS):
        expected = stepwise_argmax(model, input_row, 10)
        lengths.add(len(expected))
        assert through_eos(greedy[row]) == expected
        assert not greedy[row, len(expected):].any()  # PAD after EOS
        log_prob = sequence_log_prob(model, input_row, expected)
        assert scores.numpy()[row, 0] == pytest.approx(log_prob / penalty(len(expected), 0.6),
                                                       abs=1e-4)
    assert len(lengths) > 1, "toy inputs should give outputs of different lengths"


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_returns_every_finished_sequence_best_first(alpha):
    # Vocabulary 4 and length 4: 40 finished sequences, 27 alive at the end; a
    # beam of 64 never prunes, so it must return exactly the enumerated ranking.
    model = ToyRecurrentModel(vocab_size=4, seed=1)
    inputs = np.array([[2, 3, 1], [3, 1, 0]], np.int32)
    ids, scores = BeamSearchDecoder(
        model, SearchOptions(beam_size=64, alpha=alpha, stop_rule="exact"))(inputs, 4)
    ids, scores = ids.numpy(), scores.numpy()
    for row in range(2):
        expected = all_finished_scores(model, inputs[row], 4, alpha)
        assert len(expected) == 40
        found = {through_eos(ids[row, k]): scores[row, k] for k in range(40)}
        assert set(found) == set(expected)
        for seq, score in found.items():
            assert score == pytest.approx(expected[seq], abs=1e-4)
        best = max(expected, key=expected.get)
        assert through_eos(ids[row, 0]) == best
        assert np.all(np.diff(scores[row, :40]) <= 1e-6)
        assert np.all(scores[row, 40:] == -np.inf)


def test_narrow_beam_scores_match_teacher_forcing_and_items_are_independent():
    model = ToyRecurrentModel(seed=3)
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=4, alpha=0.6))
    ids, scores = (t.numpy() for t in decoder(INPUTS, 8))
    for row, input_row in enumerate(INPUTS):
        assert np.all(np.diff(scores[row]) <= 1e-6)
        for k in range(4):
            seq = through_eos(ids[row, k])
            assert seq[-1] == EOS_ID and not ids[row, k, len(seq):].any()
            expected = sequence_log_prob(model, input_row, seq) / penalty(len(seq), 0.6)
            assert scores[row, k] == pytest.approx(expected, abs=1e-4)
        alone_ids, alone_scores = decoder(input_row[None], 8)
        width = alone_ids.shape[-1]
        np.testing.assert_array_equal(alone_ids.numpy()[0], ids[row, :, :width])
        assert not ids[row, :, width:].any()
        np.testing.assert_allclose(alone_scores.numpy()[0], scores[row], atol=1e-5)


def scripted(*rows):
    """Per-step logits from per-step probabilities over (PAD, EOS, a=2, b=3)."""
    with np.errstate(divide="ignore"):
        return ScriptedModel(np.log(np.array(rows, np.float64)))


def test_finished_hypothesis_beats_a_more_probable_unfinished_one():
    # "EOS" (p=0.3) is finished; "a a a" (p~0.7) never ends within 3 steps.
    model = scripted([0.0, 0.3, 0.7, 0.0], [0.0, 1e-6, 1 - 2e-6, 1e-6])
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))(INPUTS[:1], 3)
    assert through_eos(ids.numpy()[0, 0]) == (EOS_ID,)
    assert scores.numpy()[0, 0] == pytest.approx(np.log(0.3) / penalty(1, 0.6), abs=1e-5)


def test_without_finished_hypotheses_the_alive_ones_are_returned():
    model = scripted([0.0, 0.0, 0.7, 0.3])  # EOS has probability 0
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))(INPUTS[:2], 3)
    np.testing.assert_array_equal(ids.numpy()[:, 0], [[2, 2, 2]] * 2)
    np.testing.assert_allclose(scores.numpy()[:, 0], 3 * np.log(0.7) / penalty(3, 0.6),
                               atol=1e-5)


def test_length_penalty_lets_a_longer_hypothesis_win():
    # "EOS" at step 0 is more probable than "a a a a EOS", but alpha=2 favours length.
    ones = [0.0, 0.05, 0.9, 0.05]
    model = scripted([0.0, 0.5, 0.5, 0.0], ones, ones, ones, [0.0, 0.9, 0.05, 0.05])
    expected = all_finished_scores(model, INPUTS[0], 6, 2.0)
    best = max(expected, key=expected.get)
    assert best == (2, 2, 2, 2, EOS_ID) and expected[best] > expected[(EOS_ID,)]
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=2.0,
                                                         stop_rule="exact"))(INPUTS[:1], 6)
    assert through_eos(ids.numpy()[0, 0]) == best
    assert scores.numpy()[0, 0] == pytest.approx(expected[best], abs=1e-5)


def test_search_stops_early_once_no_alive_hypothesis_can_win():
    # After one token, EOS is almost certain: the search settles after 2 steps
    # and the result does not depend on how far it was allowed to go.
    model = scripted([0.0, 0.1, 0.6, 0.3], [0.0, 0.98, 0.01, 0.01])
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))
    short_ids, short_scores = decoder(INPUTS[:1], 6)
    long_ids, long_scores = decoder(INPUTS[:1], 50)
    assert long_ids.shape[-1] == 2
    np.testing.assert_array_equal(long_ids.numpy(), short_ids.numpy()[:, :, :2])
    np.testing.assert_allclose(long_scores.numpy(), short_scores.numpy())
    assert through_eos(long_ids.numpy()[0, 0]) == (2, EOS_ID)


def test_early_stop_bounds_alive_hypotheses_with_the_longest_length_penalty():
    # After 2 steps "a a" is far behind the finished "a EOS" and "EOS", but with
    # alpha=2 its length-10 continuation wins: the search must not stop there.
    model = scripted([0.0, 0.45, 0.45, 0.1], [0.0, 0.8, 0.2, 0.0],
                     *[[0.0, 1e-3, 1 - 1e-3, 0.0]] * 7, [0.0, 1 - 1e-3, 1e-3, 0.0])
    expected = all_finished_scores(model, INPUTS[0], 10, 2.0)
    best = max(expected, key=expected.get)
    assert len(best) == 10
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=2.0,
                                                         stop_rule="exact"))(INPUTS[:1], 10)
    assert through_eos(ids.numpy()[0, 0]) == best
    assert scores.numpy()[0, 0] == pytest.approx(expected[best], abs=1e-5)


def test_beam_finished_rule_stops_once_the_beam_has_finished_hypotheses():
    # The case above: the exact rule runs to the length-10 winner; under
    # "beam_finished" the search stops at step 2 with "a EOS" and "EOS" finished.
    model = scripted([0.0, 0.45, 0.45, 0.1], [0.0, 0.8, 0.2, 0.0],
                     *[[0.0, 1e-3, 1 - 1e-3, 0.0]] * 7, [0.0, 1 - 1e-3, 1e-3, 0.0])
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=2.0,
                                                         stop_rule="beam_finished"))(INPUTS[:1], 10)
    assert ids.shape[-1] == 2
    assert sorted(through_eos(beam) for beam in ids.numpy()[0]) == [(EOS_ID,), (2, EOS_ID)]
    with pytest.raises(ValueError, match="unknown stop_rule 'fast'; the rules are "
                                         "beam_finished, exact"):
        BeamSearchDecoder(model, SearchOptions(stop_rule="fast"))


@pytest.mark.parametrize("stop_rule", ["exact", "beam_finished"])
def test_an_eos_ranked_below_the_beam_is_no_result(stop_rule):
    # Few ids: each beam's EOS is among the 2 * beam_size candidates of every step,
    # but ranked below both live ones until step 3 (0.15 then 0.9 from there).
    # Finalised as they came, "EOS" (step 0) and "a EOS" would fill the finished
    # set at step 1 and end the search with "EOS"; fairseq's rule waits for "a a a EOS".
    model = scripted([0.0, 0.1, 0.6, 0.3], [0.0, 0.15, 0.8, 0.05], [0.0, 0.15, 0.8, 0.05],
                     [0.0, 0.9, 0.05, 0.05])
    expected = all_finished_scores(model, INPUTS[0], 6, 0.0)
    best = max(expected, key=expected.get)
    assert best == (2, 2, 2, EOS_ID) and expected[best] > expected[(EOS_ID,)]
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.0,
                                                         stop_rule=stop_rule))(INPUTS[:1], 6)
    assert through_eos(ids.numpy()[0, 0]) == best
    assert scores.numpy()[0, 0] == pytest.approx(expected[best], abs=1e-5)
    if stop_rule == "beam_finished":  # "a a a EOS" and "b a a EOS" after 4 steps
        assert ids.shape[-1] == 4
        assert through_eos(ids.numpy()[0, 1]) == (3, 2, 2, EOS_ID)


def test_early_stop_waits_until_every_beam_has_a_finished_hypothesis():
    # "EOS" alone already beats anything alive, but the second beam slot still
    # has to be filled by "a EOS" rather than left empty.
    model = scripted([0.0, 0.9, 0.1, 0.0], [0.0, 0.5, 0.5, 0.0])
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.0))(INPUTS[:1], 5)
    assert [through_eos(beam) for beam in ids.numpy()[0]] == [(EOS_ID,), (2, EOS_ID)]
    np.testing.assert_allclose(scores.numpy()[0], [np.log(0.9), np.log(0.05)], atol=1e-5)


class WholeBatchModel(InputLengthModel):
    """Reorders its state itself and says nothing about selecting items: the
    search must keep its whole batch to the end."""

    def reorder_decode_state(self, state, rows):
        return {key: tf.gather(value, rows) for key, value in state.items()}


class PerInputLengthModel(InputLengthModel):
    """Keeps its input lengths once per input, as a fixed state read by every
    hypothesis of the input: the default ``select_decode_items`` must keep those
    rows by input, the others by hypothesis."""

    def initial_decode_state(self, encoded, max_decode_length, beam_size=1):
        return {"length": encoded["length"], "beams": tf.zeros([tf.shape(
            encoded["length"])[0] * beam_size])}

    def fixed_decode_state_keys(self):
        return frozenset(["length"])

    def decode_step(self, ids, step, state):
        beams = tf.shape(ids)[0] // tf.shape(state["length"])[0]
        logits, _ = super().decode_step(
            ids, step, {"length": tf.repeat(state["length"], beams)})
        return logits, state


def test_settled_items_leave_the_batch_with_the_results_they_would_have_had():
    # Inputs of 2 to 9 tokens: the short ones settle long before the longest.
    inputs = np.array([[2, 3, 4, 1] + [0] * 5, [5, 1] + [0] * 7, [3] * 8 + [1],
                       [4, 2, 1] + [0] * 6], np.int32)
    decoded = {}
    for model in (InputLengthModel(), WholeBatchModel(), PerInputLengthModel()):
        ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))(inputs, 20)
        decoded[type(model)] = ids.numpy(), scores.numpy(), int(model.rows_stepped.numpy())
    assert WholeBatchModel().selects_decode_items is False
    ids, scores, rows = decoded[InputLengthModel]
    whole_ids, whole_scores, whole_rows = decoded[WholeBatchModel]
    per_input_ids, per_input_scores, per_input_rows = decoded[PerInputLengthModel]
    np.testing.assert_array_equal(per_input_ids, ids)
    np.testing.assert_allclose(per_input_scores, scores, atol=1e-6)
    assert per_input_rows == rows
    np.testing.assert_array_equal(ids, whole_ids)
    np.testing.assert_allclose(scores, whole_scores, atol=1e-6)
    assert whole_rows == ids.shape[-1] * 4 * 2  # every step on every hypothesis
    assert rows < whole_rows * 0.75
    for row in range(4):
        assert through_eos(ids[row, 0])[-1] == EOS_ID
        alone_ids, alone_scores = BeamSearchDecoder(InputLengthModel(), SearchOptions(beam_size=2,
                                                                                      alpha=0.6))(
            inputs[row:row + 1], 20)
        width = alone_ids.shape[-1]
        np.testing.assert_array_equal(alone_ids.numpy()[0], ids[row, :, :width])
        np.testing.assert_allclose(alone_scores.numpy()[0], scores[row], atol=1e-6)


class LateEndingModel(WholeBatchModel):
    """EOS unlikely before step (input length - 1), even odds there, near-certain
    after; keeps its whole batch to the end."""

    def decode_step(self, ids, step, state):
        phase = tf.sign(step + 1 - state["length"])[:, None]
        probabilities = tf.where(phase < 0, [[0.0, 0.01, 0.6, 0.39]], tf.where(
            phase == 0, [[0.0, 0.5, 0.45, 0.05]], [[0.0, 0.9, 0.09, 0.01]]))
        return tf.math.log(probabilities), state


def test_a_settled_item_kept_in_its_batch_keeps_its_results():
    # The short input has two finished hypotheses after 2 steps ("EOS" at step 1 is
    # the shortest): it is done under beam_finished. Searched on beside the long
    # one, its step-3 "a a EOS" would outscore "EOS" at alpha 10.
    inputs = np.array([[5, 1] + [0] * 5, [3] * 6 + [1]], np.int32)
    decoder = BeamSearchDecoder(LateEndingModel(), SearchOptions(beam_size=2, alpha=10.0,
                                                                 stop_rule="beam_finished"))
    ids, scores = (t.numpy() for t in decoder(inputs, 10))
    alone_ids, alone_scores = (t.numpy() for t in decoder(inputs[:1], 10))
    assert alone_ids.shape[-1] == 3
    np.testing.assert_array_equal(ids[0, :, :3], alone_ids[0])
    np.testing.assert_allclose(scores[0], alone_scores[0], rtol=1e-6)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_allow_eos_false_decodes_exactly_max_length(beam_size):
    model = ToyRecurrentModel(seed=2)
    ids, _ = BeamSearchDecoder(
        model, SearchOptions(beam_size=beam_size, alpha=0.6, allow_eos=False))(INPUTS, 7)
    assert ids.shape == (4, beam_size, 7)
    assert not np.any(ids.numpy() == EOS_ID)
    assert greedy_search(model, INPUTS, tf.constant(7),
                         SearchOptions(beam_size=1, allow_eos=False)).shape == (4, 7)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_decoder_traces_once_for_all_shapes(beam_size):
    model = ToyRecurrentModel(seed=0)
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, alpha=0.6))
    for batch, length, max_len in [(2, 5, 7), (3, 7, 9), (1, 2, 4), (5, 3, 12)]:
        inputs = np.full((batch, length), 2, np.int32)
        ids, scores = decoder(inputs, max_len)
        assert ids.shape[:2] == (batch, beam_size) and ids.shape[2] <= max_len
        assert scores.shape == (batch, beam_size)
    assert model.encode_calls == 1


def test_direct_beam_search_call_matches_the_compiled_decoder():
    model = ToyRecurrentModel(seed=2)
    ids, scores = beam_search(model, INPUTS, tf.constant(6), SearchOptions(beam_size=3, alpha=0.6))
    decoder_ids, decoder_scores = BeamSearchDecoder(model, SearchOptions(beam_size=3, alpha=0.6))(
        INPUTS, 6)
    np.testing.assert_array_equal(ids.numpy(), decoder_ids.numpy())
    np.testing.assert_allclose(scores.numpy(), decoder_scores.numpy())


@pytest.mark.parametrize("beam_size", [0, -2, 2.5, True])
def test_bad_beam_size_is_rejected(beam_size):
    with pytest.raises(ValueError, match="beam_size must be a positive integer"):
        SearchOptions(beam_size=beam_size)


def test_search_options_are_one_trace_per_value():
    """Options equal to ones in use are one trace of beam_search (frozen, compared by
    value); others another; and a decoder takes only SearchOptions."""
    model = ToyRecurrentModel(seed=2)
    before = beam_search.experimental_get_tracing_count()
    options = SearchOptions(beam_size=2, alpha=0.5)
    for again in (options, SearchOptions(beam_size=2, alpha=0.5)):
        beam_search(model, INPUTS, tf.constant(6), again)
    assert beam_search.experimental_get_tracing_count() == before + 1
    beam_search(model, INPUTS, tf.constant(6), SearchOptions(beam_size=2, alpha=0.7))
    assert beam_search.experimental_get_tracing_count() == before + 2
    with pytest.raises(TypeError, match="options must be SearchOptions, got int"):
        BeamSearchDecoder(model, 4)
    with pytest.raises(ValueError, match="unknown stop_rule 'early'"):
        SearchOptions(stop_rule="early")


@pytest.mark.parametrize("rows, length, k", [(7, 40000, 10), (3, 300, 8), (2, 127, 6),
                                             (4, 256, 4), (5, 1000, 42)])
def test_top_k_by_blocks_is_top_k_ties_and_minus_infinity_included(rows, length, k):
    rng = np.random.default_rng(length)
    values = rng.normal(size=(rows, length)).astype(np.float32)
    values[0] = np.round(values[0])  # many ties, across blocks
    values[1, :] = -np.inf
    values[1, length // 2] = 0.0  # one finite value among -inf
    assert (length, k) == (127, 6) or block_length(length)  # 127 is prime: plain top_k
    for got, expected in zip(top_k_by_blocks(tf.constant(values), k),
                             tf.math.top_k(values, k=k)):
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_finished_items_leave_a_greedy_batch_with_the_results_they_would_have_had():
    inputs = np.array([[2, 3, 4, 1] + [0] * 5, [5, 1] + [0] * 7, [3] * 8 + [1],
                       [4, 2, 1] + [0] * 6], np.int32)
    model, whole = InputLengthModel(), WholeBatchModel()
    ids = greedy_search(model, inputs, tf.constant(20)).numpy()
    np.testing.assert_array_equal(ids, greedy_search(whole, inputs, tf.constant(20)).numpy())
    assert [through_eos(row) for row in ids] == [(2, 2, 2, EOS_ID), (2, EOS_ID),
                                                 (2,) * 8 + (EOS_ID,), (2, 2, EOS_ID)]
    assert int(whole.rows_stepped.numpy()) == 9 * 4
    assert int(model.rows_stepped.numpy()) == 2 + 3 + 4 + 9  # each row until its EOS
