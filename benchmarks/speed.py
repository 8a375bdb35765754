#!/usr/bin/env python3
"""Training and beam-search speed of t2t-lite's Transformer, as JSON.

The options and shapes are those of ../shared/bench/peers.py (PyTorch MarianMT
and CTranslate2), so the two can be run one after the other in one sitting and
compared as ratios:

  python benchmarks/speed.py --shape tiny
  peers-venv/bin/python ../shared/bench/peers.py --shape tiny

Weights are random. Training runs the trainer's own optimizer step (label
smoothing, Adam, dropout 0.1) on a fixed random batch; decoding runs the
decoder's compiled beam search (``--beam 1``: greedy) with EOS suppressed so
every output has exactly ``--out_len`` tokens. As peers.py does, the JSON's
``peak_rss_mb`` is the process's peak resident memory (time one part with
``--only`` to get that part's: ``--only beam`` builds no trainer, as
t2t-decoder does not); ``--memory_steps N`` also trains N steps and
reports the resident memory every 100 steps (a leak shows as growth).
``--only score`` times the teacher-forced forward pass of the trainer's dev
evaluation (``training=False``, every target position at once).
``decode_traces`` counts the beam search's traces: one for every batch shape
(under ``xla=true`` one per decode length; this benchmark decodes two lengths).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

import numpy as np

from t2t_lite.bin import common  # t2t_lite first: it picks TensorFlow's CPU kernels

common.start_tensorflow(verbosity=0)  # quietly, as the t2t-* commands start it
import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402
from t2t_lite.builtins import load_builtins  # noqa: E402
from t2t_lite.data.problem import Problem  # noqa: E402
from t2t_lite.decoding.search_decoder import BeamSearchDecoder  # noqa: E402
from t2t_lite.decoding.search_options import SearchOptions  # noqa: E402
from t2t_lite.experiment import Experiment  # noqa: E402
from t2t_lite.training.train_options import TrainOptions  # noqa: E402
from t2t_lite.training.trainer import Trainer  # noqa: E402

SHAPES = ("tiny", "small", "base", "big")


class RandomTokens(Problem):
    """No data on disk: only a vocabulary size (the batches come from the benchmark)."""

    def __init__(self, vocab_size: int):
        self._vocab_size = vocab_size

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        pass

    def feature_encoders(self, data_dir: str) -> dict:
        return {}

    def vocab_size(self, data_dir: str) -> int:
        return self._vocab_size

    def input_vocab_size(self, data_dir: str) -> int:
        return self._vocab_size

    def shares_vocabulary(self, data_dir: str) -> bool:
        return True


PARTS = ("train", "beam", "score")


def parts(text: str) -> set[str]:
    """--only's value: a comma-separated subset of PARTS (a misspelt part would
    time nothing and still print a result)."""
    chosen = set(text.split(","))
    if not chosen <= set(PARTS):
        raise argparse.ArgumentTypeError(
            f"{', '.join(sorted(chosen - set(PARTS)))} is not one of {', '.join(PARTS)}")
    return chosen


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def resident_mb() -> float:
    """This process's resident memory now (Linux), in MiB."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def random_ids(rng: np.random.Generator, vocab: int, batch: int, length: int) -> tf.Tensor:
    return tf.constant(rng.integers(2, vocab, (batch, length)), tf.int32)


