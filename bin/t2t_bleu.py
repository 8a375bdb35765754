"""t2t-bleu: score a translation file against a reference file.

    t2t-bleu --translation=newstest2014.de.decoded --reference=newstest2014.de

prints cased sacreBLEU with its signature, lowercased sacreBLEU, the
paper's tokenized BLEU (Moses tokens, compounds split, multi-bleu), cased and
lowercased (the Multi30k literature's number), then sacreBLEU's chrF2 and TER
(lower is better), each with its signature. With
--source=newstest2014.en it also prints BLEU by source sentence length.
Text a reader cannot tell apart scores the same (t2t_lite.metrics.lookalike):
invisible format characters, odd spaces, decomposed letters and ligatures are
normalised in both files alike, with one warning a kind naming the file and
counting its lines; a bidirectional override is refused in one line.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Sequence

from t2t_lite import output_paths
from t2t_lite.bin import common

from t2t_lite.data.text_files import read_utf8_lines
from t2t_lite.metrics import bleu, chrf_ter, lookalike


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-bleu", description=__doc__.split("\n")[0])
    p.add_argument("--translation", required=True,
                   help="system output, one detokenized sentence per line (.gz ok)")
    p.add_argument("--reference", required=True,
                   help="reference, line-aligned with --translation (.gz ok)")
    p.add_argument("--language", default="",
                   help="target language of the Moses tokenization (tokenizer.perl -l) "
                        "behind the tokenized BLEU; default: the --reference name's "
                        "language suffix (ref.fr, NAME.test.de.gz). A language without "
                        "a Moses nonbreaking-prefix list uses English's")
    p.add_argument("--source", default="",
                   help="the source sentences, line-aligned: also print BLEU by source "
                        "length (in words), as Bahdanau et al.'s Figure 2")
    p.add_argument("--length_buckets", default="10,20,30",
                   help="with --source: upper bounds of the length buckets; the last "
                        "bucket holds everything longer")
    p.acts_only("--length_buckets", "with --source", lambda args: bool(args.source))
    return p


def target_language(reference: str, given: str) -> str | None:
    """``--language``, else the language suffix of the reference's name (``ref.fr``,
    ``NAME.test.de.gz``), else None. A language that the name contradicts is refused:
    another language's Moses rules change the tokenized BLEU (French keeps ``l'``
    whole, German splits it), and a command copied from another pair is the usual cause."""
    name = os.path.basename(reference).removesuffix(".gz")
    suffix = name.rsplit(".", 1)[1] if "." in name else ""
    named = suffix if re.fullmatch(r"[a-z]{2}", suffix) else None
    if given and named and given != named:
        raise ValueError(f"--language={given}, but --reference={reference} is named as "
                         f"{named}: give --language={named} (or leave it out)")
    return given or named


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-bleu", score, argv)


def score(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    paths = output_paths.Paths("t2t-bleu")
    for flag in ("translation", "reference", "source"):
        if getattr(args, flag):
            paths.input_file(f"--{flag}", getattr(args, flag))
    paths.scored_against("--translation", "--reference", "BLEU 100")
    language = target_language(args.reference, args.language)
    hyps, refs = bleu.read_translation_and_reference(args.translation, args.reference)
    print("\n".join(bleu.bleu_report(hyps, refs, language).lines()))
    print(chrf_ter.chrf(hyps, refs).line())
    print(chrf_ter.ter(hyps, refs).line())
    if args.source:
        try:
            bounds = [int(b) for b in args.length_buckets.split(",")]
        except ValueError:
            raise ValueError(f"--length_buckets={args.length_buckets!r}: expected "
                             "comma-separated integers such as 10,20,30") from None
        sources = lookalike.scored_lines(read_utf8_lines(args.source), args.source)
        buckets = bleu.bleu_by_source_length(sources, hyps, refs, bounds)
        print("\n".join(bucket.line() for bucket in buckets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
