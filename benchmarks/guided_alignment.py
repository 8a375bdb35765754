"""Word alignments for guided alignment training, and alignment error rate (AER).

Two steps (docs/RESULTS.md, "How well do the alignments match a human's?"):

``align``: eflomal (PyPI; ``pip install eflomal``, not a project dependency) aligns
the training corpus together with the gold sets' sentences (an aligner learns from
the text it aligns: the usual way to measure one), lowercased, in both directions.
Each direction and their intersection and union are scored against the gold sets;
the one with the lowest AER on the first gold set (dev) writes the training
corpus's alignments (``--out``), which ``t2t-datagen --data_options=...,
train_alignments=OUT`` reads::

    python benchmarks/guided_alignment.py align --source=corpus/train.en \\
        --target=corpus/train.fr --gold=GOLD_DEV,GOLD_TEST --out=train.align

``score``: a trained model's alignments of each gold set's pairs (``t2t-decoder
--score_file --decode_alignments``: the given target, teacher-forced) against the
gold::

    python benchmarks/guided_alignment.py score --output_dir=runs/plain \\
        --gold=GOLD_DEV,GOLD_TEST

``heads``: the same for each decoder layer, its heads averaged and each head alone
(the Aligner in process), which shows where a model's attention aligns best.

A gold set is a folder of ``source.txt``, ``target.txt`` (one sentence a line,
words split on spaces) and ``gold.txt`` (``i-j`` sure, ``i?j`` possible links,
0-based, source word first), read in place. AER (Och and Ney 2003) is
1 - (|A & S| + |A & P|) / (|A| + |S|), P holding the sure links too.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

Links = set[tuple[int, int]]


def read_gold(folder: str) -> tuple[list[str], list[str], list[Links], list[Links]]:
    """(sources, targets, sure links, possible links incl. sure) of a gold set."""
    def lines(name: str) -> list[str]:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]
    sure, possible = [], []
    for line in lines("gold.txt"):
        s, p = set(), set()
        for link in line.split():
            mark = "?" if "?" in link else "-"
            i, j = (int(x) for x in link.split(mark))
            p.add((i, j))
            if mark == "-":
                s.add((i, j))
        sure.append(s)
        possible.append(p)
    return lines("source.txt"), lines("target.txt"), sure, possible


def parse_pharaoh(line: str) -> Links:
    return {tuple(int(x) for x in link.split("-")) for link in line.split()}


def aer(found: list[Links], sure: list[Links], possible: list[Links]) -> float:
    hits_s = sum(len(a & s) for a, s in zip(found, sure))
    hits_p = sum(len(a & p) for a, p in zip(found, possible))
    total = sum(len(a) for a in found) + sum(len(s) for s in sure)
    return 1.0 - (hits_s + hits_p) / total


def _lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def align(args: argparse.Namespace) -> dict:
    sources, targets = _lines(args.source), _lines(args.target)
    golds = [read_gold(folder) for folder in args.gold.split(",")]
    with tempfile.TemporaryDirectory() as work:
        paths = {name: os.path.join(work, name) for name in ("src", "tgt", "fwd", "rev")}
        for key, own, side in (("src", sources, 0), ("tgt", targets, 1)):
            with open(paths[key], "w", encoding="utf-8") as f:
                for line in own + [s for gold in golds for s in gold[side]]:
                    f.write(" ".join(line.split()).lower() + "\n")
        subprocess.run(["eflomal-align", "-s", paths["src"], "-t", paths["tgt"],
                        "-f", paths["fwd"], "-r", paths["rev"], "-m", "3", "--overwrite"],
                       check=True)
        forward = [parse_pharaoh(line) for line in _lines(paths["fwd"])]
        reverse = [parse_pharaoh(line) for line in _lines(paths["rev"])]
    ways = {"forward": forward, "reverse": reverse,
            "intersection": [f & r for f, r in zip(forward, reverse)],
            "union": [f | r for f, r in zip(forward, reverse)]}
    report, start = {}, len(sources)
    for folder, (_, _, sure, possible) in zip(args.gold.split(","), golds):
        end = start + len(sure)
        report[folder] = {way: round(100 * aer(links[start:end], sure, possible), 2)
                          for way, links in ways.items()}
        start = end
    chosen = min(ways, key=lambda way: report[args.gold.split(",")[0]][way])
    with open(args.out, "w", encoding="utf-8") as f:
        for links in ways[chosen][:len(sources)]:
            f.write(" ".join(f"{i}-{j}" for i, j in sorted(links)) + "\n")
    return {"aer_percent": report, "chosen_on_first_gold_set": chosen, "out": args.out}


def score(args: argparse.Namespace) -> dict:
    report = {}
    for folder in args.gold.split(","):
        sources, targets, sure, possible = read_gold(folder)
        with tempfile.TemporaryDirectory() as work:
            pairs, out = os.path.join(work, "pairs.tsv"), os.path.join(work, "links")
            with open(pairs, "w", encoding="utf-8") as f:
                f.writelines(f"{s}\t{t}\n" for s, t in zip(sources, targets))
            subprocess.run(["t2t-decoder", f"--output_dir={args.output_dir}",
                            f"--score_file={pairs}", f"--decode_to_file={out}.scores",
                            f"--decode_alignments={out}"], check=True,
                           stdout=subprocess.DEVNULL)
            found = [parse_pharaoh(line) for line in _lines(out)]
        report[folder] = round(100 * aer(found, sure, possible), 2)
    return {"output_dir": args.output_dir, "aer_percent": report}


def heads(args: argparse.Namespace) -> dict:
    import numpy as np

    from t2t_lite.builtins import load_builtins
    from t2t_lite.contracts.reserved_ids import EOS_ID
    from t2t_lite.decoding.word_alignment import Aligner
    from t2t_lite.experiment import resolve
    from t2t_lite.training.checkpoints import restore_model
    load_builtins()
    experiment = resolve(None, None, None, "", None, args.output_dir, must_exist=True)
    model = experiment.build_model()
    restore_model(model, args.output_dir)
    encoders = experiment.problem.feature_encoders(experiment.data_dir)
    sources, targets, sure, possible = read_gold(args.gold)
    report = {}
    for layer in range(model.hparams.num_decoder_layers):
        for head in [None, *range(model.hparams.num_heads)]:
            aligner = Aligner(model, encoders["inputs"], encoders["targets"], layer, head)
            found = []
            for start in range(0, len(sources), 32):
                rows = [encoders["inputs"].encode(s) + [EOS_ID]
                        for s in sources[start:start + 32]]
                inputs = np.zeros((len(rows), max(map(len, rows))), np.int32)
                for row, ids in enumerate(rows):
                    inputs[row, :len(ids)] = ids
                outputs = [encoders["targets"].encode(t) for t in targets[start:start + 32]]
                found += [parse_pharaoh(line) for line in aligner(inputs, outputs)]
            name = f"layer {layer}, {'heads averaged' if head is None else f'head {head}'}"
            report[name] = round(100 * aer(found, sure, possible), 2)
    return {"output_dir": args.output_dir, "aer_percent": report}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    aligner = steps.add_parser("align")
    aligner.add_argument("--source", required=True)
    aligner.add_argument("--target", required=True)
    aligner.add_argument("--gold", required=True, help="gold set folders, dev first")
    aligner.add_argument("--out", required=True)
    scorer = steps.add_parser("score")
    scorer.add_argument("--output_dir", required=True)
    scorer.add_argument("--gold", required=True)
    by_head = steps.add_parser("heads")
    by_head.add_argument("--output_dir", required=True)
    by_head.add_argument("--gold", required=True, help="one gold set folder")
    args = parser.parse_args()
    print(json.dumps({"align": align, "score": score, "heads": heads}[args.step](args), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
