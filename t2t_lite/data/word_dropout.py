"""Word dropout: rare training words become ``<UNK>`` at random, so that a model
learns what to do with a word it has never seen.

A word-level vocabulary maps every word missing from training to ``<UNK>``, but
training itself never shows ``<UNK>`` where a real word stood (every training
word is in the vocabulary), so at test time the model meets it cold. On the
treebank sample 8.6% of the dev tokens never occur in training. Kiperwasser &
Goldberg (2016) replace a training word seen ``count`` times with ``<UNK>``
with probability ``alpha / (alpha + count)``: words seen once are dropped often
(alpha 0.25: one time in five), frequent ones almost never, and the
model sees ``<UNK>`` in the contexts where rare words occur.

The drop is drawn afresh for every training example each time it is read, and
reproducibly from the run's seed (``augmentation.py``).

Targets that copy the input words (a lexicalized parse tree spells each word
in its slot) must keep copying them: the k-th word slot of the target holds the
k-th input word, so it is dropped exactly when that input word is.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import NUM_RESERVED_IDS
from t2t_lite.data.augmentation import Augment
from t2t_lite.data.no_autotune import without_autotuning


def unk_probabilities(counts: np.ndarray, alpha: float, unk_id: int) -> np.ndarray:
    """float32[V]: ``alpha / (alpha + count)`` for each word id seen in training,
    0 for ids never seen, the reserved ids (PAD, EOS) and ``<UNK>`` itself."""
    if alpha < 0:
        raise ValueError(f"word_dropout (alpha) must be >= 0, got {alpha}")
    counts = np.asarray(counts, dtype=np.float64)
    probabilities = np.where(counts > 0, alpha / (alpha + np.maximum(counts, 1e-9)), 0.0)
    probabilities[:NUM_RESERVED_IDS] = 0.0
    probabilities[unk_id] = 0.0
    return probabilities.astype(np.float32)


def input_token_counts(dataset: tf.data.Dataset, vocab_size: int) -> np.ndarray:
    """int64[V]: how often each id occurs in the ``inputs`` of ``dataset``'s examples."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    inputs_only = without_autotuning(dataset.map(lambda example: example["inputs"]))
    for inputs in inputs_only.as_numpy_iterator():
        counts += np.bincount(inputs, minlength=vocab_size)[:vocab_size]
    return counts


def word_dropout(unk_probability: np.ndarray, unk_id: int,
                 target_word_ids: np.ndarray | None = None) -> Augment:
    """An ``Augment`` that replaces input word ``i`` by ``unk_id`` with probability
    ``unk_probability[i]``.

    ``target_word_ids`` (bool[V]) marks the target ids that are copies of input
    words, in input order; each such target token is replaced exactly when its
    input word is. None: the targets are left as they are.
    """
    probability = tf.constant(unk_probability, dtype=tf.float32)
    is_target_word = (None if target_word_ids is None
                      else tf.constant(np.asarray(target_word_ids, dtype=bool)))

    def augment(example: dict[str, tf.Tensor], seed: tf.Tensor) -> dict[str, tf.Tensor]:
        inputs = example["inputs"]
        drop = (tf.random.stateless_uniform(tf.shape(inputs), seed)
                < tf.gather(probability, inputs))
        changed = dict(example, inputs=tf.where(drop, tf.cast(unk_id, inputs.dtype), inputs))
        if is_target_word is not None:
            targets = example["targets"]
            word = tf.gather(is_target_word, targets)
            # The k-th word of the target copies the k-th input word.
            which = tf.cumsum(tf.cast(word, tf.int32), exclusive=True)
            which = tf.minimum(which, tf.size(drop) - 1)
            dropped = word & tf.gather(drop, which)
            changed["targets"] = tf.where(dropped, tf.cast(unk_id, targets.dtype), targets)
        return changed

    return augment
