"""A trained model as a SavedModel from raw strings to output strings.

Signatures (both take ``inputs``: string [N], any N and any input length):

* ``serving_default`` -> ``outputs`` string [N] (the best beam, postprocessed
  as ``t2t-decoder`` writes it) and ``scores`` float32 [N] (its
  length-penalized log-probability);
* ``beams`` -> ``outputs`` string [N, beam_size] and ``scores`` [N,
  beam_size], best first; a beam slot the search left empty has output ""
  and score -inf.

Everything runs in the graph: tokenization (``graph_text``), beam search with
the problem's decode constraint, detokenization and the problem's
``graph_postprocess`` (a tree over the input's words, for parsing). So the
export loads with ``tensorflow`` and ``tensorflow_text`` alone.

Inputs are stripped like t2t-decoder's lines; an empty one gives "" and score
0 without disturbing the rest of the batch. An input longer than
``max_input_length`` tokens (EOS included; the decode hparam, else the model's
``max_length``) is truncated to it, as ``t2t-decoder`` truncates with that
decode hparam. An input that is not valid UTF-8 fails the request with an
error naming its position. Output line breaks become spaces, as in
t2t-decoder's files.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.decoder import decode_hparams
from t2t_lite.export.graph_text import graph_codec
from t2t_lite.hparam import HParams

STRINGS = tf.TensorSpec([None], tf.string, name="inputs")
# str.splitlines()'s line boundaries, which t2t-decoder turns into spaces.
_LINE_BREAKS = "\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]"


class _Untracked:
    """Keeps an object out of a tf.Module's saved object graph."""

    def __init__(self, value: Any):
        self.value = value


class ExportModule(tf.Module):
    """The model, its in-graph codecs and search, and the two serving functions."""

    def __init__(self, model: Any, problem: Problem, data_dir: str, decode: HParams):
        super().__init__()
        # Save the tf.Variables behind the Keras variables, not the Keras model: a
        # Keras 3 variable saves a copy of itself, which TF2's loader wires to the
        # functions but a TF1 session loader (TensorFlow Serving, saved_model_cli
        # run) restores beside the variables the functions read, leaving those
        # uninitialized.
        self._model = _Untracked(model)
        self.variables_to_serve = [variable.value for variable in model.variables]
        encoders = problem.feature_encoders(data_dir)
        self.input_codec = graph_codec(encoders["inputs"])
        self.target_codec = (self.input_codec if encoders["targets"] is encoders["inputs"]
                             else graph_codec(encoders["targets"]))
        self._problem = problem
        self._constraint = problem.decode_constraint(data_dir)
        self._beam_size = decode.beam_size
        self._alpha = decode.alpha
        self._extra_length = decode.extra_length
        self._max_input_length = decode.max_input_length or model.hparams.max_length
        self._max_positions = model.max_positions
        self.serve = tf.function(self._serve, input_signature=[STRINGS])
        self.beams = tf.function(self._beams, input_signature=[STRINGS])

    def _serve(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        outputs, scores = self._decode(inputs)
        return {"outputs": outputs[:, 0], "scores": scores[:, 0]}

    def _beams(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        outputs, scores = self._decode(inputs)
        return {"outputs": outputs, "scores": scores}

    def _check_utf8(self, inputs: tf.Tensor) -> tf.Operation:
        """Fails the call when an input is not valid UTF-8 (``errors="ignore"`` drops
        exactly the invalid bytes, so a valid string survives a round trip)."""
        round_trip = tf.strings.unicode_encode(
            tf.strings.unicode_decode(inputs, "UTF-8", errors="ignore"), "UTF-8")
        invalid = tf.where(tf.not_equal(round_trip, inputs))[:, 0]
        return tf.debugging.Assert(
            tf.equal(tf.size(invalid), 0),
            ["inputs must be valid UTF-8; not valid at (0-based) positions", invalid],
            summarize=10)

    def _source_ids(self, lines: tf.Tensor) -> tf.Tensor:
        """Stripped lines -> int32 [N, S]: their ids, truncated, then EOS, PAD-padded."""
        ids = self.input_codec.encode(lines)[:, :self._max_input_length - 1]
        eos = tf.RaggedTensor.from_tensor(tf.fill([tf.shape(lines)[0], 1], EOS_ID))
        return tf.concat([tf.cast(ids, tf.int32), eos], axis=1).to_tensor(default_value=PAD_ID)

    def _decode(self, inputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [N] -> (output lines [N, beam], scores [N, beam])."""
        with tf.control_dependencies([self._check_utf8(inputs)]):
            lines = tf.strings.strip(inputs)
        source_ids = self._source_ids(lines)
        max_decode_length = tf.shape(source_ids)[1] + self._extra_length
        if self._max_positions is not None:
            max_decode_length = tf.minimum(max_decode_length, self._max_positions)
        ids, scores = beam_search(self._model.value, source_ids, self._beam_size, self._alpha,
                                  max_decode_length, constraint=self._constraint)
        batch, beams = tf.shape(ids)[0], tf.shape(ids)[1]
        text = self.target_codec.decode(tf.reshape(ids, [batch * beams, -1]))
        text = tf.strings.regex_replace(
            tf.strings.regex_replace(text, f"(?:{_LINE_BREAKS})+$", ""), _LINE_BREAKS, " ")
        sources = tf.repeat(lines, beams)
        text = tf.reshape(self._problem.graph_postprocess(sources, text), [batch, beams])
        empty = tf.equal(lines, "")[:, None]
        unused = tf.math.is_inf(scores)
        text = tf.where(tf.logical_or(empty, unused), "", text)
        return text, tf.where(empty, 0.0, scores)


def export(module: ExportModule, export_dir: str) -> int:
    """Saves ``module`` to ``export_dir`` (which must not hold anything yet), via a
    temporary folder, so a failed export leaves nothing that looks complete.
    Returns the export's size on disk in bytes."""
    if os.path.exists(export_dir) and os.listdir(export_dir):
        raise ValueError(f"--export_dir={export_dir} is not empty; give a new folder (TF "
                         "Serving reads MODEL_BASE/VERSION/, e.g. exports/my_model/1)")
    partial = f"{export_dir.rstrip('/')}.partial-{os.getpid()}"
    try:
        tf.saved_model.save(module, partial, signatures={
            "serving_default": module.serve.get_concrete_function(),
            "beams": module.beams.get_concrete_function()})
        if os.path.exists(export_dir):
            os.rmdir(export_dir)
        os.replace(partial, export_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(export_dir) for name in names)


def export_model(model: Any, problem: Problem, data_dir: str, export_dir: str,
                 decode_overrides: str = "") -> int:
    """Exports ``model`` with ``problem``'s decode settings (then ``decode_overrides``,
    as t2t-decoder's --decode_hparams) to ``export_dir``; returns its size in bytes."""
    hparams = decode_hparams(decode_overrides, problem.decode_hparams_defaults())
    return export(ExportModule(model, problem, data_dir, hparams), export_dir)
