"""Seq2SeqModel: the interface every sequence-to-sequence model implements.

The trainer calls the model with teacher forcing; beam search and greedy
decoding use only ``encode``, ``initial_decode_state`` and ``decode_step``, so
they work unchanged for the Transformer and for recurrent models.

Decoding contract (what ``t2t_lite.decoding`` relies on):

* ``initial_decode_state(encoded, max_decode_length, beam_size)`` gets
  ``encode``'s output, one row per input, and returns the state of
  ``beam_size`` hypotheses per input; ``decode_step`` takes and returns their
  ids and logits in B * beam rows, item-major (row b * beam + k is hypothesis k
  of input b). How the state holds them is the model's: an RNN repeats its
  tensors to B * beam rows (``repeat_for_beams``); the Transformer keeps its
  encoder memory once per input and its key/value caches per input too,
  entries never moved (``t2t_lite.layers.attention``).
* After each step, beam search calls ``reorder_decode_state(state, rows)``:
  hypothesis r continues hypothesis ``rows[r]`` (a row of the same input). By
  default every tensor is gathered along axis 0; a model may do less (the
  Transformer gathers only a small table of ancestors). The
  ``fixed_decode_state_keys`` name tensors ``decode_step`` only reads (the
  encoder's output and its projections): the search never reorders or copies
  them.
* Beam and greedy search drop the inputs they are done with from their batch,
  so that the inputs still searching do not pay for them: ``select_decode_items(state,
  items, beam_size, batch_size)`` keeps the inputs ``items`` only (of the fixed
  part and of the changing part). By default a tensor of one row per input
  (``batch_size`` rows) keeps rows ``items``, any other those of their
  hypotheses (``repeat_for_beams``' layout); a model may do it more simply (the
  Transformer, whose rows are all per input). A
  model that overrides ``reorder_decode_state`` but not ``select_decode_items``
  is searched with its whole batch to the end (``selects_decode_items``).
* ``decode_step`` returns a state whose tensors have the shapes and dtypes of
  the state it was given, so the state can be a ``tf.while_loop`` variable,
  with one exception: an axis of static size 0 in the initial state may grow
  (a key/value cache that gains one position a step, so that a step costs
  what the steps so far hold, not ``max_decode_length``; ``decode_loop_shapes``
  in ``t2t_lite.contracts.decode_state`` gives a loop's invariants). Batch size,
  source length and ``max_decode_length`` may all be dynamic inside ``tf.function``.
* Step 0 is fed ``PAD_ID`` (0) as the previous token: the start symbol. The
  teacher-forced ``call`` sees the same thing, because it feeds
  ``shift_right(targets)`` to the decoder.
* ``decode_step`` is inference only: no dropout.
"""
from __future__ import annotations

import abc
from typing import Any, Callable

import keras
import tensorflow as tf

from t2t_lite.contracts.decode_constraint import DecodeConstraint
from t2t_lite.contracts.decode_state import hypothesis_rows
from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.registry import snake_case


def repeat_for_beams(tensors: dict[str, tf.Tensor], beam_size: int) -> dict[str, tf.Tensor]:
    """Each tensor's rows repeated ``beam_size`` times, item-major: [B, ...] -> [B * beam, ...]."""
    if beam_size == 1:
        return dict(tensors)
    return {key: tf.repeat(value, beam_size, axis=0) for key, value in tensors.items()}


def shift_right(targets: tf.Tensor) -> tf.Tensor:
    """Decoder inputs for teacher forcing: [B, T] -> [B, T], PAD_ID then targets[:, :-1]."""
    return tf.pad(targets, [[0, 0], [1, 0]], constant_values=PAD_ID)[:, :-1]


class NoAttentionError(TypeError):
    """Asked for the attention weights of a model that has no attention (the
    plain LSTM encoder-decoder): a fact about the model's kind, not a missing feature."""


