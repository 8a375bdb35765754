"""The Transformer decoding a step at a time: its cache against the full forward pass,
reordered beams, the compiled (XLA) search and its buffers."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.decoding.decoder import decode_lines
from t2t_lite.decoding.factory import Decoding
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.search_decoder import BeamSearchDecoder, cache_lengths
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams
from t2t_lite.models.transformer import Transformer

from transformer_cases import (INPUTS, RELATIVE, TARGETS, VOCAB, greedy_teacher_forced, logits,
                               tiny_model)


# tf.function tracing is the slow part: trace three of the six configurations. Relative
# positions alone ("none") and on top of sinusoids.
@pytest.mark.parametrize("normalize_before, position_embedding, in_tf_function, xla, relative", [
    (False, "timing", True, False, False), (True, "learned", True, True, False),
    (True, "timing", False, True, False), (False, "learned", False, False, False),
    (True, "none", True, False, True), (False, "timing", False, True, True)])
def test_incremental_decoding_matches_full_forward(normalize_before, position_embedding,
                                                   in_tf_function, xla, relative):
    """xla: the fixed-size caches written in place, instead of caches that grow."""
    model = tiny_model(**{**(RELATIVE if relative else {}), "xla": xla,
                          "normalize_before": normalize_before,
                          "position_embedding": position_embedding})
    expected = logits(model, INPUTS, TARGETS)
    eager = greedy_teacher_forced(model, INPUTS, TARGETS, tf.constant(5))
    np.testing.assert_allclose(eager.numpy(), expected, atol=1e-4)
    if not in_tf_function:
        return
    # Dynamic batch, lengths and max_decode_length (larger than the targets).
    ids = tf.TensorSpec([None, None], tf.int32)
    graph = tf.function(lambda x, y, n: greedy_teacher_forced(model, x, y, n),
                        input_signature=[ids, ids, tf.TensorSpec([], tf.int32)])
    np.testing.assert_allclose(graph(INPUTS, TARGETS, tf.constant(9)).numpy(), expected,
                               atol=1e-4)


def test_decode_state_is_once_per_input_with_cache_buffers_written_a_step_at_a_time():
    """Beam 3, 6 steps: the memory and the cache buffers are per input (B rows) and
    hold every step from the start (rounded up to a block of 8 steps); a step writes
    the beam's three entries of its own and nothing else; only the ancestry is per
    hypothesis."""
    model = tiny_model()
    state = model.initial_decode_state(model.encode(INPUTS), tf.constant(6), beam_size=3)
    assert all(value.shape[0] == 2 for value in state.values())
    assert state["decoder_0/keys"].shape == (2, 2, 24, 8)  # 8 steps x 3 hypotheses
    assert state["decoder_1/memory_values"].shape == (2, 2, 4, 8)
    np.testing.assert_array_equal(state["ancestry"], -np.ones([2, 3, 8]))
    fixed = model.fixed_decode_state_keys()
    assert fixed == {"encoder_padding", "decoder_0/memory_keys", "decoder_0/memory_values",
                     "decoder_1/memory_keys", "decoder_1/memory_values"}
    logits, new_state = model.decode_step(tf.zeros([6], tf.int32), tf.constant(0), state)
    logits, new_state = model.decode_step(tf.ones([6], tf.int32), tf.constant(1), new_state)
    assert logits.shape == (6, VOCAB)
    values = new_state["decoder_0/values"].numpy()
    assert values.shape == (2, 2, 24, 8)
    assert np.all(np.abs(values[:, :, :6]).sum(axis=-1) > 0)  # steps 0 and 1 written
    assert not values[:, :, 6:].any()  # later steps untouched
    np.testing.assert_array_equal(new_state["ancestry"][:, :, :3],
                                  [[[0, 0, -1], [1, 1, -1], [2, 2, -1]]] * 2)
    for key in fixed:  # decode_step leaves the fixed part as it was
        assert new_state[key] is state[key]


@pytest.mark.parametrize("beam_size, relative", [(1, False), (4, False), (4, True)])
def test_a_decode_step_runs_no_shape_arithmetic(beam_size, relative):
    """A decode step runs once per output token, so every op in it counts (see
    t2t_lite/layers/projection.py): with only the batch unknown, no reshape in
    it may need the tensor's runtime shape."""
    model = tiny_model(**(RELATIVE if relative else {}))
    state = model.initial_decode_state(model.encode(INPUTS), tf.constant(6), beam_size)
    # Dynamic: the batch, the source length and the decode's length.
    state_spec = {key: tf.TensorSpec([None, *value.shape[1:2], None, *value.shape[3:]]
                                     if value.shape.rank >= 3 else [None, None], value.dtype)
                  for key, value in state.items()}
    step = tf.function(model.decode_step).get_concrete_function(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32), state_spec)
    ops = [op.type for op in step.graph.get_operations()]
    assert "Shape" not in ops and "Prod" not in ops, sorted(set(ops))


def _decoded_alone(model: Transformer, history: list[int], item: int) -> np.ndarray:
    """The logits after feeding ``history`` (previous ids from step 0) to input ``item``
    as its only hypothesis."""
    state = model.initial_decode_state(model.encode(INPUTS[item:item + 1]), tf.constant(6))
    for step, previous in enumerate(history):
        logits, state = model.decode_step(tf.constant([previous]), tf.constant(step), state)
    return logits.numpy()[0]


@pytest.mark.parametrize("xla, relative", [(False, False), (True, False), (False, True),
                                           (True, True)])
