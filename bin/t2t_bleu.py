"""t2t-bleu: score a translation file against a reference file.

    t2t-bleu --translation=newstest2014.de.decoded --reference=newstest2014.de

prints cased sacreBLEU with its signature, lowercased sacreBLEU, and the
paper's tokenized BLEU (Moses tokens, compounds split, multi-bleu).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from t2t_lite.bin import common

from t2t_lite.metrics import bleu


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="t2t-bleu", description=__doc__.split("\n")[0])
    parser.add_argument("--translation", required=True,
                        help="system output, one detokenized sentence per line (.gz ok)")
    parser.add_argument("--reference", required=True,
                        help="reference, line-aligned with --translation (.gz ok)")
    parser.add_argument("--language", default="de",
                        help="target language for the Moses-style tokenization of the "
                             "tokenized BLEU (en, de, fr; others use the generic rules)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-bleu", score, argv)


def score(argv: Sequence[str] | None) -> int:
    args = _parse_args(argv)
    hyps, refs = bleu.read_translation_and_reference(args.translation, args.reference)
    print("\n".join(bleu.bleu_report(hyps, refs, args.language).lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
