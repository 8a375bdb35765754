"""tensor2tensor's ``text_problems`` reading helpers, over t2t-lite's strict reader.

Each reads a UTF-8 text file one line at a time (``.gz`` decompressed) and strips
the line, as T2T's did; a file that is not text (another encoding, control
characters, one of two aligned files longer than the other) is refused in one line
naming FILE:LINE (``t2t_lite/data/text_files.py``) where T2T read on or cut short.
"""
from __future__ import annotations

from typing import Iterator

from t2t_lite.data.text_files import iter_utf8_lines


def txt_line_iterator(txt_path: str) -> Iterator[str]:
    """Each line of ``txt_path``, stripped."""
    for line in iter_utf8_lines(txt_path):
        yield line.strip()


def text2text_txt_iterator(source_txt_path: str,
                           target_txt_path: str) -> Iterator[dict[str, str]]:
    """``{"inputs", "targets"}`` from two line-aligned files (of equal length)."""
    sources, targets = txt_line_iterator(source_txt_path), txt_line_iterator(target_txt_path)
    pairs = 0
    for inputs in sources:
        targets_line = next(targets, None)
        if targets_line is None:
            raise ValueError(f"{source_txt_path} has more lines than {target_txt_path} "
                             f"({pairs}): line-aligned files must be of one length")
        pairs += 1
        yield {"inputs": inputs, "targets": targets_line}
    if next(targets, None) is not None:
        raise ValueError(f"{target_txt_path} has more lines than {source_txt_path} "
                         f"({pairs}): line-aligned files must be of one length")


def text2text_distill_iterator(source_txt_path: str, target_txt_path: str,
                               distill_txt_path: str) -> Iterator[dict[str, str]]:
    """``{"inputs", "targets", "dist_targets"}`` from three line-aligned files."""
    lines = zip(txt_line_iterator(source_txt_path), txt_line_iterator(target_txt_path),
                txt_line_iterator(distill_txt_path), strict=True)
    for inputs, targets, dist_targets in lines:
        yield {"inputs": inputs, "targets": targets, "dist_targets": dist_targets}


def text2text_txt_tab_iterator(txt_path: str) -> Iterator[dict[str, str]]:
    """``{"inputs", "targets"}`` from ``source<TAB>target`` lines; others skipped, as
    T2T skipped them."""
    for line in iter_utf8_lines(txt_path, allow_tab=True):
        if "\t" in line:
            inputs, targets = line.split("\t", 1)
            yield {"inputs": inputs.strip(), "targets": targets.strip()}


def text2self_txt_iterator(txt_path: str) -> Iterator[dict[str, str]]:
    """``{"targets": line}`` for each line (a language model's data)."""
    for line in txt_line_iterator(txt_path):
        yield {"targets": line}
