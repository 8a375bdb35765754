"""Ensemble: several trained models decoded as one, as fairseq's ``--path a.pt:b.pt``.

At each step the ensemble's next-token distribution is the mean of its
models' distributions (the probabilities, not the logits, are averaged), so
beam search, greedy search and decode constraints run on it unchanged: it
implements the decoding half of the ``Seq2SeqModel`` interface
(``t2t_lite/models/base.py``). Each model keeps its own encoding and decode
state, under keys prefixed with its index (``"0/keys"``), so models of any
kind or shape combine as long as they share the source and target vocabularies.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import tensorflow as tf


def _prefixed(index: int, values: dict) -> dict:
    return {f"{index}/{key}": value for key, value in values.items()}


def _vocabularies(model: Any) -> tuple[int, int, bool]:
    """A model's (source vocabulary size, target vocabulary size, shared or not)."""
    return (getattr(model, "input_vocab_size", model.vocab_size), model.vocab_size,
            getattr(model, "shares_vocabulary", True))


class Ensemble:
    """The mean next-token distribution of ``models`` (each a decoding ``Seq2SeqModel``)."""

    def __init__(self, models: Sequence[Any]):
        if not models:
            raise ValueError("an ensemble needs at least one model")
        # (source vocabulary, target vocabulary): one input feeds every model, and the
        # search adds up their distributions over one set of target ids.
        vocabularies = sorted({_vocabularies(model) for model in models})
        if len(vocabularies) > 1:
            raise ValueError("ensemble models must share their source and target "
                             "vocabularies; theirs differ: " + ", ".join(
                                 f"{source} -> {target} ids{' (shared)' if shared else ''}"
                                 for source, target, shared in vocabularies))
        self.models = list(models)
        self.vocab_size = models[0].vocab_size
        self.input_vocab_size = models[0].input_vocab_size

    @property
    def max_positions(self) -> int | None:
        """The fewest positions any member learned (None when all are unbounded)."""
        limits = [m.max_positions for m in self.models
                  if getattr(m, "max_positions", None) is not None]
        return min(limits) if limits else None

    def _part(self, index: int, values: dict) -> dict:
        prefix = f"{index}/"
        return {key[len(prefix):]: value for key, value in values.items()
                if key.startswith(prefix)}

    def encode(self, inputs: tf.Tensor, training: bool = False) -> dict[str, tf.Tensor]:
        encoded = {}
        for index, model in enumerate(self.models):
            encoded.update(_prefixed(index, model.encode(inputs, training=training)))
        return encoded

    def _each(self, method: str, values: dict, *args: Any) -> dict:
        """``model.method(its part of values, *args)`` for every model, prefixed again."""
        result = {}
        for index, model in enumerate(self.models):
            result.update(_prefixed(index, getattr(model, method)(self._part(index, values),
                                                                  *args)))
        return result

    def initial_decode_state(self, encoded: dict[str, tf.Tensor], max_decode_length: tf.Tensor,
                             beam_size: int = 1) -> dict[str, Any]:
        return self._each("initial_decode_state", encoded, max_decode_length, beam_size)

    def reorder_decode_state(self, state: dict[str, Any], rows: tf.Tensor) -> dict[str, Any]:
        return self._each("reorder_decode_state", state, rows)

    def select_decode_items(self, state: dict[str, Any], items: tf.Tensor, beam_size: int,
                            batch_size: tf.Tensor) -> dict[str, Any]:
        return self._each("select_decode_items", state, items, beam_size, batch_size)

    @property
    def selects_decode_items(self) -> bool:
        return all(model.selects_decode_items for model in self.models)

    def fixed_decode_state_keys(self) -> frozenset[str]:
        return frozenset(f"{index}/{key}" for index, model in enumerate(self.models)
                         for key in model.fixed_decode_state_keys())

    def resize_decode_state(self, state: dict[str, Any], length: int) -> dict[str, Any]:
        return self._each("resize_decode_state", state, length)

    def decode_step(self, ids: tf.Tensor, step: tf.Tensor,
                    state: dict[str, Any]) -> tuple[tf.Tensor, dict[str, Any]]:
        """-> (log of the mean of the models' probabilities [B, V], the new state).

        Log-probabilities are logits too: the search's log-softmax leaves them as
        they are."""
        return self._mean_step(state, lambda index, model, part: model.decode_step(
            ids, step, part))

    def output_subset(self, output_ids: tf.Tensor) -> list[Any]:
        """Each model's ``output_subset`` of a shortlist's ``output_ids``."""
        return [model.output_subset(output_ids) for model in self.models]

    def decode_step_over(self, ids: tf.Tensor, step: tf.Tensor, state: dict[str, Any],
                         output_subset: list[Any]) -> tuple[tf.Tensor, dict[str, Any]]:
        """``decode_step`` over a shortlist: the mean of the models' distributions
        normalised over its ids."""
        return self._mean_step(state, lambda index, model, part: model.decode_step_over(
            ids, step, part, output_subset[index]))

    def _mean_step(self, state: dict[str, Any], step_of: Any) -> tuple[tf.Tensor, dict[str, Any]]:
        """The mean distribution of ``step_of(index, model, its part of state)``'s logits."""
        log_probs, new_state = [], {}
        for index, model in enumerate(self.models):
            logits, model_state = step_of(index, model, self._part(index, state))
            log_probs.append(tf.nn.log_softmax(tf.cast(logits, tf.float32)))
            new_state.update(_prefixed(index, model_state))
        if len(log_probs) == 1:
            return log_probs[0], new_state
        mean = tf.reduce_logsumexp(tf.stack(log_probs), axis=0) - math.log(len(log_probs))
        return mean, new_state
