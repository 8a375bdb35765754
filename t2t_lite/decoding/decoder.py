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

import math
import os
import sys
from typing import Any, Callable, TextIO

import numpy as np

from t2t_lite.data.encoders import EOS_ID, PAD_ID, TextEncoder
from t2t_lite.data.text_files import read_utf8_lines, write_lines_atomically
from t2t_lite.hparam import HParams, HParamsError
from t2t_lite.progress import Progress

SearchFn = Callable[[np.ndarray, int], tuple[Any, Any]]
# (input line, decoded text) -> output line; e.g. parsing rebuilds a tree over the words.
Postprocess = Callable[[str, str], str]

DECODE_DEFAULTS = {
    "beam_size": 4,          # 1 = greedy
    "alpha": 0.6,            # length penalty exponent: ((5 + length) / 6) ** alpha
    "extra_length": 50,      # max decode length = input length + extra_length
    "batch_size": 32,        # lines per search call
    "return_beams": False,   # write every beam, tab-separated, best first
    "write_beam_scores": False,  # follow each output (each beam) with a tab and its score
    "max_input_length": 0,   # truncate longer inputs (EOS included); 0 = unlimited
    # Under XLA (model hparam xla=true) inputs are padded to a multiple of this many
    # tokens and every batch to batch_size lines: one compiled program per bucket.
    "length_bucket": 16,
}


def decode_hparams(overrides: str = "", defaults: dict[str, Any] | None = None) -> HParams:
    """Decode settings: library defaults, then a problem's ``defaults``, then ``overrides``.

    ``overrides`` is the user's ``"beam_size=8,alpha=1.0"`` string. Unknown keys
    and values of the wrong type raise ``HParamsError``.
    """
    hparams = HParams(**DECODE_DEFAULTS)
    hparams.override_from_dict(defaults or {})
    hparams.parse(overrides)
    for key, least in (("beam_size", 1), ("batch_size", 1), ("extra_length", 0),
                       ("max_input_length", 0), ("length_bucket", 1)):
        if getattr(hparams, key) < least:
            raise HParamsError(f"decode hparam {key!r} must be >= {least}, "
                               f"got {getattr(hparams, key)}")
    return hparams


def _one_field(text: str, separator: str) -> str:
    """Line breaks (and, between beams, tabs) inside a decoded text become spaces,
    so each input keeps exactly one output line."""
    return " ".join(text.replace(separator, " ").splitlines())


def _encode_line(line: str, encoder: TextEncoder, max_input_length: int) -> list[int]:
    ids = encoder.encode(line)
    if max_input_length:
        ids = ids[:max_input_length - 1]
    return ids + [EOS_ID]


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
                 length_bucket: int = 0) -> list[str]:
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
    length plus ``extra_length``.
    """
    target_encoder = target_encoder or encoder
    outputs = [""] * len(lines)
    encoded = {i: _encode_line(line.strip(), encoder, max_input_length)
               for i, line in enumerate(lines) if line.strip()}
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
                        description: str | None = None) -> list[str]:
    """``decode_lines`` with the settings of ``decode_hparams``; inputs are padded to
    ``length_bucket`` when ``search_fn`` is compiled with XLA (its ``jit_compile``)."""
    return decode_lines(lines, encoder, search_fn, batch_size=hparams.batch_size,
                        extra_length=hparams.extra_length, return_beams=hparams.return_beams,
                        max_input_length=hparams.max_input_length, postprocess=postprocess,
                        target_encoder=target_encoder,
                        write_beam_scores=hparams.write_beam_scores, description=description,
                        length_bucket=hparams.length_bucket
                        if getattr(search_fn, "jit_compile", False) else 0)


def read_pairs(path: str) -> list[tuple[str, str]]:
    """(source, target) of each line ``source<TAB>target`` of ``path``; a line without
    exactly one tab is a ``ValueError`` naming the file and line."""
    pairs = []
    for number, line in enumerate(read_utf8_lines(path, allow_tab=True), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ValueError(f"{path}: line {number} has {len(fields) - 1} tabs; each line "
                             "must be 'source<TAB>target'")
        pairs.append((fields[0], fields[1]))
    return pairs


def decode_from_file(input_path: str, output_path: str, encoder: TextEncoder,
                     search_fn: SearchFn, hparams: HParams,
                     postprocess: Postprocess | None = None,
                     target_encoder: TextEncoder | None = None,
                     reference_path: str | None = None) -> tuple[list[str], list[str] | None]:
    """Decodes every line of ``input_path`` into the same line of ``output_path``.

    The whole input (and ``reference_path``, when given) is read and checked
    before anything is decoded, and the output appears only once every line is
    decoded. Returns the output lines and the reference lines (or None).
    """
    lines = read_utf8_lines(input_path)
    references = None
    if reference_path:
        references = read_utf8_lines(reference_path)
        if len(references) != len(lines):
            raise ValueError(f"{reference_path} has {len(references)} lines but {input_path} "
                             f"has {len(lines)}: the references must be line-aligned with "
                             "the inputs")
    outputs = decode_with_hparams(hparams, lines, encoder, search_fn, postprocess, target_encoder,
                                  description=f"decoding {os.path.basename(input_path)}")
    write_lines_atomically(output_path, outputs)
    return outputs, references


def decode_interactive(encoder: TextEncoder, search_fn: SearchFn, hparams: HParams,
                       input_stream: TextIO | None = None,
                       output_stream: TextIO | None = None,
                       postprocess: Postprocess | None = None,
                       target_encoder: TextEncoder | None = None) -> None:
    """Prints one decoded line per line read (stdin by default) until end of input."""
    input_stream = input_stream or sys.stdin
    output_stream = output_stream or sys.stdout
    for line in input_stream:
        output_stream.write(
            decode_with_hparams(hparams, [line], encoder, search_fn, postprocess,
                         target_encoder)[0] + "\n")
        output_stream.flush()
