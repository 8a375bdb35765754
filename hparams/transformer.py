"""Transformer hparams sets: the paper's base and big models and CPU sizes.

Each set is a short function built on another, as in T2T. Training keys
(batching, loss, optimizer, learning rate) are ``basic_params``'s, documented in
``t2t_lite/hparams/common.py``; the Transformer's own keys (each declared with
its range; the key and value channels must split evenly over the heads):

model shape     hidden_size (d_model), filter_size (d_ff), num_heads,
                num_encoder_layers, num_decoder_layers, attention_key_channels /
                attention_value_channels (total d_k*h / d_v*h; 0 = hidden_size)
regularisation  layer_prepostprocess_dropout (sub-layer outputs and
                embeddings+positions), attention_dropout, relu_dropout
structure       normalize_before (pre-norm; False = the paper's post-norm),
                position_embedding ("timing" sinusoids, "learned", or "none"
                with relative positions only; learned ones make max_length
                part of the model's shape),
                shared_embedding_and_softmax_weights (one matrix for source
                embedding, target embedding and softmax; with separate source
                and target vocabularies, for the target embedding and softmax)
positions       self_attention_type ("dot_product"; "dot_product_relative": Shaw
                et al. 2018's relative position representations in the encoder's
                and the decoder's self-attention, keys and values, with
                max_relative_position, the distance they are clipped at; T2T's
                names; 0 with dot_product)

The training defaults are the paper's: Adam(0.9, 0.98, 1e-9), the rsqrt_decay
schedule with 4000 warmup steps, label smoothing 0.1, batches of 4096 tokens.

tensor2tensor's own set names (transformer_base_v1 ... transformer_big_enfr) are
at the end, as T2T means them, then the transformer_relative sets (each the set of
its name without "relative", with relative positions instead of sinusoids); T2T's
TPU sets are refused, naming the set to use.
"""
from t2t_lite.hparam import HParams, at_least, fraction, one_of
from t2t_lite.hparams.common import basic_params
from t2t_lite.registry import hparams_sets, register_hparams

POSITION_EMBEDDINGS = ("timing", "learned", "none")
SELF_ATTENTION_TYPES = ("dot_product", "dot_product_relative")


def _heads_split_channels(hparams: HParams) -> str | None:
    """Each head gets d_k = channels / num_heads of the keys (and values)."""
    for key in ("attention_key_channels", "attention_value_channels"):
        channels = getattr(hparams, key) or hparams.hidden_size
        if channels % hparams.num_heads:
            named = key if getattr(hparams, key) else "hidden_size"
            return (f"{named}={channels} is not divisible by num_heads={hparams.num_heads}: "
                    "each head takes an equal share")
    return None


def _positions_are_read(hparams: HParams) -> str | None:
    """The model learns word order from somewhere, and max_relative_position is read."""
    relative = hparams.self_attention_type == "dot_product_relative"
    if relative and hparams.max_relative_position < 1:
        return ("self_attention_type=dot_product_relative needs max_relative_position >= 1 "
                "(the distance relative positions are clipped at; T2T's sets use 20)")
    if not relative and hparams.max_relative_position:
        return (f"max_relative_position={hparams.max_relative_position} is read only with "
                f"self_attention_type=dot_product_relative (not {hparams.self_attention_type}):"
                " set that, or max_relative_position=0")
    if not relative and hparams.position_embedding == "none":
        return ("position_embedding=none leaves a Transformer with "
                f"self_attention_type={hparams.self_attention_type} blind to word order: "
                "use position_embedding=timing or self_attention_type=dot_product_relative")
    return None


@register_hparams
def transformer_base() -> HParams:
    """The paper's base model (Vaswani et al. 2017, Table 3 row "base")."""
    return basic_params().extend(
        hidden_size=at_least(1, 512),
        filter_size=at_least(1, 2048),
        num_heads=at_least(1, 8),
        num_encoder_layers=at_least(1, 6),
        num_decoder_layers=at_least(1, 6),
        attention_key_channels=at_least(0, 0),
        attention_value_channels=at_least(0, 0),
        layer_prepostprocess_dropout=fraction(0.1),
        attention_dropout=fraction(0.0),
        relu_dropout=fraction(0.0),
        normalize_before=False,
        position_embedding=one_of(*POSITION_EMBEDDINGS),
        shared_embedding_and_softmax_weights=True,
        self_attention_type=one_of(*SELF_ATTENTION_TYPES),
        max_relative_position=at_least(0, 0),
    ).add_rule(_heads_split_channels).add_rule(_positions_are_read)


