#!/usr/bin/env python3
"""Training steps/s of the recurrent models with and without XLA (``xla=true``),
alternated A/B so that a shared machine slows both alike.

    python benchmarks/recurrent_xla_speed.py --rounds=3 --steps=5

Each model trains on one fixed random batch of the treebank sample's shape
(``--batch`` sentences of ``--source_length`` words, targets ``--target_length``
tokens: a linearized tree is about 2.6 tokens a word) with its set's optimizer
and gradient clipping, as the trainer's step does; each round times ``--steps``
steps of the plain ``tf.function`` step, then as many of the XLA-compiled one
(both compiled before the first round). Prints one JSON line per model: steps/s
of each round and the median ratio XLA / plain.
"""
from __future__ import annotations

import json
import statistics
import time

import numpy as np

from t2t_lite.bin import common  # t2t_lite first: it picks TensorFlow's CPU kernels

common.start_tensorflow(verbosity=0)
import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.builtins import load_builtins  # noqa: E402
from t2t_lite.training.optimizers import make_optimizer  # noqa: E402

# (label, model, hparams set, overrides)
MODELS = [
    ("luong, input feeding (lstm_attention_parsing)", "lstm_seq2seq_attention_luong",
     "lstm_attention_parsing", "dropout=0.0"),
    ("bahdanau (lstm_bahdanau_multi30k)", "lstm_seq2seq_attention_bahdanau",
     "lstm_bahdanau_multi30k", "dropout=0.0"),
]


def train_step(model, optimizer, features, clip: float):
    def step():
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                features["targets"], logits, from_logits=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        if clip:
            gradients, _ = tf.clip_by_global_norm(gradients, clip)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss
    return step


def rate(step, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = common.FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=common.at_least(1), default=3)
    parser.add_argument("--steps", type=common.at_least(1), default=5)
    parser.add_argument("--batch", type=common.at_least(1), default=24)
    parser.add_argument("--source_length", type=common.at_least(1), default=30)
    parser.add_argument("--target_length", type=common.at_least(1), default=80)
    parser.add_argument("--vocab_size", type=common.at_least(1), default=8192)
    args = parser.parse_args()
    load_builtins()
    rng = np.random.default_rng(0)
    features = {
        "inputs": tf.constant(rng.integers(2, args.vocab_size,
                                           (args.batch, args.source_length)), tf.int32),
        "targets": tf.constant(rng.integers(2, args.vocab_size,
                                            (args.batch, args.target_length)), tf.int32)}
    for label, name, set_name, overrides in MODELS:
        hparams = registry.hparams_sets[set_name]().parse(overrides)
        tf.keras.utils.set_random_seed(1)
        model = registry.models[name](hparams, args.vocab_size)
        optimizer = make_optimizer(hparams)
        step = train_step(model, optimizer, features, hparams.clip_grad_norm)
        plain, xla = tf.function(step), tf.function(step, jit_compile=True)
        plain(), xla()  # compile both first
        rounds = [(rate(plain, args.steps), rate(xla, args.steps)) for _ in range(args.rounds)]
        print(json.dumps({
            "model": label, "plain_steps_per_s": [round(a, 3) for a, _ in rounds],
            "xla_steps_per_s": [round(b, 3) for _, b in rounds],
            "median_ratio_xla_over_plain": round(statistics.median(b / a for a, b in rounds), 2),
            "batch": [args.batch, args.source_length, args.target_length]}), flush=True)


if __name__ == "__main__":
    main()
