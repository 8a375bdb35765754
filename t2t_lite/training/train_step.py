"""One optimizer step of the trainer.

A step sees ``gradient_accumulation_steps`` batches per replica. The loss is the
label-smoothed cross-entropy summed over non-padding target tokens (plus, under
guided_alignment_weight, the alignment loss: guided_alignment.py) and divided by
their global count (all replicas, all accumulated batches), or by the global
count of sentences (hparam loss_normalizer), so the update is the same whatever
the number of replicas. tensor2tensor's weight decay (hparam weight_decay) adds
``weight_decay * sum(w^2) / 2`` over the weights to that mean loss, biases and norm
shifts left out as T2T left its biases; its gradient is written out, once a
step. Gradient clipping (clip_grad_norm) applies to that global gradient, not to
a replica's part. A step whose loss or gradient is not
finite is skipped on every replica under ``skip_nonfinite_steps``; otherwise
the trainer stops the run before a bad state is saved.
"""
from __future__ import annotations

from typing import Callable, Iterator

import keras
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import PAD_ID
from t2t_lite.hparam import HParams
from t2t_lite.training.guided_alignment import guided_logits_and_loss
from t2t_lite.training.losses import smoothed_cross_entropy
from t2t_lite.training.moving_average import MovingAverage

SUM = tf.distribute.ReduceOp.SUM


def decayed(variable: keras.Variable) -> bool:
    """Whether weight_decay reaches ``variable``: T2T's weight decay skipped its
    biases (a 1-D variable named ...bias), its layer norm's among them; Keras names
    a norm's shift beta."""
    name = variable.name.split("/")[-1]
    return len(variable.shape) != 1 or not name.endswith(("bias", "beta"))


