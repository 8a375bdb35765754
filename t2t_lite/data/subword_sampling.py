"""Subword regularization: each training sentence split into subwords afresh each
time it is read, so that the model sees the many segmentations of a word, not one.

Kudo (2018) samples a unigram vocabulary's segmentations by their probability
(smoothed by ``alpha``), Provilkov et al. (2020) drop each BPE merge with
probability ``alpha`` (BPE-dropout); both help most on small corpora. OpenNMT-tf
and Marian sample the same way, through sentencepiece, as here (hparams
``sentencepiece_alpha``, 0 = off, and ``sentencepiece_nbest_size`` for a unigram
vocabulary: -1 samples from every segmentation, N > 1 from the N best).

The shards hold each sentence's one deterministic segmentation; the training
stream decodes it back to its text (``SubwordTextEncoder``'s decode gives the text
exactly) and draws another, on both sides. Dev and test are never sampled. The draw
is seeded by the run's seed and the example's place in the repeated stream
(``augmentation.py``): the same draws each run and after a resume, other ones each
epoch. Only a sentencepiece vocabulary can be sampled: a problem whose features
have none refuses the hparams in one line, as do keys that would do nothing.
"""
from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.augmentation import Augment
from t2t_lite.data.encoders import TextEncoder
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_lite.hparam import HParams, HParamsError


def sampled_encoders(problem_name: str, encoders: dict[str, TextEncoder],
                     hparams: HParams) -> dict[str, SubwordTextEncoder]:
    """The features whose segmentation ``hparams`` (``sentencepiece_alpha`` > 0)
    samples, and their encoders; ``HParamsError`` for keys that cannot take effect on
    these vocabularies."""
    alpha, nbest_size = hparams.sentencepiece_alpha, hparams.sentencepiece_nbest_size
    sampled = {key: encoder for key, encoder in encoders.items()
               if isinstance(encoder, SubwordTextEncoder)}
    if not sampled:
        kinds = ", ".join(f"{key}: {type(encoder).__name__}" for key, encoder in encoders.items())
        raise HParamsError(f"sentencepiece_alpha={alpha}: problem {problem_name} has no "
                           f"sentencepiece vocabulary to sample segmentations from ({kinds}); "
                           "leave sentencepiece_alpha at 0")
    for key, encoder in sampled.items():
        if encoder.model_type == "bpe" and nbest_size:
            raise HParamsError(f"sentencepiece_nbest_size={nbest_size}: the {key} vocabulary "
                               f"of {problem_name} is BPE, sampled by dropping merges "
                               "(probability sentencepiece_alpha), which has no n-best: leave "
                               "sentencepiece_nbest_size at 0")
        if encoder.model_type == "unigram" and nbest_size in (0, 1):
            raise HParamsError(f"sentencepiece_nbest_size={nbest_size} samples nothing from "
                               f"the unigram {key} vocabulary of {problem_name}: set -1 (every "
                               "segmentation) or N > 1 (the N best)")
    return sampled


def _seed(seed: np.ndarray, salt: int) -> int:
    """A 32-bit seed for sentencepiece from the stream's seed pair and the feature's salt."""
    words = [int(word) & 0xFFFFFFFFFFFFFFFF for word in seed] + [salt]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def _resampled(encoder: SubwordTextEncoder, alpha: float, nbest_size: int, salt: int,
               ids: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Another segmentation of the text ``ids`` spell, its EOS kept if it had one."""
    ends = int(len(ids) > 0 and ids[-1] == EOS_ID)
    text = encoder.decode(ids.tolist())
    sampled = encoder.sample_encode(text, alpha, nbest_size, _seed(seed, salt))
    return np.asarray(sampled + [EOS_ID] * ends, dtype=ids.dtype)


def subword_sampling(encoders: dict[str, SubwordTextEncoder], alpha: float,
                     nbest_size: int) -> Augment:
    """An ``Augment`` that draws a new segmentation of each feature in ``encoders``."""
    def augment(example: dict[str, tf.Tensor], seed: tf.Tensor) -> dict[str, tf.Tensor]:
        changed = dict(example)
        for salt, (key, encoder) in enumerate(sorted(encoders.items())):
            ids = example[key]
            # stateless: a pure function of its inputs, so the input's state saves.
            resampled = tf.numpy_function(
                functools.partial(_resampled, encoder, alpha, nbest_size, salt),
                [ids, seed], ids.dtype, stateful=False)
            changed[key] = tf.ensure_shape(resampled, [None])
        return changed

    return augment
