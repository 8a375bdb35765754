"""The RNN encoder-decoders: the decoding interface, attention weights, hparams sets,
and each model learning a small task."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.models.base import NoAttentionError, shift_right
from t2t_lite.precision import copy_weights, dtype_policy
from t2t_lite.training.checkpoints import model_variables
from recurrent_toys import (BAHDANAU, CONFIGS, IDS, INPUTS, LUONG, SEQ2SEQ, TARGETS, VOCAB,
                            make_model, small_hparams)
from toys import ShortCopy, make_trainer

load_builtins()


def incremental_logits(model, inputs, targets):
    """Feeds the targets one step at a time through decode_step, in one tf.function."""
    @tf.function
    def run(inputs, targets):
        state = model.initial_decode_state(model.encode(inputs), tf.shape(targets)[1])
        shapes = tf.nest.map_structure(lambda t: t.shape, state)
        previous = shift_right(targets)
        logits = []
        for step in range(targets.shape[1]):
            step_logits, state = model.decode_step(previous[:, step], tf.constant(step), state)
            logits.append(step_logits)
        assert tf.nest.map_structure(lambda t: t.shape, state) == shapes
        return tf.stack(logits, axis=1)
    return run(inputs, targets).numpy()


def test_registered_under_t2t_names():
    assert {SEQ2SEQ, BAHDANAU, LUONG} <= set(registry.models.names())


@pytest.mark.parametrize("name, overrides", CONFIGS, ids=IDS)
def test_incremental_decoding_equals_teacher_forcing_and_padding_changes_nothing(name,
                                                                                 overrides):
    model = make_model(name, overrides)
    forced = tf.function(lambda f: model(f))({"inputs": INPUTS, "targets": TARGETS}).numpy()
    assert forced.shape == (3, 5, VOCAB)
    np.testing.assert_allclose(incremental_logits(model, INPUTS, TARGETS), forced, atol=1e-4)
    padded = tf.pad(INPUTS, [[0, 0], [0, 3]])
    np.testing.assert_allclose(model({"inputs": padded, "targets": TARGETS}).numpy(), forced,
                               atol=1e-5)
    # Targets later than t do not reach position t.
    changed = tf.concat([TARGETS[:, :3], tf.fill([3, 2], 4)], axis=1)
    np.testing.assert_allclose(model({"inputs": INPUTS, "targets": changed}).numpy()[:, :4],
                               forced[:, :4], atol=1e-5)


@pytest.mark.parametrize("name, overrides", [
    (LUONG, "attention_score=concat,input_feeding=true"),
    (LUONG, "attention_scope=local_p,scheduled_sampling_prob=0.5"),
    (BAHDANAU, "reverse_source=false"),
])
def test_the_step_loop_compiles_with_xla(name, overrides):
    """xla=true compiles the training step: the decoder's while loop must have a
    bounded length there, and give what it gives without XLA. (One layer a side: XLA
    compiles each layer's loop alike, and a second took the compiles half as long again.)"""
    model = make_model(name, overrides + ",dropout=0.0,num_encoder_layers=1,num_decoder_layers=1")
    features = {"inputs": INPUTS, "targets": TARGETS}
    training = "sampling" in overrides  # scheduled sampling runs in training only

    def gradients():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(features, training=training))
        return loss, tape.gradient(loss, model.trainable_variables)

    if training:  # draws differ between the two: that it compiles is the point
        tf.function(gradients, jit_compile=True)()
        return
    loss, grads = tf.function(gradients)()
    xla_loss, xla_grads = tf.function(gradients, jit_compile=True)()
    np.testing.assert_allclose(xla_loss.numpy(), loss.numpy(), rtol=1e-4)
    for grad, xla_grad in zip(grads, xla_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(xla_grad).numpy(),
                                   tf.convert_to_tensor(grad).numpy(), atol=1e-4)


# A source vocabulary of its own: 11 ids (INPUTS fit), not the targets' VOCAB.
SOURCE_VOCAB = 11


@pytest.mark.parametrize("name, overrides", [
    (LUONG, "attention_score=general,shared_embedding_and_softmax_weights=true,"
            "embedding_size=8"),
    (SEQ2SEQ, "reverse_source=true")])
