#!/usr/bin/env python3
"""Terminology constraints on a real test set: BLEU without and with them, the share
of phrases met, and what they cost in decoding time.

    python benchmarks/terminology_constraints.py --output_dir=runs/de_en/train/best \
        --source=test_2016_flickr.de --reference=test_2016_flickr.en \
        --decode_hparams=beam_size=4,alpha=0.6,batch_size=64 --terms=1,2 --repeats=2

The phrases come from the reference by a rule (as Hu et al. 2019 draw theirs from
it): the first K words of each reference line (split on spaces, stripped of
punctuation, alphabetic, at least 3 letters) that the unconstrained output of that
line does not hold as a word; a line with none takes no phrase. For each K of
``--terms`` the script writes those phrases a line (``terms.K.txt``) and runs
``t2t-decoder --decode_constraints`` on them as a user would, one process a route;
"decode" is what t2t-decoder reports for the file ("decoded ... in S s", the
search's first trace included), the median of ``--repeats`` runs taken in turns
with the unconstrained one; "ms a phrase" is the time it adds over the
unconstrained decode, per phrase. A phrase is met when the output's text holds it
(its tokens in a row decode to it); "as a word" counts those where it also stands
as a word of its own (the same split: "employee" in "employee-shirt" is met, not
a word). BLEU is sacreBLEU's, cased, on every line.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys

import sacrebleu

BIN = os.path.dirname(sys.executable)
PUNCTUATION = ".,;:!?\"'()[]"


def words(line: str) -> list[str]:
    """A line's words as the rule counts them (punctuation stripped, empty dropped)."""
    return [word for word in (token.strip(PUNCTUATION) for token in line.split()) if word]


def missed_terms(reference: str, output: str, count: int) -> list[str]:
    """The first ``count`` reference words (alphabetic, 3 letters or more) that the
    output does not hold as a word."""
    held = set(words(output))
    chosen: list[str] = []
    for word in words(reference):
        if word.isalpha() and len(word) >= 3 and word not in held and word not in chosen:
            chosen.append(word)
        if len(chosen) == count:
            break
    return chosen


def decode(args: argparse.Namespace, output: str, terms: str | None) -> float:
    """Runs t2t-decoder on the source into ``output``; returns its decode seconds."""
    command = [os.path.join(BIN, "t2t-decoder"), f"--output_dir={args.output_dir}",
               f"--decode_hparams={args.decode_hparams}", f"--decode_from_file={args.source}",
               f"--decode_to_file={output}"]
    if terms:
        command.append(f"--decode_constraints={terms}")
    if os.path.exists(output):
        os.remove(output)  # t2t-decoder writes over its own outputs only
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    found = re.search(r"decoded \d+ lines of .* in ([\d.]+) s", done.stdout)
    if not found:
        raise SystemExit(f"t2t-decoder reported no decode time:\n{done.stdout[-2000:]}")
    return float(found.group(1))


def read(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", required=True, help="a run (or its best/ folder)")
    p.add_argument("--source", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=64")
    p.add_argument("--terms", default="1,2", help="phrases a line, one route each")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--work_dir", default="runs/terminology")
    args = p.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    references = read(args.reference)
    plain = os.path.join(args.work_dir, "plain.txt")
    times = {"plain": [decode(args, plain, None)]}
    outputs = read(plain)
    routes = {}
    for count in map(int, args.terms.split(",")):
        terms = [missed_terms(ref, out, count) for ref, out in zip(references, outputs)]
        path = os.path.join(args.work_dir, f"terms.{count}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines("\t".join(line) + "\n" for line in terms)
        routes[count] = (path, terms)
    for repeat in range(args.repeats):
        if repeat:
            times["plain"].append(decode(args, plain, None))
        for count, (path, _) in routes.items():
            output = os.path.join(args.work_dir, f"constrained.{count}.txt")
            times.setdefault(count, []).append(decode(args, output, path))
    rows = [{"route": "no constraints", "lines constrained": 0, "phrases": 0,
             "BLEU": round(sacrebleu.corpus_bleu(outputs, [references]).score, 2),
             "met %": None, "decode s": statistics.median(times["plain"])}]
    for count, (_, terms) in routes.items():
        constrained = read(os.path.join(args.work_dir, f"constrained.{count}.txt"))
        phrases = sum(map(len, terms))
        pairs = [(term, out) for line, out in zip(terms, constrained) for term in line]
        met = sum(term in out for term, out in pairs)
        as_word = sum(term in words(out) for term, out in pairs)
        seconds = statistics.median(times[count])
        rows.append({"route": f"{count} a line", "lines constrained": sum(map(bool, terms)),
                     "phrases": phrases,
                     "BLEU": round(sacrebleu.corpus_bleu(constrained, [references]).score, 2),
                     "met %": round(100 * met / max(phrases, 1), 2),
                     "as a word %": round(100 * as_word / max(phrases, 1), 2),
                     "decode s": seconds,
                     "ms a phrase": round(1000 * (seconds - rows[0]["decode s"])
                                          / max(phrases, 1), 1)})
    print(json.dumps({"decode_hparams": args.decode_hparams, "lines": len(references),
                      "times": {str(k): v for k, v in times.items()}, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