@register_hparams
def transformer_big() -> HParams:
    """The paper's big model: d_model 1024, d_ff 4096, 16 heads, dropout 0.3."""
    hparams = transformer_base()
    hparams.hidden_size = 1024
    hparams.filter_size = 4096
    hparams.num_heads = 16
    hparams.layer_prepostprocess_dropout = 0.3
    return hparams


@register_hparams
def transformer_base_prenorm() -> HParams:
    """Base with pre-norm residual blocks (T2T's later default, v2)."""
    hparams = transformer_base()
    hparams.normalize_before = True
    return hparams


@register_hparams
def transformer_small() -> HParams:
    """A CPU-sized model: 3+3 layers of 256, 4 heads, pre-norm.

    Pre-norm as in T2T's small sets (built on its v2 base): small models trained
    briefly converge faster and more reliably with it than with post-norm.
    """
    hparams = transformer_base_prenorm()
    hparams.hidden_size = 256
    hparams.filter_size = 1024
    hparams.num_heads = 4
    hparams.num_encoder_layers = 3
    hparams.num_decoder_layers = 3
    hparams.learning_rate_warmup_steps = 1000
    hparams.batch_size = 2048
    return hparams


@register_hparams
def transformer_tiny() -> HParams:
    """The smallest useful model: 2+2 layers of 128, 4 heads."""
    hparams = transformer_small()
    hparams.hidden_size = 128
    hparams.filter_size = 512
    hparams.num_encoder_layers = 2
    hparams.num_decoder_layers = 2
    return hparams


# Table 3 of the paper: variations on the base model, one registered set per
# row entry, each "transformer_base" with a few hparams overridden.
def _register_base_variant(name: str, doc: str, **overrides) -> None:
    def variant() -> HParams:
        return transformer_base().override_from_dict(overrides)
    variant.__name__ = variant.__qualname__ = name
    variant.__doc__ = doc
    register_hparams(name)(variant)


# (A) number of heads at constant computation: d_k = d_v = d_model / h.
for _heads in (1, 4, 16, 32):
    _register_base_variant(f"transformer_base_h{_heads}",
                           f"Table 3 (A): {_heads} heads, d_k = d_v = {512 // _heads}.",
                           num_heads=_heads)
# (B) smaller attention keys (8 heads, d_v stays 64).
for _key_depth in (16, 32):
    _register_base_variant(f"transformer_base_dk{_key_depth}",
                           f"Table 3 (B): d_k = {_key_depth}.",
                           attention_key_channels=8 * _key_depth)
# (C) model size. The d_model rows keep 8 heads, so d_k = d_v = d_model / 8
# gives the paper's 32 (d_model 256) and 128 (d_model 1024).
for _layers in (2, 4, 8):
    _register_base_variant(f"transformer_base_layers{_layers}",
                           f"Table 3 (C): N = {_layers} encoder and decoder layers.",
                           num_encoder_layers=_layers, num_decoder_layers=_layers)
for _hidden in (256, 1024):
    _register_base_variant(f"transformer_base_hidden{_hidden}",
                           f"Table 3 (C): d_model = {_hidden}, d_k = d_v = {_hidden // 8}.",
                           hidden_size=_hidden)
for _filter in (1024, 4096):
    _register_base_variant(f"transformer_base_filter{_filter}",
                           f"Table 3 (C): d_ff = {_filter}.", filter_size=_filter)
# (D) residual dropout P_drop and label smoothing eps_ls.
for _tenths in (0, 2):
    _register_base_variant(f"transformer_base_dropout{_tenths}",
                           f"Table 3 (D): P_drop = {_tenths / 10}.",
                           layer_prepostprocess_dropout=_tenths / 10)
    _register_base_variant(f"transformer_base_ls{_tenths}",
                           f"Table 3 (D): eps_ls = {_tenths / 10}.",
                           label_smoothing=_tenths / 10)
