#!/usr/bin/env python3
"""A real file, decoded by t2t-decoder and by CTranslate2: whole command, decode alone.

    python benchmarks/real_file_speed.py --output_dir=runs/ende/avg \
        --source=test_2016_flickr.en --reference=test_2016_flickr.de --beams=4,1 \
        --variants=float32,decode:stop_rule=beam_finished,dtype=mixed_bfloat16,xla=true \
        --ct2_compute_types=float32,int8 --repeats=3 --latency_lines=200

Each route is a process of its own, as a user runs it: ours is ``t2t-decoder
--output_dir=... --decode_from_file=... --decode_hparams=beam_size=B,alpha=A,
batch_size=N`` (a variant adds an ``--hparams`` override, as decode:KEY=VALUE a
decode hparam, or as flag:--FLAG=VALUE a flag, e.g. ``flag:--vocabulary_map=vmap.txt``); CTranslate2's loads the run's export (``t2t-exporter
--format=ctranslate2``, made once into a temporary folder unless --ct2_dir names
one) and the run's sentencepiece vocabulary, and translates the file with
``translate_batch(beam_size=B, max_decoding_length=...)`` on the batches t2t-decoder
makes (lines sorted by length, N a batch), each limited as t2t-decoder limits it (its
longest input with EOS plus ``--extra_length``; its defaults otherwise: length
penalty 1). "whole" is the process's wall time
(imports, loading, tracing, writing), "CPU" its user + system seconds, "decode"
what the process reports for the file alone (t2t-decoder's "decoded ... in S s",
which includes the search's first trace). The routes run one after the other in
each repeat, so a busy machine slows them alike; the ratios (CTranslate2 float32's
seconds over the route's: above 1 is faster than CTranslate2) are the medians of
the repeats' ratios. On a machine shared with other work, CPU seconds move less
than wall seconds. BLEU is sacreBLEU (cased) of the last repeat's output.
``--latency_lines=K`` also times single requests on the first K lines: the
run's SavedModel (``t2t-exporter``, made once with the same beam and alpha)
called with one sentence at a time, against CTranslate2 one sentence at a time
(p50 / p95 ms, the first call left out). Memory: each route's peak resident MB.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from t2t_lite.bin import common  # flags as every command reads them; no TensorFlow

HERE = os.path.abspath(__file__)
BIN = os.path.dirname(sys.executable)


def _vocabulary(output_dir: str) -> str:
    """The run's sentencepiece model (its data_dir's ``vocab.*.model``)."""
    with open(os.path.join(output_dir, "hparams.json"), encoding="utf-8") as f:
        data_dir = json.load(f)["data_dir"]
    found = sorted(glob.glob(os.path.join(data_dir, "vocab.*.model")))
    if not found:
        raise SystemExit(f"no sentencepiece vocab.*.model in {data_dir} (the run's data_dir)")
    return found[0]


def _timed(command: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak resident MB, stdout) of the command, the last
    two from ``/usr/bin/time`` (``subprocess`` gives no per-child peak)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as usage:
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", usage.name, *command],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
        peak_kb, user, system = usage.read().split()[-3:]
        return seconds, float(user) + float(system), int(peak_kb) / 1024, done.stdout


def _bleu(path: str, reference: str) -> float:
    import sacrebleu
    with open(path, encoding="utf-8") as f, open(reference, encoding="utf-8") as r:
        return sacrebleu.corpus_bleu(f.read().splitlines(), [r.read().splitlines()]).score


def ct2_worker(args: argparse.Namespace) -> None:
    """CTranslate2 as its user runs it: load, tokenize, translate, detokenize, write."""
    import ctranslate2
    import sentencepiece
    pieces = sentencepiece.SentencePieceProcessor(model_file=args.vocabulary)
    translator = ctranslate2.Translator(args.ct2_dir, device="cpu",
                                        compute_type=args.compute_type,
                                        intra_threads=os.cpu_count())
    with open(args.source, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    started = time.perf_counter()
    if args.one_at_a_time:
        seconds = []
        for line in lines:
            begun = time.perf_counter()
            line_tokens = pieces.encode(line, out_type=str)
            translator.translate_batch([line_tokens], beam_size=args.beam,
                                       max_decoding_length=len(line_tokens) + 1
                                       + args.extra_length)
            seconds.append(time.perf_counter() - begun)
        print(json.dumps(_percentiles(seconds[1:])))
        return
    # Batches as t2t-decoder makes them (lines sorted by length, batch_size a batch),
    # each with t2t-decoder's length limit: its longest input, EOS included, plus
    # extra_length (CTranslate2's own default, 256 tokens, lets a weak model run on).
    tokens = [pieces.encode(line, out_type=str) for line in lines]
    order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
    outputs = [""] * len(lines)
    for start in range(0, len(order), args.batch_size):
        batch = order[start:start + args.batch_size]
        longest = max(len(tokens[i]) for i in batch) + 1
        results = translator.translate_batch(
            [tokens[i] for i in batch], beam_size=args.beam,
            max_decoding_length=longest + args.extra_length)
        for i, result in zip(batch, results):
            outputs[i] = pieces.decode(result.hypotheses[0])
    seconds = time.perf_counter() - started
    with open(args.to_file, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in outputs))
    print(f"decoded {len(lines)} lines in {seconds:.2f} s")


def saved_model_worker(args: argparse.Namespace) -> None:
    """The SavedModel served one sentence at a time (as a request would be)."""
    common.start_tensorflow(verbosity=0)
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SavedModel's tokenizer ops)
    serve = tf.saved_model.load(args.saved_model).signatures["serving_default"]
    with open(args.source, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    seconds = []
    for line in lines:
        begun = time.perf_counter()
        serve(inputs=tf.constant([line]))["outputs"].numpy()
        seconds.append(time.perf_counter() - begun)
    print(json.dumps(_percentiles(seconds[1:])))


def _percentiles(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    return {"p50_ms": 1000 * ordered[len(ordered) // 2],
            "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]}


def _decoded_seconds(out: str) -> float:
    found = re.search(r"decoded \d+ lines.* in ([\d.]+) s", out)
    if not found:
        raise SystemExit(f"no 'decoded ... in S s' line in:\n{out[-1000:]}")
    return float(found.group(1))


def main() -> None:
    p = common.FlagParser(description=__doc__.split("\n")[0])
    p.add_argument("--output_dir", help="a trained (or averaged) run (required)")
    p.add_argument("--source", required=True, help="inputs, one a line")
    p.add_argument("--reference", help="line-aligned references: BLEU of each route")
    p.add_argument("--beams", default="4,1", help="beam sizes (1: greedy)")
    p.add_argument("--alpha", type=float, default=0.6)
    p.add_argument("--batch_size", type=common.at_least(1), default=64)
    p.add_argument("--extra_length", type=common.at_least(0), default=50,
                   help="both routes' length limit: a batch's longest input plus this")
    p.add_argument("--decode_hparams", default="",
                   help="more of our decode hparams, e.g. stop_rule=beam_finished")
    p.add_argument("--variants", default="float32",
                   help="ours, comma-separated: float32 (as trained), an --hparams override "
                        "(dtype=mixed_bfloat16, xla=true), or decode:KEY=VALUE for one more "
                        "decode hparam (decode:stop_rule=beam_finished)")
    p.add_argument("--ct2_compute_types", default="float32,int8")
    p.add_argument("--ct2_dir", help="the run's CTranslate2 export (default: made here)")
    p.add_argument("--repeats", type=common.at_least(1), default=3)
    p.add_argument("--latency_lines", type=common.at_least(0), default=0)
    p.add_argument("--worker", choices=("ct2", "saved_model"), help=argparse.SUPPRESS)
    for hidden in ("vocabulary", "compute_type", "to_file", "saved_model"):
        p.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    p.add_argument("--beam", type=int, help=argparse.SUPPRESS)
    p.add_argument("--one_at_a_time", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker == "ct2":
        return ct2_worker(args)
    if args.worker == "saved_model":
        return saved_model_worker(args)
    if not args.output_dir:
        p.error("--output_dir (a trained run) is required")

    with tempfile.TemporaryDirectory(prefix="real_file_speed_") as scratch:
        measure(args, scratch)


def measure(args: argparse.Namespace, scratch: str) -> None:
    """Every route, alternating, ``--repeats`` times; the table; the latencies."""
    vocabulary = _vocabulary(args.output_dir)
    ct2_dir = args.ct2_dir or os.path.join(scratch, "ct2")
    if not args.ct2_dir:
        _timed([os.path.join(BIN, "t2t-exporter"), f"--output_dir={args.output_dir}",
                f"--export_dir={ct2_dir}", "--format=ctranslate2"])
    variants = args.variants.split(",")
    compute_types = args.ct2_compute_types.split(",")
    rows: dict[tuple, list] = {}
    for repeat in range(args.repeats):
        for beam in map(int, args.beams.split(",")):
            settings = (f"beam_size={beam},alpha={args.alpha},batch_size={args.batch_size},"
                        f"extra_length={args.extra_length}")
            settings += f",{args.decode_hparams}" if args.decode_hparams else ""
            routes = [f"CTranslate2 {c}" for c in compute_types] + variants
            for number, route in enumerate(routes):
                to_file = os.path.join(scratch, f"{repeat}.{beam}.{number}.out")
                if route.startswith("CTranslate2"):
                    command = [sys.executable, HERE, "--worker=ct2", f"--ct2_dir={ct2_dir}",
                               f"--vocabulary={vocabulary}", f"--source={args.source}",
                               f"--compute_type={route.split()[1]}", f"--beam={beam}",
                               f"--batch_size={args.batch_size}", f"--to_file={to_file}",
                               f"--extra_length={args.extra_length}"]
                else:
                    command = [os.path.join(BIN, "t2t-decoder"),
                               f"--output_dir={args.output_dir}",
                               f"--decode_from_file={args.source}",
                               f"--decode_to_file={to_file}"]
                    if route.startswith("decode:"):
                        command.append(f"--decode_hparams={settings},{route[len('decode:'):]}")
                    elif route.startswith("flag:"):
                        command += [f"--decode_hparams={settings}", route[len("flag:"):]]
                    else:
                        command.append(f"--decode_hparams={settings}")
                        if route != "float32":
                            command.append(f"--hparams={route}")
                whole, cpu, peak_mb, out = _timed(command)
                rows.setdefault((beam, route), []).append(
                    {"whole": whole, "cpu": cpu, "decode": _decoded_seconds(out),
                     "peak_mb": peak_mb, "file": to_file})
                print(f"repeat {repeat} beam {beam} {route}: whole {whole:.1f} s (CPU "
                      f"{cpu:.1f} s), decode {rows[beam, route][-1]['decode']:.1f} s, "
                      f"{peak_mb:.0f} MB", flush=True)
    _table(args, rows)
    if args.latency_lines:
        _latency(args, scratch, ct2_dir, vocabulary)


def _table(args: argparse.Namespace, rows: dict) -> None:
    print("\n| beam | route | whole s (median) | decode s (median) | whole vs CT2 f32 | "
          "decode vs CT2 f32 | whole CPU s vs CT2 f32 | peak MB | BLEU |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (beam, route), runs in rows.items():
        base = rows[beam, "CTranslate2 " + args.ct2_compute_types.split(",")[0]]
        ratios = {part: statistics.median(b[part] / r[part] for b, r in zip(base, runs))
                  for part in ("whole", "decode", "cpu")}
        bleu = f"{_bleu(runs[-1]['file'], args.reference):.2f}" if args.reference else ""
        print(f"| {beam} | {route} | {statistics.median(r['whole'] for r in runs):.1f} | "
              f"{statistics.median(r['decode'] for r in runs):.1f} | {ratios['whole']:.2f}x | "
              f"{ratios['decode']:.2f}x | {statistics.median(r['cpu'] for r in runs):.1f} s, "
              f"{ratios['cpu']:.2f}x | {max(r['peak_mb'] for r in runs):.0f} | {bleu} |")


def _latency(args: argparse.Namespace, scratch: str, ct2_dir: str, vocabulary: str) -> None:
    """Single requests: our SavedModel against CTranslate2, alternating, p50 / p95 ms."""
    head = os.path.join(scratch, "head.txt")
    with open(args.source, encoding="utf-8") as f, open(head, "w", encoding="utf-8") as out:
        out.writelines(line for _, line in zip(range(args.latency_lines), f))
    beam = int(args.beams.split(",")[0])
    saved_model = os.path.join(scratch, "saved_model", "1")
    _timed([os.path.join(BIN, "t2t-exporter"), f"--output_dir={args.output_dir}",
            f"--export_dir={saved_model}",
            f"--decode_hparams=beam_size={beam},alpha={args.alpha}"])
    print(f"\nsingle requests, beam {beam}, the first {args.latency_lines} lines, one "
          "at a time:\n| route | p50 ms | p95 ms | peak MB |\n| --- | --- | --- | --- |")
    for repeat in range(args.repeats):
        for route, command in (
                ("SavedModel", [sys.executable, HERE, "--worker=saved_model",
                                f"--saved_model={saved_model}", f"--source={head}"]),
                ("CTranslate2 float32", [sys.executable, HERE, "--worker=ct2",
                                         f"--ct2_dir={ct2_dir}", f"--vocabulary={vocabulary}",
                                         f"--source={head}", "--compute_type=float32",
                                         f"--beam={beam}", "--one_at_a_time"])):
            _, _, peak_mb, out = _timed(command)
            figures = json.loads(out.strip().splitlines()[-1])
            print(f"| {route} | {figures['p50_ms']:.1f} | {figures['p95_ms']:.1f} | "
                  f"{peak_mb:.0f} |", flush=True)


if __name__ == "__main__":
    main()
