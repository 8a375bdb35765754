"""t2t-parse-eval: EVALB (COLLINS.prm) labelled bracketing scores of a parsed file.

    t2t-parse-eval --gold=gold.trees --test=decoded.trees [--max_length=40]

Both files hold bracketed trees (one a line, or pretty-printed .mrg), sentence
i of one against sentence i of the other; see t2t_lite.parsing.evalb for the
conventions. Both are read as every scorer reads text (t2t_lite.metrics.lookalike):
look-alike characters (a zero-width space in a label, a word typed decomposed)
are normalised alike with a warning naming the file, or refused in one line.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from t2t_lite import output_paths
from t2t_lite.bin import common

from t2t_lite.data.text_files import read_utf8_lines
from t2t_lite.metrics import lookalike
from t2t_lite.parsing.evalb import DEFAULT_MAX_LENGTH, evalb, format_report
from t2t_lite.parsing.trees import parse_trees


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = common.CommandParser(prog="t2t-parse-eval", description=__doc__.split("\n")[0])
    parser.add_argument("--gold", required=True, help="gold trees file")
    parser.add_argument("--test", required=True, help="parser output trees file")
    parser.add_argument("--max_length", type=common.at_least(1), default=DEFAULT_MAX_LENGTH,
                        help="length cut-off of the second summary (words, -NONE- excluded)")
    return parser.parse_args(argv)


def score(argv: Sequence[str] | None) -> int:
    args = parse_args(argv)
    paths = output_paths.Paths("t2t-parse-eval")
    paths.input_file("--gold", args.gold)
    paths.input_file("--test", args.test)
    paths.scored_against("--test", "--gold", "F1 100")
    gold = read_utf8_lines(args.gold, allow_tab=True)
    test, gold = lookalike.scored_pair(read_utf8_lines(args.test, allow_tab=True), gold,
                                       args.test, args.gold)
    result = evalb(parse_trees("\n".join(gold), args.gold),
                   parse_trees("\n".join(test), args.test), args.max_length)
    print(format_report(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-parse-eval", score, argv)


if __name__ == "__main__":
    sys.exit(main())