class TrainStep:
    """The step of ``model`` and ``optimizer`` (built in ``strategy``'s scope)."""

    @staticmethod
    def check(hparams: HParams, strategy: tf.distribute.Strategy) -> None:
        """Refuses the hparams the step cannot honour; the trainer calls it before it
        builds the model."""
        # Loss scaling keeps float16 gradients from underflowing; the scaled
        # gradient is the optimizer's to unscale, so clipping it here would be wrong.
        if hparams.dtype == "mixed_float16" and hparams.clip_grad_norm:
            raise ValueError("clip_grad_norm cannot be combined with dtype=mixed_float16 "
                             "(its loss scaling); use dtype=mixed_bfloat16 or float32")
        if hparams.xla and strategy.num_replicas_in_sync > 1:
            raise ValueError(f"xla=true compiles one device's training step; this run has "
                             f"{strategy.num_replicas_in_sync} replicas: set xla=false")

    def __init__(self, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                 hparams: HParams, strategy: tf.distribute.Strategy,
                 moving_average: MovingAverage | None = None):
        self.model = model
        self.moving_average = moving_average
        self.optimizer = optimizer
        self.hparams = hparams
        self.strategy = strategy
        self.loss_scaling = hparams.dtype == "mixed_float16"
        self._compiled: Callable[[Iterator], list[tf.Tensor]] | None = None

    def replica_step(self, batches: list[dict]
                     ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """One replica's part of the step on its ``batches`` (one per accumulated
        batch): the update applied, and this replica's loss sum, target and input
        tokens, and 1.0 if its loss or gradient was not finite."""
        variables = self.model.trainable_variables
        accumulated = [tf.zeros_like(v) for v in variables]
        loss_sum = target_tokens = input_tokens = sentences = 0.0
        for batch in batches:
            with tf.GradientTape() as tape:
                weight = self.hparams.guided_alignment_weight
                if weight:
                    logits, guided_loss = guided_logits_and_loss(self.model, batch, weight)
                else:
                    logits, guided_loss = self.model(batch, training=True), 0.0
                batch_loss, batch_tokens = smoothed_cross_entropy(
                    logits, batch["targets"], self.hparams.label_smoothing)
                batch_loss += guided_loss
                scaled_loss = (self.optimizer.scale_loss(batch_loss) if self.loss_scaling
                               else batch_loss)
            grads = tape.gradient(scaled_loss, variables)
            accumulated = [a + tf.convert_to_tensor(g) for a, g in zip(accumulated, grads)]
            loss_sum += batch_loss
            target_tokens += batch_tokens
            input_tokens += tf.reduce_sum(tf.cast(batch["inputs"] != PAD_ID, tf.float32))
            sentences += tf.cast(tf.shape(batch["targets"])[0], tf.float32)
        count = target_tokens if self.hparams.loss_normalizer == "tokens" else sentences
        global_count = tf.distribute.get_replica_context().all_reduce(SUM, count)
        scale = 1.0 / tf.maximum(global_count, 1.0)
        # The optimizer sums gradients over replicas; each is already divided by
        # the global count, so the sum is the gradient of the global mean loss.
        grads = [g * scale for g in accumulated]
        if self.hparams.weight_decay:
            grads = self._with_weight_decay(grads, variables)
        # Under loss scaling an overflowing gradient is routine: the optimizer skips
        # that step and lowers the scale. Only the loss tells of a diverged run then.
        finite = tf.math.is_finite(loss_sum) if self.loss_scaling else tf.logical_and(
            tf.math.is_finite(loss_sum),
            tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads]))
        nonfinite = 1.0 - tf.cast(finite, tf.float32)

        def apply(grads: list[tf.Tensor]) -> None:
            clipped = (self._clip_summed_gradient(grads) if self.hparams.clip_grad_norm
                       else grads)
            self.optimizer.apply_gradients(zip(clipped, variables))
            if self.moving_average:
                self.moving_average.update(self.optimizer.iterations)
        if self.hparams.skip_nonfinite_steps:
            # Skip on every replica when any replica's step is bad. A cond whose
            # branch synchronizes replicas (apply_gradients) must be taken in the
            # cross-replica context, as Keras's LossScaleOptimizer does.
            bad_replicas = tf.distribute.get_replica_context().all_reduce(SUM, nonfinite)

            def apply_unless_bad(distribution, bad, grads):
                bad = distribution.experimental_local_results(bad)[0]
                tf.cond(bad > 0, lambda: None, lambda: distribution.extended.call_for_each_replica(
                    apply, args=(grads,)))
            tf.distribute.get_replica_context().merge_call(apply_unless_bad,
                                                           args=(bad_replicas, grads))
        else:
            apply(grads)  # the host stops the run before a bad state is saved
        return loss_sum, target_tokens, input_tokens, nonfinite

    def _with_weight_decay(self, grads: list[tf.Tensor], variables: list
                           ) -> list[tf.Tensor]:
        """``grads`` plus a replica's share of the L2 term's gradient, ``weight_decay
        * w`` for each decayed weight: the optimizer sums the replicas' shares."""
        factor = tf.constant(self.hparams.weight_decay / self.strategy.num_replicas_in_sync)
        if self.loss_scaling:
            factor = self.optimizer.scale_loss(factor)  # the optimizer unscales the sum
        return [g + factor * tf.convert_to_tensor(v) if decayed(v) else g
                for g, v in zip(grads, variables)]

    def _clip_summed_gradient(self, grads: list[tf.Tensor]) -> list[tf.Tensor]:
        """Each replica's share of the gradient, the sum over replicas rescaled to
        norm ``clip_grad_norm`` when it is longer (Pascanu et al.; Sutskever et al.).

        Keras would clip before its all-reduce, i.e. each replica's part. So the
        replicas sum their parts here, all clip the same sum, and each hands the
        optimizer 1/replicas of it, which the optimizer's own all-reduce sums
        back. With several replicas that costs a second all-reduce of the
        gradient, on steps with clipping only.
        """
        replicas = self.strategy.num_replicas_in_sync
        if replicas > 1:
            grads = tf.distribute.get_replica_context().all_reduce(SUM, grads)
        clipped, _ = tf.clip_by_global_norm(grads, self.hparams.clip_grad_norm)
        return [g / replicas for g in clipped] if replicas > 1 else clipped

    def compiled(self) -> Callable[[Iterator], list[tf.Tensor]]:
        """The step as a ``tf.function`` of a distributed iterator (built once):
        (loss sum, target tokens, input tokens, 1.0 if the step was not finite),
        summed over replicas."""
        if self._compiled is None:
            self._compiled = self._compile()
        return self._compiled

    def _compile(self) -> Callable[[Iterator], list[tf.Tensor]]:
        micro_batches = self.hparams.gradient_accumulation_steps
        # XLA compiles the step's math (one program per batch shape); reading the
        # input iterator stays outside, where XLA cannot go. No autograph (as in
        # decoding: search_decoder.py): model code writes its loops as tf.while_loop.
        replica_step = (tf.function(self.replica_step, jit_compile=True, autograph=False)
                        if self.hparams.xla else self.replica_step)

        @tf.function(autograph=False)
        def train_step(iterator):
            batches = [next(iterator) for _ in range(micro_batches)]
            per_replica = self.strategy.run(replica_step, args=(batches,))
            return [self.strategy.reduce(SUM, x, axis=None) for x in per_replica]
        return train_step
