"""t2t-decoder: beam-search decoding of a trained model, from a file or stdin.

Problem, model, hparams and data dir default to what t2t-trainer recorded in
--output_dir/hparams.json; the latest checkpoint there is used unless
--checkpoint_path names another (an averaged one, say).
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import os
import sys
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

from t2t_lite import disk_space, interrupts
from t2t_lite.bin import common, trained_run
from t2t_lite.data.text_files import write_lines_atomically

if TYPE_CHECKING:  # the heavy imports wait until a command runs
    from t2t_lite.decoding.factory import Decoding
    from t2t_lite.decoding.settings import DecodeSettings
    from t2t_lite.decoding.target_guides import GuideFiles
    from t2t_lite.output_paths import Paths

PROMPT = "> "  # before each line --decode_interactive reads from a terminal


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-decoder", description=__doc__)
    common.add_registry_flags(p, required=False)
    common.add_raw_weights_flag(p)
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
    p.add_argument("--decode_prefixes",
                   help="target prefixes line-aligned with --decode_from_file (plain text, an "
                        "empty line for none): each output begins with its line's prefix and "
                        "the search goes on from it (CTranslate2's target_prefix)")
    p.add_argument("--prefix_after_tab", action="store_true",
                   help="(--decode_interactive) a line is SOURCE<TAB>TARGET PREFIX: its "
                        "decode begins with the prefix")
    p.add_argument("--decode_constraints",
                   help="terminology constraints line-aligned with --decode_from_file: "
                        "tab-separated target phrases (plain text; an empty line for none) "
                        "that every output of the line holds (fairseq's --constraints)")
    p.add_argument("--constraints_after_tab", action="store_true",
                   help="(--decode_interactive) the fields after a line's source (and its "
                        "prefix) are phrases its decode holds: SOURCE<TAB>PHRASE<TAB>...")
    p.add_argument("--decode_alignments",
                   help="write each output line's source-target word alignment (Pharaoh "
                        "'0-0 1-2': words split on spaces) to this file, a line each (every "
                        "beam's, tab-separated, with return_beams), from the cross-attention; "
                        "with --score_file, the given pairs' alignments")
    p.add_argument("--vocabulary_map",
                   help="a vocabulary map (CTranslate2's vmap.txt: SOURCE_TOKEN<TAB>TARGET "
                        "TOKENS, and a line with no source token for targets every batch "
                        "may use; benchmarks/vocabulary_map.py makes one): each batch's "
                        "search ranks only the targets its source tokens map to")
    p.add_argument("--score_file",
                   help="score given outputs instead of decoding: each line 'source<TAB>target'"
                        "; writes log P(target | source) a line to --decode_to_file (default: "
                        "SCORE_FILE.scores)")
    p.add_argument("--decode_shards", type=common.at_least(1), default=1,
                   help="(tensor2tensor) decode the --worker_id-th of this many parts of "
                        "--decode_from_file (runs of consecutive lines) into "
                        "DECODE_TO_FILE.shard-K-of-N; then --merge_shards joins them")
    p.add_argument("--worker_id", type=common.at_least(0), default=0,
                   help="(tensor2tensor) which part of --decode_shards this process decodes "
                        "(0-based; a job array's task id)")
    p.add_argument("--merge_shards", action="store_true",
                   help="join the --decode_shards parts of --decode_to_file, each checked to "
                        "be decoded whole from --decode_from_file by this command's model "
                        "and settings")
    p.add_argument("--decode_in_memory", action="store_true",
                   help="(tensor2tensor) accepted and changes nothing: a file is read "
                        "read_window_lines at a time (--decode_hparams) whatever its size")
    p.before_start(_hint_at_a_terminal)
    p.acts_only("--worker_id", "with --decode_shards=N (N > 1)",
                lambda args: args.decode_shards > 1 and not args.merge_shards)
    p.acts_only("--merge_shards", "with --decode_shards=N (N > 1) and --decode_from_file",
                lambda args: args.decode_shards > 1 and bool(args.decode_from_file))
    p.acts_only("--decode_prefixes", "with --decode_from_file",
                lambda args: bool(args.decode_from_file))
    p.acts_only("--decode_alignments", "with --decode_from_file or --score_file (which "
                "aligns the given pairs)",
                lambda args: bool(args.decode_from_file or args.score_file))
    p.acts_only("--decode_constraints", "with --decode_from_file",
                lambda args: bool(args.decode_from_file))
    p.acts_only("--prefix_after_tab", "with --decode_interactive",
                lambda args: args.decode_interactive)
    p.acts_only("--constraints_after_tab", "with --decode_interactive",
                lambda args: args.decode_interactive)
    p.acts_only("--vocabulary_map", "when decoding (--score_file scores every target id)",
                lambda args: not args.score_file)
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
    for flag in ("decode_from_file", "decode_reference", "decode_prefixes",
                 "decode_constraints", "score_file", "vocabulary_map"):
        if getattr(args, flag):
            paths.input_file(f"--{flag}", getattr(args, flag))
    for other_dir in filter(None, args.ensemble.split(",")):
        paths.input_folder("--ensemble", other_dir, must_exist=True)
    if args.checkpoint_path:
        paths.read_also("--checkpoint_path", *glob.glob(glob.escape(args.checkpoint_path) + ".*"))


def _guide_files(args: argparse.Namespace) -> GuideFiles:
    from t2t_lite.decoding.target_guides import GuideFiles
    return GuideFiles(args.decode_prefixes, args.decode_constraints)


def decode(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if trained_run.start(args):
        return 0
    if sum(map(bool, (args.decode_from_file, args.decode_interactive, args.score_file))) != 1:
        raise ValueError("give one of --decode_from_file=FILE, --decode_interactive or "
                         "--score_file=FILE")
    if args.decode_reference and not args.decode_from_file:
        raise ValueError("--decode_reference needs --decode_from_file")
    if args.ensemble and args.score_file:
        raise ValueError("--score_file scores one model: leave out --ensemble")
    if args.ensemble and args.decode_alignments:
        raise ValueError("--decode_alignments reads one model's cross-attention: leave out "
                         "--ensemble")
    guided = [flag for flag in ("decode_prefixes", "decode_constraints", "prefix_after_tab",
                                "constraints_after_tab") if getattr(args, flag)]
    if args.vocabulary_map and guided:
        raise ValueError(f"--vocabulary_map shortlists the target ids, and --{guided[0]} "
                         "forces ids the shortlist may leave out: leave one out")
    _check_sharding(args)
    source = args.score_file or args.decode_from_file
    if (source and not args.decode_to_file and os.path.exists(source)
            and not (os.path.isfile(source) or os.path.isdir(source))):
        raise ValueError(f"--{'score_file' if args.score_file else 'decode_from_file'}="
                         f"{source} is not a regular file (a pipe or device), so "
                         f"{source}{'.scores' if args.score_file else '.decoded'} is no place for its output; "
                         "give --decode_to_file")
    from t2t_lite.decoding import decoder, file_decoding
    from t2t_lite.decoding.likelihood import score_file
    from t2t_lite.data.alignment_links import aligned_head
    from t2t_lite.decoding.word_alignment import Aligner

    run = trained_run.open_run(args, "t2t-decoder", partial(_declare_inputs, args))
    settings = run.decode_settings(args.decode_hparams)
    searches = not (args.score_file or args.merge_shards)  # scoring keeps every thread
    if searches and not (args.intra_op_parallelism_threads or args.inter_op_parallelism_threads):
        common.set_threads(*settings.parallel_threads)  # parallel_batches' own cores
    if args.decode_interactive:
        interrupts.describe("during interactive decoding",
                            "every line read before it was decoded and printed; run the "
                            "same command again to go on (Ctrl-D ends a session quietly)")
        decoder.decode_interactive(_decoding(args, run, settings)[0],
                                   prompt=PROMPT if sys.stdin.isatty() else "",
                                   prefix_after_tab=args.prefix_after_tab,
                                   constraints_after_tab=args.constraints_after_tab)
        return 0
    default = source + (".scores" if args.score_file else ".decoded")
    target = args.decode_to_file or default
    if args.decode_shards > 1 and not args.merge_shards:
        target = file_decoding.Shard(args.worker_id, args.decode_shards).part_path(target)
    flag = "--decode_to_file" if args.decode_to_file else f"--decode_to_file (default {default})"
    lines = _input_lines(source)  # counted once, for the interrupt's line and the disk
    alignments = args.decode_alignments
    if alignments and args.decode_shards > 1 and not args.merge_shards:
        alignments = file_decoding.Shard(args.worker_id, args.decode_shards).part_path(alignments)
    if alignments and os.path.realpath(alignments) == os.path.realpath(target):
        raise ValueError(f"--decode_alignments={args.decode_alignments} is the output "
                         f"{target} too: give the alignments a file of their own")
    with run.paths.output_file(flag, target) as output_path, \
            (run.paths.output_file("--decode_alignments", alignments) if alignments
             else contextlib.nullcontext()) as alignment_path, \
            common.writing(f"while {'scoring' if args.score_file else 'decoding'} {source}",
                           flag.split(" ")[0], output_path,
                           _what_is_kept(args, settings, output_path, lines)):
        disk_space.require_free(flag.split(" ")[0], output_path,
                                _least_output_size(source, lines, settings), "the output")
        if args.score_file:
            model, _ = run.restored_model(args.checkpoint_path)
            decoding = run.decoding(model, settings)  # its codecs and input rules
            aligner = (Aligner(model, decoding.encoder, decoding.target_encoder,
                               head=aligned_head(model.hparams)) if alignment_path else None)
            scores, alignments = score_file(
                model, args.score_file, decoding.encoder, decoding.target_encoder,
                batch_size=settings.batch_size, max_length=decoding.rules.max_input_length,
                aligner=aligner)
            if alignments is not None:
                write_lines_atomically(alignment_path, alignments)
            write_lines_atomically(output_path, (f"{score:.6f}" for score in scores))
            print(f"scored {len(scores)} lines of {args.score_file} to {output_path}")
            return 0
        if args.merge_shards:
            return _merge(args, run, settings, output_path, alignment_path)
        decoding, identity = _decoding(args, run, settings)
        model = decoding.search.model
        aligner = (Aligner(model, decoding.encoder, decoding.target_encoder,
                           head=aligned_head(model.hparams)) if alignment_path else None)
        started = time.perf_counter()
        done = file_decoding.decode_file(
            args.decode_from_file, output_path, decoding, identity,
            file_decoding.Shard(args.worker_id, args.decode_shards),
            description=f"decoding {os.path.basename(args.decode_from_file)}",
            reference_path=args.decode_reference, guide_files=_guide_files(args),
            aligner=aligner, alignment_path=alignment_path)
    seconds = time.perf_counter() - started
    search = decoding.search
    compiled = f", {len(search.shapes_seen)} XLA programs" if settings.xla else ""
    went_on = (f"; went on from {done.kept_windows} windows kept by an interrupted run, "
               f"{done.decoded} lines decoded now" if done.kept_windows else "")
    print(f"decoded {done.lines} lines of {args.decode_from_file} to {done.output_path} "
          f"in {seconds:.1f} s ({done.decoded / seconds:.1f} lines/s; "
          f"{search.traces} trace{'s' if search.traces != 1 else ''}{compiled}{went_on})")
    if args.decode_shards > 1:
        print(f"part {args.worker_id} of {args.decode_shards}; once every part is decoded, "
              "the same command with --merge_shards in place of --worker_id writes "
              f"{output_path}")
    elif args.decode_reference:
        _score(run, settings, output_path, args.decode_reference)
    return 0


def _check_sharding(args: argparse.Namespace) -> None:
    if args.decode_shards == 1:
        return
    if not args.decode_from_file:
        raise ValueError(f"--decode_shards={args.decode_shards} splits --decode_from_file "
                         "(--decode_interactive and --score_file decode in one process)")
    if args.worker_id >= args.decode_shards:
        raise ValueError(f"--worker_id={args.worker_id}: must be in 0 .. "
                         f"{args.decode_shards - 1} (--decode_shards={args.decode_shards})")
    if args.decode_reference and not args.merge_shards:
        raise ValueError("--decode_reference scores the whole output: give it with "
                         "--merge_shards, once every part is decoded")
    presplit = f"{args.decode_from_file}{args.worker_id:02d}"
    if not os.path.exists(args.decode_from_file) and os.path.exists(presplit):
        raise ValueError(f"--decode_from_file={args.decode_from_file} does not exist, but "
                         f"{presplit} does: tensor2tensor read parts split beforehand; "
                         "t2t-decoder splits one file itself, so give the whole file")


def _merge(args: argparse.Namespace, run: trained_run.OpenedRun,
           settings: "DecodeSettings", output_path: str, alignment_path: str | None) -> int:
    """--merge_shards: the parts joined, under this command's model and settings."""
    from t2t_lite.decoding import file_decoding

    identity = _identity(run.experiment, [trained_run.checkpoint_to_read(
        run.experiment, args.checkpoint_path)] + [
        trained_run.checkpoint_to_read(trained_run.ensemble_member(run.experiment, other))
        for other in filter(None, args.ensemble.split(","))], args.vocabulary_map)
    from t2t_lite.decoding.word_alignment import DEFAULT_LAYER

    lines = file_decoding.merge_shards(
        args.decode_from_file, output_path, identity, settings, args.decode_shards,
        _guide_files(args), DEFAULT_LAYER if alignment_path else None, alignment_path)
    print(f"merged the {args.decode_shards} parts ({lines} lines) into {output_path}")
    if args.decode_reference:
        _score(run, settings, output_path, args.decode_reference)
    return 0


