"""Decoding a file of any size: in windows, resumable, and in shards.

The input is read twice, a line at a time: first whole, to check every line
(``t2t_lite.data.text_files``), count unknown tokens and digest each window of
``read_window_lines`` lines; then window by window, each decoded as
``decode_lines`` decodes (sorted by length within it) and, when the input spans
more than one window, kept beside the output (``kept_windows``). Memory holds
one window, never the file. The output appears whole at the end, in input order.

Shards: ``Shard(index, count)`` decodes the ``index``-th of ``count`` runs of
consecutive windows (contiguous blocks of the input, split at window
boundaries, so the merged parts equal one process's output byte for byte) into
its own part, ``OUTPUT.shard-K-of-N``, with a record (``PART.meta.json``) of
the lines and the decode it came from; ``merge_shards`` joins the parts into
``OUTPUT``, refusing a part that is missing, changed, or stale (decoded from
other lines or under another identity than the merging command's).
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import itertools
import json
import os
from typing import Any, Iterator, Mapping

from t2t_lite.data.text_files import count_utf8_lines, iter_utf8_lines, write_lines_atomically
from t2t_lite.data.unknown_tokens import UnknownTokens
from t2t_lite.decoding.decoder import decode_window
from t2t_lite.decoding.word_alignment import Aligner
from t2t_lite.decoding.factory import Decoding
from t2t_lite.decoding.input_rules import warn_cut
from t2t_lite.decoding.settings import SPEED_ONLY_SETTINGS
from t2t_lite.decoding.kept_windows import (SUFFIX, KeptWindows, Window, add_line,
                                            joint_digest, line_digest)
from t2t_lite.decoding.target_guides import (GuideFiles, check_blank_lines, digest_text,
                                             encode_guides, window_lines)
from t2t_lite.progress import Progress

RECORD_SUFFIX = ".meta.json"
_RECORD_MARK = "t2t-decoder's record of a decoded shard"


@dataclasses.dataclass(frozen=True)
class Shard:
    """The ``index``-th (0-based, tensor2tensor's --worker_id) of ``count`` parts."""
    index: int = 0
    count: int = 1

    def __post_init__(self):
        if not 0 <= self.index < self.count:
            raise ValueError(f"--worker_id={self.index}: must be in 0 .. "
                             f"{self.count - 1} (--decode_shards={self.count})")

    def windows(self, windows: list[Window]) -> list[Window]:
        """This shard's run of consecutive ``windows``."""
        n = len(windows)
        return windows[self.index * n // self.count:(self.index + 1) * n // self.count]

    def part_path(self, output_path: str) -> str:
        """Where this shard's part of ``output_path`` goes: ``out.txt.shard-2-of-8``
        (``out.shard-2-of-8.txt.gz``'s ``.gz`` stays last, so the part is gzipped too)."""
        if self.count == 1:
            return output_path
        width = len(str(self.count - 1))
        base, gz = (output_path[:-3], ".gz") if output_path.endswith(".gz") else (output_path, "")
        return f"{base}.shard-{self.index:0{width}d}-of-{self.count}{gz}"


def keeps_windows(lines: int, settings: Any, shard: Shard = Shard()) -> bool:
    """Whether ``shard``'s part of an input of ``lines`` spans windows enough to keep
    them (more than one) under ``settings``' read_window_lines."""
    windows = -(-lines // settings.read_window_lines)
    return (shard.index + 1) * windows // shard.count - shard.index * windows // shard.count > 1


@dataclasses.dataclass(frozen=True)
class InputScan:
    """An input read through once: its lines checked, its windows digested."""
    path: str
    lines: int
    windows: list[Window]
    texts: list[int]   # per window, its lines that are not blank (the lines decoded)


@dataclasses.dataclass(frozen=True)
class FileDecode:
    """What ``decode_file`` did."""
    output_path: str   # the output written (a shard's part)
    lines: int         # lines written there
    decoded: int       # of them, decoded by this call (the others were kept before)
    kept_windows: int  # windows found kept from an interrupted run, not decoded again


def scan_input(path: str, read_window_lines: int, decoding: Decoding | None = None,
               guide_files: GuideFiles = GuideFiles()) -> InputScan:
    """Reads ``path`` once (every line checked, errors naming ``FILE:LINE``); with a
    ``decoding``, its unknown input tokens are counted in one warning. With
    ``guide_files`` (target prefixes, phrases; line-aligned) each line's guides are
    read beside it and go into its window's digest (kept windows and shards of one
    prefix file are no others'): refused, naming its line, when the counts differ,
    when a blank line has guides, or (with a ``decoding``) they do not fit."""
    unknown = UnknownTokens(path) if decoding else None
    windows, texts = [], []
    digest, first, count, nonblank = line_digest(), 0, 0, 0
    for count, (line, guide) in enumerate(guide_files.with_lines(path), start=1):
        if unknown:
            unknown.count(decoding.encoder, line, count)
        check_blank_lines(line, guide, guide_files, path, count)
        if decoding and guide and not guide.is_blank():
            encode_guides([guide], decoding.target_encoder, decoding.rules.room(),
                          guide_files, count - 1)
        add_line(digest, digest_text(line, guide))
        nonblank += bool(line.strip())
        if count - first == read_window_lines:
            windows.append(Window(len(windows), first, count - first, digest.hexdigest()))
            texts.append(nonblank)
            digest, first, nonblank = line_digest(), count, 0
    if count > first:
        windows.append(Window(len(windows), first, count - first, digest.hexdigest()))
        texts.append(nonblank)
    if unknown:
        unknown.warn("decoded")
    return InputScan(path, count, windows, texts)


def decode_file(input_path: str, output_path: str, decoding: Decoding,
                identity: Mapping[str, Any] | None, shard: Shard = Shard(),
                description: str | None = None, reference_path: str | None = None,
                guide_files: GuideFiles = GuideFiles(), aligner: Aligner | None = None,
                alignment_path: str | None = None) -> FileDecode:
    """Decodes ``shard``'s part of ``input_path`` into ``output_path`` (for a shard,
    its ``part_path`` of the whole output, which ``merge_shards`` reads).

    ``identity`` says what decodes (checkpoints, vocabulary; the settings are added
    here): windows kept by an interrupted run are taken only under the same
    identity and the same input lines. Without one, nothing is kept (the outputs
    are held until the end, as a library caller's scores need them anyway). A ``reference_path`` (whole decodes only) is
    checked to have the input's line count before anything is decoded. With a
    ``description`` the progress is shown. ``guide_files``: a target prefix for each
    input line that its outputs begin with, phrases they hold (``target_guides``).
    With an ``aligner``, each output line's word alignment goes to the same line of
    ``alignment_path`` (for a shard, its part), kept and merged as the outputs are.
    """
    settings, identity_given = decoding.settings, identity is not None
    scan = scan_input(input_path, settings.read_window_lines, decoding, guide_files)
    if reference_path:
        references = count_utf8_lines(reference_path)
        if references != scan.lines:
            raise ValueError(f"{reference_path} has {references} lines but {input_path} "
                             f"has {scan.lines}: the references must be line-aligned with "
                             "the inputs")
    identity = decode_identity(identity or {}, decoding.settings,
                               aligner.layer if aligner else None)
    mine = shard.windows(scan.windows)
    part_path = output_path
    if shard.count > 1:
        _check_record_place(part_path)
    kept = (KeptWindows(part_path + SUFFIX, identity) if len(mine) > 1 and identity_given
            else None)
    resumed = kept.check(mine) if kept else 0
    todo = [window for window in mine if not (kept and kept.is_kept(window))]
    bar = (Progress(description, sum(window.lines for window in todo), "lines")
           if description else None)
    outputs: list[str] = []
    alignments: list[str] = []
    cut = sum(kept.cut(window) for window in mine if kept and kept.is_kept(window))
    for window, lines, texts in zip(todo, window_lines(input_path, todo),
                                    guide_files.windows(todo)):
        guides = texts and encode_guides(texts, decoding.target_encoder,
                                         decoding.rules.room(), guide_files, window.first_line)
        decoded = decode_window(lines, decoding, window.first_line, bar, guides, aligner)
        cut += decoded.cut
        if kept:
            kept.keep(window, decoded.outputs, decoded.cut, decoded.alignments)
        else:
            outputs += decoded.outputs
            alignments += decoded.alignments or []
    if bar:
        bar.close()
    warn_cut(input_path, cut, sum(scan.texts[window.index] for window in mine),
             decoding.rules.max_input_length)
    if aligner:
        write_lines_atomically(alignment_path, itertools.chain.from_iterable(
            kept.lines(window, alignments=True) for window in mine) if kept else alignments)
    written = (itertools.chain.from_iterable(map(kept.lines, mine)) if kept else outputs)
    write_lines_atomically(part_path, written)
    if shard.count > 1:
        _write_record(part_path, identity, shard, mine, alignment_path if aligner else None)
    if kept:
        kept.remove()
    lines = sum(window.lines for window in mine)
    return FileDecode(part_path, lines, sum(window.lines for window in todo), resumed)


def decode_identity(identity: Mapping[str, Any], settings: Any,
                    alignment_layer: int | None = None) -> dict[str, Any]:
    """What makes two decodes' outputs the same: the caller's ``identity`` (the
    model's weights, the vocabulary), every decode setting and, if aligned, the
    alignments' layer."""
    aligned = {} if alignment_layer is None else {"alignment_layer": alignment_layer}
    chosen = {key: value for key, value in dataclasses.asdict(settings).items()
              if key not in SPEED_ONLY_SETTINGS}
    return {**identity, "settings": chosen, **aligned}


def merge_shards(input_path: str, output_path: str, identity: Mapping[str, Any],
                 settings: Any, count: int, guide_files: GuideFiles = GuideFiles(),
                 alignment_layer: int | None = None, alignment_path: str | None = None
                 ) -> int:
    """Joins the ``count`` parts of ``output_path`` decoded from ``input_path`` (and
    ``guide_files``' guides) under ``identity`` and ``settings`` into
    ``output_path``; returns its lines. Refused, naming each, when a part is missing,
    was changed since it was written, or is stale: decoded from other lines or
    prefixes or under another identity. With an ``alignment_path`` (aligned at
    ``alignment_layer``), its parts are checked and joined too."""
    identity = decode_identity(identity, settings, alignment_layer)
    aligned = alignment_path is not None
    scan = scan_input(input_path, settings.read_window_lines, guide_files=guide_files)
    shards = [Shard(index, count) for index in range(count)]
    missing = [shard for shard in shards
               if not (os.path.isfile(shard.part_path(output_path))
                       and os.path.isfile(shard.part_path(output_path) + RECORD_SUFFIX))]
    if missing:
        raise ValueError(f"--merge_shards: {len(missing)} of the {count} parts are not "
                         f"decoded yet ({', '.join(s.part_path(output_path) for s in missing[:3])}"
                         f"{', ...' if len(missing) > 3 else ''}): run --worker_id="
                         f"{','.join(str(s.index) for s in missing[:8])} first")
    for shard in shards:
        part = shard.part_path(output_path)
        record = _read_record(part)
        mine = shard.windows(scan.windows)
        worker = f"decode it again (--worker_id={shard.index})"
        if record.get("identity") != json.loads(json.dumps(identity)):
            differ = sorted(key for key in {**identity, **record.get("identity", {})}
                            if record.get("identity", {}).get(key) != identity.get(key))
            raise ValueError(f"--merge_shards: {part} was decoded with another "
                             f"{' / '.join(differ)} than this command's (a trainer still "
                             f"writing the run? pin --checkpoint_path); {worker}")
        if record.get("digest") != joint_digest(mine) or record.get("lines") != sum(
                window.lines for window in mine):
            guided = "".join(f" (with {path}'s {'prefixes' if field == 'prefix' else 'phrases'})"
                             for field, path in guide_files.given())
            raise ValueError(f"--merge_shards: {part} was decoded from other lines or "
                             f"guides than {input_path}'s part {shard.index} of {count}"
                             f"{guided} now; {worker}")
        written = [part] + ([shard.part_path(alignment_path)] if aligned else [])
        for path, digest in zip(written, ("output_digest", "alignment_digest")):
            if not os.path.isfile(path):
                raise ValueError(f"--merge_shards: {path} is missing; {worker}")
            if record.get(digest) != _file_digest(path):
                raise ValueError(f"--merge_shards: {path} was changed since t2t-decoder "
                                 f"wrote it; {worker}")
    if aligned:
        write_lines_atomically(alignment_path, itertools.chain.from_iterable(
            _raw_lines(shard.part_path(alignment_path)) for shard in shards))
    write_lines_atomically(output_path, itertools.chain.from_iterable(
        _raw_lines(shard.part_path(output_path)) for shard in shards))
    return scan.lines


def _check_record_place(part_path: str) -> None:
    path = part_path + RECORD_SUFFIX
    if os.path.exists(path) and _read_record(part_path, strict=False) is None:
        raise ValueError(f"{path} is in the way of the record this shard writes "
                         "(t2t-decoder did not write it); move it away")


def _write_record(part_path: str, identity: Mapping[str, Any], shard: Shard,
                  windows: list[Window], alignment_path: str | None = None) -> None:
    record = {"written_by": _RECORD_MARK, "identity": identity,
              "shard": [shard.index, shard.count], "lines": sum(w.lines for w in windows),
              "digest": joint_digest(windows), "output_digest": _file_digest(part_path)}
    if alignment_path:
        record["alignment_digest"] = _file_digest(alignment_path)
    write_lines_atomically(part_path + RECORD_SUFFIX, [json.dumps(record, indent=1,
                                                                  sort_keys=True)])


def _read_record(part_path: str, strict: bool = True) -> dict | None:
    try:
        with open(part_path + RECORD_SUFFIX, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        record = None
    if isinstance(record, dict) and record.get("written_by") == _RECORD_MARK:
        return record
    if strict:
        raise ValueError(f"--merge_shards: {part_path}{RECORD_SUFFIX} is not a record "
                         "t2t-decoder wrote; decode that part again")
    return None


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _raw_lines(path: str) -> Iterator[str]:
    """A part's lines as written (gunzipped when named .gz)."""
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        for raw in f:
            yield raw[:-1].decode("utf-8")


def best_outputs(output_path: str, fielded: bool) -> list[str]:
    """The best decode of each line of a written output (its first field when the
    lines hold fields: every beam, or text and score), for a score."""
    return [line.split("\t", 1)[0] if fielded else line for line in _raw_lines(output_path)]


def decode_from_file(input_path: str, output_path: str, decoding: Decoding,
                     reference_path: str | None = None,
                     guide_files: GuideFiles = GuideFiles()
                     ) -> tuple[list[str], list[str] | None]:
    """``decode_file`` of the whole input, keeping nothing (for library callers that
    score what they decode): the best decode of each line (``best_outputs``) and the
    reference lines (or None)."""
    decode_file(input_path, output_path, decoding, None, reference_path=reference_path,
                guide_files=guide_files)
    references = list(iter_utf8_lines(reference_path)) if reference_path else None
    return best_outputs(output_path, decoding.settings.fielded), references