def test_separate_vocabularies_decode_incrementally_as_teacher_forced(name, overrides):
    """The source embedding has the source vocabulary's rows; a tied softmax is the
    target embedding, not the source's."""
    model = make_model(name, overrides, input_vocab_size=SOURCE_VOCAB)
    assert tuple(model.source_embedding.embeddings.shape) == (SOURCE_VOCAB,
                                                              model.hparams.embedding_size)
    assert model.target_embedding is not model.source_embedding
    if model.hparams.shared_embedding_and_softmax_weights:
        assert model.softmax.embedding is model.target_embedding
    forced = model({"inputs": INPUTS, "targets": TARGETS}).numpy()
    assert forced.shape == (3, 5, VOCAB)
    np.testing.assert_allclose(incremental_logits(model, INPUTS, TARGETS), forced, atol=1e-4)


@pytest.mark.parametrize("source_vocab", [SOURCE_VOCAB, VOCAB])
def test_shared_embedding_across_separate_vocabularies_is_refused(source_vocab):
    """Even of one size: the same id means another token on each side."""
    with pytest.raises(HParamsError, match=r"^shared_embedding=true ties the source and "
                       rf"target embeddings, .*separate vocabularies \({source_vocab} and "):
        make_model(LUONG, "shared_embedding=true", input_vocab_size=source_vocab)
    shared = make_model(LUONG, "shared_embedding=true")  # one vocabulary: one matrix
    assert shared.target_embedding is shared.source_embedding


def log_softmax(logits):
    return logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)
                           ) - logits.max(-1, keepdims=True)


def stepwise_argmax(model, inputs, max_length):
    """Each row's greedy ids, fed back one decode_step at a time (the rows in one batch,
    as the search has them), each row cut after its EOS."""
    state = model.initial_decode_state(model.encode(inputs), tf.constant(max_length))
    previous, steps = tf.fill([inputs.shape[0]], PAD_ID), []
    for step in range(max_length):
        logits, state = model.decode_step(previous, tf.constant(step), state)
        previous = tf.argmax(logits, -1, output_type=previous.dtype)
        steps.append(previous.numpy())
    rows = np.stack(steps, 1).tolist()
    return [row[:row.index(EOS_ID) + 1] if EOS_ID in row else row for row in rows]


# Every other config, Bahdanau's, not the tied softmax's (the suite's time: its
# logits are checked by the teacher-forcing test above).
@pytest.mark.parametrize("name, overrides", CONFIGS[1:7:2] + CONFIGS[2:3],
                         ids=IDS[1:7:2] + IDS[2:3])
def test_beam_of_one_is_greedy_and_beam_scores_are_the_models_log_probs(name, overrides):
    model = make_model(name, overrides)
    greedy, _ = BeamSearchDecoder(model, SearchOptions(beam_size=1, alpha=0.0))(INPUTS, 7)
    for row, expected in enumerate(stepwise_argmax(model, INPUTS, 7)):
        assert greedy.numpy()[row, 0, :len(expected)].tolist() == expected
    # Beam 3: the state is reordered with the beams, so every returned hypothesis's
    # score is its teacher-forced log-prob (alpha 0: no length penalty). The hypotheses
    # are scored in one batch, padded after their EOS: positions after t do not reach t
    # (test_incremental_decoding_equals_teacher_forcing_... checks it of every config).
    decoder = BeamSearchDecoder(model, SearchOptions(beam_size=3, alpha=0.0))
    ids, scores = (t.numpy() for t in decoder(INPUTS, 7))
    assert np.isfinite(scores[:, 0]).all()
    hypotheses = []  # (row, beam, ids up to EOS)
    for row in range(3):
        for beam in np.flatnonzero(np.isfinite(scores[row])):
            seq = ids[row, beam].tolist()
            hypotheses.append((row, beam, seq[:seq.index(EOS_ID) + 1] if EOS_ID in seq else seq))
    longest = max(len(seq) for _, _, seq in hypotheses)
    logits = model({"inputs": tf.gather(INPUTS, [row for row, _, _ in hypotheses]),
                    "targets": tf.constant([seq + [PAD_ID] * (longest - len(seq))
                                            for _, _, seq in hypotheses])}).numpy()
    for (row, beam, seq), each in zip(hypotheses, log_softmax(logits)):
        log_prob = each[np.arange(len(seq)), seq].sum()
        assert scores[row, beam] == pytest.approx(log_prob, abs=1e-4), (row, beam)


@pytest.mark.parametrize("name, overrides", [c for c in CONFIGS if c[0] != SEQ2SEQ],
                         ids=[i for c, i in zip(CONFIGS, IDS) if c[0] != SEQ2SEQ])