def _score(run: trained_run.OpenedRun, settings: "DecodeSettings", output_path: str,
           reference_path: str) -> None:
    from t2t_lite.data.text_files import read_utf8_lines
    from t2t_lite.decoding import file_decoding
    from t2t_lite.metrics.scoring import score_decodes

    outputs = file_decoding.best_outputs(output_path, settings.fielded)
    references = read_utf8_lines(reference_path)
    if len(references) != len(outputs):
        raise ValueError(f"{reference_path} has {len(references)} lines but {output_path} "
                         f"has {len(outputs)}: the references must be line-aligned with the "
                         "inputs")
    if settings.fielded:
        print("scoring the best beam of each line (the first field)")
    print("\n".join(score_decodes(run.experiment.problem, outputs, references, output_path,
                                  reference_path)))


def _identity(experiment: Any, checkpoints: list[str],
              vocabulary_map: str | None = None) -> dict[str, Any]:
    """What a decode's outputs depend on besides its settings: the weights (by content:
    a copied or linked run is the same model), the vocabularies and the vocabulary map."""
    identity = {"checkpoints": [trained_run.checkpoint_identity(path) for path in checkpoints],
                "vocabulary": experiment.data_identity()}
    if vocabulary_map:
        with open(vocabulary_map, "rb") as f:
            identity["vocabulary_map"] = hashlib.sha256(f.read()).hexdigest()
    return identity


