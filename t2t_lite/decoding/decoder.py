"""Decoding lines of text with a ``Decoding``: batching, stdin (files:
``t2t_lite.decoding.file_decoding``).

A ``Decoding`` (``t2t_lite.decoding.factory``) holds the search, its
``DecodeSettings``, the ``InputRules`` and the codecs. This module only
orchestrates: it encodes lines, sorts them by length so batches hold similar
lengths, decodes batch by batch and puts the outputs back in input order. Each
input line gives exactly one output line; an empty line gives an empty line
without running the model.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import math
import sys
from typing import BinaryIO, Iterator, Sequence, TextIO

import numpy as np

from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.text_files import stream_utf8_lines
from t2t_lite.data.unknown_tokens import UnknownTokens
from t2t_lite.decoding.factory import Decoding
from t2t_lite.decoding.input_rules import InputRules, encode_input, warn_cut
from t2t_lite.decoding.settings import DecodeSettings
from t2t_lite.decoding.target_guides import (GuideFiles, GuideText, LineGuide, batch_guides,
                                             encode_guides)
from t2t_lite.decoding.word_alignment import Aligner
from t2t_lite.progress import Progress

STDIN = "<stdin>"  # the name of standard input in warnings and errors


def _pad(rows: list[list[int]], length: int, batch_size: int = 0) -> np.ndarray:
    """``rows`` padded to ``length`` and to ``batch_size`` rows (filler rows hold an
    input of EOS alone), so that a compiled search sees few shapes."""
    batch = np.full((max(len(rows), batch_size), length), PAD_ID, np.int32)
    batch[len(rows):, :1] = EOS_ID
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return batch


def batches(lengths: list[int], settings: DecodeSettings, rules: InputRules) -> Iterator[
        tuple[int, int, int]]:
    """(start, stop, rows) of each batch of inputs of ``lengths`` (ids, EOS included),
    longest first: ``batch_size`` lines, or under ``batch_type=tokens`` as many lines as
    ``batch_size`` tokens hold once padded to the first (longest) one's length (one
    line at least). ``rows`` is what the batch is padded to under XLA (a program per
    shape): ``batch_size`` lines, or that many lines for its padded length."""
    bucket = settings.padded_length_bucket
    start = 0
    while start < len(lengths):
        if settings.batch_type == "tokens":
            rows = max(1, settings.batch_size // rules.padded_length(lengths[start], bucket))
        else:
            rows = settings.batch_size
        stop = min(start + rows, len(lengths))
        yield start, stop, rows
        start = stop


@dataclasses.dataclass
class DecodedWindow:
    """What ``decode_window`` gives: an output a line, how many inputs were cut to the
    input limit, and (with an ``Aligner``) each output's word alignment (with every
    hypothesis written, one each, tab-separated; "" for a blank line)."""
    outputs: list[str]
    cut: int
    alignments: list[str] | None = None


def decode_window(lines: Sequence[str], decoding: Decoding, first_line: int = 0,
                  bar: Progress | None = None, guides: Sequence[LineGuide] | None = None,
                  aligner: Aligner | None = None) -> DecodedWindow:
    """``decode_lines`` without its warning. ``bar`` counts the lines decoded.
    ``guides``: each line's target prefix and phrases (``target_guides.encode_guides``),
    one a line. ``aligner``: aligns each hypothesis written with its input."""
    settings, rules = decoding.settings, decoding.rules
    outputs = [""] * len(lines)
    alignments = [""] * len(lines) if aligner else None
    encoded, cut = {}, 0
    for i, line in enumerate(lines):
        if line.strip():
            encoded[i], was_cut = encode_input(line.strip(), decoding.encoder,
                                               rules.max_input_length)
            cut += was_cut
    # Longest first: similar lengths share a batch, and memory trouble shows up at once.
    order = sorted(encoded, key=lambda i: -len(encoded[i]))
    # Tabs inside a text become spaces only where tabs separate fields.
    fielded = settings.fielded
    bucket = settings.padded_length_bucket
    jobs = []  # (the batch's line indices, the search's arguments and keywords)
    for start, stop, rows_under_xla in batches([len(encoded[i]) for i in order],
                                               settings, rules):
        indices = order[start:stop]
        rows = [encoded[i] for i in indices]
        inputs = _pad(rows, rules.padded_length(max(map(len, rows)), bucket),
                      rows_under_xla if bucket else 0)
        line_numbers = np.zeros(len(inputs), np.int32)  # filler rows (XLA) draw as line 0
        line_numbers[:len(indices)] = np.asarray(indices) + first_line
        if guides is None:
            jobs.append((indices, (inputs, inputs.shape[1] + settings.extra_length,
                                   line_numbers), {}))
        else:
            asked = [guides[i] for i in indices]
            # Room after what the guides hold as after an input: extra_length tokens.
            length = max(inputs.shape[1], max(guide.tokens for guide in asked) + 1)
            jobs.append((indices, (inputs, length + settings.extra_length, line_numbers),
                         batch_guides(asked, len(inputs))))
    for (indices, (inputs, _, _), _), (ids, scores) in zip(
            jobs, _searched(decoding, jobs, settings.batches_at_once)):
        written = [(row, k) for row in range(len(indices))
                   for k in range(ids.shape[1] if settings.every_hypothesis else 1)
                   if not math.isinf(scores[row, k])]
        if aligner and written:
            rows, beams = zip(*written)
            aligned = dict(zip(written, aligner(inputs[list(rows)], ids[rows, beams])))
            for row, index in enumerate(indices):
                alignments[index] = "\t".join(aligned[one] for one in written
                                              if one[0] == row)
        for row, index in enumerate(indices):
            fields = []
            for k in range(ids.shape[1] if settings.every_hypothesis else 1):
                if math.isinf(scores[row, k]):
                    continue
                text = rules.one_line(decoding.target_encoder.decode(ids[row, k].tolist()))
                if fielded:
                    text = text.replace("\t", " ")
                if decoding.postprocess:
                    text = decoding.postprocess(lines[index].strip(), text)
                fields.append(f"{text}\t{scores[row, k]:.4f}" if settings.write_beam_scores
                              else text)
            outputs[index] = "\t".join(fields)
        if bar:
            bar.update(len(indices))
    return DecodedWindow(outputs, cut, alignments)


def _searched(decoding: Decoding, jobs: list, at_once: int) -> Iterator[tuple[np.ndarray,
                                                                              np.ndarray]]:
    """(ids, scores) of each job's search, in order, ``at_once`` searched at a time
    (each search's ops run while the others' do: TensorFlow releases the GIL). At
    most ``2 * at_once`` searches run or wait ahead of the one being written, so the
    results held do not grow with a window whose writing lags its searches."""
    def search(job: tuple) -> tuple[np.ndarray, np.ndarray]:
        _, arguments, keywords = job
        ids, scores = decoding(*arguments, **keywords)
        return np.asarray(ids), np.asarray(scores)

    if at_once == 1 or len(jobs) == 1:
        yield from map(search, jobs)
        return
    pool = concurrent.futures.ThreadPoolExecutor(at_once, thread_name_prefix="search")
    ahead = collections.deque()
    try:
        for job in jobs:
            ahead.append(pool.submit(search, job))
            if len(ahead) > 2 * at_once:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    except BaseException:  # an error or interrupt: no search not started yet starts
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()  # its threads gone with the window


def decode_lines(lines: Sequence[str], decoding: Decoding, description: str | None = None,
                 source: str = "input", first_line: int = 0,
                 prefixes: Sequence[str] | None = None,
                 constraints: Sequence[str] | None = None) -> list[str]:
    """One decoded line per input line, in input order.

    Lines are stripped; empty ones decode to "". With the setting ``return_beams``
    each output holds all beams, tab-separated, best first (empty beam slots, which
    score -inf, are left out). Each batch may decode up to its longest input
    length (EOS included) plus ``extra_length`` tokens, within the model's
    positions. The postprocessing maps (input line, decoded text) to the output
    line, beam by beam. With ``write_beam_scores`` each beam's text is followed by
    a tab and its score (tensor2tensor's format: ``text<TAB>score`` per beam). With
    a ``description`` the progress is shown (``t2t_lite.progress``). Batches are
    as ``batches`` says; under XLA each is padded to its rows and to a length that
    is a multiple of ``length_bucket``. Inputs cut to the rules' ``max_input_length``
    are counted in one warning that calls them the lines of ``source``. Under
    ``sampling_method=random`` each output holds its ``num_samples`` samples in the
    order drawn, each drawn as a function of the seed and its line's number
    (``first_line`` + its index in ``lines``), so the samples do not depend on
    batching. With ``prefixes`` (one a line, plain target text; "" for none) each
    output begins with its line's prefix, the search going on from it
    (``forced_prefix``); with ``constraints`` (one a line, tab-separated target
    phrases; "" for none) each output holds its line's phrases
    (``lexical_constraints``); a blank input line still gives a blank output line.
    """
    nonempty = sum(1 for line in lines if line.strip())
    bar = Progress(description, nonempty, "lines") if description else None
    guides = None
    if prefixes is not None or constraints is not None:
        given = {"prefix": prefixes, "constraints": constraints}
        for field, texts in given.items():
            if texts is not None and len(texts) != len(lines):
                what = "prefixes" if field == "prefix" else "sets of phrases"
                raise ValueError(f"{len(texts)} {what} for {len(lines)} lines of {source}: "
                                 "give one a line (an empty one for none)")
        texts = [GuideText(**{field: values[i] for field, values in given.items()
                              if values is not None}) for i in range(len(lines))]
        names = GuideFiles(prefixes and f"the prefixes of {source}",
                           constraints and f"the constraints of {source}")
        guides = encode_guides(texts, decoding.target_encoder, decoding.rules.room(),
                               names, first_line)
    decoded = decode_window(lines, decoding, first_line, bar, guides)
    if bar:
        bar.close()
    warn_cut(source, decoded.cut, nonempty, decoding.rules.max_input_length)
    return decoded.outputs


def decode_interactive(decoding: Decoding, input_stream: BinaryIO | None = None,
                       output_stream: TextIO | None = None, prompt: str = "",
                       prefix_after_tab: bool = False,
                       constraints_after_tab: bool = False) -> None:
    """Prints one decoded line per line read (stdin by default) until end of input.

    Lines are read as files are (``stream_utf8_lines``): a line that is not UTF-8
    or holds a control character ends the session with an error naming
    ``<stdin>:LINE``; unknown tokens and a cut input are warned about line by line.
    A ``prompt`` (for a terminal) goes to stderr before each line is read, and a
    newline at the end of input (Ctrl-D leaves the cursor on the prompt's line).
    With ``prefix_after_tab`` a line's text after its first tab is the target prefix
    its decode begins with (``decode_lines``' prefixes); with
    ``constraints_after_tab`` the fields after the source (and the prefix) are
    phrases its decode holds (``decode_lines``' constraints), as fairseq's
    interactive ``--constraints`` reads them.
    """
    input_stream = input_stream or sys.stdin.buffer
    output_stream = output_stream or sys.stdout
    fielded = prefix_after_tab or constraints_after_tab
    lines = enumerate(stream_utf8_lines(input_stream, STDIN, allow_tab=fielded), start=1)
    while True:
        if prompt:
            sys.stderr.write(prompt)
            sys.stderr.flush()
        try:
            number, line = next(lines, (0, None))
        except KeyboardInterrupt:
            if prompt:  # the command's last line starts on a line of its own
                sys.stderr.write("\n")
            raise
        if line is None:
            if prompt:
                sys.stderr.write("\n")
            return
        fields = line.split("\t") if fielded else [line]
        line, prefix = fields[0], fields[1] if prefix_after_tab and len(fields) > 1 else ""
        phrases = "\t".join(fields[2 if prefix_after_tab else 1:])
        if prefix_after_tab and not constraints_after_tab and len(fields) > 2:
            raise ValueError(f"{STDIN}:{number}: a line holds two tabs; under "
                             "--prefix_after_tab it is SOURCE<TAB>TARGET PREFIX")
        text = GuideText(prefix, phrases)
        # Its errors name the line.
        encode_guides([text], decoding.target_encoder, decoding.rules.room(),
                      GuideFiles(STDIN, STDIN), number - 1)
        unknown = UnknownTokens(STDIN)
        unknown.count(decoding.encoder, line, number)
        unknown.warn("decoded")
        output = decode_lines([line], decoding, source=f"{STDIN}:{number}", first_line=number - 1,
                              prefixes=[prefix] if prefix_after_tab else None,
                              constraints=[phrases] if constraints_after_tab else None)
        output_stream.write(output[0] + "\n")
        output_stream.flush()
