"""Tiny deterministic models with the Seq2SeqModel decoding interface, for tests.

``ToyRecurrentModel``'s next-token logits depend on the previous id, the step,
the encoded inputs and every id emitted so far (kept in a fixed-size history
buffer, like a Transformer's key/value cache), so a search that mixes up beam
rows or state reordering gives different results. ``ScriptedModel`` plays
back fixed per-step logits, to build exact corner cases for the search.
Both count ``encode`` calls: under tf.function that is the number of traces.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.models.base import Seq2SeqModel, repeat_for_beams, shift_right


class _StepwiseModel(Seq2SeqModel):
    """Teacher forcing by running ``decode_step`` over the shifted targets."""

    def call(self, features, training=False):
        targets = tf.cast(features["targets"], tf.int32)
        length = tf.shape(targets)[1]
        state = self.initial_decode_state(self.encode(features["inputs"]), length)
        previous = tf.transpose(shift_right(targets))

        def one_step(carry, step):
            logits, state = self.decode_step(previous[step], step, carry[1])
            return logits, state

        no_logits = tf.zeros([tf.shape(targets)[0], self.vocab_size])
        logits, _ = tf.scan(one_step, tf.range(length), initializer=(no_logits, state))
        return tf.transpose(logits, [1, 0, 2])


class ToyRecurrentModel(_StepwiseModel):
    """A random (seeded) tanh RNN decoder over a mean-of-embeddings encoder."""

    def __init__(self, vocab_size: int = 6, hidden_size: int = 8, seed: int = 0):
        super().__init__(HParams(hidden_size=hidden_size, seed=seed), vocab_size)
        rng = np.random.default_rng(seed)
        self.encode_calls = 0
        self._embedding = rng.normal(size=(vocab_size, hidden_size)).astype(np.float32)
        self._recurrent = (0.5 * rng.normal(size=(hidden_size, hidden_size))).astype(np.float32)
        self._step_weights = rng.normal(size=(hidden_size,)).astype(np.float32)
        self._output = rng.normal(size=(hidden_size, vocab_size)).astype(np.float32)
        self._repeat_penalty = np.abs(rng.normal(size=(vocab_size,))).astype(np.float32)

    def encode(self, inputs, training=False):
        self.encode_calls += 1
        mask = tf.cast(tf.not_equal(inputs, PAD_ID), tf.float32)[:, :, None]
        total = tf.reduce_sum(tf.gather(self._embedding, inputs) * mask, axis=1)
        count = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        return {"summary": tf.tanh(total / count)}

    def initial_decode_state(self, encoded, max_decode_length, beam_size=1):
        summary = repeat_for_beams(encoded, beam_size)["summary"]
        history = tf.zeros([tf.shape(summary)[0], max_decode_length], tf.int32)
        return {"hidden": summary, "history": history}

    def decode_step(self, ids, step, state):
        step_term = tf.cast(step, tf.float32) * self._step_weights
        hidden = tf.tanh(tf.matmul(state["hidden"], self._recurrent)
                         + tf.gather(self._embedding, ids) + step_term)
        at_step = tf.equal(tf.range(tf.shape(state["history"])[1]), step)
        history = tf.where(at_step, ids[:, None], state["history"])
        seen = tf.one_hot(history, self.vocab_size) * tf.cast(
            tf.not_equal(history, PAD_ID), tf.float32)[:, :, None]
        logits = (tf.matmul(hidden, self._output)
                  - tf.reduce_sum(seen, axis=1) * self._repeat_penalty)
        return logits, {"hidden": hidden, "history": history}


class ScriptedModel(_StepwiseModel):
    """Logits ``step_logits[min(step, last)]`` whatever the inputs and history."""

    def __init__(self, step_logits):
        step_logits = np.asarray(step_logits, np.float32)
        super().__init__(HParams(), step_logits.shape[1])
        self._step_logits = step_logits
        self.encode_calls = 0

    def encode(self, inputs, training=False):
        self.encode_calls += 1
        return {"rows": tf.zeros([tf.shape(inputs)[0], 1])}

    def initial_decode_state(self, encoded, max_decode_length, beam_size=1):
        return repeat_for_beams(encoded, beam_size)

    def decode_step(self, ids, step, state):
        row = tf.gather(self._step_logits, tf.minimum(step, len(self._step_logits) - 1))
        return tf.tile(row[None], [tf.shape(ids)[0], 1]), state


class InputLengthModel(_StepwiseModel):
    """Ends each hypothesis near its input's length (EOS likely from step length - 1
    on), so that the items of a batch settle at different steps; counts the
    hypothesis rows its decode steps compute (``rows_stepped``)."""

    def __init__(self):
        super().__init__(HParams(), 4)
        self.rows_stepped = tf.Variable(0)
        self.encode_calls = 0

    def encode(self, inputs, training=False):
        self.encode_calls += 1
        not_pad = tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32)
        return {"length": tf.reduce_sum(not_pad, axis=1)}

    def initial_decode_state(self, encoded, max_decode_length, beam_size=1):
        return repeat_for_beams(encoded, beam_size)

    def decode_step(self, ids, step, state):
        self.rows_stepped.assign_add(tf.shape(ids)[0])
        ending = (step + 1 >= state["length"])[:, None]
        probabilities = tf.where(ending, [[0.0, 0.9, 0.06, 0.04]], [[0.0, 0.01, 0.6, 0.39]])
        return tf.math.log(probabilities), state
