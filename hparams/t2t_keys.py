"""tensor2tensor's hparams keys, known to every set (``add_t2t_keys``, the end of
``basic_params``), so that a T2T user's hparams functions and ``--hparams`` run
unchanged and mean what they meant in T2T, or stop in one line with advice.

Every key T2T declares in ``basic_params1``, its ``transformer_base_v1`` ... v3,
small / tiny / big / relative sets and ``lstm.py``'s sets is one of:

a. ours, same name and meaning: batch_size, max_length (T2T's 0 = batch_size is
   refused: give a length), length_bucket_step, clip_grad_norm, label_smoothing,
   optimizer, optimizer_adam_beta1 / beta2 / epsilon, optimizer_momentum_momentum /
   nesterov, optimizer_adafactor_* (Keras's Adafactor: its fixed choices are the
   ranges), weight_decay, learning_rate_schedule, learning_rate_constant,
   learning_rate_decay_scheme / steps / rate / staircase, learning_rate_warmup_steps,
   hidden_size, filter_size, num_heads, attention_key_channels /
   attention_value_channels, num_encoder_layers / num_decoder_layers (T2T's 0 = use
   num_hidden_layers is refused: set num_hidden_layers), layer_prepostprocess_dropout,
   attention_dropout, relu_dropout, self_attention_type, max_relative_position,
   shared_embedding_and_softmax_weights; in the LSTM sets shared_embedding,
   dropout, initializer, initializer_gain, scheduled_sampling_prob /
   warmup_steps (Luong). Different meaning under the same name: learning_rate (a
   scale on the schedule, docs/FROM_T2T.md); the LSTM sets' dropout (on embeddings,
   between layers and before the softmax; T2T's on each cell's input) and
   initializer ("uniform" / "keras"; T2T's names are refused by its range).
b. aliases (``ALIASES`` below): num_hidden_layers, pos, layer_preprocess_sequence,
   layer_postprocess_sequence, optimizer_multistep_accumulate_steps,
   activation_dtype, weight_dtype, initializer / initializer_gain (Transformer
   sets), attention_layer_size, multiply_embedding_mode, attention_mechanism
   (the LSTM attention sets' attention_score: luong = general, bahdanau = concat);
   and real keys declared here, read by the input pipeline: max_input_seq_length /
   max_target_seq_length (truncate inputs / targets to N tokens before batching;
   0 = off) and eval_drop_long_sequences (drop dev examples longer than max_length:
   True in t2t-lite's own sets, as they always did; T2T's sets have T2T's False).
c. no effect on the mathematics here, any value accepted (``NO_EFFECT``).
d. a no-op at T2T's default, accepted at it, refused otherwise with advice
   (``ONLY_AT``).

A key that a set declares for real (the LSTM sets' ``initializer``, the Transformer's
``num_heads``) is that set's: an alias or refusal of its name gives way to it.
"""
from __future__ import annotations

from typing import Any

from t2t_lite.hparam import Alias, HParams, HParamsError, at_least
from t2t_lite.hparams.t2t_key_tables import NO_EFFECT, ONLY_AT

def _t2t_line(key: str, accepted: tuple[Any, ...], value: Any, advice: str) -> HParamsError:
    shown = " or ".join(repr(v) for v in accepted)
    return HParamsError(f"hparam {key!r} is tensor2tensor's; t2t-lite has it only at "
                        f"{shown}, got {value!r}: {advice}")


def _no_effect(key: str, default: Any, why: str) -> Alias:
    return Alias(default, lambda h, v: {}, lambda h: h.given(key, default),
                 f"no effect here: {why}")


def _only_at(key: str, accepted: tuple[Any, ...], advice: str) -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value == "None" and None in accepted:
            value = None
        if not any(v == value and isinstance(v, bool) == isinstance(value, bool)
                   for v in accepted):
            raise _t2t_line(key, accepted, value, advice)
        return {}
    example = "" if accepted[0] is None or accepted[0] == {} else accepted[0]
    return Alias(example, write, lambda h: h.given(key, accepted[0]),
                 f"a no-op at {accepted[0]!r}")


