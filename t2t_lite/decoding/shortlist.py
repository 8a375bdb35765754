"""``Shortlist``: the target ids a batch's search ranks, from a vocabulary map
(``t2t_lite.decoding.vocabulary_map``), so each step projects onto and normalises
over those ids instead of the whole vocabulary (CTranslate2's ``use_vmap``,
Marian's ``--shortlist``).

A batch's shortlist is the union of its source tokens' targets, the map's
every-batch targets and the reserved ids, filled up with the lowest ids not in it to
a multiple of ``SHORTLIST_BUCKET`` (the compiled projection then sees few shapes),
in ascending order: ties still go to the lower id, and the reserved ids keep their
indices (EOS's index in the shortlist is EOS_ID).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.decoding.vocabulary_map import VocabularyMap

# A batch's shortlist is filled up to a multiple of this many ids.
SHORTLIST_BUCKET = 256


class Shortlist:
    """A vocabulary map as tables the search reads in the graph. Compared by
    identity, as ``SearchOptions`` holding it are (one trace per shortlist)."""

    def __init__(self, vocabulary_map: VocabularyMap, source_vocab_size: int,
                 target_vocab_size: int, description: str = "a vocabulary map",
                 bucket: int = SHORTLIST_BUCKET):
        self.target_vocab_size = target_vocab_size
        self.description = description
        self.bucket = bucket
        width = max([len(ids) for ids in vocabulary_map.candidates.values()] + [1])
        table = np.full([source_vocab_size, width], -1, np.int32)
        for source_id, ids in vocabulary_map.candidates.items():
            if source_id >= NUM_RESERVED_IDS:  # PAD and EOS are in every input's padding
                table[source_id, :len(ids)] = ids
        self._table = table
        self._always = np.union1d(np.arange(NUM_RESERVED_IDS), vocabulary_map.always
                                  ).astype(np.int32)

    def batch_ids(self, inputs: tf.Tensor) -> tf.Tensor:
        """int32 [K]: the ascending target ids the search of ``inputs`` [B, S] ranks
        (the module docstring), K a multiple of ``bucket`` or the vocabulary."""
        vocab_size = self.target_vocab_size
        mapped = tf.reshape(tf.gather(tf.constant(self._table), tf.reshape(inputs, [-1])),
                            [-1])
        ids = tf.concat([tf.boolean_mask(mapped, mapped >= 0), tf.constant(self._always)], 0)
        marked = tf.scatter_nd(ids[:, None], tf.ones_like(ids), [vocab_size]) > 0
        count = tf.reduce_sum(tf.cast(marked, tf.int32))
        size = tf.minimum(vocab_size, -(-count // self.bucket) * self.bucket)
        unmarked = tf.logical_not(marked)
        filled = tf.logical_and(unmarked, tf.cumsum(tf.cast(unmarked, tf.int32)) <= size - count)
        return tf.cast(tf.where(tf.logical_or(marked, filled))[:, 0], tf.int32)
