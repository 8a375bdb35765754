"""A vocabulary map for ``t2t-decoder --vocabulary_map`` (and CTranslate2's
``use_vmap``), made from a trained run's parallel training text::

    python benchmarks/vocabulary_map.py --output_dir=RUN --source=train.en \\
        --target=train.de --out=vmap.txt --per_source=20 --frequent=100

Each line pair is encoded with the run's vocabularies; each source token maps to
the ``--per_source`` target tokens with the highest Dice coefficient over the pairs
(``t2t_lite.decoding.vocabulary_map.build_vocabulary_map``), and the ``--frequent``
most frequent target tokens are in every batch's shortlist. The file is written
whole or not at all, and never over an existing file.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
from typing import Iterator, Sequence


def _lines(path: str) -> Iterator[str]:
    with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz")
          else open(path, encoding="utf-8")) as f:
        yield from (line.rstrip("\n") for line in f)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output_dir", required=True, help="the trained run (its vocabularies)")
    p.add_argument("--source", required=True, help="source training text, a sentence a line")
    p.add_argument("--target", required=True, help="its translations, line by line")
    p.add_argument("--out", required=True, help="the vocabulary map to write")
    p.add_argument("--per_source", type=int, default=20,
                   help="target tokens a source token maps to")
    p.add_argument("--frequent", type=int, default=100,
                   help="most frequent target tokens every batch may use")
    args = p.parse_args(argv)
    for flag in ("per_source", "frequent"):
        if getattr(args, flag) < 0:
            p.error(f"--{flag} must be >= 0, got {getattr(args, flag)}")
    if os.path.realpath(args.out) in {os.path.realpath(args.source),
                                      os.path.realpath(args.target)}:
        p.error(f"--out={args.out} is an input; give the map a file of its own")
    if os.path.exists(args.out):
        p.error(f"--out={args.out} exists; this writes a new file only (remove it, or name another)")
    from t2t_lite.builtins import load_builtins  # TensorFlow only once the flags are read
    from t2t_lite.decoding.vocabulary_map import build_vocabulary_map
    from t2t_lite.experiment import resolve

    load_builtins()
    experiment = resolve(None, None, None, "", None, args.output_dir, must_exist=True)
    encoders = experiment.problem.feature_encoders(experiment.data_dir)
    source, target = encoders["inputs"], encoders["targets"]
    pairs = ((source.encode(s), target.encode(t))
             for s, t in zip(_lines(args.source), _lines(args.target), strict=True))
    vocabulary_map = build_vocabulary_map(pairs, source.vocab_size, target.vocab_size,
                                          args.per_source, args.frequent)
    partial = args.out + ".partial"
    vocabulary_map.write(partial, source, target)
    os.replace(partial, args.out)
    mapped = sum(len(ids) for ids in vocabulary_map.candidates.values())
    print(f"wrote {args.out}: {len(vocabulary_map.candidates)} source tokens mapped to "
          f"{mapped} targets, {len(vocabulary_map.always)} for every batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
