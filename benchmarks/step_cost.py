#!/usr/bin/env python3
"""What continuous batching could save: a decode step's cost against its rows, and a
file's batches against full slots.

    python benchmarks/step_cost.py --hparams_set=transformer_multi30k_tiny --beams=4,1 \\
        --items=64,32,16,8,2
    python benchmarks/step_cost.py ... --output_dir=RUN --source=test.en \\
        --decoded=test.decoded.de --batch_size=64

Part 1 times ``steps`` decode steps (``decode_step`` and the step's ``top_k``, in a
compiled ``tf.while_loop``) of a Transformer of the set's shape with random weights,
for each beam and number of inputs, best of ``repeats``, and fits ms a step = fixed +
per_input * inputs. Part 2 (with a run) encodes the source lines and their decoded
outputs with the run's vocabularies, batches them as t2t-decoder does (sorted by
source length, ``batch_size`` lines a batch) and counts the steps the batches run
(each its longest output with EOS) and the sentence-steps (every output's length):
full slots would run sentence-steps / batch_size steps. Settled sentences leave their
batch already, so the rows' cost is paid either way and the saving is the fixed cost
of the steps saved: the estimate printed, an upper bound before what slots would add.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Sequence


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def step_costs(hparams_set: str, vocab_size: int, beam: int, items: Sequence[int],
               source_length: int, steps: int, repeats: int) -> dict[int, float]:
    """{inputs: ms a decode step} for a random model of ``hparams_set``."""
    import tensorflow as tf

    from t2t_lite import registry
    from t2t_lite.decoding.search_loop import split_state
    from t2t_lite.models.transformer import Transformer

    model = Transformer(registry.hparams_sets[hparams_set](), vocab_size)
    costs = {}
    for batch in items:
        inputs = tf.random.uniform([batch, source_length], 3, vocab_size, tf.int32, seed=1)
        fixed, changing = split_state(model, model.initial_decode_state(
            model.encode(inputs), steps, beam))

        def body(step, changing, batch=batch, fixed=fixed):
            logits, state = model.decode_step(tf.fill([batch * beam], 5), step,
                                              {**fixed, **changing})
            best = tf.math.top_k(tf.reshape(logits, [batch, -1]), 2 * beam).values
            # The step waits on the ranking, as a search's next step does.
            return (step + 1 + tf.cast(best[0, 0] * 0.0, tf.int32),
                    {key: state[key] for key in changing})

        loop = tf.function(lambda changing, body=body: tf.while_loop(
            lambda step, _: step < steps, body, [tf.constant(0), changing]), autograph=False)
        loop(changing)[0].numpy()
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            loop(changing)[0].numpy()
            best = min(best, time.perf_counter() - start)
        costs[batch] = best / steps * 1e3
    return costs


def linear_fit(costs: dict[int, float]) -> tuple[float, float]:
    """(fixed ms, ms an input) by least squares."""
    xs, ys = list(costs), list(costs.values())
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
             / sum((x - mean_x) ** 2 for x in xs))
    return mean_y - slope * mean_x, slope


def file_schedule(output_dir: str, source: str, decoded: str,
                  batch_size: int) -> tuple[int, int]:
    """(steps t2t-decoder's batches run, sentence-steps) for a decoded file (the
    registries loaded: ``load_builtins``)."""
    from t2t_lite.experiment import resolve

    experiment = resolve(None, None, None, "", None, output_dir, must_exist=True)
    encoders = experiment.problem.feature_encoders(experiment.data_dir)
    with open(source, encoding="utf-8") as f_source, open(decoded, encoding="utf-8") as f_out:
        pairs = [(len(encoders["inputs"].encode(s.strip())) + 1,
                  len(encoders["targets"].encode(t.strip())) + 1)
                 for s, t in zip(f_source, f_out, strict=True) if s.strip()]
    return schedule(pairs, batch_size)


def schedule(lengths: Sequence[tuple[int, int]], batch_size: int) -> tuple[int, int]:
    """(steps, sentence-steps) of (source, output) lengths in t2t-decoder's batches:
    longest source first, ``batch_size`` a batch, each running its longest output."""
    outputs = [out for _, out in sorted(lengths, key=lambda pair: -pair[0])]
    batched = sum(max(outputs[i:i + batch_size]) for i in range(0, len(outputs), batch_size))
    return batched, sum(outputs)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hparams_set", default="transformer_multi30k_tiny")
    p.add_argument("--vocab_size", type=int, default=8000)
    p.add_argument("--beams", type=_ints, default=[4, 1])
    p.add_argument("--items", type=_ints, default=[64, 32, 16, 8, 2],
                   help="inputs a step, comma-separated")
    p.add_argument("--source_length", type=int, default=16)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--output_dir", help="a trained run, for part 2 (its vocabularies)")
    p.add_argument("--source", help="the decoded file's source lines")
    p.add_argument("--decoded", help="t2t-decoder's output for them, a line each")
    p.add_argument("--batch_size", type=int, default=64)
    args = p.parse_args(argv)
    given = [bool(getattr(args, flag)) for flag in ("output_dir", "source", "decoded")]
    if any(given) and not all(given):
        p.error("part 2 needs --output_dir, --source and --decoded together")
    for flag in ("vocab_size", "source_length", "steps", "repeats", "batch_size"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag} must be >= 1, got {getattr(args, flag)}")
    if len(set(args.items)) < 2 or min(args.items) < 1:
        p.error(f"--items needs two or more counts >= 1 to fit a line, got {args.items}")
    from t2t_lite.bin import common  # noqa: F401  (TensorFlow's CPU kernels, as the CLI)
    from t2t_lite.builtins import load_builtins

    load_builtins()
    file_steps = (file_schedule(args.output_dir, args.source, args.decoded, args.batch_size)
                  if all(given) else None)
    if file_steps:
        batched, sentence_steps = file_steps
        print(f"{args.decoded}: batches of {args.batch_size} run {batched} steps; "
              f"{sentence_steps} sentence-steps fill {sentence_steps / args.batch_size:.0f}")
    for beam in args.beams:
        costs = step_costs(args.hparams_set, args.vocab_size, beam, args.items,
                           args.source_length, args.steps, args.repeats)
        fixed, per_input = linear_fit(costs)
        print(f"beam {beam}: " + ", ".join(f"{items} inputs {ms:.2f} ms"
                                           for items, ms in costs.items())
              + f"; fit {fixed:.2f} ms + {per_input:.3f} ms an input")
        if file_steps:
            now = fixed * batched + per_input * sentence_steps
            full = fixed * sentence_steps / args.batch_size + per_input * sentence_steps
            print(f"  full slots would save at most {1 - full / now:.1%} of the decode")
    return 0


if __name__ == "__main__":
    sys.exit(main())