def _text(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


# b. The aliases: each a function of the hparams (it reads which real keys the set has).
def _layers() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        return {"num_encoder_layers": value, "num_decoder_layers": value}

    def read(h: HParams) -> int:
        encoder, decoder = h.num_encoder_layers, h.num_decoder_layers
        if encoder != decoder:
            raise HParamsError(f"hparam 'num_hidden_layers' has no one value here: "
                               f"num_encoder_layers={encoder}, num_decoder_layers={decoder}:"
                               " read those")
        return encoder
    return Alias(6, write, read, "num_encoder_layers and num_decoder_layers",
                 ("num_encoder_layers", "num_decoder_layers"))


_POS = {"timing": "timing", "emb": "learned", "none": "none", None: "none"}


def _pos() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        if _text(value) not in _POS:
            raise _t2t_line("pos", ("timing", "emb", "none", None), value,
                            "T2T's other position signals are not supported")
        if "position_embedding" not in h.values():
            return {}  # the RNNs read no positions, in T2T either
        return {"position_embedding": _POS[_text(value)]}

    def read(h: HParams) -> Any:
        if "position_embedding" not in h.values():
            return h.given("pos", "timing")
        return {"timing": "timing", "learned": "emb", "none": None}[h.position_embedding]
    return Alias("timing", write, read, "position_embedding: timing, emb = learned, none",
                 ("position_embedding",))


_PRE, _POST = "layer_preprocess_sequence", "layer_postprocess_sequence"
# (preprocess, postprocess) -> normalize_before: the two residual blocks there are.
_BLOCKS = {("n", "da"): True, ("none", "dan"): False}


def _sequence(key: str) -> Alias:
    """One of the two sequences; the pair sets normalize_before once it is one of
    _BLOCKS (until then, a value waits for its partner: the rule below judges)."""
    partner = _POST if key == _PRE else _PRE
    mine = 0 if key == _PRE else 1

    def current(h: HParams, name: str) -> str:
        derived = _BLOCKS_OF[h.normalize_before][0 if name == _PRE else 1]
        return h.given(name, derived)

    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value not in {pair[mine] for pair in _BLOCKS}:
            raise _t2t_line(key, tuple(pair[mine] for pair in _BLOCKS), value,
                            "t2t-lite has pre-norm (n, da) and post-norm (none, dan): "
                            "normalize_before")
        if "normalize_before" not in h.values():
            return {}
        pair = (value, current(h, partner)) if key == _PRE else (current(h, partner), value)
        return {"normalize_before": _BLOCKS[pair]} if pair in _BLOCKS else {}

    def read(h: HParams) -> str:
        if "normalize_before" not in h.values():
            return h.given(key, ("none", "dan")[mine])
        return current(h, key)
    return Alias("", write, read, "normalize_before: n + da = pre-norm, none + dan = post",
                 ("normalize_before",))


_BLOCKS_OF = {before: pair for pair, before in _BLOCKS.items()}


def _sequences_agree(h: HParams) -> str | None:
    if "normalize_before" not in h.values():
        return None
    pair = tuple(h.given(name, _BLOCKS_OF[h.normalize_before][i])
                 for i, name in enumerate((_PRE, _POST)))
    if pair in _BLOCKS:
        return None
    return (f"{_PRE}={pair[0]!r} with {_POST}={pair[1]!r} is not a block t2t-lite has: "
            "pre-norm is n + da, post-norm none + dan (normalize_before); give both")


def _accumulate() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        return {"gradient_accumulation_steps": value or 1}
    return Alias(0, write, lambda h: h.gradient_accumulation_steps if
                 h.gradient_accumulation_steps > 1 else 0,
                 "gradient_accumulation_steps (0 = off = 1)", ("gradient_accumulation_steps",))


_ACTIVATIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def _activation_dtype() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value not in _ACTIVATIONS:
            raise _t2t_line("activation_dtype", tuple(_ACTIVATIONS), value, "or dtype=...")
        return {"dtype": _ACTIVATIONS[value]}
    return Alias("float32", write, lambda h: {v: k for k, v in _ACTIVATIONS.items()}[h.dtype],
                 "dtype: bfloat16 = mixed_bfloat16, float16 = mixed_float16", ("dtype",))


def _exactly(key: str, accepted: Any, advice: str, text: str) -> Alias:
    """Accepted at ``accepted`` only, which is what t2t-lite does; a read gives it."""
    alias = _only_at(key, (accepted,), advice)
    return Alias(alias.example, alias.write, lambda h: accepted, text)


def _attention_layer_size() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value != h.get("hidden_size"):
            raise _t2t_line("attention_layer_size", (h.get("hidden_size"),), value,
                            "the attentional state is hidden_size wide (attention_size "
                            "is the concat score's depth)")
        return {}
    return Alias(0, write, lambda h: h.get("hidden_size"), "= hidden_size")


def _embedding_scale() -> Alias:
    def ours(h: HParams) -> str:
        return "sqrt_depth" if "position_embedding" in h.values() else "none"

    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value != ours(h):
            raise _t2t_line("multiply_embedding_mode", (ours(h),), value,
                            "the Transformer scales its embeddings by sqrt(d_model); "
                            "the RNNs do not scale theirs")
        return {}
    return Alias("sqrt_depth", write, ours, "the Transformer's sqrt(d), the RNNs' none")


def _warmup_schedule() -> Alias:
    """Any of T2T's where nothing samples; "linear" where the Luong sets' key is."""
    def accepted(h: HParams) -> tuple[str, ...]:
        return ("linear",) if "scheduled_sampling_prob" in h.values() else \
            ("exp", "linear", "sigmoid")

    def write(h: HParams, value: Any) -> dict[str, Any]:
        if value not in accepted(h):
            raise _t2t_line("scheduled_sampling_warmup_schedule", accepted(h), value,
                            "the Luong sets ramp scheduled sampling up linearly over "
                            "scheduled_sampling_warmup_steps")
        return {}
    return Alias("exp", write, lambda h: h.given("scheduled_sampling_warmup_schedule",
                                                 accepted(h)[0]), "linear")


# T2T's attention_mechanism -> the score of our Luong model, which T2T's
# lstm_seq2seq_attention is (hparams/t2t_lstm.py): additive "bahdanau" is our concat.
_MECHANISMS = {"luong": "general", "bahdanau": "concat"}


def _attention_mechanism() -> Alias:
    def write(h: HParams, value: Any) -> dict[str, Any]:
        if "attention_score" not in h.values() or value not in _MECHANISMS:
            raise _t2t_line("attention_mechanism", tuple(_MECHANISMS), value,
                            "on an attention set (lstm_attention, lstm_luong_attention): "
                            "attention_score general / concat")
        return {"attention_score": _MECHANISMS[value]}

    def read(h: HParams) -> str:
        score = h.get("attention_score")
        return {v: k for k, v in _MECHANISMS.items()}.get(score, h.given(
            "attention_mechanism", "bahdanau"))
    return Alias("bahdanau", write, read, "attention_score: luong = general, "
                 "bahdanau = concat", ("attention_score",))


_GLOROT = ("the Transformer's weights start as Keras's Glorot uniform, which is "
           "T2T's uniform_unit_scaling at gain 1.0")
ALIASES = {
    "num_hidden_layers": _layers,
    "pos": _pos,
    _PRE: lambda: _sequence(_PRE),
    _POST: lambda: _sequence(_POST),
    "optimizer_multistep_accumulate_steps": _accumulate,
    "activation_dtype": _activation_dtype,
    "weight_dtype": lambda: _exactly("weight_dtype", "float32", "weights are float32 "
                                     "(Keras mixed precision): use activation_dtype",
                                     "variables are float32"),
    "initializer": lambda: _exactly("initializer", "uniform_unit_scaling", _GLOROT,
                                    "Glorot uniform"),
    "initializer_gain": lambda: _exactly("initializer_gain", 1.0, _GLOROT,
                                         "Glorot uniform"),
    "attention_layer_size": _attention_layer_size,
    "multiply_embedding_mode": _embedding_scale,
    "scheduled_sampling_warmup_schedule": lambda: _warmup_schedule(),
    "attention_mechanism": _attention_mechanism,
}


def add_t2t_keys(hparams: HParams) -> HParams:
    """``hparams`` knowing every T2T key it does not declare itself; returns it."""
    real = hparams.values()
    if "max_input_seq_length" not in real:  # b. real keys the pipeline reads
        hparams.extend(max_input_seq_length=at_least(0, 0),
                       max_target_seq_length=at_least(0, 0),
                       # True: t2t-lite's own sets leave over-long dev examples out,
                       # as they always did; T2T's sets set T2T's False.
                       eval_drop_long_sequences=True)
    for key, make in ALIASES.items():
        if key not in real:
            hparams.add_alias(key, make())
    for key, (default, why) in NO_EFFECT.items():
        if key not in real:
            hparams.add_alias(key, _no_effect(key, default, why))
    for key, (accepted, advice) in ONLY_AT.items():
        if key not in real:
            hparams.add_alias(key, _only_at(key, accepted, advice))
    return hparams.add_rule(_sequences_agree)

