"""The CTranslate2 route beside t2t-decoder's: score and time of each, on one file.

    python benchmarks/ctranslate2_bleu.py --output_dir=runs/ende/avg \
        --source=runs/ende/eval/translate_ende_multi30k.dev.en \
        --reference=runs/ende/eval/translate_ende_multi30k.dev.de \
        --decode_hparams=beam_size=5,alpha=1.4,batch_size=64 \
        --compute_types=float32,int8 --length_penalties=0,0.6,1.0 \
        --score_line="tokenized BLEU (lowercased)"

The run's model in --output_dir (a trained or averaged run) decodes --source as
t2t-decoder would (--decode_hparams); then the same model, exported as
``t2t-exporter --format=ctranslate2`` writes it (into a temporary folder), decodes it
through CTranslate2 under each compute type and CTranslate2 length penalty, with
the same beam size and batch size. Each route is scored against --reference with
the problem's metric; one table row per route, timed on a second decode of the
file (the first traces our search; memory: benchmarks/speed.py and peers.py, one
route a process). The two searches penalize length
differently (docs/EXPORT.md): choose --length_penalties on the dev split, then
report the test split with the one chosen.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import TYPE_CHECKING

from sweep_decode import floats, headline

from t2t_lite.bin import common, trained_run

if TYPE_CHECKING:  # the heavy imports wait until the flags are read (TensorFlow starts quietly)
    from t2t_lite.decoding.factory import Decoding


def main(argv: list[str] | None = None) -> None:
    parser = common.CommandParser(description=__doc__.split("\n")[0])
    common.add_registry_flags(parser)  # --output_dir: the trained run
    parser.add_argument("--source", required=True, help="inputs, one a line")
    parser.add_argument("--reference", required=True, help="references, line-aligned")
    parser.add_argument("--decode_hparams", default="batch_size=64",
                        help="our decoding, as t2t-decoder takes them (CTranslate2 gets "
                             "their beam_size, batch_size and extra_length)")
    parser.add_argument("--compute_types", default="float32,int8",
                        help="CTranslate2 compute types to load the export with")
    parser.add_argument("--length_penalties", default="0",
                        help="CTranslate2 length penalties (log P / length^penalty)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CTranslate2's intra_threads (ours: TensorFlow's default)")
    parser.add_argument("--score_line", default="",
                        help="which report line to score by (default: the metric's first)")
    args = parser.parse_args(argv)
    from t2t_lite.decoding import file_decoding
    from t2t_lite.export.ctranslate2_spec import ctranslate2_decoding, export_ctranslate2
    from t2t_lite.metrics.scoring import score_decodes

    if trained_run.start(args):
        return
    import ctranslate2  # only this benchmark needs it

    run = trained_run.open_run(args, "ctranslate2_bleu", trained_run.input_files(
        ("--source", args.source), ("--reference", args.reference)))
    problem = run.experiment.problem
    model, checkpoint = run.restored_model()
    settings = run.decode_settings(args.decode_hparams)
    encoders = problem.feature_encoders(run.experiment.data_dir)
    print(f"checkpoint {checkpoint}\n| route | {args.score_line or 'score'} | seconds "
          "| sentences/s |\n| --- | --- | --- | --- |", flush=True)

    def report(route: str, decoding: "Decoding") -> None:
        with tempfile.TemporaryDirectory() as scratch:
            for _ in range(2):  # the second decode is timed: the first traces ours
                started = time.perf_counter()
                outputs, references = file_decoding.decode_from_file(
                    args.source, os.path.join(scratch, "decoded"), decoding,
                    reference_path=args.reference)
                seconds = time.perf_counter() - started
        score = headline(score_decodes(problem, outputs, references), args.score_line)
        print(f"| {route} | {score:.2f} | {seconds:.1f} | {len(outputs) / seconds:.1f} |",
              flush=True)

    # A mixed-precision run decodes in its compute dtype (t2t-decoder's route).
    report(f"t2t-lite {run.experiment.hparams.dtype}, alpha {settings.alpha}",
           run.decoding(model, settings))
    with tempfile.TemporaryDirectory() as export_dir:
        export_ctranslate2(model, problem, run.experiment.data_dir, export_dir)
        for compute_type in args.compute_types.split(","):
            translator = ctranslate2.Translator(export_dir, device="cpu",
                                                compute_type=compute_type, inter_threads=1,
                                                intra_threads=args.threads)
            for penalty in floats(args.length_penalties):
                report(f"CTranslate2 {compute_type}, length_penalty {penalty}",
                       ctranslate2_decoding(
                           translator, encoders["inputs"], beam_size=settings.beam_size,
                           length_penalty=penalty, extra_length=settings.extra_length,
                           batch_size=settings.batch_size,
                           target_encoder=encoders["targets"]))
            del translator  # its memory back before the next compute type loads


if __name__ == "__main__":
    sys.exit(common.run_main("ctranslate2_bleu.py", main))
