"""t2t-decoder: beam-search decoding of a trained model, from a file or stdin.

Problem, model, hparams and data dir default to what t2t-trainer recorded in
--output_dir/hparams.json; the latest checkpoint there is used unless
--checkpoint_path names another (an averaged one, say).
"""
from __future__ import annotations

import argparse
import glob
import time
from typing import TYPE_CHECKING, Any, Sequence

from t2t_lite import output_paths
from t2t_lite.bin import common
from t2t_lite.data.text_files import write_lines_atomically

if TYPE_CHECKING:  # the heavy imports wait until a command runs
    import keras

    from t2t_lite.experiment import Experiment


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-decoder", description=__doc__)
    common.add_registry_flags(p, required=False)
    p.add_argument("--checkpoint_path", help="a checkpoint prefix (default: the latest)")
    p.add_argument("--ensemble", default="",
                   help="other t2t-trainer output dirs (comma-separated) of the same problem "
                        "and vocabulary: each step's distribution is the mean of theirs and "
                        "--output_dir's (each dir's latest checkpoint; average it first)")
    p.add_argument("--decode_hparams", default="",
                   help="e.g. 'beam_size=4,alpha=0.6,extra_length=50,batch_size=32,"
                        "return_beams=false'")
    p.add_argument("--decode_from_file", help="one input a line (UTF-8)")
    p.add_argument("--decode_to_file", help="one output a line; default: FROM_FILE.decoded")
    p.add_argument("--decode_interactive", action="store_true",
                   help="read inputs from stdin, print a decode per line")
    p.add_argument("--decode_reference",
                   help="references line-aligned with --decode_from_file: print the problem's "
                        "score (BLEU for translation, EVALB F1 for parsing)")
    p.add_argument("--score_file",
                   help="score given outputs instead of decoding: each line 'source<TAB>target'"
                        "; writes log P(target | source) a line to --decode_to_file (default: "
                        "SCORE_FILE.scores)")
    p.add_argument("--decode_shards", type=common.at_least(1), default=1,
                   help="(tensor2tensor) only 1: a t2t-decoder decodes its whole file")
    p.add_argument("--decode_in_memory", action="store_true",
                   help="(tensor2tensor) accepted: t2t-decoder always decodes in memory")
    return p


def ensemble_member(experiment: "Experiment", output_dir: str) -> "keras.Model":
    """The model trained in ``output_dir`` (its latest checkpoint), refused unless it
    shares ``experiment``'s problem and vocabulary."""
    from t2t_lite import experiment as experiment_lib
    from t2t_lite.training.checkpoints import restore_model

    member = experiment_lib.resolve(None, None, None, "", None, output_dir, must_exist=True)
    if member.problem.name != experiment.problem.name:
        raise ValueError(f"--ensemble: {output_dir} holds a {member.problem.name} model, "
                         f"not {experiment.problem.name}")
    if (experiment_lib.vocab_fingerprint(member.problem, member.data_dir)
            != experiment_lib.vocab_fingerprint(experiment.problem, experiment.data_dir)):
        raise ValueError(f"--ensemble: {output_dir} was trained with another vocabulary "
                         f"than {experiment.output_dir}; ensembled models must share one")
    model = member.build_model()
    restore_model(model, output_dir)
    return model


