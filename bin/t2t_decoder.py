"""t2t-decoder: beam-search decoding of a trained model, from a file or stdin.

Problem, model, hparams and data dir default to what t2t-trainer recorded in
--output_dir/hparams.json; the latest checkpoint there is used unless
--checkpoint_path names another (an averaged one, say).
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Sequence

from t2t_lite import disk_space, interrupts
from t2t_lite.bin import common, trained_run
from t2t_lite.data.text_files import write_lines_atomically

if TYPE_CHECKING:  # the heavy imports wait until a command runs
    from t2t_lite.decoding.factory import Decoding
    from t2t_lite.decoding.settings import DecodeSettings
    from t2t_lite.output_paths import Paths

PROMPT = "> "  # before each line --decode_interactive reads from a terminal


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
                        "return_beams=false'; to sample: 'sampling_method=random,"
                        "beam_size=1,sampling_temp=1.0,num_samples=1,sampling_seed=1'")
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
    p.before_start(_hint_at_a_terminal)
    p.acts_only("--decode_to_file", "with --decode_from_file or --score_file "
                "(--decode_interactive prints its outputs)",
                lambda args: bool(args.decode_from_file or args.score_file))
    return p


def _hint_at_a_terminal(args: argparse.Namespace) -> None:
    """--decode_interactive at a terminal: what the seconds of loading lead to, at
    once (TensorFlow and the model take seconds to load, the first line to trace)."""
    if args.decode_interactive and args.output_dir and sys.stdin.isatty():
        print(f"t2t-decoder: loading the model of {args.output_dir}; then type a sentence "
              f"at the prompt ({PROMPT.strip()}) and press Enter; Ctrl-D ends",
              file=sys.stderr, flush=True)


def _declare_inputs(args: argparse.Namespace, paths: "Paths") -> None:
    for flag in ("decode_from_file", "decode_reference", "score_file"):
        if getattr(args, flag):
            paths.input_file(f"--{flag}", getattr(args, flag))
    for other_dir in filter(None, args.ensemble.split(",")):
        paths.input_folder("--ensemble", other_dir, must_exist=True)
    if args.checkpoint_path:
        paths.read_also("--checkpoint_path", *glob.glob(glob.escape(args.checkpoint_path) + ".*"))


def decode(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if trained_run.start(args):
        return 0
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
    source = args.score_file or args.decode_from_file
    if (source and not args.decode_to_file and os.path.exists(source)
            and not (os.path.isfile(source) or os.path.isdir(source))):
        raise ValueError(f"--{'score_file' if args.score_file else 'decode_from_file'}="
                         f"{source} is not a regular file (a pipe or device), so "
                         f"{source}{'.scores' if args.score_file else '.decoded'} is no place for its output; "
                         "give --decode_to_file")
    from t2t_lite.decoding import decoder
    from t2t_lite.decoding.likelihood import score_file
    from t2t_lite.metrics.scoring import score_decodes

    run = trained_run.open_run(args, "t2t-decoder", partial(_declare_inputs, args))
    settings = run.decode_settings(args.decode_hparams)
    if args.decode_interactive:
        interrupts.describe("during interactive decoding",
                            "every line read before it was decoded and printed; run the "
                            "same command again to go on (Ctrl-D ends a session quietly)")
        decoder.decode_interactive(_decoding(args, run, settings),
                                   prompt=PROMPT if sys.stdin.isatty() else "")
        return 0
    default = source + (".scores" if args.score_file else ".decoded")
    flag = "--decode_to_file" if args.decode_to_file else f"--decode_to_file (default {default})"
    with run.paths.output_file(flag, args.decode_to_file or default) as output_path, \
            common.writing(f"while {'scoring' if args.score_file else 'decoding'} {source}",
                           flag.split(" ")[0], output_path):
        disk_space.require_free(flag.split(" ")[0], output_path,
                                _least_output_size(source, settings), "the output")
        if args.score_file:
            model, _ = run.restored_model(args.checkpoint_path)
            decoding = run.decoding(model, settings)  # its codecs and input rules
            scores = score_file(model, args.score_file, decoding.encoder,
                                decoding.target_encoder, batch_size=settings.batch_size,
                                max_length=decoding.rules.max_input_length)
            write_lines_atomically(output_path, (f"{score:.6f}" for score in scores))
            print(f"scored {len(scores)} lines of {args.score_file} to {output_path}")
            return 0
        decoding = _decoding(args, run, settings)
        started = time.perf_counter()
        outputs, references = decoder.decode_from_file(
            args.decode_from_file, output_path, decoding, reference_path=args.decode_reference)
    seconds = time.perf_counter() - started
    search = decoding.search
    compiled = f", {len(search.shapes_seen)} XLA programs" if settings.xla else ""
    print(f"decoded {len(outputs)} lines of {args.decode_from_file} to {output_path} "
          f"in {seconds:.1f} s ({len(outputs) / seconds:.1f} lines/s; "
          f"{search.traces} trace{'s' if search.traces != 1 else ''}{compiled})")
    if references is not None:
        if settings.fielded:
            print("scoring the best beam of each line (the first field)")
        print("\n".join(score_decodes(run.experiment.problem, outputs, references)))
    return 0


def _least_output_size(source: str, settings: "DecodeSettings") -> int:
    """Bytes an output of ``source`` takes at least: a line (a newline at least) for
    each hypothesis written of each line (a .gz source is not counted)."""
    if source.endswith(".gz"):
        return 0
    with open(source, "rb") as f:
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return lines * (settings.beam_size if settings.return_beams else 1) * settings.num_samples


def _decoding(args: argparse.Namespace, run: trained_run.OpenedRun,
              settings: "DecodeSettings") -> "Decoding":
    """The decoding of the restored model (and --ensemble's members)."""
    model, checkpoint = run.restored_model(args.checkpoint_path)
    # By content: a copied or linked run is the same model under another name.
    checkpoints = {trained_run.checkpoint_identity(checkpoint): checkpoint}
    members = []
    for other_dir in filter(None, args.ensemble.split(",")):
        member, member_checkpoint = trained_run.restored_model(
            trained_run.ensemble_member(run.experiment, other_dir))
        identity = trained_run.checkpoint_identity(member_checkpoint)
        if identity in checkpoints:
            # Its distribution averaged with itself is itself: "an ensemble" in name only.
            raise ValueError(f"--ensemble={other_dir}: its latest checkpoint "
                             f"{member_checkpoint} holds the weights of "
                             f"{checkpoints[identity]}, in the ensemble already; an ensemble "
                             "of a checkpoint with itself decodes as that checkpoint alone")
        checkpoints[identity] = member_checkpoint
        members.append(member)
    return run.decoding(model, settings, members)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-decoder", decode, argv)


if __name__ == "__main__":
    raise SystemExit(main())