# (E) learned positional embeddings instead of sinusoids.
_register_base_variant("transformer_base_learned_pos",
                       "Table 3 (E): learned positional embeddings.",
                       position_embedding="learned")


@register_hparams
def transformer_multi30k() -> HParams:
    """Multi30k (29k sentence pairs) on a 2-core CPU: the small shape, more dropout.

    A small corpus overfits a large model quickly, and a CPU affords only a
    small one: 3+3 layers of 256 with dropout 0.2 (attention and ReLU 0.1).
    Two cores manage about one step of 2048 tokens a second, so an hour is only
    a few thousand updates: small batches and a short warmup to a peak rate of
    about 1.5e-3.
    """
    hparams = transformer_small()
    hparams.layer_prepostprocess_dropout = 0.2
    hparams.attention_dropout = 0.1
    hparams.relu_dropout = 0.1
    hparams.batch_size = 2048
    hparams.learning_rate = 0.7
    hparams.learning_rate_warmup_steps = 800
    hparams.max_length = 128
    return hparams


@register_hparams
def transformer_multi30k_tiny() -> HParams:
    """Multi30k after Wu et al. (2021), the best-known text-only Transformer on it:
    4+4 layers of 128, d_ff 256, 4 heads, dropout 0.3, shared embeddings, batches
    of 4096 tokens, peak learning rate 5e-3 after 2000 warmup steps (inverse
    square root decay), about 8k updates; they average the last 10 checkpoints
    and decode with beam 5. Pre-norm, as our other small sets.
    """
    hparams = transformer_multi30k()
    hparams.hidden_size = 128
    hparams.filter_size = 256
    hparams.num_encoder_layers = 4
    hparams.num_decoder_layers = 4
    hparams.layer_prepostprocess_dropout = 0.3
    hparams.batch_size = 4096
    hparams.learning_rate_warmup_steps = 2000
    # rsqrt_decay peaks at learning_rate * 128^-0.5 * 2000^-0.5 = learning_rate * 1.98e-3.
    hparams.learning_rate = 2.5
    return hparams


# tensor2tensor's names for its sets, meaning what T2T means by them: the same shape,
# batch (tokens per GPU), learning-rate keys and warmup, so that a user's set built on one
# (in a T2T usr_dir: t2t_lite/compat/) and --hparams mean what they meant in T2T: v1 and
# v2 run T2T's "legacy" noam schedule (learning_rate 0.1 / 0.2, times its Adam correction
# 0.002 and 5000, is the paper's curve at a scale of 1.0 / 2.0), v3 on its product string
# with learning_rate_constant (learning_rate is not read there, as in T2T). Where each
# differs from T2T: steps count from 1; T2T-only keys (target-space embedding, modality
# shards) do not exist (hparams/t2t_keys.py). Our transformer_base and transformer_big
# are the paper's (T2T's v1's shape); T2T's transformer_base is transformer_base_v3 here.
T2T_V3_SCHEDULE = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"


@register_hparams
def transformer_base_v1() -> HParams:
    """T2T's first base, the paper's shape: post-norm, 4096-token batches, "noam" rate
    0.1 with 4000 warmup steps; dev examples over max_length count (T2T's default)."""
    hparams = transformer_base()
    hparams.learning_rate_schedule = "legacy"
    hparams.learning_rate_decay_scheme = "noam"
    hparams.learning_rate = 0.1
    hparams.eval_drop_long_sequences = False
    return hparams


@register_hparams
def transformer_base_v2() -> HParams:
    """T2T's v2: pre-norm, dropout 0.1 on attention and ReLU too, and "noam" rate 0.2
    with 8000 warmup steps."""
    hparams = transformer_base_v1()
    hparams.normalize_before = True
    hparams.attention_dropout = 0.1
    hparams.relu_dropout = 0.1
    hparams.learning_rate = 0.2
    hparams.learning_rate_warmup_steps = 8000
    return hparams


@register_hparams
def transformer_base_v3() -> HParams:
    """T2T's v3, its transformer_base ever since: v2 with Adam beta2 0.997 and the rate
    as T2T's product, constant 2.0 * rsqrt_hidden_size (v2's curve)."""
    hparams = transformer_base_v2()
    hparams.optimizer_adam_beta2 = 0.997
    hparams.learning_rate_schedule = T2T_V3_SCHEDULE
    hparams.learning_rate_constant = 2.0
    hparams.learning_rate = 1.0  # not read under the product (T2T left its 0.2 unread)
    return hparams


