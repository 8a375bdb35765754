"""tensor2tensor.models.transformer: T2T's hparams sets, as T2T defined them.

Here ``transformer_base()`` is T2T's (v3: pre-norm, dropout 0.1, warmup 8000, Adam
beta2 0.997), not the paper's, which t2t-lite's own ``transformer_base`` is: a user's
set built on it means what it meant in T2T. ``transformer_small`` / ``tiny`` are
T2T's shapes (2 layers; 256 / 128 wide, 4 heads) on that base; ``transformer_big`` and
``transformer_base_multistep8`` are T2T's too.
"""
from __future__ import annotations

from t2t_lite import registry
from t2t_lite.compat.refusals import missing_names
from t2t_lite.hparam import HParams

# T2T's set -> t2t-lite's set of the same meaning (docs/FROM_T2T.md).
SAME_SETS = {
    "transformer_base": "transformer_base_v3",
    "transformer_base_v1": "transformer_base_v1",
    "transformer_base_v2": "transformer_base_v2",
    "transformer_base_v3": "transformer_base_v3",
    "transformer_base_single_gpu": "transformer_base_single_gpu",
    "transformer_big_dr1": "transformer_big_dr1",
    "transformer_big_single_gpu": "transformer_big_single_gpu",
    "transformer_big_enfr": "transformer_big_enfr",
    "transformer_relative": "transformer_relative",
    "transformer_relative_big": "transformer_relative_big",
}


def _ours(name: str) -> HParams:
    return registry.hparams_sets[name]()


def _same_set(t2t_name: str):
    def hparams_set() -> HParams:
        return _ours(SAME_SETS[t2t_name])
    hparams_set.__name__ = hparams_set.__qualname__ = t2t_name
    hparams_set.__doc__ = f"T2T's {t2t_name}: t2t-lite's {SAME_SETS[t2t_name]}."
    return hparams_set


globals().update({name: _same_set(name) for name in SAME_SETS})


def _shape(hparams: HParams, layers: int, hidden: int, filter_size: int,
           heads: int) -> HParams:
    hparams.num_encoder_layers = hparams.num_decoder_layers = layers
    hparams.hidden_size, hparams.filter_size, hparams.num_heads = hidden, filter_size, heads
    return hparams


def transformer_big() -> HParams:
    """T2T's transformer_big: v3, d_model 1024, d_ff 4096, 16 heads, batch 2048,
    dropout 0.3."""
    hparams = _ours("transformer_big_dr1")
    hparams.batch_size = 2048
    hparams.layer_prepostprocess_dropout = 0.3
    return hparams


def transformer_base_multistep8() -> HParams:
    """T2T's v3 with Adam over 8 batches a step (gradient_accumulation_steps here)."""
    hparams = _ours("transformer_base_v3")
    hparams.optimizer = "multistep_adam"
    hparams.optimizer_multistep_accumulate_steps = 8
    return hparams


def transformer_small() -> HParams:
    return _shape(_ours("transformer_base_v3"), 2, 256, 1024, 4)


def transformer_tiny() -> HParams:
    return _shape(_ours("transformer_base_v3"), 2, 128, 512, 4)


__getattr__ = missing_names("models.transformer", {
    "Transformer": "t2t-lite's Transformer is a Keras model (--model=transformer); a "
                   "T2TModel subclass does not carry over",
    "transformer_tpu": "use transformer_base (T2T's TPU sets use Adafactor and fixed "
                       "batches)",
})
