"""t2t-exporter: a trained model as a SavedModel that maps raw strings to outputs.

    t2t-exporter --output_dir=TRAINED --export_dir=exports/my_model/1

The SavedModel's ``serving_default`` signature takes ``inputs`` (string [N])
and returns ``outputs`` (string [N]) and ``scores`` (float32 [N]); ``beams``
returns every beam ([N, beam_size]). Tokenization, beam search (with the
problem's constraint) and detokenization run in the graph, so it loads with
``tensorflow`` and ``tensorflow_text`` only: TensorFlow Serving, or
``tf.saved_model.load``. Decode settings come from --decode_hparams as in
t2t-decoder (the problem's defaults otherwise).

``--format=ctranslate2`` writes a CTranslate2 model directory instead (a
Transformer; ``pip install ctranslate2``), decode settings given at translate
time: ``ctranslate2.Translator(dir, compute_type="int8")`` (docs/EXPORT.md).
"""
from __future__ import annotations

import argparse
from typing import Sequence

from t2t_lite import disk_space
from t2t_lite.bin import common, trained_run


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-exporter", description=__doc__)
    common.add_registry_flags(p, required=False)
    common.add_raw_weights_flag(p)
    p.add_argument("--checkpoint_path", help="a checkpoint prefix (default: the latest)")
    p.add_argument("--export_dir", required=True,
                   help="a new folder for the SavedModel (TF Serving: MODEL_BASE/VERSION)")
    p.add_argument("--decode_hparams", default="",
                   help="beam_size, alpha, extra_length, max_input_length, as t2t-decoder's")
    p.add_argument("--format", choices=("saved_model", "ctranslate2"), default="saved_model",
                   help="saved_model (TensorFlow Serving) or ctranslate2 (a CTranslate2 "
                        "model directory, for Transformers)")
    return p


# Decode hparams of file decoding that a SavedModel has no use for.
EXPORT_UNUSED = {
    "batch_size": "a served model decodes each request's inputs as one batch",
    "return_beams": "serving_default returns the best output; the beams signature, every beam",
    "write_beam_scores": "both signatures return the scores beside the outputs",
}


def export(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if trained_run.start(args):
        return 0
    from t2t_lite.export import ctranslate2_spec
    from t2t_lite.export.exporter import export_model

    ct2 = args.format == "ctranslate2"
    # The SavedModel's search is never XLA-compiled; CTranslate2 takes its settings itself.
    run = trained_run.open_run(args, "t2t-exporter",
                               reads=() if ct2 else ("dtype", "max_length"))
    experiment = run.experiment
    if ct2:  # refused before any work
        ctranslate2_spec.check_convertible(experiment.model_cls, experiment.hparams,
                                           experiment.problem, experiment.data_dir,
                                           args.decode_hparams)
    else:
        settings = run.decode_settings(args.decode_hparams, unused=EXPORT_UNUSED)
    # T2T's convention: exports below the run they come from (OUTPUT_DIR/export/N).
    with run.paths.output_folder("--export_dir", args.export_dir,
                                 inside_run=args.output_dir) as staging, \
            common.writing(f"while exporting {args.output_dir}", "--export_dir",
                           args.export_dir):
        # CTranslate2 takes float32 weights and rounds them to its compute type itself.
        model, checkpoint = run.restored_model(args.checkpoint_path, trained_weights=ct2)
        # Every export holds the weights (the graph and vocabularies come on top).
        disk_space.require_free("--export_dir", args.export_dir,
                                sum(weight.numpy().nbytes for weight in model.weights),
                                "the export (its weights alone)")
        if ct2:
            size = ctranslate2_spec.export_ctranslate2(model, experiment.problem,
                                                       experiment.data_dir, staging)
        else:
            size = export_model(model, experiment.problem, experiment.data_dir, staging,
                                settings)
    hint = (f"load it with: ctranslate2.Translator({args.export_dir!r}, compute_type='int8')"
            if ct2 else f"inspect it with: saved_model_cli show --dir {args.export_dir} --all")
    print(f"exported {checkpoint} to {args.export_dir} ({size / 2**20:.1f} MiB); {hint}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-exporter", export, argv)


if __name__ == "__main__":
    raise SystemExit(main())