class Seq2SeqModel(keras.Model, abc.ABC):
    """A Keras model mapping source ids to target logits, with incremental decoding.

    Subclasses are registered with ``@register_model`` and built as
    ``cls(hparams, vocab_size, input_vocab_size=None)``: ``vocab_size`` ids to
    predict (the targets' vocabulary, reserved ids included) and, for separate
    source and target vocabularies, ``input_vocab_size`` ids to embed in the
    encoder. None means one vocabulary shared by both sides; given, even of the
    same size, it is another vocabulary, and no embedding may serve both sides
    (``shares_vocabulary``).
    """

    # The architecture: hparams keys that decide what the weights mean, their shapes
    # and also how they are used (heads, layer order, normalization placement, a
    # reversed source). Checkpoints record their values (training/checkpoints.py),
    # and a checkpoint is refused under other values.
    architecture_hparams: tuple[str, ...] = ()
    # Other hparams keys the model reads, free to change between runs of one
    # checkpoint: training only (dropout, initializers) or speed (xla).
    required_hparams: tuple[str, ...] = ()
    # The trainer's step (its optimizer's iteration count), which the trainer sets:
    # for a model whose training changes with the step (scheduled sampling's ramp).
    training_step: Callable[[], tf.Tensor] | None = None
    # The problem's decode constraint, which the trainer sets: what a model that feeds
    # itself its own tokens in training (scheduled sampling) may draw.
    sampling_constraint: DecodeConstraint | None = None

    def __init__(self, hparams: HParams, vocab_size: int, input_vocab_size: int | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        missing = [key for key in self.architecture_hparams + self.required_hparams
                   if key not in hparams]
        if missing:
            raise ValueError(f"model {snake_case(type(self).__name__)} needs hparams "
                             f"{', '.join(missing)}, which these hparams lack: use an hparams "
                             "set made for this model (see --registry_help)")
        self.hparams = hparams
        self.vocab_size = vocab_size
        self.shares_vocabulary = input_vocab_size is None
        self.input_vocab_size = vocab_size if input_vocab_size is None else input_vocab_size

    @classmethod
    def architecture_keys(cls, hparams: HParams) -> tuple[str, ...]:
        """The architecture keys that matter for these hparams."""
        return cls.architecture_hparams

    @property
    def feeds_itself_in_training(self) -> bool:
        """Whether training feeds the model its own tokens (scheduled sampling), so
        that the trainer must give it ``sampling_constraint``."""
        return False

    @property
    def max_positions(self) -> int | None:
        """The longest source or target it can represent; None when unbounded."""
        return None

    @abc.abstractmethod
    def call(self, features: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        """Teacher-forced logits.

        features: {"inputs": int32 [B, S], "targets": int32 [B, T]}, PAD_ID-padded.
        Returns float32 logits [B, T, vocab_size]; position t predicts
        targets[:, t] from inputs and targets[:, :t].
        """

    @abc.abstractmethod
    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        """Source ids int32 [B, S] -> a dict of tensors, each with leading dim B."""

    @abc.abstractmethod
    def initial_decode_state(self, encoded: dict[str, tf.Tensor], max_decode_length: tf.Tensor,
                             beam_size: int = 1) -> dict[str, tf.Tensor]:
        """The state before step 0 of ``beam_size`` hypotheses for each row of
        ``encoded``, for up to ``max_decode_length`` (int32 scalar) steps.

        Every tensor keeps its shape across steps (but for axes of size 0, which
        may grow: see the module docstring).
        """

    def reorder_decode_state(self, state: dict[str, tf.Tensor],
                             rows: tf.Tensor) -> dict[str, tf.Tensor]:
        """The changing part of a decode state after beam search picked, for each
        hypothesis r, the hypothesis ``rows[r]`` (int32 [B * beam]) it continues:
        every tensor gathered along axis 0, unless the model knows better."""
        return tf.nest.map_structure(lambda tensor: tf.gather(tensor, rows), state)

    def select_decode_items(self, state: dict[str, tf.Tensor], items: tf.Tensor,
                            beam_size: int, batch_size: tf.Tensor) -> dict[str, tf.Tensor]:
        """The part of a decode state (fixed or changing) of the inputs ``items``
        (int32 [B'], indices in ascending order into the ``batch_size`` inputs the
        state holds) only. By default a tensor of ``batch_size`` rows (one per
        input, as a model may keep its fixed state) keeps rows ``items``; any other
        keeps the rows of their hypotheses (``repeat_for_beams``' layout)."""
        if beam_size == 1:  # one row per input, whatever the tensor
            return tf.nest.map_structure(lambda tensor: tf.gather(tensor, items), state)
        rows = hypothesis_rows(items, beam_size)

        def select(tensor: tf.Tensor) -> tf.Tensor:
            return tf.cond(tf.equal(tf.shape(tensor)[0], batch_size),
                           lambda: tf.gather(tensor, items), lambda: tf.gather(tensor, rows))
        return tf.nest.map_structure(select, state)

    @property
    def selects_decode_items(self) -> bool:
        """Whether ``select_decode_items`` fits this model's state: with the default
        layout, or where the model defines its own."""
        model = type(self)
        return (model.reorder_decode_state is Seq2SeqModel.reorder_decode_state
                or model.select_decode_items is not Seq2SeqModel.select_decode_items)

    def fixed_decode_state_keys(self) -> frozenset[str]:
        """The decode-state keys that ``decode_step`` reads but never changes and
        that are equal for every beam of one input; none by default."""
        return frozenset()

    def resize_decode_state(self, state: dict[str, tf.Tensor],
                            length: int) -> dict[str, tf.Tensor]:
        """The changing part of a decode state, ready for steps up to ``length`` (a
        Python int, at least what it was made for). A model whose state holds
        fixed-size buffers (the Transformer under hparam ``xla``) pads them, so that
        an XLA search can run its first steps on short buffers; others need nothing."""
        return state

    def attention_weights(self, features: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """Attention weights of the teacher-forced pass over ``features``.

        A dict from kind to float32 [B, layers, heads, query_length, key_length]:
        "encoder_self" [.., S, S], "decoder_self" [.., T, T] and
        "encoder_decoder" [.., T, S], as far as the model has them (an RNN has
        only "encoder_decoder", with one layer and one head). Query t of the
        decoder kinds is the prediction of targets[:, t]; source positions are
        in the order of ``features["inputs"]``, whatever the model does inside
        (e.g. reversing it). To see a decoded sentence's attention, pass the
        decoded ids as targets: beam search itself never computes these.
        Models without attention raise ``NoAttentionError``.
        """
        raise NoAttentionError(f"model {snake_case(type(self).__name__)} has no attention "
                               "weights")

    def output_subset(self, output_ids: tf.Tensor) -> Any:
        """What ``decode_step_over`` reads to give the logits of ``output_ids`` (int32
        [K], a search's shortlist) only, made once a batch. By default the ids: a model
        with an output matrix gives its rows, so that a step projects onto them alone."""
        return output_ids

    def decode_step_over(self, ids: tf.Tensor, step: tf.Tensor, state: dict[str, tf.Tensor],
                         output_subset: Any) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """``decode_step`` with the logits [B * beam, K] of ``output_subset``'s ids
        only; by default all logits, then those columns."""
        logits, state = self.decode_step(ids, step, state)
        return tf.gather(logits, output_subset, axis=1), state

    @abc.abstractmethod
    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """One decoding step.

        ids: int32 [B * beam], each hypothesis's previous token (PAD_ID at step 0);
        step: int32 scalar, the 0-based position being predicted. Returns float32
        logits [B * beam, vocab_size] and the new state (same structure, shapes
        and dtypes).
        """