def decode(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if common.load_registrations(args):
        return 0
    if not args.output_dir:
        raise ValueError("--output_dir is required (the folder t2t-trainer wrote)")
    if args.decode_shards != 1:
        raise ValueError("--decode_shards: a t2t-decoder decodes its whole file on every "
                         "local GPU; to spread a file over machines, split it and run one "
                         "t2t-decoder per part")
    if sum(map(bool, (args.decode_from_file, args.decode_interactive, args.score_file))) != 1:
        raise ValueError("give one of --decode_from_file=FILE, --decode_interactive or "
                         "--score_file=FILE")
    if args.decode_reference and not args.decode_from_file:
        raise ValueError("--decode_reference needs --decode_from_file")
    if args.ensemble and args.score_file:
        raise ValueError("--score_file scores one model: leave out --ensemble")
    from t2t_lite import experiment as experiment_lib
    from t2t_lite.decoding import decoder
    from t2t_lite.decoding.likelihood import score_file
    from t2t_lite.metrics.scoring import score_decodes

    paths = output_paths.Paths("t2t-decoder")
    paths.input_folder("--output_dir", args.output_dir)
    for flag in ("decode_from_file", "decode_reference", "score_file"):
        if getattr(args, flag):
            paths.input_file(f"--{flag}", getattr(args, flag))
    for other_dir in filter(None, args.ensemble.split(",")):
        paths.input_folder("--ensemble", other_dir, must_exist=True)
    if args.checkpoint_path:
        paths.read_also("--checkpoint_path", *glob.glob(glob.escape(args.checkpoint_path) + ".*"))
    experiment = experiment_lib.resolve(args.problem, args.model, args.hparams_set,
                                        args.hparams, args.data_dir, args.output_dir,
                                        must_exist=True)
    paths.input_folder("--data_dir", experiment.data_dir)
    hparams = decoder.decode_hparams(args.decode_hparams,
                                     experiment.problem.decode_hparams_defaults())
    problem = experiment.problem
    if args.decode_interactive:
        search, codecs = _searcher(args, experiment, hparams)
        decoder.decode_interactive(search_fn=search, hparams=hparams,
                                   postprocess=problem.postprocess_decode, **codecs)
        return 0
    source = args.score_file or args.decode_from_file
    default = source + (".scores" if args.score_file else ".decoded")
    flag = "--decode_to_file" if args.decode_to_file else f"--decode_to_file (default {default})"
    with paths.output_file(flag, args.decode_to_file or default) as output_path:
        if args.score_file:
            model, codecs = _restored(args, experiment)
            scores = score_file(model, args.score_file, batch_size=hparams.batch_size,
                                max_length=decoder.input_length_limit(hparams, model), **codecs)
            write_lines_atomically(output_path, (f"{score:.6f}" for score in scores))
            print(f"scored {len(scores)} lines of {args.score_file} to {output_path}")
            return 0
        search, codecs = _searcher(args, experiment, hparams)
        started = time.perf_counter()
        outputs, references = decoder.decode_from_file(
            args.decode_from_file, output_path, search_fn=search, hparams=hparams,
            postprocess=problem.postprocess_decode, reference_path=args.decode_reference,
            **codecs)
    seconds = time.perf_counter() - started
    compiled = f", {len(search.shapes_seen)} XLA programs" if search.jit_compile else ""
    print(f"decoded {len(outputs)} lines of {args.decode_from_file} to {output_path} "
          f"in {seconds:.1f} s ({len(outputs) / seconds:.1f} lines/s; "
          f"{search.traces} trace{'s' if search.traces != 1 else ''}{compiled})")
    if references is not None:
        print("\n".join(score_decodes(problem, outputs, references)))
    return 0


def _restored(args: argparse.Namespace, experiment: "Experiment") -> tuple[Any, dict]:
    """The model with its checkpoint's weights, and the problem's two codecs."""
    from t2t_lite.training.checkpoints import restore_model

    model = experiment.build_model()
    restore_model(model, args.output_dir, args.checkpoint_path)
    encoders = experiment.problem.feature_encoders(experiment.data_dir)
    return model, {"encoder": encoders["inputs"], "target_encoder": encoders["targets"]}


def _searcher(args: argparse.Namespace, experiment: "Experiment", hparams: Any
              ) -> tuple[Any, dict]:
    """The beam search over the restored model (and ensemble members) and the codecs;
    sets ``hparams.max_input_length`` to what the model takes."""
    from t2t_lite.decoding import decoder
    from t2t_lite.decoding.ensemble import Ensemble
    from t2t_lite.decoding.search_decoder import BeamSearchDecoder

    model, codecs = _restored(args, experiment)
    hparams.max_input_length = decoder.input_length_limit(hparams, model)
    members = [ensemble_member(experiment, other_dir)
               for other_dir in filter(None, args.ensemble.split(","))]
    problem = experiment.problem
    search = BeamSearchDecoder(Ensemble([model, *members]) if members else model,
                               hparams.beam_size, hparams.alpha,
                               constraint=problem.decode_constraint(experiment.data_dir),
                               jit_compile=experiment.hparams.xla)
    return search, codecs


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-decoder", decode, argv)


if __name__ == "__main__":
    raise SystemExit(main())
