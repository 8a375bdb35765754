"""tensor2tensor's LSTM model and hparams set names: each one of ours that computes
what T2T's did, each set holding T2T's values (written out here from T2T's
tensor2tensor/models/lstm.py and layers/common_hparams.py), and T2T's names with
no twin refused in one line."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.experiment import _check_model_reads_the_set
from t2t_lite.hparams import t2t_lstm
from t2t_lite.hparams.lstm import lstm_attention_base, lstm_base
from t2t_lite.models.base import shift_right
from t2t_lite.models.lstm_seq2seq import LSTMSeq2seq
from t2t_lite.models.luong import LSTMSeq2seqAttentionLuong
from t2t_lite.models.t2t_lstm import (LSTMSeq2seqAttentionBidirectionalEncoder,
                                      LSTMSeq2seqBidirectionalEncoder)
from t2t_lite.training.checkpoints import model_variables
from t2t_lite.training.schedules import learning_rate_schedule
from recurrent_toys import INPUTS, TARGETS, VOCAB

load_builtins()

SEQ2SEQ, ATTENTION = "lstm_seq2seq", "lstm_seq2seq_attention"
BID, BID_ATTENTION = ("lstm_seq2seq_bidirectional_encoder",
                      "lstm_seq2seq_attention_bidirectional_encoder")
HIDDEN = 8  # the tiny shape: T2T's 128 scaled down, embeddings as wide (T2T's)
TINY = f"hidden_size={HIDDEN},embedding_size={HIDDEN},initializer_gain=0.5"


def test_t2t_model_names_are_the_models_that_compute_what_t2ts_did():
    assert registry.models[SEQ2SEQ] is LSTMSeq2seq
    assert registry.models[ATTENTION] is LSTMSeq2seqAttentionLuong
    assert registry.models["lstm_seq2seq_attention_luong"] is LSTMSeq2seqAttentionLuong
    assert registry.models[BID] is LSTMSeq2seqBidirectionalEncoder
    assert registry.models[BID_ATTENTION] is LSTMSeq2seqAttentionBidirectionalEncoder


def tiny_hparams(attention: str | None, overrides: str = ""):
    """T2T's sets' model keys (without the training keys) at the tiny shape."""
    if attention is None:
        hparams = t2t_lstm._t2t_shape(lstm_base())
    else:
        hparams = t2t_lstm._t2t_shape(lstm_attention_base())
        hparams.attention_score = attention
    hparams.parse(TINY)
    return hparams.parse(overrides) if overrides else hparams


def make(name: str, attention: str | None, overrides: str = ""):
    tf.keras.utils.set_random_seed(7)
    return registry.models[name](tiny_hparams(attention, overrides), VOCAB)


def incremental_logits(model, inputs, targets):
    """decode_step fed the targets one at a time (as teacher forcing feeds them)."""
    state = model.initial_decode_state(model.encode(inputs), tf.shape(targets)[1])
    previous, logits = shift_right(targets), []
    for step in range(targets.shape[1]):
        step_logits, state = model.decode_step(previous[:, step], tf.constant(step), state)
        logits.append(step_logits)
    return tf.stack(logits, axis=1).numpy()


MODELS = [(SEQ2SEQ, None, ""), (BID, None, ""), (ATTENTION, "concat", ""),
          (ATTENTION, "general", ""), (BID_ATTENTION, "concat", ""),
          (BID_ATTENTION, "general", ""),
          (BID_ATTENTION, "general", "input_feeding=false,scheduled_sampling_prob=0.5")]


@pytest.mark.parametrize("name, attention, overrides", MODELS,
                         ids=[f"{n}[{a}{',' + o if o else ''}]" for n, a, o in MODELS])
def test_each_t2t_model_runs_forward_and_decodes_as_it_is_teacher_forced(name, attention,
                                                                         overrides):
    model = make(name, attention, overrides)
    features = {"inputs": INPUTS, "targets": TARGETS}
    forced = model(features).numpy()
    assert forced.shape == (3, 5, VOCAB)
    np.testing.assert_allclose(incremental_logits(model, INPUTS, TARGETS), forced, atol=1e-4)
    padded = {"inputs": tf.pad(INPUTS, [[0, 0], [0, 3]]), "targets": TARGETS}
    np.testing.assert_allclose(model(padded).numpy(), forced, atol=1e-5)
    if "sampling" in overrides:  # the Luong model's scheduled sampling runs in training
        assert model(features, training=True).shape == (3, 5, VOCAB)


@pytest.mark.parametrize("name, attention", [(BID, None), (BID_ATTENTION, "general")])
def test_t2ts_bidirectional_models_read_the_source_in_order_whatever_the_set_says(name,
                                                                                  attention):
    """T2T's bidirectional models never reversed the source; its sets say reverse_source
    for the other models, so here it is read and overruled (not architecture)."""
    features = {"inputs": INPUTS, "targets": TARGETS}
    in_order = make(name, attention, "reverse_source=false")(features).numpy()
    np.testing.assert_allclose(make(name, attention, "reverse_source=true")(features).numpy(),
                               in_order, atol=1e-6)
    model_cls = registry.models[name]
    assert "reverse_source" not in model_cls.architecture_keys(tiny_hparams(attention))
    assert "reverse_source" in model_cls.required_hparams


def test_t2ts_bidirectional_encoder_is_two_stacks_and_the_decoder_twice_as_wide():
    """lstm_bid_encoder: a forward and a backward stack of hidden_size cells (each
    direction's upper layer reads only its own direction), the backward one over the
    source reversed by its length with EOS; decoder layers of 2 * hidden_size start
    from [forward; backward] final states."""
    model = make(BID, None)
    encoder = model.encoder
    assert [tuple(w.shape) for w in encoder.forward.stack[1].weights[:1]] == [(HIDDEN,
                                                                             4 * HIDDEN)]
    assert model.decoder.units == 2 * HIDDEN
    assert tuple(model.softmax.kernel.shape) == (2 * HIDDEN, VOCAB)
    embedded, mask, _ = model.embed_source(INPUTS)
    memory, states = encoder(embedded, sequence_mask=mask)
    lengths = tf.reduce_sum(tf.cast(INPUTS != PAD_ID, tf.int32), 1).numpy()
    reversed_ids = tf.reverse_sequence(INPUTS, lengths, seq_axis=1, batch_axis=0)
    backward, backward_states = encoder.backward(model.source_embedding(reversed_ids),
                                                 sequence_mask=reversed_ids != PAD_ID)
    rows = np.arange(3)
    # The backward half at the first word is the backward stack after the whole source.
    np.testing.assert_allclose(memory.numpy()[:, 0, HIDDEN:],
                               backward.numpy()[rows, lengths - 1], atol=1e-6)
    forward_h = memory.numpy()[rows, lengths - 1, :HIDDEN]  # the forward half at EOS
    top_h = states[-1][0].numpy()
    np.testing.assert_allclose(top_h[:, :HIDDEN], forward_h, atol=1e-6)
    np.testing.assert_allclose(top_h[:, HIDDEN:], backward_states[-1][0].numpy(), atol=1e-6)


def test_t2ts_bidirectional_attention_decoder_attends_at_twice_and_outputs_at_hidden_size():
    """T2T: decoder and attention depth 2 * hidden_size, the attention vector (the
    output and what is fed back) attention_layer_size = the set's hidden_size."""
    model = make(BID_ATTENTION, "general")
    assert model.decoder.units == 2 * HIDDEN
    assert tuple(model.attention.memory_kernel.shape) == (2 * HIDDEN, 2 * HIDDEN)
    assert tuple(model.attentional.kernel.shape) == (4 * HIDDEN, HIDDEN)
    assert tuple(model.softmax.kernel.shape) == (HIDDEN, VOCAB)
    first_layer_input = model.decoder.stack[0].weights[0].shape[0]
    assert first_layer_input == HIDDEN + HIDDEN  # embedding + the fed attention vector


# T2T's basic_params1 values as its lstm_seq2seq keeps them, in our keys.
T2T_TRAINING = dict(
    batch_size=1024, max_length=1024, length_bucket_step=1.1, dropout=0.2,
    optimizer="adam", optimizer_adam_beta1=0.85, optimizer_adam_beta2=0.997,
    optimizer_adam_epsilon=1e-6, learning_rate=0.1, learning_rate_schedule="legacy",
    learning_rate_decay_scheme="none", learning_rate_constant=1.0,
    learning_rate_warmup_steps=100, learning_rate_decay_steps=5000,
    learning_rate_decay_rate=1.0, learning_rate_decay_staircase=False, weight_decay=0.0,
    label_smoothing=0.1, loss_normalizer="tokens",
    clip_grad_norm=2.0, shared_embedding=False, shared_embedding_and_softmax_weights=False)
T2T_SHAPE = dict(hidden_size=128, embedding_size=128, num_encoder_layers=2,
                 num_decoder_layers=2, reverse_source=True)
T2T_ATTENTION = dict(attention_size=0, attention_scope="global", input_feeding=True,
                     bidirectional_encoder=False, scheduled_sampling_prob=0.0)
T2T_SETS = {
    "lstm_seq2seq": {**T2T_TRAINING, **T2T_SHAPE},
    "lstm_bahdanau_attention": {**T2T_TRAINING, **T2T_SHAPE, **T2T_ATTENTION,
                                "attention_score": "concat"},
    "lstm_luong_attention": {**T2T_TRAINING, **T2T_SHAPE, **T2T_ATTENTION,
                             "attention_score": "general"},
    "lstm_attention": {**T2T_TRAINING, **T2T_SHAPE, **T2T_ATTENTION,
                       "attention_score": "concat"},
}


@pytest.mark.parametrize("set_name", sorted(T2T_SETS))
def test_each_t2t_set_holds_t2ts_values(set_name):
    hparams = registry.hparams_sets[set_name]().check()
    assert {key: getattr(hparams, key) for key in T2T_SETS[set_name]} == T2T_SETS[set_name]


@pytest.mark.parametrize("set_name", sorted(T2T_SETS))
def test_each_t2t_set_trains_at_t2ts_rate(set_name):
    """T2T's legacy schedule under Adam: 0.1 * 0.002 after an exponential warmup from
    1% over 100 steps (0.01^((100 - step) / 100) before it). A schedule is called with
    the optimizer's iterations, step - 1 (training/schedules.py, "Steps")."""
    schedule = learning_rate_schedule(registry.hparams_sets[set_name]())
    for step, rate in ((1, 2e-4 * 0.01 ** 0.99), (50, 2e-4 * 0.1), (100, 2e-4),
                       (100_000, 2e-4)):
        assert float(schedule(tf.constant(step - 1))) == pytest.approx(rate, rel=1e-5)


def test_lstm_attention_is_t2ts_bahdanau_set():
    """T2T: "For backwards compatibility, defaults to bahdanau"."""
    assert (registry.hparams_sets["lstm_attention"]
            is registry.hparams_sets["lstm_bahdanau_attention"])


# Each T2T set and the T2T models it was used with.
SET_MODELS = [("lstm_seq2seq", SEQ2SEQ), ("lstm_seq2seq", BID)] + [
    (set_name, model) for set_name in ("lstm_attention", "lstm_bahdanau_attention",
                                       "lstm_luong_attention")
    for model in (ATTENTION, BID_ATTENTION)]


@pytest.mark.parametrize("set_name, model_name", SET_MODELS)
def test_each_t2t_set_builds_the_t2t_models_it_was_used_with(set_name, model_name):
    hparams = registry.hparams_sets[set_name]()
    _check_model_reads_the_set(model_name, set_name, hparams)  # passes: no key ignored
    hparams.parse(TINY)
    model = registry.models[model_name](hparams, VOCAB)
    assert model({"inputs": INPUTS, "targets": TARGETS}).shape == (3, 5, VOCAB)


REFUSED = {
    "hparams set": ["lstm_bahdanau_attention_multi", "lstm_luong_attention_multi",
                    "lstm_asr_v1", "lstm_area_attention_base", "lstm_area_attention_enfr",
                    "lstm_area_attention_char", "lstm_area_attention_char_enfr"],
    "model": ["lstm_encoder", "baseline_lstm_seq2seq", "baseline_lstm_seq2seq_attention"],
}


@pytest.mark.parametrize("kind, name", [(kind, name) for kind, names in REFUSED.items()
                                        for name in names])
def test_t2t_names_with_no_twin_are_refused_in_one_line(kind, name):
    reg = registry.hparams_sets if kind == "hparams set" else registry.models
    with pytest.raises(registry.UnknownNameError) as info:
        reg[name]
    message = str(info.value)
    assert message.startswith(f"{kind} {name!r} is tensor2tensor's and has no t2t-lite twin: ")
    assert "\n" not in message and "--" in message  # names what to use instead
    assert name not in reg


@pytest.mark.parametrize("name, attention", [(BID, None), (BID_ATTENTION, "concat")])
def test_a_second_bidirectional_model_in_one_process_has_the_same_checkpoint_keys(name,
                                                                                  attention):
    """Its layers are named, not numbered by Keras: an ensemble member restores."""
    first, second = make(name, attention), make(name, attention)
    assert sorted(model_variables(first)) == sorted(model_variables(second))
    assert "encoder/backward/lstm_1/lstm_cell/kernel" in model_variables(first)