def _what_is_kept(args: argparse.Namespace, settings: "DecodeSettings", output_path: str,
                  lines: int | None) -> str:
    """What an interrupted decode of an input of ``lines`` (``_input_lines``) leaves
    ("" for common.writing's default: nothing)."""
    from t2t_lite.decoding import file_decoding

    if args.score_file or args.merge_shards:
        return ""
    shard = file_decoding.Shard(args.worker_id, args.decode_shards)
    if lines is not None and not file_decoding.keeps_windows(lines, settings, shard):
        return ""
    kept = "are kept" if lines is not None else "are kept (if it spans more than one)"
    return (f"--decode_to_file={output_path} was not written yet; the windows of "
            f"{settings.read_window_lines} lines decoded whole {kept} in "
            f"{output_path}.windows (the next run skips them)")


def _input_lines(source: str) -> int | None:
    """The lines of ``source`` as its newlines count them (a .gz file's gunzipped;
    None for one that is not gzip data: the decode refuses it in its own words)."""
    import gzip
    import zlib

    try:
        with (gzip.open(source, "rb") if source.endswith(".gz") else open(source, "rb")) as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except (OSError, EOFError, zlib.error):
        return None


def _least_output_size(source: str, lines: int | None, settings: "DecodeSettings") -> int:
    """Bytes an output of ``source`` (of ``lines``) takes at least: a line (a newline at
    least) for each hypothesis written of each line (a .gz source is not counted)."""
    lines = 0 if source.endswith(".gz") else lines
    return (lines or 0) * (settings.beam_size if settings.return_beams else 1) * settings.num_samples


