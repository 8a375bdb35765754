"""Attention models learn to attend (issue 60): each memorises 128 pairs whose
targets copy the source words in a fixed rearrangement and ends with attention
far from uniform; at the parsing set's shape the papers' initialisation gives
the attention a gradient to learn from, where Keras's defaults freeze it.

At these small sizes Keras's initialisation memorises too: its failure needs
the parsing set's width and depth, which the gradient test measures directly
(one batch) instead of training that model here."""
import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.hparams.lstm import lstm_attention_parsing
from t2t_lite.hparams.transformer import transformer_tiny

load_builtins()

PAIRS, LENGTH, VOCAB = 128, 8, 12
# Target position t copies source position ORDER[t]: neighbours swapped.
ORDER = np.array([1, 0, 3, 2, 5, 4, 7, 6])


def memorisation_pairs() -> dict[str, tf.Tensor]:
    """Sources of LENGTH distinct words (ids 2..VOCAB-1) + EOS; targets rearranged + EOS."""
    rng = np.random.default_rng(0)
    sources = np.stack([rng.choice(np.arange(2, VOCAB), LENGTH, replace=False)
                        for _ in range(PAIRS)])
    eos = np.ones((PAIRS, 1), np.int64)
    return {"inputs": tf.constant(np.concatenate([sources, eos], 1), tf.int32),
            "targets": tf.constant(np.concatenate([sources[:, ORDER], eos], 1), tf.int32)}


def memorise(model, features, steps: int, learning_rate: float) -> float:
    """Adam on the whole set for ``steps`` steps at most (fewer once the loss is under
    0.005); returns the last loss."""
    optimizer = tf.keras.optimizers.Adam(learning_rate)
    targets = features["targets"]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                targets, logits, from_logits=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    for done in range(1, steps + 1):
        loss = step()
        if done % 25 == 0 and float(loss) < 0.005:  # memorised: the rest would be the suite's time
            break
    print(f"memorised to loss {float(loss):.4f} in {done} steps")
    return float(loss)


def lstm_model(name: str, overrides: str):
    hparams = lstm_attention_parsing().extend(maxout_units=16)
    hparams.parse("hidden_size=32,embedding_size=32,attention_size=32,dropout=0.0,"
                  "initializer=uniform,attention_window=2," + overrides)
    return registry.models[name](hparams, VOCAB)


def transformer_model(name: str, overrides: str):
    hparams = transformer_tiny()
    hparams.parse("hidden_size=32,filter_size=64,num_heads=2,layer_prepostprocess_dropout=0.0,"
                  + overrides)
    return registry.models[name](hparams, VOCAB)


LUONG = "lstm_seq2seq_attention_luong"
ONE_LAYER = "num_encoder_layers=1,num_decoder_layers=1"
# (model, builder, overrides, steps)
MODELS = [
    ("lstm_seq2seq_attention_bahdanau", lstm_model, ONE_LAYER + ",reverse_source=false", 400),
    (LUONG, lstm_model, ONE_LAYER + ",attention_scope=global", 400),
    (LUONG, lstm_model, ONE_LAYER + ",attention_scope=local_m,attention_score=general", 400),
    (LUONG, lstm_model, ONE_LAYER + ",attention_scope=local_p,attention_score=general", 400),
    ("transformer", transformer_model, "", 400),
]


@pytest.mark.slow  # 300-400 steps: about 40 s each on a busy 2-core machine
@pytest.mark.parametrize("name, build, overrides, steps", MODELS,
                         ids=[f"{m}[{o}]" for m, _, o, _ in MODELS])
def test_every_attention_model_memorises_by_attending(name, build, overrides, steps):
    tf.keras.utils.set_random_seed(1)
    features = memorisation_pairs()
    model = build(name, overrides)
    loss = memorise(model, features, steps, learning_rate=0.01)
    copied = tf.argmax(model(features), -1).numpy() == features["targets"].numpy()
    # [B, layers, heads, T, S] -> the top layer, the copied words' rows (not EOS's).
    weights = model.attention_weights(features)["encoder_decoder"].numpy()[:, -1, :, :LENGTH]
    entropy = -(weights * np.log(weights + 1e-12)).sum(-1).mean()
    assert loss < 0.05 and copied.all(), (loss, copied.mean())
    # Uniform attention over the LENGTH + 1 positions would be log(LENGTH + 1).
    assert entropy < 0.7 * math.log(LENGTH + 1), entropy


def parsing_shape_gradients(initializer: str) -> tuple[float, float, float]:
    """lstm_attention_parsing's shape (3 x 256, concat score), one batch of 20-word
    sentences: (mean |top encoder state|, mean |gradient| of the attention's memory
    kernel, of its score vector)."""
    tf.keras.utils.set_random_seed(1)
    hparams = lstm_attention_parsing().parse(f"dropout=0.0,initializer={initializer}")
    vocab = 2000
    rng = np.random.default_rng(0)
    sources = rng.integers(2, vocab, (8, 20))
    eos = np.ones((8, 1), np.int64)
    features = {"inputs": tf.constant(np.concatenate([sources, eos], 1), tf.int32),
                "targets": tf.constant(np.concatenate([sources[:, ::-1], eos], 1), tf.int32)}
    model = registry.models[LUONG](hparams, vocab)
    attention = [model.attention.memory_kernel, model.attention.score_vector]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            features["targets"], model(features, training=True), from_logits=True))
    memory_kernel, score_vector = tape.gradient(loss, attention)
    memory = model.encode(features["inputs"])["memory"]
    return tuple(float(tf.reduce_mean(tf.abs(x))) for x in (memory, memory_kernel, score_vector))


def test_at_the_parsing_shape_keras_initialisation_freezes_the_attention():
    """The diagnosis of issue 60: with Keras's defaults (Glorot kernels, zero biases,
    U(-0.05, 0.05) embeddings) three LSTM layers shrink the encoder's top states to
    about 1e-3, and the attention's gradients fall below Adam's epsilon, where Adam
    hardly moves them; U(-0.1, 0.1) for every weight (Luong et al.) keeps them
    some hundred times larger."""
    keras_memory, keras_kernel, keras_vector = parsing_shape_gradients("keras")
    memory, kernel, vector = parsing_shape_gradients("uniform")
    assert keras_memory < 0.005 < memory, (keras_memory, memory)
    assert keras_kernel < lstm_attention_parsing().optimizer_adam_epsilon, keras_kernel
    assert kernel > 30 * keras_kernel and vector > 30 * keras_vector, (
        kernel, keras_kernel, vector, keras_vector)


def test_uniform_initialisation_reaches_every_weight():
    """initializer=uniform draws every weight, biases included, from U(-gain, gain):
    embeddings, LSTM kernels and biases, attention, the attentional layer, softmax."""
    hparams = lstm_attention_parsing().extend(maxout_units=4)
    hparams.parse("hidden_size=8,embedding_size=8,attention_size=8,initializer=uniform,"
                  "initializer_gain=0.1")
    for name in (LUONG, "lstm_seq2seq_attention_bahdanau"):
        model = registry.models[name](hparams, VOCAB)
        # Untied (shared_embedding_and_softmax_weights=false), the softmax has a bias.
        assert model.softmax.bias.shape == (VOCAB,)
        for variable in model.trainable_variables:
            values = np.abs(variable.numpy())
            assert values.max() <= 0.1 and values.mean() > 0.03, (name, variable.path)
