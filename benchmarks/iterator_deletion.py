"""How long deleting a training input iterator takes, and what the pipeline
delivers, with tf.data's autotuning on (TensorFlow's default) and off (ours).

    python benchmarks/iterator_deletion.py --problem=parsing_english_ptb_sample_lexical \\
        --data_dir=runs/lstm_full/data --seconds=130

For each setting, one training pipeline (``batch_examples`` over the problem's
training shards, as the trainer builds it) is read for --seconds, a batch every
--pause seconds as a training loop would take them, then deleted; a second one
is read as fast as it goes for --burst seconds. Prints the deletion time and the
batches per second. With autotuning on, deletion waits for the autotuner's
pause to end, so its time varies from run to run (12 s or a quarter of a second
on the AMD EPYC host after 130 s of reading): run it more than once.
"""
from __future__ import annotations

import argparse
import gc
import time

from t2t_lite.bin import common  # t2t_lite first: it picks TensorFlow's CPU kernels

common.start_tensorflow(verbosity=0)  # quietly, as the t2t-* commands start it
import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.builtins import load_builtins  # noqa: E402
from t2t_lite.data.pipeline import batch_examples  # noqa: E402


def training_batches(problem_name: str, data_dir: str, autotune: bool) -> tf.data.Dataset:
    problem = registry.problems[problem_name]()
    dataset = batch_examples(problem.dataset("train", data_dir, shuffle_files=True),
                             batch_size_tokens=4096, max_length=256, training=True, seed=1)
    options = tf.data.Options()
    options.autotune.enabled = autotune  # the later options win
    return dataset.with_options(options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", required=True)
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--seconds", type=float, default=130.0)
    parser.add_argument("--pause", type=float, default=0.02)
    parser.add_argument("--burst", type=float, default=20.0)
    args = parser.parse_args()
    load_builtins()
    print("| autotuning | batches read | deletion s | batches/s, read flat out |")
    print("| --- | --- | --- | --- |")
    for autotune in (True, False):
        dataset = training_batches(args.problem, args.data_dir, autotune)
        assert dataset.options().autotune.enabled == autotune
        iterator, start, read = iter(dataset), time.time(), 0
        while time.time() - start < args.seconds:
            next(iterator)
            read += 1
            time.sleep(args.pause)
        start = time.time()
        del iterator
        gc.collect()
        deletion = time.time() - start
        iterator, start, burst = iter(dataset), time.time(), 0
        while time.time() - start < args.burst:
            next(iterator)
            burst += 1
        rate = burst / (time.time() - start)
        del iterator
        print(f"| {'on' if autotune else 'off'} | {read} | {deletion:.2f} | {rate:,.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
