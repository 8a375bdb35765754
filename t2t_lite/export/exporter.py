"""A trained model as a SavedModel from raw strings to output strings.

Signatures (all take ``inputs``: string [N], any N and any input length):

* ``serving_default`` -> ``outputs`` string [N] (the best beam, postprocessed
  as ``t2t-decoder`` writes it) and ``scores`` float32 [N] (its
  length-penalized log-probability);
* ``beams`` -> ``outputs`` string [N, beam_size] and ``scores`` [N,
  beam_size], best first; a beam slot the search left empty has output ""
  and score -inf;
* ``guided`` takes ``prefixes`` and ``constraints`` too (string [N] each, "" for
  none) -> ``beams``' outputs, each beginning with its input's prefix (target
  text, CTranslate2's ``target_prefix``; ``forced_prefix``, scored by the model, as
  ``t2t-decoder --decode_prefixes``) and holding each of its constraints'
  tab-separated target phrases (``lexical_constraints``, as ``--decode_constraints``).
  Guides with no room left in the model's positions fail the request, naming
  their position.

Under the decode hparam ``sampling_method=random`` (settings fixed at export,
seed included) the search samples instead (``t2t_lite.decoding.sampling``):
``beams`` returns the ``num_samples`` samples of each input in the order drawn,
scored by their log-probabilities, and ``serving_default`` the first. Input k of
a request draws as line k of a file does in t2t-decoder: a request gives the
same samples every time.

Everything runs in the graph: tokenization (``graph_text``), beam search with
the problem's decode constraint, detokenization and the problem's
``graph_postprocess`` (a tree over the input's words, for parsing). So the
export loads with ``tensorflow`` and ``tensorflow_text`` alone.

The search, its settings and input rules come from ``build_decoding``, as
t2t-decoder's do; the rules run as TensorFlow ops (``graph_rules``). Inputs
are stripped like t2t-decoder's lines; an empty one gives "" and score 0
without disturbing the rest of the batch. An input longer than
``max_input_length`` tokens (EOS included; the decode hparam, else the model's
``max_length``) is truncated to it, as ``t2t-decoder`` truncates it. An input
that is not valid UTF-8 fails the request with an error naming its position.
Output line breaks become spaces, as in t2t-decoder's files. The search is not
compiled with XLA whatever the run's ``xla``: a serving function takes any
batch and length, and XLA compiles a program per shape.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.factory import build_decoding
from t2t_lite.decoding.settings import DecodeSettings
from t2t_lite.export import graph_rules
from t2t_lite.export.graph_text import graph_codec

STRINGS = tf.TensorSpec([None], tf.string, name="inputs")
PREFIXES = tf.TensorSpec([None], tf.string, name="prefixes")
CONSTRAINTS = tf.TensorSpec([None], tf.string, name="constraints")


class _Untracked:
    """Keeps an object out of a tf.Module's saved object graph."""

    def __init__(self, value: Any):
        self.value = value


