"""t2t-bleu: score a translation file against a reference file.

    t2t-bleu --translation=newstest2014.de.decoded --reference=newstest2014.de

prints cased sacreBLEU with its signature, lowercased sacreBLEU, and the
paper's tokenized BLEU (Moses tokens, compounds split, multi-bleu).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

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
    args = _parse_args(argv)
    try:
        hyps, refs = bleu.read_translation_and_reference(args.translation, args.reference)
        report = bleu.bleu_report(hyps, refs, args.language)
    except (OSError, ValueError) as err:
        print(f"t2t-bleu: error: {err}", file=sys.stderr)
        return 1
    print("\n".join(report.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
