#!/usr/bin/env python3
"""The Speed tables of docs/SPEED.md: t2t-lite beside PyTorch, HF generate() and CTranslate2,
every cell measured in this sitting, one process per cell, nothing else running.

    python benchmarks/speed_table.py --peers_python=peers-venv/bin/python
    python benchmarks/speed_table.py --shapes=tiny --out_lens=32 --variants=float32,xla

For each shape: training target tokens/s (t2t-lite against PyTorch, batches of
``--train_batch`` sentences of 32 target tokens; 128 here, peers.py's own default
is 64) and, for beam 4 and greedy at each output length,
decoding output tokens/s (t2t-lite against CTranslate2 in float32 and in int8,
HF for reference) and each process's peak resident memory; each of our
variants (``--variants``: hparams overrides by name) gets its own columns.
Prints Markdown, and writes every raw JSON line to ``--out`` for the record (by
default a new file named after the sitting's start; an existing file is replaced
only if it is an earlier output of this script, unchanged since).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from t2t_lite import output_paths
from t2t_lite.bin import common

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "..", "..", "shared", "bench", "peers.py")
# Our variants by name: hparams overrides of transformer_SHAPE.
VARIANTS = {"float32": "", "xla": "xla=true", "bfloat16": "dtype=mixed_bfloat16",
            "xla_bfloat16": "xla=true,dtype=mixed_bfloat16"}


def measure(command: list[str], log) -> dict:
    """The last JSON line ``command`` prints (ours and peers.py both report the
    process's ``peak_rss_mb``); a failing cell stops the table with its stderr."""
    print("$", " ".join(command), file=sys.stderr, flush=True)
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{process.stderr[-3000:]}")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    log.write(json.dumps({"command": command, "result": result}) + "\n")
    log.flush()
    return result


def ratio(ours: float, theirs: float) -> str:
    return f"{ours:,.0f} ({ours / theirs:.2f}x)"


def measure_rows(args: argparse.Namespace, variants: list[str], log) -> tuple[list, list]:
    """The training and decoding table rows, each cell measured now (JSON lines to ``log``)."""
    ours = [sys.executable, os.path.join(HERE, "speed.py")]
    peers = [args.peers_python, PEERS]
    train_rows, decode_rows = [], []
    for shape in args.shapes.split(","):
        train = [f"--shape={shape}", f"--batch={args.train_batch}"]
        torch = measure(peers + train + ["--only=torch_train"], log)
        cells, memory = [], []
        for variant in variants:
            mine = measure(ours + train + ["--only=train", f"--hparams={VARIANTS[variant]}"],
                           log)
            cells.append(ratio(mine["train"]["tgt_tokens_per_s"],
                               torch["torch_train"]["tgt_tokens_per_s"]))
            memory.append(f"{mine['peak_rss_mb']:,.0f}")
        train_rows.append(f"| {shape} | {torch['torch_train']['tgt_tokens_per_s']:,.0f} | "
                          + " | ".join(cells) + f" | {torch['peak_rss_mb']:,.0f} | "
                          + " | ".join(memory) + " |")
        for beam in map(int, args.beams.split(",")):
            for out_len in args.out_lens.split(","):
                decode_args = [f"--shape={shape}", f"--beam={beam}", f"--out_len={out_len}"]
                hf = measure(peers + decode_args + ["--only=hf_beam"], log)["hf_beam"]
                ct2 = measure(peers + decode_args + ["--only=ct2_beam"], log)
                ct2_int8 = measure(peers + decode_args + ["--only=ct2_beam",
                                                          "--ct2_compute_type=int8"], log)
                peer_speeds = [ct2["ct2_beam"]["out_tokens_per_s"],
                               ct2_int8["ct2_beam"]["out_tokens_per_s"]]
                cells, memory = [], []
                for variant in variants:
                    mine = measure(ours + decode_args + ["--only=beam",
                                                         f"--hparams={VARIANTS[variant]}"], log)
                    speed = mine["beam"]["out_tokens_per_s"]
                    cells.append(f"{speed:,.0f} ("
                                 + ", ".join(f"{speed / peer:.2f}x" for peer in peer_speeds)
                                 + ")")
                    memory.append(f"{mine['peak_rss_mb']:,.0f}")
                decode_rows.append(
                    f"| {shape} | {'greedy' if beam == 1 else f'beam {beam}'} | {out_len} | "
                    f"{hf['out_tokens_per_s']:,.0f} | "
                    + " | ".join(f"{peer:,.0f}" for peer in peer_speeds) + " | "
                    + " | ".join(cells) + f" | {ct2['peak_rss_mb']:,.0f} | "
                    f"{ct2_int8['peak_rss_mb']:,.0f} | " + " | ".join(memory) + " |")
    return train_rows, decode_rows


def main() -> None:
    parser = common.FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peers_python", default="peers-venv/bin/python")
    parser.add_argument("--shapes", default="tiny,small,base")
    parser.add_argument("--train_batch", type=common.at_least(1), default=128,
                        help="training sentences of 32 target tokens (128: 4,096 tokens)")
    parser.add_argument("--out_lens", default="32,128,256")
    parser.add_argument("--beams", default="4,1")
    parser.add_argument("--variants", default="float32",
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--out", default=time.strftime("runs/speed_table-%Y%m%d-%H%M%S.jsonl"))
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        sys.exit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    header = " | ".join(f"t2t-lite {v}" for v in variants)
    try:
        with output_paths.Paths("speed_table").output_file("--out", args.out) as out_path, \
                open(out_path, "w") as log:
            train_rows, decode_rows = measure_rows(args, variants, log)
    except output_paths.OutputPathError as error:
        sys.exit(f"speed_table: error: {error}")
    print("Training, target tokens/s (ratio to PyTorch):\n")
    print(f"| shape | PyTorch | {header} | peak RSS MB PyTorch | "
          + " | ".join(f"peak RSS MB {v}" for v in variants) + " |")
    print("|" + " --- |" * (3 + 2 * len(variants)))
    print("\n".join(train_rows))
    print("\nDecoding, output tokens/s (ratios to CTranslate2 float32, int8) and peak "
          "resident memory (MB):\n")
    print(f"| shape | search | output length | HF | CTranslate2 float32 | CTranslate2 int8 | "
          f"{header} | peak RSS MB CTranslate2 float32 | peak RSS MB CTranslate2 int8 | "
          + " | ".join(f"peak RSS MB {v}" for v in variants) + " |")
    print("|" + " --- |" * (8 + 2 * len(variants)))
    print("\n".join(decode_rows))


if __name__ == "__main__":
    main()
