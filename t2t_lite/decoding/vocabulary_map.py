"""Vocabulary maps: the target ids each source token may translate into, from which
a decode's shortlists come (``t2t_lite.decoding.shortlist``; CTranslate2's vocabulary
map, Marian's lexical shortlist).

The map (``VocabularyMap``) is CTranslate2's ``vmap.txt`` format: a line holds a
source token, a tab, and the target tokens it may translate into, space-separated;
the line with no source token lists the targets every batch may use. Tokens are the
vocabulary's own strings (``TextEncoder.token_strings``), as in a CTranslate2 export,
so one file serves both. ``build_vocabulary_map`` makes one from parallel ids: for each
source id the targets most associated with it (Dice's coefficient over sentence
pairs), and the most frequent targets for every batch.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import numpy as np

from t2t_lite.contracts.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.data.encoders import TextEncoder


class VocabularyMapError(ValueError):
    """A vocabulary map file this vocabulary cannot read (one line: where and why)."""


@dataclasses.dataclass(frozen=True, eq=False)
class VocabularyMap:
    """Source id -> the target ids it may produce (int32 arrays), and the target ids
    every batch may produce."""
    candidates: dict[int, np.ndarray]
    always: np.ndarray

    def write(self, path: str, source: TextEncoder, target: TextEncoder) -> None:
        """The map in CTranslate2's text format, in the encoders' token strings."""
        source_tokens = _token_strings(source, "source")
        target_tokens = _token_strings(target, "target")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\t" + " ".join(target_tokens[i] for i in self.always) + "\n")
            for source_id in sorted(self.candidates):
                f.write(source_tokens[source_id] + "\t" + " ".join(
                    target_tokens[i] for i in self.candidates[source_id]) + "\n")

    @classmethod
    def read(cls, path: str, source: TextEncoder, target: TextEncoder,
             flag: str = "--vocabulary_map") -> "VocabularyMap":
        """The map in ``path`` (CTranslate2's format) over these encoders' ids; a line
        that is not a token, a tab and tokens of these vocabularies is refused."""
        source_ids = {token: i for i, token in enumerate(_token_strings(source, "source"))}
        target_ids = {token: i for i, token in enumerate(_token_strings(target, "target"))}
        candidates: dict[int, np.ndarray] = {}
        always = np.zeros([0], np.int32)
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                where = f"{flag}={path} line {number}"
                key, tab, values = line.rstrip("\n").partition("\t")
                if not tab:
                    raise VocabularyMapError(f"{where}: no tab; a line is a source token, a "
                                             "tab and its target tokens, space-separated")
                if " " in key:
                    raise VocabularyMapError(f"{where}: the source {key!r} is several tokens; "
                                             "this map takes one source token a line")
                unknown = [token for token in values.split() if token not in target_ids]
                if unknown or (key and key not in source_ids):
                    what = (f"target token {unknown[0]!r}" if unknown
                            else f"source token {key!r}")
                    raise VocabularyMapError(f"{where}: the {what} is not in the model's "
                                             "vocabulary (a map made for another one?)")
                ids = np.array([target_ids[token] for token in values.split()], np.int32)
                if key:
                    candidates[source_ids[key]] = ids
                else:
                    always = np.union1d(always, ids).astype(np.int32)
        return cls(candidates, always)


def _token_strings(encoder: TextEncoder, side: str) -> list[str]:
    tokens = encoder.token_strings(range(encoder.vocab_size))
    spaced = [token for token in tokens if not token or any(c in token for c in " \t\n")]
    if spaced:
        raise VocabularyMapError(f"the {side} vocabulary has a token with a space, tab or "
                                 f"newline ({spaced[0]!r}), which a vocabulary map cannot hold")
    return tokens


def _add_counts(counted: tuple[np.ndarray, np.ndarray], keys: list[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys, their counts) of ``counted`` with ``keys`` added."""
    every = np.concatenate([counted[0], *keys])
    weights = np.concatenate([counted[1], np.ones(len(every) - len(counted[0]), np.int64)])
    distinct, inverse = np.unique(every, return_inverse=True)
    return distinct, np.bincount(inverse, weights=weights).astype(np.int64)


def build_vocabulary_map(pairs: Iterable[tuple[Sequence[int], Sequence[int]]],
                         source_vocab_size: int, target_vocab_size: int,
                         per_source: int, frequent: int) -> VocabularyMap:
    """For each source id, the ``per_source`` target ids with the highest Dice
    coefficient 2 c(s, t) / (c(s) + c(t)) over ``pairs`` (c: the sentence pairs
    holding them), and the ``frequent`` target ids in the most target sentences for
    every batch. Reserved ids are in every shortlist anyway."""
    source_counts = np.zeros(source_vocab_size, np.int64)
    target_counts = np.zeros(target_vocab_size, np.int64)
    counted = (np.zeros([0], np.int64), np.zeros([0], np.int64))
    chunk: list[np.ndarray] = []
    for source_ids, target_ids in pairs:
        source = np.unique(np.asarray(source_ids, np.int64))
        target = np.unique(np.asarray(target_ids, np.int64))
        source = source[source >= NUM_RESERVED_IDS]
        target = target[target >= NUM_RESERVED_IDS]
        source_counts[source] += 1
        target_counts[target] += 1
        chunk.append((source[:, None] * target_vocab_size + target[None, :]).ravel())
        if len(chunk) == 4096:  # counted as it goes: memory grows with distinct pairs
            counted, chunk = _add_counts(counted, chunk), []
    pair_keys, pair_counts = _add_counts(counted, chunk)
    source_of, target_of = pair_keys // target_vocab_size, pair_keys % target_vocab_size
    dice = 2 * pair_counts / (source_counts[source_of] + target_counts[target_of])
    # Best first within each source: by source, then descending Dice, then id.
    order = np.lexsort((target_of, -dice, source_of))
    sources, starts = np.unique(source_of[order], return_index=True)
    ends = [*starts[1:], len(order)]
    candidates = {int(source_id): np.sort(target_of[order[start:min(end, start + per_source)]]
                                          ).astype(np.int32)
                  for source_id, start, end in zip(sources, starts, ends)}
    by_frequency = np.argsort(-target_counts, kind="stable")
    always = np.sort(by_frequency[:frequent][target_counts[by_frequency[:frequent]] > 0])
    return VocabularyMap(candidates, always.astype(np.int32))