def test_reordered_beams_continue_the_histories_they_are_given(xla, relative):
    """What beam search does: decode three hypotheses of each of two inputs together,
    then ``reorder_decode_state`` (a permutation with a repeat, within each input);
    each row's next logits equal those of its new history decoded alone (relative
    positions count steps, whichever cache entries a hypothesis descends from)."""
    model = tiny_model(xla=xla, **(RELATIVE if relative else {}))
    state = model.initial_decode_state(model.encode(INPUTS), tf.constant(6), beam_size=3)
    _, state = model.decode_step(tf.zeros([6], tf.int32), tf.constant(0), state)
    _, state = model.decode_step(tf.constant([5, 6, 7, 8, 9, 10]), tf.constant(1), state)
    state = model.reorder_decode_state(state, tf.constant([2, 0, 2, 4, 4, 3]))
    logits, _ = model.decode_step(tf.constant([3, 4, 5, 11, 12, 13]), tf.constant(2), state)
    histories = [(0, [0, 7, 3]), (0, [0, 5, 4]), (0, [0, 7, 5]),
                 (1, [0, 9, 11]), (1, [0, 9, 12]), (1, [0, 8, 13])]
    for row, (item, history) in enumerate(histories):
        np.testing.assert_allclose(logits[row], _decoded_alone(model, history, item),
                                   atol=1e-5, err_msg=f"row {row}")
    assert not np.allclose(logits[0], logits[2], atol=1e-3)  # the last id matters


def test_beam_search_traces_once_and_keeps_batch_items_apart():
    """The regression guard for decoding speed (not a timing): batches of other sizes
    and lengths reuse one graph, and an item decodes as it does alone."""
    model = tiny_model()
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=3, alpha=0.6))
    together_ids, together_scores = decoder(INPUTS, 7)
    decoder(tf.constant([[3, 4, 5, 6, 7, 8], [6, 7, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0]]), 9)
    for row, length in ((0, 3), (1, 2)):
        ids, scores = decoder(INPUTS[row:row + 1, :length], 7)
        np.testing.assert_allclose(scores[0], together_scores[row], atol=1e-5)
        steps = ids.shape[-1]
        np.testing.assert_array_equal(ids[0], together_ids[row, :, :steps])
        assert not np.any(together_ids[row, :, steps:])  # PAD after every item's end
    assert decoder.traces == 1


def test_xla_cache_lengths_double_from_32_to_the_decode_length():
    assert cache_lengths(7) == [7]
    assert cache_lengths(32) == [32]
    assert cache_lengths(70) == [32, 70]  # not a loop of 6 steps on its own
    assert cache_lengths(100) == [32, 64, 100]
    assert cache_lengths(256) == [32, 64, 128, 256]


# (No case of 40 steps: two loops, which the 100-step cases cover; 10 s of the suite.)
@pytest.mark.parametrize("beam_size, length, allow_eos, relative, phrases", [
    (3, 7, True, False, None), (1, 100, False, False, None), (2, 100, False, True, None),
    (3, 9, True, False, [[[5, 6], [7, 0]], [[8, 8], [0, 0]]])])
def test_xla_compiled_search_equals_the_graph_one(beam_size, length, allow_eos, relative,
                                                  phrases):
    """Past 32 steps the compiled search moves to longer cache buffers (100: three
    loops, on buffers of 32, 64 and 100 positions): the same outputs as one loop;
    with terminology constraints (``phrases``), dynamic beam allocation too."""
    model = tiny_model(xla=True, max_length=100, **(RELATIVE if relative else {}))
    guides = {} if phrases is None else {"constraints": phrases[:len(INPUTS)]}
    plain = BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, allow_eos=allow_eos))
    plain_ids, plain_scores = plain(INPUTS, length, **guides)
    compiled = BeamSearchDecoder(model, SearchOptions(beam_size=beam_size, allow_eos=allow_eos),
                                 jit_compile=True)
    ids, scores = compiled(INPUTS, length, **guides)
    assert phrases or ids.shape[-1] == length
    np.testing.assert_array_equal(ids, plain_ids)
    np.testing.assert_allclose(scores, plain_scores, atol=1e-4)
    for row, held in enumerate(phrases or []):  # every beam holds its row's phrases
        for k in np.flatnonzero(np.isfinite(scores[row])):
            text = f" {' '.join(map(str, ids[row, k].numpy().tolist()))} "
            assert all(f" {' '.join(str(t) for t in phrase if t)} " in text
                       for phrase in held if any(phrase)), (ids[row, k], held)


def test_xla_decode_of_lines_compiles_one_program_per_length_bucket():
    """t2t-decoder's XLA path: padded to length buckets, one program per bucket, the
    same outputs as the graph search on the same padded batches."""
    model = tiny_model(xla=True, max_length=32)
    words = [f"w{i}" for i in range(VOCAB - 3)]  # + PAD, EOS and <UNK>
    encoder = TokenTextEncoder(words)
    lines = [" ".join(words[:n]) for n in (1, 2, 3, 9, 10, 11)]
    compiled = BeamSearchDecoder(model, SearchOptions(beam_size=2), jit_compile=True)
    settings = DecodeSettings.from_hparams(
        decode_hparams("batch_size=2,extra_length=3,length_bucket=8"), model.hparams)
    rules = InputRules.for_model(0, model.hparams.max_length, model.max_positions)
    outputs = decode_lines(lines, Decoding(compiled, settings, rules, encoder, encoder))
    plain = Decoding(BeamSearchDecoder(model, SearchOptions(beam_size=2)), settings, rules,
                     encoder, encoder)
    assert outputs == decode_lines(lines, plain)  # on the same padded batches
    assert compiled.traces == 2  # one per length bucket
    # Longest first: (12, 11) and (10, 4) tokens pad to 16, (3, 2) to 8.
    assert sorted(compiled.shapes_seen) == [(2, 8, 11), (2, 16, 19)]