@register_hparams
def transformer_base_single_gpu() -> HParams:
    """T2T's advice for one GPU: its base (v3) with 1024-token batches and the rate
    0.1 * min(step / 16000, 1) * max(step, 16000)^-0.5 (no rsqrt_hidden_size)."""
    hparams = transformer_base_v3()
    hparams.batch_size = 1024
    hparams.learning_rate_schedule = "constant*linear_warmup*rsqrt_decay"
    hparams.learning_rate_constant = 0.1
    hparams.learning_rate_warmup_steps = 16000
    return hparams


@register_hparams
def transformer_big_dr1() -> HParams:
    """T2T's big shape on its base (v3): d_model 1024, d_ff 4096, 16 heads, dropout
    0.1, 4096-token batches; the set T2T's big variants build on."""
    hparams = transformer_base_v3()
    hparams.hidden_size = 1024
    hparams.filter_size = 4096
    hparams.num_heads = 16
    return hparams


@register_hparams
def transformer_big_single_gpu() -> HParams:
    """T2T's big model for one GPU: its transformer_big (big_dr1's shape, 2048-token
    batches) with dropout 0.1 and 16000 warmup steps."""
    hparams = transformer_big_dr1()
    hparams.batch_size = 2048
    hparams.learning_rate_warmup_steps = 16000
    return hparams


@register_hparams
def transformer_big_enfr() -> HParams:
    """T2T's big model for WMT English-French: big_dr1 with d_ff 8192 and separate
    embedding and softmax weights."""
    hparams = transformer_big_dr1()
    hparams.filter_size = 8192
    hparams.shared_embedding_and_softmax_weights = False
    return hparams


# Shaw et al. 2018's relative position representations, as T2T's transformer_relative
# sets have them: in the self-attention of both stacks, clipped at distance 20, and
# no absolute positions. Each is the set of its name without "relative", changed so.
def with_relative_positions(hparams: HParams) -> HParams:
    """``hparams`` with relative positions (clipped at 20) in place of absolute ones."""
    hparams.position_embedding = "none"
    hparams.self_attention_type = "dot_product_relative"
    hparams.max_relative_position = 20
    return hparams


@register_hparams
def transformer_relative() -> HParams:
    """T2T's transformer_relative: its base (transformer_base_v3 here) with relative
    positions instead of sinusoids."""
    return with_relative_positions(transformer_base_v3())


@register_hparams
def transformer_relative_big() -> HParams:
    """T2T's transformer_relative_big: its transformer_big (big_dr1's shape, 2048-token
    batches, dropout 0.3) with relative positions instead of sinusoids."""
    hparams = transformer_big_dr1()
    hparams.batch_size = 2048
    hparams.layer_prepostprocess_dropout = 0.3
    return with_relative_positions(hparams)


@register_hparams
def transformer_relative_small() -> HParams:
    """transformer_small with relative positions instead of sinusoids."""
    return with_relative_positions(transformer_small())


@register_hparams
def transformer_relative_tiny() -> HParams:
    """transformer_tiny with relative positions instead of sinusoids (T2T's
    transformer_relative_tiny is its tiny shape on transformer_relative too)."""
    return with_relative_positions(transformer_tiny())


@register_hparams
def transformer_relative_multi30k() -> HParams:
    """transformer_multi30k with relative positions instead of sinusoids."""
    return with_relative_positions(transformer_multi30k())


@register_hparams
def transformer_relative_multi30k_tiny() -> HParams:
    """transformer_multi30k_tiny with relative positions instead of sinusoids."""
    return with_relative_positions(transformer_multi30k_tiny())


# T2T's TPU sets train with Adafactor on fixed-length batches, neither of which
# t2t-lite has: each names the set above that it was built on.
for _tpu_set, _instead in (("transformer_tpu", "transformer_base_v3"),
                           ("transformer_big_enfr_tpu", "transformer_big_enfr"),
                           ("transformer_tiny_tpu", "transformer_tiny")):
    hparams_sets.refuse(_tpu_set, "it is a TPU set (Adafactor, fixed-length batches); "
                                  f"use --hparams_set={_instead}")
