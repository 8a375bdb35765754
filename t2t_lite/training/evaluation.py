"""Teacher-forced evaluation of a split: loss, token and sequence accuracy.

The model reads the true prefix at every position (as in training, without
dropout or label smoothing); the replicas' sums are reduced once per batch, so
the figures are the split's whatever the number of replicas.
"""
from __future__ import annotations

from typing import Callable

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.training.losses import smoothed_cross_entropy

SUM = tf.distribute.ReduceOp.SUM


class TeacherForcedEvaluation:
    """``evaluation(split)`` -> {"loss", "accuracy", "sequence_accuracy", "perplexity"}
    of ``model`` on the first ``max_batches`` (0: all) of ``batches(split)``."""

    def __init__(self, model: keras.Model, strategy: tf.distribute.Strategy,
                 batches: Callable[[str], tf.data.Dataset], max_batches: int = 0):
        self.model = model
        self.strategy = strategy
        self.batches = batches
        self.max_batches = max_batches
        self._eval_fn = None
        # Built once per split: a new dataset would retrace the evaluation.
        self._datasets: dict[str, tf.distribute.DistributedDataset] = {}
        # How many examples the last evaluation of each split covered (the batches
        # leave out those longer than max_length).
        self.examples: dict[str, int] = {}

    # Not converted by autograph (the loop over the dataset is): converting the
    # model's code took a third of a first evaluation (the tests' small models).
    @tf.autograph.experimental.do_not_convert
    def _replica_sums(self, batch: dict) -> tf.Tensor:
        targets = batch["targets"]
        logits = self.model(batch, training=False)
        loss_sum, tokens = smoothed_cross_entropy(logits, targets, 0.0)
        nonpad = targets != PAD_ID
        correct = tf.logical_and(tf.argmax(logits, -1, output_type=tf.int32) == targets, nonpad)
        seq_correct = tf.reduce_all(tf.logical_or(correct, tf.logical_not(nonpad)), axis=1)
        return tf.stack([loss_sum, tokens, tf.reduce_sum(tf.cast(correct, tf.float32)),
                         tf.reduce_sum(tf.cast(seq_correct, tf.float32)),
                         tf.cast(tf.shape(targets)[0], tf.float32)])

    def __call__(self, split: str) -> dict[str, float]:
        if self._eval_fn is None:
            @tf.function
            def eval_all(dist_dataset):
                totals = tf.zeros([5])
                for batch in dist_dataset:
                    per_replica = self.strategy.run(self._replica_sums, args=(batch,))
                    totals += self.strategy.reduce(SUM, per_replica, axis=None)
                return totals
            self._eval_fn = eval_all
        if split not in self._datasets:
            dataset = self.batches(split)
            if self.max_batches:
                dataset = dataset.take(self.max_batches)
            self._datasets[split] = self.strategy.experimental_distribute_dataset(dataset)
        loss, tokens, correct, seq_correct, seqs = self._eval_fn(
            self._datasets[split]).numpy().tolist()
        self.examples[split] = int(seqs)
        metrics = {"loss": loss / max(tokens, 1.0),
                   "accuracy": correct / max(tokens, 1.0),
                   "sequence_accuracy": seq_correct / max(seqs, 1.0)}
        metrics["perplexity"] = float(tf.exp(metrics["loss"]))
        return metrics