def _decoding(args: argparse.Namespace, run: trained_run.OpenedRun,
              settings: "DecodeSettings") -> tuple["Decoding", dict[str, Any]]:
    """The decoding of the restored model (and --ensemble's members), and its identity
    (``_identity``)."""
    model, checkpoint = run.restored_model(args.checkpoint_path)
    # By content: a copied or linked run is the same model under another name.
    checkpoints = {trained_run.checkpoint_identity(checkpoint): checkpoint}
    members = []
    for other_dir in filter(None, args.ensemble.split(",")):
        member, member_checkpoint = trained_run.restored_model(
            trained_run.ensemble_member(run.experiment, other_dir),
            raw_weights=run.raw_weights)
        identity = trained_run.checkpoint_identity(member_checkpoint)
        if identity in checkpoints:
            # Its distribution averaged with itself is itself: "an ensemble" in name only.
            raise ValueError(f"--ensemble={other_dir}: its latest checkpoint "
                             f"{member_checkpoint} holds the weights of "
                             f"{checkpoints[identity]}, in the ensemble already; an ensemble "
                             "of a checkpoint with itself decodes as that checkpoint alone")
        checkpoints[identity] = member_checkpoint
        members.append(member)
    return (run.decoding(model, settings, members, args.vocabulary_map),
            _identity(run.experiment, list(checkpoints.values()), args.vocabulary_map))


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-decoder", decode, argv)


if __name__ == "__main__":
    raise SystemExit(main())
