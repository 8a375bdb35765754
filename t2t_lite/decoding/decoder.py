"""Decoding lines of text with a search function: batching, files, stdin.

A *search function* maps int32 inputs [B, S] (each row ending in EOS, padded
with PAD) and a maximum decode length to ``(ids [B, beam, L], scores [B,
beam])``, best beam first: a ``BeamSearchDecoder`` is one. This module only
orchestrates: it encodes lines, sorts them by length so batches hold similar
lengths, decodes batch by batch and puts the outputs back in input order. Each
input line gives exactly one output line; an empty line gives an empty line
without running the model.

Decode-time settings live in one ``HParams`` built by ``decode_hparams``.
"""
from __future__ import annotations

import logging
import math
import os
import sys
from typing import Any, BinaryIO, Callable, TextIO

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.encoders import TextEncoder
from t2t_lite.data.text_files import (read_utf8_lines, stream_utf8_lines,
                                      write_lines_atomically)
from t2t_lite.data.unknown_tokens import UnknownTokens
from t2t_lite.hparam import HParams, at_least
from t2t_lite.progress import Progress

logger = logging.getLogger(__name__)
STDIN = "<stdin>"  # the name of standard input in warnings and errors

SearchFn = Callable[[np.ndarray, int], tuple[Any, Any]]
# (input line, decoded text) -> output line; e.g. parsing rebuilds a tree over the words.
Postprocess = Callable[[str, str], str]

# Each key with its range (t2t_lite/hparam.py).
DECODE_DEFAULTS = {
    "beam_size": at_least(1, 4),      # 1 = greedy
    "alpha": at_least(0, 0.6),        # length penalty exponent: ((5 + length) / 6) ** alpha
    "extra_length": at_least(0, 50),  # max decode length = input length + extra_length
    "batch_size": at_least(1, 32),    # lines per search call
    "return_beams": False,            # write every beam, tab-separated, best first
    "write_beam_scores": False,       # follow each output (each beam) with a tab and its score
    # Truncate longer inputs (EOS included); 0 = unlimited.
    "max_input_length": at_least(0, 0),
    # Under XLA (model hparam xla=true) inputs are padded to a multiple of this many
    # tokens and every batch to batch_size lines: one compiled program per bucket.
    "length_bucket": at_least(1, 16),
}


def decode_hparams(overrides: str = "", defaults: dict[str, Any] | None = None,
                   source: str = "--decode_hparams") -> HParams:
    """Decode settings: library defaults, then a problem's ``defaults``, then ``overrides``.

    ``overrides`` is the user's ``"beam_size=8,alpha=1.0"`` string, from the flag
    ``source``. Unknown keys, values of the wrong type and values out of range
    (NaN and infinities included) raise ``HParamsError`` naming the key and source.
    """
    hparams = HParams(**DECODE_DEFAULTS)
    hparams.override_from_dict(defaults or {}, source="the problem's decode defaults")
    return hparams.parse(overrides, source=source)


def _one_field(text: str, separator: str) -> str:
    """Line breaks (and, between beams, tabs) inside a decoded text become spaces,
    so each input keeps exactly one output line."""
    return " ".join(text.replace(separator, " ").splitlines())


def encode_input(text: str, encoder: TextEncoder, max_input_length: int) -> tuple[list[int], bool]:
    """``text``'s ids and EOS, cut to ``max_input_length`` ids (0: no limit), and whether
    it was cut."""
    ids = encoder.encode(text)
    cut = bool(max_input_length) and len(ids) > max_input_length - 1
    return (ids[:max_input_length - 1] if cut else ids) + [EOS_ID], cut


def warn_cut(source: str, cut: int, total: int, max_input_length: int) -> None:
    """One warning for all the lines of ``source`` that ``encode_input`` cut."""
    if cut:
        logger.warning(f"{source}: {cut} of {total} input lines are longer than the "
                       f"{max_input_length - 1} tokens (and EOS) this model takes (the decode "
                       f"hparam max_input_length, else the model's max_length); they were "
                       f"cut to their first {max_input_length - 1} tokens")


