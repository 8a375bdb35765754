"""``BeamSearchDecoder``: the search of ``t2t_lite.decoding.beam_search`` (or the
sampling of ``t2t_lite.decoding.sampling``) compiled once for one model and one
``SearchOptions``, as the decoder, the dev-set evaluation and the benchmarks
call it (``t2t_lite.decoding.factory`` builds it); with ``jit_compile``, by XLA
on growing cache buffers (``cache_lengths``).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from t2t_lite.decoding.beam_search import search
from t2t_lite.decoding.search_options import SearchOptions

# The per-batch tensors that steer a search beside its inputs (``search``'s keywords):
# target prefixes int32 [B, P] and terminology phrases int32 [B, N, L], PAD-padded.
TARGET_GUIDES = {"prefixes": tf.TensorSpec([None, None], tf.int32),
                 "constraints": tf.TensorSpec([None, None, None], tf.int32)}

# Under XLA the caches are fixed-size buffers and a step attends over all of one:
# the loops start on buffers this long and double them as the decode passes their end.
FIRST_CACHE_LENGTH = 32


def cache_lengths(max_decode_length: int) -> list[int]:
    """The buffer lengths of an XLA search's successive loops: doubling from
    ``FIRST_CACHE_LENGTH`` to ``max_decode_length``, so that a step attends over
    at most about twice the positions decoded (and at least 32), where one buffer
    of the longest decode made every step pay for all of it. A last loop shorter
    than the one before goes into that one: each loop is compiled separately."""
    lengths = [min(FIRST_CACHE_LENGTH, max_decode_length)]
    while lengths[-1] < max_decode_length:
        lengths.append(min(2 * lengths[-1], max_decode_length))
    if len(lengths) > 2 and lengths[-1] - lengths[-2] < lengths[-2] - lengths[-3]:
        del lengths[-2]
    return lengths


class BeamSearchDecoder:
    """The search ``options`` ask for (``SearchOptions``) for one model, traced once.

    Calling it with inputs of any batch size and length and any decode length
    reuses one graph (the input signature has unknown dimensions), so decoding
    a file batch by batch does not retrace. ``decoder(inputs, max_decode_length)``
    returns ``beam_search``'s (ids, scores); with ``prefixes`` (int [B, P], PAD-padded
    target ids) each input's outputs begin with its prefix (``forced_prefix``), with
    ``constraints`` (int [B, N, L]) they hold its phrases (``lexical_constraints``):
    one trace more for each set of these first given. With ``options.sampling`` it draws
    ``num_samples`` samples an input instead (``t2t_lite.decoding.sampling``): (ids,
    scores) are then [B, num_samples, L] and their log-probabilities, and the call's
    ``line_numbers`` (int [B]; default 0..B-1) key each input's randomness.

    ``jit_compile`` compiles the search with XLA, one program per input shape and
    decode length, so it pays on fixed (padded) shapes only; the model's decode
    state must keep its shapes (the Transformer's does with hparam ``xla=true``).
    It traces once per decode length (a length bucket of ``t2t-decoder``), since
    the program is one per length anyway: with the length known, the search runs
    on caches of ``cache_lengths(max_decode_length)``, short ones first.
    """

    def __init__(self, model: Any, options: SearchOptions = SearchOptions(),
                 jit_compile: bool = False):
        if not isinstance(options, SearchOptions):
            raise TypeError(f"options must be SearchOptions, got {type(options).__name__}")
        self.model = model
        self.options = options
        self.jit_compile = jit_compile
        self.shapes_seen: set[tuple[int, int, int]] = set()  # XLA compiles one program each
        # One search for every length (key None), or under XLA one per decode length.
        self._searches: dict[int | None, Any] = {}

    @property
    def traces(self) -> int:
        """How many times the search has been traced: 1 after any number of calls,
        or under XLA one per decode length."""
        return sum(search.experimental_get_tracing_count()
                   for search in self._searches.values())

    def _search_for(self, max_decode_length: int, guided: tuple[str, ...]) -> Any:
        """The tf.function that decodes up to ``max_decode_length`` tokens, taking a
        batch's ``guided`` (``TARGET_GUIDES`` names) as a dict after its line numbers."""
        key = (max_decode_length if self.jit_compile else None, guided)
        # autograph=False here, in beam_search.py, the export and the training step: the
        # search and model loops are tf.while_loops already, and autograph rewriting them
        # was most of a decode's first trace (t2t-decoder, 64 lines of Multi30k val,
        # tiny model: 11-13 -> 4-5 s on a 2-core AMD EPYC).
        if key not in self._searches:
            inputs = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32),
                      {name: TARGET_GUIDES[name] for name in guided}]
            if self.jit_compile:
                self._searches[key] = tf.function(
                    lambda ids, lines, guides: search(
                        self.model, ids, max_decode_length, self.options, lines,
                        cache_lengths(max_decode_length), **guides),
                    input_signature=inputs, jit_compile=True, autograph=False)
            else:
                self._searches[key] = tf.function(
                    lambda ids, lines, guides, length: search(
                        self.model, ids, length, self.options, lines, **guides),
                    input_signature=[*inputs, tf.TensorSpec([], tf.int32)], autograph=False)
        return self._searches[key]

    def __call__(self, inputs: Any, max_decode_length: Any, line_numbers: Any = None,
                 prefixes: Any = None, constraints: Any = None
                 ) -> tuple[tf.Tensor, tf.Tensor]:
        inputs = tf.convert_to_tensor(inputs, tf.int32)
        line_numbers = (tf.range(tf.shape(inputs)[0]) if line_numbers is None
                        else tf.convert_to_tensor(line_numbers, tf.int32))
        guides = {name: tf.convert_to_tensor(value, tf.int32) for name, value in
                  (("prefixes", prefixes), ("constraints", constraints)) if value is not None}
        max_decode_length = int(max_decode_length)
        self._check_positions(inputs.shape[1], max_decode_length)
        self.shapes_seen.add((*inputs.shape, max_decode_length))
        compiled = self._search_for(max_decode_length, tuple(sorted(guides)))
        if self.jit_compile:
            ids, scores, steps = compiled(inputs, line_numbers, guides)
        else:
            ids, scores, steps = compiled(inputs, line_numbers, guides,
                                          tf.constant(max_decode_length, tf.int32))
        return ids[:, :, :int(steps)], scores

    def _check_positions(self, input_length: int, max_decode_length: int) -> None:
        """A model with learned positions has none beyond ``max_positions``: a longer
        input or decode is refused plainly (``InputRules`` cut and clamp them to fit)."""
        max_positions = getattr(self.model, "max_positions", None)
        if max_positions is None:
            return
        if input_length > max_positions:
            raise ValueError(
                f"an input of {input_length} tokens is longer than the {max_positions} "
                f"positions the model learned; shorten it or set the decode hparam "
                f"max_input_length<={max_positions}")
        if max_decode_length > max_positions:
            raise ValueError(
                f"a decode of up to {max_decode_length} tokens is longer than the "
                f"{max_positions} positions the model learned; decode at most "
                f"{max_positions} (InputRules.decode_length)")

    def in_graph(self, inputs: tf.Tensor, max_decode_length: tf.Tensor,
                 prefixes: tf.Tensor | None = None, constraints: tf.Tensor | None = None
                 ) -> tuple[tf.Tensor, tf.Tensor]:
        """The search as ops of the caller's graph (an export's serving function, which
        takes any batch and length: not compiled, whatever ``jit_compile``) ->
        ``beam_search``'s (ids, scores), each input's outputs beginning with its row of
        ``prefixes`` and holding its ``constraints``' phrases if given; a sampling
        decode's randomness keyed by each input's position in ``inputs``."""
        ids, scores, steps = search(self.model, inputs, max_decode_length, self.options,
                                    prefixes=prefixes, constraints=constraints)
        return ids[:, :, :steps], scores
