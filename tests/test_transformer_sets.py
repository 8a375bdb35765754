"""The Transformer's registered hparams sets: the paper's Table 3 rows, tensor2tensor's
sets (batch, learning rate, warmup), the relative-position sets and the TPU sets
refused with the set to use."""
import pytest
import tensorflow as tf

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.hparams.transformer import transformer_base
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.schedules import learning_rate_schedule

load_builtins()


# Each Table 3 row's set: the keys in which it differs from transformer_base.
TABLE3 = {
    **{f"transformer_base_h{h}": {"num_heads": h} for h in (1, 4, 16, 32)},
    **{f"transformer_base_dk{d}": {"attention_key_channels": 8 * d} for d in (16, 32)},
    **{f"transformer_base_layers{n}": {"num_encoder_layers": n, "num_decoder_layers": n}
       for n in (2, 4, 8)},
    **{f"transformer_base_hidden{d}": {"hidden_size": d} for d in (256, 1024)},
    **{f"transformer_base_filter{d}": {"filter_size": d} for d in (1024, 4096)},
    **{f"transformer_base_dropout{t}": {"layer_prepostprocess_dropout": t / 10} for t in (0, 2)},
    **{f"transformer_base_ls{t}": {"label_smoothing": t / 10} for t in (0, 2)},
    "transformer_base_learned_pos": {"position_embedding": "learned"},
}
# (num_heads, d_k, d_v) of a few rows, checked on a built model.
TABLE3_HEADS = {"transformer_base_h4": (4, 128, 128), "transformer_base_dk16": (8, 16, 64),
                "transformer_base_hidden256": (8, 32, 32)}


def differences(hparams, base) -> dict:
    """The values of ``hparams`` that ``base`` does not share."""
    return {key: value for key, value in hparams.values().items()
            if base.values().get(key) != value}


def test_table3_variants_are_registered_with_their_head_sizes():
    load_builtins()
    for name, changed in TABLE3.items():
        assert differences(registry.hparams_sets[name](), transformer_base()) == changed, name
    for name, (heads, key_depth, value_depth) in TABLE3_HEADS.items():
        hparams = registry.hparams_sets[name]()
        hparams.num_encoder_layers = hparams.num_decoder_layers = 1  # cheap to build
        with tf.Graph().as_default():
            attention = Transformer(hparams, 10).decoder_blocks[0].cross_attention
        assert (attention.num_heads, attention.key_depth, attention.value_depth) == \
            (heads, key_depth, value_depth), name


# tensor2tensor's sets: (the set T2T builds it on, how it differs from that one,
# T2T's batch size, peak learning rate and warmup steps), the peak from T2T's own
# formulas: "noam" learning_rate * 0.002 (Adam) * 5000 * d^-0.5 * warmup^-0.5 (v1, v2);
# constant * d^-0.5 * warmup^-0.5 (v3 and after); single_gpu's constant * warmup^-0.5.
T2T_SETS = {
    "transformer_base_v1": ("transformer_base",
                            {"learning_rate_schedule": "legacy", "learning_rate": 0.1,
                             "learning_rate_decay_scheme": "noam",
                             "eval_drop_long_sequences": False},
                            4096, 0.1 * 0.002 * 5000 * 512 ** -0.5 * 4000 ** -0.5, 4000),
    "transformer_base_v2": ("transformer_base_v1",
                            {"normalize_before": True, "attention_dropout": 0.1,
                             "relu_dropout": 0.1, "learning_rate": 0.2,
                             "learning_rate_warmup_steps": 8000},
                            4096, 0.2 * 0.002 * 5000 * 512 ** -0.5 * 8000 ** -0.5, 8000),
    "transformer_base_v3": ("transformer_base_v2",
                            {"optimizer_adam_beta2": 0.997, "learning_rate": 1.0,
                             "learning_rate_constant": 2.0,
                             "learning_rate_schedule":
                                 "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"},
                            4096, 2.0 * 512 ** -0.5 * 8000 ** -0.5, 8000),
    "transformer_base_single_gpu": ("transformer_base_v3",
                                    {"batch_size": 1024, "learning_rate_constant": 0.1,
                                     "learning_rate_schedule":
                                         "constant*linear_warmup*rsqrt_decay",
                                     "learning_rate_warmup_steps": 16000},
                                    1024, 0.1 * 16000 ** -0.5, 16000),
    "transformer_big_dr1": ("transformer_base_v3",
                            {"hidden_size": 1024, "filter_size": 4096, "num_heads": 16},
                            4096, 2.0 * 1024 ** -0.5 * 8000 ** -0.5, 8000),
    "transformer_big_single_gpu": ("transformer_big_dr1",
                                   {"batch_size": 2048, "learning_rate_warmup_steps": 16000},
                                   2048, 2.0 * 1024 ** -0.5 * 16000 ** -0.5, 16000),
    "transformer_big_enfr": ("transformer_big_dr1",
                             {"filter_size": 8192,
                              "shared_embedding_and_softmax_weights": False},
                             4096, 2.0 * 1024 ** -0.5 * 8000 ** -0.5, 8000),
}


