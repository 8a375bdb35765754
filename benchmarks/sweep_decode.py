"""Choose checkpoint averaging, beam size and alpha on a dev set, in one process.

    python benchmarks/sweep_decode.py --output_dir=runs/wu_ende/train \
        --source=runs/wu_ende/eval/translate_ende_multi30k.dev.en \
        --reference=runs/wu_ende/eval/translate_ende_multi30k.dev.de \
        --averages=5,10,20 --beams=4,5,8 --alphas=0.4,0.6,0.8,1.0 \
        --score_line="tokenized BLEU (lowercased)"

For each count N in --averages the last N checkpoints of --output_dir are
averaged (into a temporary folder), then --source is decoded with every beam
size and alpha and scored against --reference with the problem's metric; one
table row per setting, then the best. With --up_to_steps=S[,S...] the N
checkpoints averaged end at step S instead of the latest: how long to train,
asked of one run's checkpoints (the learning rate does not depend on
--train_steps, so a run's checkpoint at step S is what a run of S steps ends
with). With --ensemble=DIR[,DIR...] (other training folders of the same
problem and vocabulary) each of them is averaged the same way and the rows are
the ensemble's, as t2t-decoder --ensemble decodes it. A run that kept a moving
average of its weights (moving_average_decay) is swept on the averages, or with
--raw_weights on the weights as trained: the two in one run. Tune on the dev split
only: the test set is for reporting the settings chosen here.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import re
import sys
import tempfile
import time
from typing import TYPE_CHECKING

from t2t_lite import interrupts
from t2t_lite.bin import common, trained_run

if TYPE_CHECKING:  # the heavy imports wait until the flags are read (TensorFlow starts quietly)
    from t2t_lite.output_paths import Paths

NUMBER = re.compile(r"[-+]?\d+\.\d+")


def headline(report: list[str], label: str) -> float:
    """The first decimal number on the report line that starts with ``label``
    (or on the report's first line, the metric's headline, when ``label`` is empty)."""
    lines = [line for line in report if line.startswith(label)] if label else report[:1]
    if not lines:
        raise SystemExit(f"no report line starts with {label!r}; the report was:\n"
                         + "\n".join(report))
    number = NUMBER.search(lines[0][len(label):])
    if not number:
        raise SystemExit(f"no figure on the report line {lines[0]!r}; name a line that "
                         "has one (--score_line, or learning_curve.py's --score_lines)")
    return float(number.group())


def checkpoint_at(folder: str, steps: list[int | None]) -> list[str | None]:
    """``folder``'s checkpoint at each of ``steps`` (None: its latest), or a
    ValueError naming the steps it has."""
    from t2t_lite.training.checkpoint_state import checkpoint_step, checkpoints_on_disk

    found = {checkpoint_step(path): path for path in checkpoints_on_disk(folder)}
    missing = [step for step in steps if step is not None and step not in found]
    if missing:
        raise ValueError(f"--up_to_steps: {folder} has no checkpoint at step "
                         f"{', '.join(map(str, missing))}; it has steps "
                         f"{', '.join(map(str, sorted(found))) or 'none'}")
    return [found[step] if step is not None else None for step in steps]


def _latest_or_none(folder: str) -> str | None:
    """The checkpoint of ``folder`` a decoder reads; None where there is none to read
    (refused later, by name, when the run is opened)."""
    from t2t_lite.training.checkpoint_state import checkpoint_to_read

    try:
        return checkpoint_to_read(folder)
    except (ValueError, OSError):
        return None


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


# Each grid flag, the setting it sweeps, and the least value it can take: a best
# setting there has nothing beyond it to try.
GRID_FLOORS = {"averages": ("averaged", 1.0), "beams": ("beam", 1.0), "alphas": ("alpha", 0.0)}


def grid_edges(grid: dict[str, str], best: dict[str, float]) -> list[str]:
    """Where ``best`` (the best setting, by grid flag) is the largest or the smallest of
    its flag's values: the best may lie beyond the values tried. Only flags of three
    values or more, which bracket a range (of one or two, one of them is always at an
    end: a setting fixed, or two compared); a smallest value at the flag's floor has
    nothing below it."""
    edges = []
    for flag, (setting, floor) in GRID_FLOORS.items():
        values = floats(grid[flag])
        if len(set(values)) < 3:
            continue
        if best[flag] == max(values):
            edges.append(f"{setting} {best[flag]:g} is the largest of --{flag}={grid[flag]}")
        elif best[flag] == min(values) > floor:
            edges.append(f"{setting} {best[flag]:g} is the smallest of --{flag}={grid[flag]}")
    return edges


def add_grid_flags(parser: argparse.ArgumentParser, averages: str, beams: str,
                   alphas: str) -> None:
    """--averages, --beams and --alphas (comma-separated, each value checked as the
    flags are read): the settings a sweep decodes with, these by default."""
    parser.add_argument("--averages", type=common.list_of(common.at_least(1)),
                        default=averages, help="checkpoint counts to average")
    parser.add_argument("--beams", type=common.list_of(common.at_least(1)), default=beams,
                        help="beam sizes")
    parser.add_argument("--alphas", type=common.list_of(common.non_negative_float),
                        default=alphas, help="length-penalty alphas")


def main(argv: list[str] | None = None) -> None:
    parser = common.CommandParser(description=__doc__.split("\n")[0])
    common.add_registry_flags(parser)  # --output_dir: the training folder
    parser.add_argument("--source", required=True, help="dev inputs, one a line")
    parser.add_argument("--reference", required=True, help="dev references, line-aligned")
    add_grid_flags(parser, averages="1,5,10", beams="4", alphas="0.6")
    parser.add_argument("--decode_hparams", default="batch_size=64",
                        help="the other decode hparams, as t2t-decoder takes them")
    parser.add_argument("--score_line", default="",
                        help="which report line to rank by (default: the metric's first)")
    parser.add_argument("--up_to_steps", default="",
                        help="training steps (comma-separated) at which the averaged "
                        "checkpoints end, in every folder (default: the latest)")
    parser.add_argument("--ensemble", default="",
                        help="other training folders (comma-separated) of the same problem "
                        "and vocabulary, averaged as --output_dir is: sweep their ensemble")
    common.add_raw_weights_flag(parser)
    args = parser.parse_args(argv)
    from t2t_lite.decoding import file_decoding
    from t2t_lite.metrics.scoring import score_decodes
    from t2t_lite.training.averaging import average_last_checkpoints
    from t2t_lite.training.checkpoint_state import checkpoint_step

    if trained_run.start(args):
        return
    member_dirs = [folder for folder in args.ensemble.split(",") if folder]
    folders = [args.output_dir, *member_dirs]
    # By the latest checkpoint's content: a folder named twice, linked or copied.
    newest = [latest for latest in map(_latest_or_none, folders) if latest]
    if len(set(map(trained_run.checkpoint_identity, newest))) < len(newest):
        raise ValueError(f"--ensemble={args.ensemble}: one model is named twice (with "
                         f"--output_dir={args.output_dir}; a folder, a link to it or a copy "
                         "of it); an ensemble of a model with itself decodes as that model "
                         "alone")

    def declare(paths: "Paths") -> None:
        trained_run.input_files(("--source", args.source), ("--reference", args.reference))(paths)
        for folder in member_dirs:
            paths.input_folder("--ensemble", folder, must_exist=True)

    run = trained_run.open_run(args, "sweep_decode", declare)
    problem = run.experiment.problem
    member_runs = [trained_run.ensemble_member(run.experiment, folder) for folder in member_dirs]
    steps = [int(step) for step in args.up_to_steps.split(",") if step] or [None]
    # Every window's end, found before anything is averaged.
    ends = [dict(zip(steps, checkpoint_at(folder, steps)))
            for folder in (args.output_dir, *member_dirs)]
    rows = []
    interrupts.describe("while sweeping", "the table's rows printed are complete and the "
                        "temporary averages removed; run it again for the settings not tried")
    print("| up to step | averaged | beam | alpha | score | seconds |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for step, count in itertools.product(steps, (int(n) for n in args.averages.split(","))):
        with contextlib.ExitStack() as stack:
            average_dir, *member_averages = (
                stack.enter_context(tempfile.TemporaryDirectory()) for _ in folders)
            own_ends, *member_ends = ends
            averaged = average_last_checkpoints(args.output_dir, average_dir, count,
                                                own_ends[step])
            model, _ = run.restored_model(averaged.path)
            members = [trained_run.restored_model(member, average_last_checkpoints(
                member.output_dir, member_average, count, member_end[step]).path,
                raw_weights=run.raw_weights)[0]
                for member, member_average, member_end
                in zip(member_runs, member_averages, member_ends)]
            ending = checkpoint_step(averaged.sources[-1])
            for beam in (int(b) for b in args.beams.split(",")):
                for alpha in floats(args.alphas):
                    settings = run.decode_settings(
                        f"{args.decode_hparams},beam_size={beam},alpha={alpha}".strip(","))
                    started = time.perf_counter()
                    outputs, references = file_decoding.decode_from_file(
                        args.source, f"{average_dir}/dev.decoded",
                        run.decoding(model, settings, members),
                        reference_path=args.reference)
                    seconds = time.perf_counter() - started
                    score = headline(score_decodes(problem, outputs, references),
                                     args.score_line)
                    rows.append((score, ending, count, beam, alpha))
                    print(f"| {ending} | {count} | {beam} | {alpha} | {score:.2f} "
                          f"| {seconds:.0f} |", flush=True)
    score, ending, count, beam, alpha = max(rows)
    print(f"best on {args.source}: {score:.2f} with the last {count} checkpoints up to step "
          f"{ending} averaged, beam {beam}, alpha {alpha}")
    for edge in grid_edges({"averages": args.averages, "beams": args.beams,
                            "alphas": args.alphas},
                           {"averages": count, "beams": beam, "alphas": alpha}):
        print(f"grid edge: {edge}: the best may lie beyond it; widen the grid (on this "
              "split, never on test)")


if __name__ == "__main__":
    sys.exit(common.run_main("sweep_decode.py", main))
