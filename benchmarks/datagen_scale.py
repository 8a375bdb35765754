#!/usr/bin/env python3
"""t2t-datagen on the user's own files at WMT sizes: time and peak memory.

    python benchmarks/datagen_scale.py --pairs=4500000,36000000 --work_dir=/tmp/datagen_scale
    python benchmarks/datagen_scale.py --pairs=1000000 --processes=1,2   # one encoder, two

A corpus of N sentence pairs is made from Multi30k's training pairs
(``../shared/data/multi30k``): each new line joins 1-3 pairs drawn with a seed,
side by side, so the text is real and no line repeats often. Then, each a process
of its own under ``/usr/bin/time`` (peak resident MB):

    t2t-datagen --problem=translate_files --data_dir=DIR \
        --data_options=train=corpus/train,dev=corpus/dev,source_lang=en,target_lang=de,...

with the vocabulary options given by --data_options (default: the library's, a
seeded sample of 1,000,000 sentences; ``--data_options=vocab_sample=0`` trains on
all, as before). The corpus files stay in --work_dir for the next sizes.
"""
from __future__ import annotations

import argparse
import gzip
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib

BIN = os.path.dirname(sys.executable)
MULTI30K = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        os.pardir, "shared", "data", "multi30k")


def _read(name: str) -> list[str]:
    with gzip.open(os.path.join(MULTI30K, name), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def make_corpus(prefix: str, pairs: int, seed: int = 1) -> None:
    """``prefix.en`` / ``prefix.de``: ``pairs`` lines of 1-3 joined Multi30k pairs."""
    if os.path.exists(prefix + ".de"):
        return
    english, german = _read("train.en.gz"), _read("train.de.gz")
    rng = random.Random(seed)
    with open(prefix + ".en.tmp", "w", encoding="utf-8") as en, \
            open(prefix + ".de.tmp", "w", encoding="utf-8") as de:
        for _ in range(pairs):
            drawn = [rng.randrange(len(english)) for _ in range(rng.randint(1, 3))]
            en.write(" ".join(english[i] for i in drawn) + "\n")
            de.write(" ".join(german[i] for i in drawn) + "\n")
    os.replace(prefix + ".en.tmp", prefix + ".en")
    os.replace(prefix + ".de.tmp", prefix + ".de")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", default="4500000")
    p.add_argument("--data_options", default="vocab_size=8000",
                   help="vocabulary options added to the files' (e.g. vocab_sample=0)")
    p.add_argument("--work_dir", default=None)
    p.add_argument("--processes", default="",
                   help="comma-separated --num_concurrent_processes to run each size with "
                        "(default: t2t-datagen's own)")
    args = p.parse_args()
    if not os.path.isdir(MULTI30K):
        raise SystemExit(f"{MULTI30K} is absent: this benchmark draws its corpus from "
                         "Multi30k (../shared/data/multi30k)")
    work = args.work_dir or tempfile.mkdtemp(prefix="datagen_scale_")
    os.makedirs(work, exist_ok=True)
    dev = os.path.join(work, "dev")
    if not os.path.exists(dev + ".de"):
        for language in ("en", "de"):
            with open(f"{dev}.{language}", "w", encoding="utf-8") as f:
                f.writelines(line + "\n" for line in _read(f"val.{language}.gz"))
    print(f"data options: {args.data_options}; work dir {work}\n"
          "| pairs | processes | corpus MB | seconds | CPU s | peak MB |\n"
          "|---:|---:|---:|---:|---:|---:|", flush=True)
    for pairs, processes in itertools.product(map(int, args.pairs.split(",")),
                                              args.processes.split(",")):
        train = os.path.join(work, f"train{pairs}")
        make_corpus(train, pairs)
        data_dir = os.path.join(work, f"data{pairs}_{processes or 'auto'}_"
                                      f"{zlib.crc32(args.data_options.encode())}")
        if os.path.exists(data_dir):
            raise SystemExit(f"{data_dir} exists: remove it to measure again")
        options = (f"train={train},dev={dev},source_lang=en,target_lang=de,"
                   f"{args.data_options}")
        with tempfile.NamedTemporaryFile("r", suffix=".rusage") as usage:
            started = time.perf_counter()
            done = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", usage.name,
                                   os.path.join(BIN, "t2t-datagen"), "--problem=translate_files",
                                   f"--data_dir={data_dir}", f"--tmp_dir={work}/tmp",
                                   f"--data_options={options}"]
                                  + ([f"--num_concurrent_processes={processes}"]
                                     if processes else []),
                                  capture_output=True, text=True)
            seconds = time.perf_counter() - started
            if done.returncode:
                raise SystemExit(f"t2t-datagen failed:\n{done.stderr[-2000:]}")
            # /usr/bin/time: the largest peak of the process and of each worker it
            # waited for (not their sum); CPU seconds of all of them.
            peak_kb, user, system = usage.read().split()[-3:]
        size = sum(os.path.getsize(f"{train}.{language}") for language in ("en", "de")) / 2**20
        print(f"| {pairs:,} | {processes or 'default'} | {size:,.0f} | {seconds:,.0f} | "
              f"{float(user) + float(system):,.0f} | {int(peak_kb) / 1024:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