def input_length_limit(hparams: HParams, model: Any) -> int:
    """The longest input (EOS included) to give ``model``: the decode hparam
    ``max_input_length``, else the model's ``max_length`` (the longest it trained on, and
    where t2t-exporter cuts), never more than its positions; an unlimited length would
    let one long line take all the memory (self-attention grows with its square)."""
    limit = hparams.max_input_length or model.hparams.max_length
    return min(limit, model.max_positions or limit)


def _pad(rows: list[list[int]], length_bucket: int = 0, batch_size: int = 0) -> np.ndarray:
    """``rows`` padded to the longest, or with ``length_bucket`` to the next multiple
    of it and to ``batch_size`` rows (filler rows hold EOS alone), so that a
    compiled search sees few shapes."""
    length = max(len(r) for r in rows)
    if length_bucket:
        length = -(-length // length_bucket) * length_bucket
    batch = np.full((max(len(rows), batch_size), length), PAD_ID, np.int32)
    batch[len(rows):, 0] = EOS_ID
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return batch


def decode_lines(lines: list[str], encoder: TextEncoder, search_fn: SearchFn,
                 batch_size: int = 32, extra_length: int = 50, return_beams: bool = False,
                 max_input_length: int = 0, postprocess: Postprocess | None = None,
                 target_encoder: TextEncoder | None = None,
                 write_beam_scores: bool = False, description: str | None = None,
                 length_bucket: int = 0, source: str = "input") -> list[str]:
    """One decoded line per input line, in input order.

    ``encoder`` encodes the inputs; ``target_encoder`` (default: the same one)
    decodes the outputs, for problems whose two sides have their own vocabularies.

    Lines are stripped; empty ones decode to "". With ``return_beams`` each
    output holds all beams, tab-separated, best first (empty beam slots, which
    score -inf, are left out). Each batch may decode up to its longest input
    length (EOS included) plus ``extra_length`` tokens. ``postprocess`` maps
    (input line, decoded text) to the output line, beam by beam. With
    ``write_beam_scores`` each beam's text is followed by a tab and its score
    (tensor2tensor's format: ``text<TAB>score`` per beam). With a ``description``
    the progress is shown (``t2t_lite.progress``). With a ``length_bucket``
    (for an XLA-compiled search) every batch has ``batch_size`` rows and a
    length that is a multiple of ``length_bucket``, and may decode up to that
    length plus ``extra_length``. Inputs cut to ``max_input_length`` are counted in one
    warning that calls them the lines of ``source``.
    """
    target_encoder = target_encoder or encoder
    outputs = [""] * len(lines)
    encoded, cut = {}, 0
    for i, line in enumerate(lines):
        if line.strip():
            encoded[i], was_cut = encode_input(line.strip(), encoder, max_input_length)
            cut += was_cut
    warn_cut(source, cut, len(encoded), max_input_length)
    # Longest first: similar lengths share a batch, and memory trouble shows up at once.
    order = sorted(encoded, key=lambda i: -len(encoded[i]))
    bar = Progress(description, len(order), "lines") if description else None
    for start in range(0, len(order), batch_size):
        indices = order[start:start + batch_size]
        inputs = _pad([encoded[i] for i in indices], length_bucket,
                      batch_size if length_bucket else 0)
        ids, scores = search_fn(inputs, inputs.shape[1] + extra_length)
        ids, scores = np.asarray(ids), np.asarray(scores)
        # Tabs inside a text become spaces only where tabs separate fields.
        separator = "\t" if return_beams or write_beam_scores else "\n"
        for row, index in enumerate(indices):
            fields = []
            for k in range(ids.shape[1] if return_beams else 1):
                if math.isinf(scores[row, k]):
                    continue
                text = _one_field(target_encoder.decode(ids[row, k].tolist()), separator)
                if postprocess:
                    text = postprocess(lines[index].strip(), text)
                fields.append(f"{text}\t{scores[row, k]:.4f}" if write_beam_scores else text)
            outputs[index] = "\t".join(fields)
        if bar:
            bar.update(len(indices))
    if bar:
        bar.close()
    return outputs


def decode_with_hparams(hparams: HParams, lines: list[str], encoder: TextEncoder,
                        search_fn: SearchFn, postprocess: Postprocess | None = None,
                        target_encoder: TextEncoder | None = None,
                        description: str | None = None, source: str = "input") -> list[str]:
    """``decode_lines`` with the settings of ``decode_hparams``; inputs are padded to
    ``length_bucket`` when ``search_fn`` is compiled with XLA (its ``jit_compile``)."""
    return decode_lines(lines, encoder, search_fn, batch_size=hparams.batch_size,
                        extra_length=hparams.extra_length, return_beams=hparams.return_beams,
                        max_input_length=hparams.max_input_length, postprocess=postprocess,
                        target_encoder=target_encoder,
                        write_beam_scores=hparams.write_beam_scores, description=description,
                        length_bucket=hparams.length_bucket
                        if getattr(search_fn, "jit_compile", False) else 0, source=source)


def decode_from_file(input_path: str, output_path: str, encoder: TextEncoder,
                     search_fn: SearchFn, hparams: HParams,
                     postprocess: Postprocess | None = None,
                     target_encoder: TextEncoder | None = None,
                     reference_path: str | None = None) -> tuple[list[str], list[str] | None]:
    """Decodes every line of ``input_path`` into the same line of ``output_path``.

    The whole input (and ``reference_path``, when given) is read and checked
    before anything is decoded, and the output appears only once every line is
    decoded. Input tokens the vocabulary lacks, and inputs cut to the decode's
    ``max_input_length``, are counted in a warning each. Returns the output lines
    and the reference lines (or None).
    """
    lines = read_utf8_lines(input_path)
    unknown = UnknownTokens(input_path)
    for number, line in enumerate(lines, start=1):
        unknown.count(encoder, line, number)
    references = None
    if reference_path:
        references = read_utf8_lines(reference_path)
        if len(references) != len(lines):
            raise ValueError(f"{reference_path} has {len(references)} lines but {input_path} "
                             f"has {len(lines)}: the references must be line-aligned with "
                             "the inputs")
    unknown.warn("decoded")
    outputs = decode_with_hparams(hparams, lines, encoder, search_fn, postprocess, target_encoder,
                                  description=f"decoding {os.path.basename(input_path)}",
                                  source=input_path)
    write_lines_atomically(output_path, outputs)
    return outputs, references


def decode_interactive(encoder: TextEncoder, search_fn: SearchFn, hparams: HParams,
                       input_stream: BinaryIO | None = None,
                       output_stream: TextIO | None = None,
                       postprocess: Postprocess | None = None,
                       target_encoder: TextEncoder | None = None) -> None:
    """Prints one decoded line per line read (stdin by default) until end of input.

    Lines are read as files are (``stream_utf8_lines``): a line that is not UTF-8
    or holds a control character ends the session with an error naming
    ``<stdin>:LINE``; unknown tokens and a cut input are warned about line by line.
    """
    input_stream = input_stream or sys.stdin.buffer
    output_stream = output_stream or sys.stdout
    for number, line in enumerate(stream_utf8_lines(input_stream, STDIN), start=1):
        unknown = UnknownTokens(STDIN)
        unknown.count(encoder, line, number)
        unknown.warn("decoded")
        output_stream.write(
            decode_with_hparams(hparams, [line], encoder, search_fn, postprocess,
                                target_encoder, source=f"{STDIN}:{number}")[0] + "\n")
        output_stream.flush()
