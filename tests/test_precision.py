"""The speed switches: hparams dtype (Keras mixed precision) and xla (a compiled
training step). Each must train and decode; what they are worth is measured by
benchmarks/speed_table.py, not here."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from toys import make_trainer, training_hparams

BATCH = {"inputs": tf.constant([[2, 3, 3, 2, 1], [3, 2, 1, 0, 0]]),
         "targets": tf.constant([[2, 3, 3, 2, 1], [2, 3, 1, 0, 0]])}


def one_batch():
    return tf.data.Dataset.from_tensors(BATCH).repeat()


@pytest.mark.parametrize("dtype", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_computes_in_half_and_keeps_float32_where_it_matters(
        reverse_data, tmp_path, dtype):
    trainer = make_trainer(reverse_data, tmp_path, training_hparams(f"dtype={dtype}"))
    model = trainer.model
    half = tf.bfloat16 if dtype == "mixed_bfloat16" else tf.float16
    assert all(variable.dtype == tf.float32 for variable in model.trainable_variables)
    block = model.decoder_blocks[0]
    assert block.compute_dtype == half.name
    logits = model(BATCH)
    assert logits.dtype == tf.float32  # the loss is taken in float32
    weights = model.attention_weights(BATCH)
    assert weights["decoder_self"].dtype == tf.float32
    np.testing.assert_allclose(tf.reduce_sum(weights["decoder_self"], -1), 1.0, atol=1e-3)
    before = [v.numpy() for v in model.trainable_variables]
    loss = trainer.train_on(one_batch(), 6)["loss"]  # float16 loss scaling may skip the first
    assert np.isfinite(loss) and trainer.step >= 1
    assert any(not np.array_equal(a, v.numpy()) for a, v in zip(before, model.trainable_variables))
    ids, scores = BeamSearchDecoder(model, SearchOptions(beam_size=2))(BATCH["inputs"], 6)
    assert ids.shape[:2] == (2, 2) and np.all(np.isfinite(scores.numpy()))


def test_float32_and_mixed_bfloat16_agree_roughly(reverse_data, tmp_path):
    full = make_trainer(reverse_data, tmp_path / "full", training_hparams())
    mixed = make_trainer(reverse_data, tmp_path / "mixed",
                         training_hparams("dtype=mixed_bfloat16"))
    mixed.model.set_weights(full.model.get_weights())
    # bfloat16 keeps 8 bits of mantissa: logits agree to about 1e-2 relative.
    np.testing.assert_allclose(mixed.model(BATCH).numpy(), full.model(BATCH).numpy(),
                               rtol=0.05, atol=0.05)


# Relative positions (Shaw et al.) compile too: their one-hot products and tables.
@pytest.mark.slow  # an XLA compile of the step: about half a minute each
@pytest.mark.parametrize("overrides", [
    "", "self_attention_type=dot_product_relative,max_relative_position=2,"
        "position_embedding=none"], ids=["absolute", "relative"])
def test_xla_step_equals_the_plain_step(reverse_data, tmp_path, overrides):
    plain = make_trainer(reverse_data, tmp_path / "plain", training_hparams(overrides))
    compiled = make_trainer(reverse_data, tmp_path / "xla",
                            training_hparams(",".join(filter(None, [overrides, "xla=true"]))))
    compiled.model.set_weights(plain.model.get_weights())
    plain_loss = plain.train_on(one_batch(), 2)["loss"]
    compiled_loss = compiled.train_on(one_batch(), 2)["loss"]
    assert compiled_loss == pytest.approx(plain_loss, rel=1e-4)
    for a, b in zip(plain.model.get_weights(), compiled.model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_bad_combinations_are_refused(reverse_data, tmp_path, two_cpu_strategy):
    with pytest.raises(ValueError, match="'dtype' must be one of 'float32', 'mixed_bfloat16', "):
        make_trainer(reverse_data, tmp_path / "a", training_hparams("dtype=float8"))
    with pytest.raises(ValueError, match="clip_grad_norm cannot be combined with dtype="):
        make_trainer(reverse_data, tmp_path / "b",
                     training_hparams("dtype=mixed_float16,clip_grad_norm=1.0"))
    with pytest.raises(ValueError, match="2 replicas: set xla=false"):
        make_trainer(reverse_data, tmp_path / "c", training_hparams("xla=true"), two_cpu_strategy)