def test_attention_weights_are_over_the_input_positions(name, overrides):
    model = make_model(name, overrides)
    weights = model.attention_weights({"inputs": INPUTS, "targets": TARGETS})
    assert list(weights) == ["encoder_decoder"]
    weights = weights["encoder_decoder"].numpy()
    assert weights.shape == (3, 1, 1, 5, 6)  # one layer, one head
    weights = weights[:, 0, 0]
    assert np.all(weights[0, :, 5] == 0.0) and np.all(weights[1, :, 2:] == 0.0)
    if "local_p" not in overrides:
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    if model.hparams.reverse_source:
        # The encoder reads "6 5 4 3 EOS": its weights, reordered, are the ones returned.
        _, internal = model.teacher_forced({"inputs": INPUTS, "targets": TARGETS}, False)
        internal = internal.numpy()
        np.testing.assert_allclose(weights[0, :, [3, 2, 1, 0, 4]], internal[0, :, :5].T,
                                   atol=1e-6)


@pytest.mark.parametrize("name, overrides", [
    (SEQ2SEQ, "hidden_size=6"), (BAHDANAU, "maxout_units=6,reverse_source=false"),
    (LUONG, "hidden_size=6")])
def test_a_tied_softmax_is_the_target_embedding(name, overrides):
    """No softmax weights of its own, and the embedding of a token the batch never
    reads (11) learns from the softmax alone."""
    features = {"inputs": INPUTS, "targets": TARGETS}
    gradients = {}
    for tied in (False, True):
        model = make_model(name, f"{overrides},shared_embedding_and_softmax_weights={tied}")
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                TARGETS, model(features)))
        embedding = model.target_embedding.embeddings
        gradients[tied] = tf.convert_to_tensor(tape.gradient(loss, embedding)).numpy()
        assert any("softmax" in v.path for v in model.trainable_variables) != tied
    assert np.all(gradients[False][11] == 0.0) and np.any(gradients[True][11] != 0.0)


def test_sutskever_model_has_no_attention_weights():
    with pytest.raises(NoAttentionError, match="lstm_seq2seq has no attention"):
        make_model(SEQ2SEQ).attention_weights({"inputs": INPUTS, "targets": TARGETS})


@pytest.mark.parametrize("name, hparams, message", [
    (LUONG, transformer_tiny(), "needs hparams embedding_size"),
    ("transformer", small_hparams(), "needs hparams filter_size"),
    (SEQ2SEQ, small_hparams("num_decoder_layers=3"), "num_encoder_layers == num_decoder_layers"),
    (LUONG, small_hparams("shared_embedding_and_softmax_weights=true"),
     r"softmax's input, 8 wide here \(hidden_size.*to be embedding_size wide \(6\)"),
    (LUONG, small_hparams("bidirectional_encoder=true,hidden_size=7"),
     "hidden_size / 2 cells: hidden_size must be even, got 7"),
])
def test_mismatched_hparams_are_refused_with_the_missing_keys(name, hparams, message):
    with pytest.raises(ValueError, match=message):
        registry.models[name](hparams, VOCAB)


@pytest.mark.parametrize("overrides, message", [
    ("attention_scope=nearby", "'attention_scope' must be one of 'global', 'local_m', 'local_p'"),
    ("initializer=normal", "'initializer' must be one of 'uniform', 'keras'"),
])
def test_unknown_names_are_refused_by_the_hparams(overrides, message):
    with pytest.raises(HParamsError, match=message):
        small_hparams(overrides)


# Each registered RNN set names its model by its prefix.
# The first prefix that matches wins: T2T's lstm_bahdanau_attention is a Luong-style
# model with the concat score (hparams/t2t_lstm.py), not our RNNsearch.
SET_MODELS = {"lstm_sutskever": SEQ2SEQ, "lstm_bahdanau_attention": LUONG,
              "lstm_bahdanau": BAHDANAU, "lstm_luong": LUONG,
              "lstm_seq2seq": SEQ2SEQ, "lstm_attention": LUONG}


@pytest.mark.parametrize("set_name", [n for n in registry.hparams_sets.names()
                                      if n.startswith("lstm_")])
def test_every_lstm_set_builds_its_model(set_name):
    hparams = registry.hparams_sets[set_name]()
    model_name = next(model for prefix, model in SET_MODELS.items()
                      if set_name.startswith(prefix))
    # The papers' shapes, scaled down: the keys and their meaning are what is tested.
    # A tied softmax reads embedding_size-wide states, so its sets keep the two equal.
    tied = hparams.shared_embedding_and_softmax_weights
    for key, value in (("hidden_size", 8), ("embedding_size", 8 if tied else 6),
                       ("attention_size", 4), ("maxout_units", 3)):
        if key in hparams:
            hparams.set_hparam(key, value)
    model = registry.models[model_name](hparams, VOCAB)
    assert model({"inputs": INPUTS, "targets": TARGETS}).shape == (3, 5, VOCAB)