@pytest.mark.parametrize("name", T2T_SETS)
def test_tensor2tensor_sets_have_its_batch_learning_rate_and_warmup(name):
    load_builtins()
    base, changed, batch_size, peak, warmup = T2T_SETS[name]
    hparams = registry.hparams_sets[name]().check()
    assert differences(hparams, registry.hparams_sets[base]()) == changed
    assert (hparams.batch_size, hparams.learning_rate_warmup_steps) == (batch_size, warmup)
    schedule = learning_rate_schedule(hparams)
    # The optimizer's step warmup - 1 is the schedule's step warmup (counted from 1);
    # past the peak the rate falls as step^-0.5, as T2T's does.
    assert float(schedule(warmup - 1)) == pytest.approx(peak, rel=1e-5)
    assert float(schedule(4 * warmup - 1)) == pytest.approx(peak / 2, rel=1e-5)
    hparams.num_encoder_layers = hparams.num_decoder_layers = 1  # cheap to build
    with tf.Graph().as_default():
        assert Transformer(hparams, 10).hparams is hparams


# The relative sets: the set each is built on (T2T's transformer_big for the big one:
# big_dr1 with 2048-token batches and dropout 0.3), and relative positions in place of
# absolute ones, clipped at 20 as in T2T.
RELATIVE_SETS = {
    "transformer_relative": ("transformer_base_v3", {}),
    "transformer_relative_big": ("transformer_big_dr1", {"batch_size": 2048,
                                                        "layer_prepostprocess_dropout": 0.3}),
    "transformer_relative_small": ("transformer_small", {}),
    "transformer_relative_tiny": ("transformer_tiny", {}),
    "transformer_relative_multi30k": ("transformer_multi30k", {}),
    "transformer_relative_multi30k_tiny": ("transformer_multi30k_tiny", {}),
    "transformer_relative_parsing": ("transformer_parsing", {}),
    "transformer_relative_parsing_sample": ("transformer_parsing_sample", {}),
}


def test_relative_sets_are_their_base_with_relative_positions():
    load_builtins()
    relative = {"self_attention_type": "dot_product_relative", "max_relative_position": 20,
                "position_embedding": "none"}
    for name, (base, changed) in RELATIVE_SETS.items():
        hparams = registry.hparams_sets[name]().check()
        assert differences(hparams, registry.hparams_sets[base]()) == {**changed, **relative}
    hparams = registry.hparams_sets["transformer_relative"]()
    hparams.num_encoder_layers = hparams.num_decoder_layers = 1  # cheap to build
    with tf.Graph().as_default():
        attention = Transformer(hparams, 10).encoder_blocks[0].self_attention
    assert attention.max_relative_position == 20
    assert tuple(attention.relative_position_keys.shape) == (41, 64)


@pytest.mark.parametrize("name, instead", [("transformer_tpu", "transformer_base_v3"),
                                           ("transformer_big_enfr_tpu", "transformer_big_enfr"),
                                           ("transformer_tiny_tpu", "transformer_tiny")])
def test_tensor2tensor_tpu_sets_are_refused_naming_the_set_to_use(name, instead):
    load_builtins()
    with pytest.raises(KeyError) as info:
        registry.hparams_sets[name]
    assert str(info.value) == (f"hparams set {name!r} is tensor2tensor's and has no t2t-lite "
                               "twin: it is a TPU set (Adafactor, fixed-length batches); "
                               f"use --hparams_set={instead}")
    assert name not in registry.hparams_sets and instead in registry.hparams_sets