def main() -> None:
    p = common.FlagParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="base", choices=SHAPES)
    p.add_argument("--vocab", type=common.at_least(1), default=8192)
    p.add_argument("--batch", type=common.at_least(1), default=64)
    p.add_argument("--src_len", type=common.at_least(1), default=32)
    p.add_argument("--tgt_len", type=common.at_least(1), default=32)
    p.add_argument("--decode_batch", type=common.at_least(1), default=32)
    p.add_argument("--out_len", type=common.at_least(1), default=32)
    p.add_argument("--beam", type=common.at_least(1), default=4)
    p.add_argument("--steps", type=common.at_least(1), default=3)
    p.add_argument("--only", type=parts, default="train,beam",
                   help=f"comma-separated, of: {', '.join(PARTS)}")
    p.add_argument("--hparams", default="", help="overrides of transformer_SHAPE")
    p.add_argument("--memory_steps", type=common.at_least(0), default=0,
                   help="train this many steps more, reporting resident memory (0: skip)")
    p.add_argument("--intra_op_parallelism_threads", type=common.at_least(0), default=0,
                   help="TensorFlow's per-op threads (0: one per core, as the peers use)")
    args = p.parse_args()
    if args.intra_op_parallelism_threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_parallelism_threads)
    load_builtins()
    only = args.only
    rng = np.random.default_rng(0)
    hparams = registry.hparams_sets[f"transformer_{args.shape}"]()
    hparams.parse(args.hparams, source="--hparams")
    result = {"shape": args.shape, "hparams": args.hparams,
              "threads": args.intra_op_parallelism_threads or os.cpu_count()}
    with tempfile.TemporaryDirectory() as output_dir:
        experiment = Experiment(RandomTokens(args.vocab), "transformer",
                                f"transformer_{args.shape}", hparams, "", output_dir)
        # Decoding alone builds the model as t2t-decoder does: no trainer, no optimizer
        # state (Adam's slots are twice the weights), so peak_rss_mb is a decoder's.
        trainer = Trainer(experiment, TrainOptions()) if "train" in only else None
        model = trainer.model if trainer else experiment.build_model()
        result["params"] = int(sum(np.prod(v.shape) for v in model.trainable_variables))
        batch = {"inputs": random_ids(rng, args.vocab, args.batch, args.src_len),
                 "targets": random_ids(rng, args.vocab, args.batch, args.tgt_len)}
        if "train" in only:
            dataset = tf.data.Dataset.from_tensors(batch).repeat()
            trainer.train_on(dataset, 1)  # trace and warm up
            seconds = best_of(lambda: trainer.train_on(dataset, args.steps), 2) / args.steps
            result["train"] = {
                "tgt_tokens_per_s": args.batch * args.tgt_len / seconds,
                "src_plus_tgt_tokens_per_s": args.batch * (args.src_len + args.tgt_len) / seconds,
                "step_s": seconds}
            if args.memory_steps:
                # Every 100 steps, so a leak shows as a trend, not one noisy difference.
                resident, done = {}, 0
                while done < args.memory_steps:
                    steps = min(100, args.memory_steps - done)
                    trainer.train_on(dataset, steps)
                    done += steps
                    resident[f"after_{done}_steps"] = resident_mb()
                result["train"]["resident_mb"] = resident
        if "score" in only:
            forward = tf.function(lambda features: model(features, training=False))
            forward(batch)
            seconds = best_of(lambda: [forward(batch).numpy() for _ in range(args.steps)],
                              2) / args.steps
            result["score"] = {"tgt_tokens_per_s": args.batch * args.tgt_len / seconds,
                               "batch_s": seconds}
        if "beam" in only:
            # As t2t-decoder decodes (and holds): a mixed dtype's weights in its compute dtype.
            model = experiment.inference_model(model)
            search = BeamSearchDecoder(model, SearchOptions(beam_size=args.beam, alpha=0.6,
                                                            allow_eos=False),
                                       jit_compile=hparams.xla)
            inputs = random_ids(rng, args.vocab, args.decode_batch, args.src_len)
            ids, _ = search(inputs, args.out_len)
            assert ids.shape[-1] == args.out_len, ids.shape
            seconds = best_of(lambda: search(inputs, args.out_len)[0].numpy(), 2)
            search(inputs[:args.decode_batch // 2, :args.src_len // 2], args.out_len // 2)
            result["beam"] = {"out_tokens_per_s": args.decode_batch * args.out_len / seconds,
                              "batch_s": seconds, "beam": args.beam, "out_len": args.out_len,
                              "decode_traces": search.traces}
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()