# (model, overrides, sequence accuracy to reach on dev, within this many steps).
# The Sutskever model, and Luong's global general attention over a bidirectional
# encoder. Bahdanau's model (one layer, reverse_source=false) and Luong's local-p
# attention (general score, window 2) learn in test_attention_learns.py, as do its
# global (concat) and local-m scopes; the general score over a one-way encoder is
# this case's attention over another encoder. (They were cases here too: 7-8 s each.)
LEARNERS = [
    (SEQ2SEQ, "", 0.75, 600),
    (LUONG, "attention_score=general,bidirectional_encoder=true", 0.9, 400),
]


@pytest.mark.parametrize("name, overrides, target, max_steps", LEARNERS,
                         ids=[f"{m}[{o}]" for m, o, _, _ in LEARNERS])
def test_each_model_learns_to_copy(copy_data, tmp_path, name, overrides, target, max_steps):
    hparams = small_hparams(
        "hidden_size=32,embedding_size=16,num_encoder_layers=1,num_decoder_layers=1,"
        "attention_size=32,maxout_units=32,initializer=keras,optimizer=adam,"
        "learning_rate=0.01,optimizer_adam_beta2=0.999,optimizer_adam_epsilon=1e-7,"
        "loss_normalizer=tokens,batch_size=256,max_length=10,length_bucket_step=0")
    if overrides:
        hparams.parse(overrides)
    trainer = make_trainer(copy_data, tmp_path, hparams, model_name=name, problem=ShortCopy(),
                           save_checkpoints_steps=10**6, save_checkpoints_minutes=1e6,
                           log_every_steps=10**6, eval_every_steps=10**6)
    accuracy = 0.0
    for steps in range(200, max_steps + 1, 100):
        trainer.options.train_steps = steps
        accuracy = trainer.train()["sequence_accuracy"]
        if accuracy >= target:
            break
    assert accuracy >= target, (trainer.step, accuracy)


def test_a_bidirectional_encoder_reads_both_sides_and_starts_the_decoder_from_both_ends():
    """Each source state holds a forward half (the words up to it) and a backward half
    (the words from it on); each decoder layer starts from its encoder layer's forward
    state at the last word and backward state at the first. (One layer: above it a
    forward LSTM reads backward halves too.)"""
    model = make_model(LUONG, "bidirectional_encoder=true,reverse_source=false,"
                              "num_encoder_layers=1,num_decoder_layers=1")
    encoded = model.encode(INPUTS)
    memory, half = encoded["memory"].numpy(), 4  # hidden_size 8: 4 cells a direction
    later_word_changed = model.encode(tf.tensor_scatter_nd_update(INPUTS, [[0, 3]], [2]))
    changed = later_word_changed["memory"].numpy()
    np.testing.assert_allclose(changed[0, :3, :half], memory[0, :3, :half], atol=1e-6)
    assert np.abs(changed[0, 0, half:] - memory[0, 0, half:]).max() > 1e-4
    last_word = tf.reduce_sum(tf.cast(INPUTS != PAD_ID, tf.int32), 1).numpy() - 1
    top_h = encoded["layer_0/h"].numpy()
    np.testing.assert_allclose(top_h[:, :half], memory[np.arange(3), last_word, :half],
                               atol=1e-6)
    np.testing.assert_allclose(top_h[:, half:], memory[:, 0, half:], atol=1e-6)
    assert encoded["layer_0/c"].shape == (3, 8)


def test_local_m_over_a_reversed_source_centres_on_the_sentence_position():
    # Luong et al.'s local-m looks at p_t = t in the sentence; over a reversed source
    # that position sits at the other end of the memory.
    window = 2
    model = make_model(LUONG, f"attention_score=general,attention_scope=local_m,"
                              f"attention_window={window},reverse_source=true")
    words = 30
    inputs = tf.constant([[2 + i % 9 for i in range(words)] + [EOS_ID]])
    targets = tf.constant([[3] * 12 + [EOS_ID]])
    weights = model.attention_weights({"inputs": inputs,
                                       "targets": targets})["encoder_decoder"][0, 0, 0].numpy()
    for t in (0, 5, 11):
        seen = np.flatnonzero(weights[t] > 0)
        assert seen.min() >= t - window and seen.max() <= t + window, (t, seen)
        assert weights[t].sum() == pytest.approx(1.0, abs=1e-5)