class ExportModule(tf.Module):
    """The model, its in-graph codecs and search, and the two serving functions."""

    def __init__(self, model: Any, problem: Problem, data_dir: str, settings: DecodeSettings):
        super().__init__()
        # Save the tf.Variables behind the Keras variables, not the Keras model (the
        # search holds it, untracked): a
        # Keras 3 variable saves a copy of itself, which TF2's loader wires to the
        # functions but a TF1 session loader (TensorFlow Serving, saved_model_cli
        # run) restores beside the variables the functions read, leaving those
        # uninitialized.
        self.variables_to_serve = [variable.value for variable in model.variables]
        decoding = build_decoding(model, problem, data_dir, settings)
        self._decoding = _Untracked(decoding)
        self.input_codec = graph_codec(decoding.encoder)
        self.target_codec = (self.input_codec if decoding.target_encoder is decoding.encoder
                             else graph_codec(decoding.target_encoder))
        self._problem = problem
        self.serve = tf.function(self._serve, input_signature=[STRINGS], autograph=False)
        self.beams = tf.function(self._beams, input_signature=[STRINGS], autograph=False)
        self.guided = tf.function(self._guided,
                                  input_signature=[STRINGS, PREFIXES, CONSTRAINTS],
                                  autograph=False)

    def _serve(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        outputs, scores = self._decode(inputs)
        return {"outputs": outputs[:, 0], "scores": scores[:, 0]}

    def _beams(self, inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        outputs, scores = self._decode(inputs)
        return {"outputs": outputs, "scores": scores}

    def _guided(self, inputs: tf.Tensor, prefixes: tf.Tensor, constraints: tf.Tensor
                ) -> dict[str, tf.Tensor]:
        checks = [tf.debugging.assert_equal(tf.shape(prefixes), tf.shape(inputs),
                                            message="give one prefix an input (\"\" for none)"),
                  tf.debugging.assert_equal(tf.shape(constraints), tf.shape(inputs),
                                            message="give one constraints string an input "
                                                    "(\"\" for none)")]
        with tf.control_dependencies(checks):
            outputs, scores = self._decode(inputs, prefixes, constraints)
        return {"outputs": outputs, "scores": scores}

    def _check_utf8(self, inputs: tf.Tensor, name: str = "inputs") -> tf.Operation:
        """Fails the call when an input is not valid UTF-8 (``errors="ignore"`` drops
        exactly the invalid bytes, so a valid string survives a round trip)."""
        round_trip = tf.strings.unicode_encode(
            tf.strings.unicode_decode(inputs, "UTF-8", errors="ignore"), "UTF-8")
        invalid = tf.where(tf.not_equal(round_trip, inputs))[:, 0]
        return tf.debugging.Assert(
            tf.equal(tf.size(invalid), 0),
            [f"{name} must be valid UTF-8; not valid at (0-based) positions", invalid],
            summarize=10)

    def _decode(self, inputs: tf.Tensor, prefixes: tf.Tensor | None = None,
                constraints: tf.Tensor | None = None) -> tuple[tf.Tensor, tf.Tensor]:
        """inputs [N] (and their target prefixes and phrases) -> (output lines [N,
        beam], scores [N, beam])."""
        decoding = self._decoding.value
        with tf.control_dependencies([self._check_utf8(inputs)]):
            lines = tf.strings.strip(inputs)
        source_ids = graph_rules.source_ids(decoding.rules, self.input_codec, lines)
        length = tf.shape(source_ids)[1]
        prefix_ids = phrase_ids = None
        if prefixes is not None:
            with tf.control_dependencies([self._check_utf8(prefixes, "prefixes"),
                                          self._check_utf8(constraints, "constraints")]):
                prefix_ids = graph_rules.prefix_ids(decoding.rules, self.target_codec,
                                                    tf.strings.strip(prefixes))
                phrase_ids = graph_rules.phrase_ids(decoding.rules, self.target_codec,
                                                    constraints, prefix_ids)
            # Room after what they hold as after an input (decoder.decode_window).
            held = (tf.reduce_sum(tf.cast(prefix_ids != PAD_ID, tf.int32), axis=1)
                    + tf.reduce_sum(tf.cast(phrase_ids != PAD_ID, tf.int32), axis=[1, 2]))
            length = tf.maximum(length, tf.reduce_max(tf.concat([held, [0]], 0)) + 1)
        max_decode_length = graph_rules.decode_length(
            decoding.rules, length + decoding.settings.extra_length)
        ids, scores = decoding.search.in_graph(source_ids, max_decode_length, prefix_ids,
                                               phrase_ids)
        batch, beams = tf.shape(ids)[0], tf.shape(ids)[1]
        text = self.target_codec.decode(tf.reshape(ids, [batch * beams, -1]))
        text = graph_rules.one_line(decoding.rules, text)
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
            "beams": module.beams.get_concrete_function(),
            "guided": module.guided.get_concrete_function()})
        if os.path.exists(export_dir):
            os.rmdir(export_dir)
        os.replace(partial, export_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(export_dir) for name in names)


def export_model(model: Any, problem: Problem, data_dir: str, export_dir: str,
                 settings: DecodeSettings) -> int:
    """Exports ``model`` decoding under ``settings`` to ``export_dir``; returns its size
    in bytes."""
    return export(ExportModule(model, problem, data_dir, settings), export_dir)
