#!/usr/bin/env python3
"""t2t-decoder on large files: peak memory by file size, an interrupt resumed, shards merged.

    python benchmarks/file_decode_scale.py --output_dir=t2t_train/reverse \
        --sizes=10000,100000,1000000 --resume_lines=100000 --shards=2 \
        --decode_hparams=beam_size=4,alpha=0.6,extra_length=41 --work_dir=/tmp/scale

Inputs are made with a seed: random lines drawn from --source_lines (a text file;
lines repeat to reach each size) or, by default, binary strings of 1-40 symbols
(the README's main job's inputs). Every run is a process of its own, as a user
runs it, under ``/usr/bin/time`` (its peak resident MB):

- **memory**: one decode of each size; peak MB, seconds, lines/s.
- **resume**: the --resume_lines file decoded whole; then again, interrupted with
  SIGINT once half its windows are kept, and the same command run once more; the
  two outputs compared byte for byte, and the resumed command's own seconds.
- **shards**: --shards workers one after the other (each a part), then
  ``--merge_shards``; the merged file compared with the whole decode's.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import random
import signal
import subprocess
import sys
import tempfile
import time



def _make_input(path: str, lines: int, source_lines: str | None, seed: int) -> None:
    rng = random.Random(seed)
    pool = None
    if source_lines:
        with open(source_lines, encoding="utf-8") as f:
            pool = [line.rstrip("\n") for line in f if line.strip()]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            text = (rng.choice(pool) if pool else
                    " ".join(rng.choice("01") for _ in range(rng.randint(1, 40))))
            f.write(text + "\n")


def _decoder(args: argparse.Namespace, source: str, target: str, *extra: str) -> list[str]:
    return [os.path.join(args.bin_dir, "t2t-decoder"), f"--output_dir={args.output_dir}",
            f"--decode_from_file={source}", f"--decode_to_file={target}",
            f"--decode_hparams={args.decode_hparams}", *extra]


def _timed(command: list[str], interrupt_when=None) -> tuple[float, float, str, int]:
    """(wall seconds, peak resident MB, stdout + stderr's tail, exit status); with
    ``interrupt_when``, SIGINT is sent once it returns True (polled every 0.2 s)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as usage:
        started = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", usage.name, *command],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if interrupt_when:
            while process.poll() is None and not interrupt_when():
                time.sleep(0.2)
            if process.poll() is None:
                # /usr/bin/time passes nothing on: signal its child, the decoder.
                children = subprocess.run(["pgrep", "-P", str(process.pid)],
                                          capture_output=True, text=True).stdout.split()
                for child in children:
                    os.kill(int(child), signal.SIGINT)
        output, _ = process.communicate()
        seconds = time.perf_counter() - started
        peak_kb = usage.read().split()[-1] if process.returncode == 0 else "0"
        return seconds, int(peak_kb) / 1024, output[-1500:], process.returncode


def _kept(folder: str) -> int:
    return sum(name.endswith(".json") and name != "manifest.json"
               for name in (os.listdir(folder) if os.path.isdir(folder) else []))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output_dir", required=True, help="a trained run")
    p.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6")
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--resume_lines", type=int, default=100000)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--source_lines", help="lines to draw inputs from (default: binary strings)")
    p.add_argument("--work_dir", default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--skip", default="", help="comma-separated: memory,resume,shards")
    p.add_argument("--bin_dir", default=os.path.dirname(sys.executable),
                   help="where t2t-decoder is (another install: an earlier version's)")
    args = p.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="file_decode_scale_")
    os.makedirs(work, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    print(f"decode hparams: {args.decode_hparams}; work dir {work}", flush=True)
    if "memory" not in skip:
        print("| lines | peak MB | seconds | lines/s |\n|---:|---:|---:|---:|", flush=True)
        for size in map(int, args.sizes.split(",")):
            source = os.path.join(work, f"in.{size}.txt")
            if not os.path.exists(source):
                _make_input(source, size, args.source_lines, args.seed)
            seconds, peak, output, code = _timed(_decoder(args, source,
                                                          os.path.join(work, f"out.{size}.txt")))
            if code:
                raise SystemExit(f"decoding {size} lines failed:\n{output}")
            print(f"| {size:,} | {peak:,.0f} | {seconds:,.1f} | {size / seconds:,.1f} |",
                  flush=True)
    if {"resume", "shards"} <= skip:
        return
    source = os.path.join(work, f"in.{args.resume_lines}.txt")
    if not os.path.exists(source):
        _make_input(source, args.resume_lines, args.source_lines, args.seed)
    whole = os.path.join(work, f"whole.{args.resume_lines}.txt")
    if not os.path.exists(whole):
        whole_seconds, _, output, code = _timed(_decoder(args, source, whole))
        if code:
            raise SystemExit(f"the whole decode failed:\n{output}")
        print(f"whole decode of {args.resume_lines:,} lines: {whole_seconds:.1f} s", flush=True)
    if "resume" not in skip:
        resumed = os.path.join(work, f"resumed.{args.resume_lines}.txt")
        windows = resumed + ".windows"
        total = -(-args.resume_lines // _window_lines(args.decode_hparams))
        first, _, output, code = _timed(_decoder(args, source, resumed),
                                        interrupt_when=lambda: _kept(windows) >= total // 2)
        print(f"interrupted after {first:.1f} s (exit {code}), {_kept(windows)} of {total} "
              f"windows kept; its last line: {output.strip().splitlines()[-1]}", flush=True)
        second, peak, output, code = _timed(_decoder(args, source, resumed))
        same = code == 0 and filecmp.cmp(resumed, whole, shallow=False)
        print(f"resumed: {second:.1f} s, peak {peak:,.0f} MB, exit {code}; output identical "
              f"to the uninterrupted one: {same}\n  {output.strip().splitlines()[-1]}",
              flush=True)
    if "shards" not in skip:
        merged = os.path.join(work, f"merged.{args.resume_lines}.txt")
        for worker in range(args.shards):
            seconds, peak, output, code = _timed(_decoder(
                args, source, merged, f"--decode_shards={args.shards}", f"--worker_id={worker}"))
            print(f"shard {worker} of {args.shards}: {seconds:.1f} s, peak {peak:,.0f} MB, "
                  f"exit {code}", flush=True)
        seconds, peak, output, code = _timed(_decoder(
            args, source, merged, f"--decode_shards={args.shards}", "--merge_shards"))
        same = code == 0 and filecmp.cmp(merged, whole, shallow=False)
        print(f"merge: {seconds:.1f} s, exit {code}; identical to one process's output: "
              f"{same}\n  {output.strip().splitlines()[-1]}", flush=True)


def _window_lines(decode_hparams: str) -> int:
    for item in decode_hparams.split(","):
        if item.startswith("read_window_lines="):
            return int(item.split("=", 1)[1])
    return 4096


if __name__ == "__main__":
    main()