# Two layers a side where the layers' stacking is checked (the Sutskever model, and
# input feeding, the float16 RNN); the other attention cases, whose scores and scopes are
# the point, one layer a side (each layer's loop more to trace, the same casts).
ONE_LAYER = ",num_encoder_layers=1,num_decoder_layers=1"
PRECISION_CONFIGS = CONFIGS[:1] + CONFIGS[3:4] + [
    (name, over + ONE_LAYER) for name, over in CONFIGS[2:3] + CONFIGS[5:7]] + [
    (LUONG, "attention_score=general,scheduled_sampling_prob=0.5" + ONE_LAYER),
    ("transformer", "num_encoder_layers=1,num_decoder_layers=1,hidden_size=8,filter_size=8,num_heads=2")]


# bfloat16 for every model, score and scope; float16 takes the same code paths (the
# compute dtype is cast alike), so one Transformer and one attention RNN suffice.
PRECISION_CASES = ([("mixed_bfloat16", name, over) for name, over in PRECISION_CONFIGS]
                   + [("mixed_float16", name, over) for name, over in PRECISION_CONFIGS
                      if name == "transformer" or "input_feeding=true" in over])


@pytest.mark.parametrize("dtype, name, overrides", PRECISION_CASES,
                         ids=[f"{d}-{m}[{o}]" for d, m, o in PRECISION_CASES])
def test_every_model_trains_a_step_and_decodes_under_a_mixed_dtype(dtype, name, overrides):
    """Float32 variables, half-precision compute, float32 logits and weights; the
    step's decode agrees with teacher forcing to half precision."""
    hparams = (transformer_tiny().parse(overrides) if name == "transformer"
               else small_hparams(overrides))
    hparams.parse(f"dtype={dtype}")
    with dtype_policy(dtype):
        tf.keras.utils.set_random_seed(7)
        model = registry.models[name](hparams, VOCAB)
        features = {"inputs": INPUTS, "targets": TARGETS}
        before = [v.numpy().copy() for v in model.trainable_variables]
        optimizer = keras.optimizers.Adam(0.01)
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(TARGETS,
                                                                                 logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        assert logits.dtype == tf.float32 and np.isfinite(loss.numpy())
        assert all(v.dtype == tf.float32 for v in model.trainable_variables)
        assert any(not np.array_equal(b, v.numpy())
                   for b, v in zip(before, model.trainable_variables))
        if name != "transformer":  # test_transformer_decoding.py checks its steps
            forced = model(features).numpy()
            np.testing.assert_allclose(incremental_logits(model, INPUTS, TARGETS), forced,
                                       atol=0.05 * np.abs(forced).max())
        ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))(INPUTS, 7)
        assert ids.shape[:2] == (3, 2) and np.isfinite(scores.numpy()[:, 0]).all()
        if name != SEQ2SEQ:
            weights = model.attention_weights(features)
            assert all(w.dtype == tf.float32 for w in weights.values())
    # The inference model (weights in the compute dtype, norms' in float32) decodes
    # exactly as the mixed one: mixed precision casts every weight where it is used.
    with dtype_policy(dtype, inference=True):
        inference = registry.models[name](hparams, VOCAB)
    copy_weights(model, inference)
    half = dtype.removeprefix("mixed_")
    assert {v.dtype for v in inference.weights if "norm/" not in v.path} == {half}
    assert all(v.dtype == "float32" for v in inference.weights if "norm/" in v.path)
    twin_ids, twin_scores = BeamSearchDecoder(inference, SearchOptions(beam_size=2, alpha=0.6))(
        INPUTS, 7)
    np.testing.assert_array_equal(twin_ids.numpy(), ids.numpy())
    np.testing.assert_array_equal(twin_scores.numpy(), scores.numpy())


@pytest.mark.parametrize("name", sorted(registry.models))
def test_a_second_model_in_one_process_has_the_same_checkpoint_keys(name):
    """An ensemble restores several models in one process: Keras' per-process layer
    numbering must not reach the checkpoint keys."""
    hparams = transformer_tiny() if name == "transformer" else small_hparams()
    first, second = (set(model_variables(registry.models[name](hparams, VOCAB)))
                     for _ in range(2))
    assert first == second
