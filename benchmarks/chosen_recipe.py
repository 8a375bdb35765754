"""A chosen recipe scored once where it is reported: its members trained on this
machine, their decoding chosen on the split that chooses settings, then the
reported split decoded once.

    python benchmarks/chosen_recipe.py --recipe=multi30k_ende --root=runs/recipe_ende \\
        --hparams_set=transformer_relative_multi30k_tiny \\
        --hparams=layer_prepostprocess_dropout=0.2 --seeds=1234,2 --minutes=60

Each seed is a member, trained by ``train_and_score.sh`` into ``ROOT/member_seedSEED``
as ``lever_table.py`` trains a run (resumable; ``--parallel``; a changed recipe
under the same root refused), but not decoded there: how it is decoded is chosen
after. Multi30k: for each member alone and for their
ensemble, ``sweep_decode.py`` chooses on val how many checkpoints to average, the
beam and alpha (``ROOT/choose_NAME.log``), and test_2016_flickr is then decoded
once with each choice (``ROOT/test/NAME.log``). The treebank sample: its decoding
was chosen on the tuning slice (``lever_table.py --task=parsing_slice``), so dev is
decoded with it, once. A reported figure is decoded once: run again, the command
reads it back, and asked with other settings it refuses (a second look at the
reported split would be tuning on it). Where a choice is the largest or smallest
value its grid flag tried (alpha 1.4 of 0.6,1.0,1.4), it stops before the reported
split is read: widen the grid, and the sweeps are redone on the choosing split, or
pass --accept_grid_edges. With --choose_only it stops after choosing, the reported
split unread: two recipes (two members of an hour against three of 40 minutes)
compared on val, before one of them is scored.

It prints one row a model (steps, training minutes, the settings chosen, the
choosing split's figure, the reported one), the single models' mean and spread,
and the CPU it ran on.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from typing import Callable, Sequence

from sweep_decode import add_grid_flags, floats, grid_edges, headline
from training_runs import (CHILDREN, DEFAULT_USR_DIR, MULTI30K_DECODE, Lever, Run, Sweep, Task,
                           add_budget_flags, check_levers, check_records, finished, seed_list,
                           threads_per_run, train_and_score, write_records)

from t2t_lite import interrupts, output_paths
from t2t_lite.bin import common

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))


@dataclasses.dataclass(frozen=True)
class Recipe:
    task: Task  # the problem, the default set and the members' checkpoint interval
    report_split: str  # the split decoded once, for the reported figure
    choose_split: str  # where the decoding is chosen ("": before, on other data: task.decode)


BLEU = "tokenized BLEU (lowercased)"
RECIPES = {
    "multi30k_ende": Recipe(Task("translate_ende_multi30k", "transformer_multi30k_tiny",
                                 "../shared/data/multi30k", MULTI30K_DECODE, BLEU,
                                 1_000_000, 200, 10), "test", "dev"),
    "multi30k_enfr": Recipe(Task("translate_enfr_multi30k", "transformer_multi30k_tiny",
                                 "../shared/data/multi30k", MULTI30K_DECODE, BLEU,
                                 1_000_000, 200, 10), "test", "dev"),
    # Chosen on the tuning slice: 4,600 steps, the last 10 checkpoints, beam 10, alpha 2.0.
    "parsing": Recipe(Task("parsing_english_ptb_sample_lexical", "transformer_parsing_sample",
                           "../shared/data/ptb_sample", "beam_size=10,alpha=2.0,batch_size=32",
                           "F1 ", 4600, 200, 10), "dev", ""),
}
BEST = re.compile(r"^best on .*: (?P<score>[-\d.]+) with the last (?P<count>\d+) checkpoints "
                  r"up to step \d+ averaged, beam (?P<beam>\d+), alpha (?P<alpha>[\d.]+)$",
                  re.MULTILINE)
SWEPT = re.compile(r"^\| \d+ \| (?P<averages>\d+) \| (?P<beams>\d+) \| (?P<alphas>[\d.]+) \|",
                   re.MULTILINE)  # a row of sweep_decode.py's table


@dataclasses.dataclass(frozen=True)
class Choice:
    """How a model is decoded: its last ``average`` checkpoints averaged, with ``decode``."""
    average: int
    decode: str
    edges: tuple[str, ...] = dataclasses.field(default=(), compare=False)  # grid_edges'


@dataclasses.dataclass(frozen=True)
class Model:
    """A member alone or the ensemble of all: its name and its members' runs."""
    name: str
    runs: tuple[Run, ...]


Command = Callable[[list[str], str], None]  # a command line, and the log it appends to


def run_command(command: list[str], log_path: str) -> None:
    """``command`` to its end, its output appended to ``log_path``; an interrupt of
    this script stops it too (``CHILDREN``: its own process group)."""
    with open(log_path, "a", encoding="utf-8") as log:
        try:
            status = CHILDREN.run(command, dict(os.environ), log)
        except BaseException:
            CHILDREN.stop()
            raise
    if status:
        raise SystemExit(f"{' '.join(command[:2])} stopped with status {status}: see {log_path}")


def usr_flags(run: Run) -> list[str]:
    return [f"--t2t_usr_dir={run.usr_dir}"] if run.usr_dir else []


def eval_files(run: Run, split: str, folder: str, command: Command) -> tuple[str, str]:
    """The source and reference of ``split``, written by t2t-datagen into ``folder``
    (the member's data is made already: datagen only writes the text)."""
    log_path = os.path.join(folder, f"datagen_{split}.log")
    command(["t2t-datagen", *usr_flags(run), f"--problem={run.problem}",
             f"--data_dir={run.folder}/data", f"--tmp_dir={run.task.raw_dir}",
             f"--eval_files_dir={folder}/eval_{split}", f"--eval_split={split}"], log_path)
    with open(log_path, encoding="utf-8") as log:
        found = re.findall(r"^eval files: (\S+) (\S+)$", log.read(), re.MULTILINE)
    if not found:
        raise SystemExit(f"t2t-datagen named no eval files: see {log_path}")
    return found[-1]


def choose(model: Model, root: str, files: tuple[str, str], grid: dict[str, str],
           command: Command) -> tuple[Choice, float]:
    """sweep_decode.py's best setting for ``model`` on the choosing split, and its
    figure there (read back from its log when an earlier run of this command swept)."""
    log_path = os.path.join(root, f"choose_{model.name}.log")
    text = open(log_path, encoding="utf-8").read() if os.path.exists(log_path) else ""
    if _swept_grid(text) != {flag: set(floats(values)) for flag, values in grid.items()}:
        interrupts.describe(f"while choosing {model.name}'s decoding on {files[0]}",
                            f"the members are trained; run the same command again to sweep "
                            f"{model.name} again (its log: {log_path})")
        first, *others = model.runs
        command([sys.executable, os.path.join(BENCHMARKS, "sweep_decode.py"), *usr_flags(first),
                 f"--output_dir={first.folder}/train",
                 f"--ensemble={','.join(other.folder + '/train' for other in others)}",
                 f"--source={files[0]}", f"--reference={files[1]}",
                 f"--averages={grid['averages']}", f"--beams={grid['beams']}",
                 f"--alphas={grid['alphas']}", "--decode_hparams=batch_size=64",
                 f"--score_line={first.task.score_line}"], log_path)
        text = open(log_path, encoding="utf-8").read()
    best = list(BEST.finditer(text))[-1]
    edges = grid_edges(grid, {"averages": float(best["count"]), "beams": float(best["beam"]),
                              "alphas": float(best["alpha"])})
    return (Choice(int(best["count"]), f"beam_size={best['beam']},alpha={best['alpha']},"
                   "batch_size=64", tuple(edges)), float(best["score"]))


def _swept_grid(log_text: str) -> dict[str, set[float]] | None:
    """The grid of the last sweep in a choosing log that ended with its best (None:
    none did): each flag's values, read from the table's rows."""
    ends = list(BEST.finditer(log_text))
    if not ends:
        return None
    last_sweep = log_text[:ends[-1].start()].rsplit("| up to step |", 1)[-1]
    rows = list(SWEPT.finditer(last_sweep))
    return {flag: {float(row[flag]) for row in rows} for flag in ("averages", "beams", "alphas")}


def decoded_before(model: Model, folder: str) -> bool:
    """Whether ``model`` has its decoding settings recorded for the reported split in
    ``folder``: it was decoded there (or started to be), and its choice is final."""
    return os.path.exists(_settings_path(model, folder))


def _settings_path(model: Model, folder: str) -> str:
    return os.path.join(folder, f"{model.name}.settings")


def decode_once(model: Model, choice: Choice, folder: str, files: tuple[str, str],
                command: Command) -> float:
    """``model``'s figure on the reported split, decoded with ``choice``: once. Its
    settings are written before it decodes; asked again with others, it refuses."""
    settings_path = _settings_path(model, folder)
    log_path = os.path.join(folder, f"{model.name}.log")
    settings = json.dumps({"average": choice.average, "decode": choice.decode}, sort_keys=True)
    if decoded_before(model, folder):
        with open(settings_path, encoding="utf-8") as recorded:
            earlier = recorded.read()
        if earlier != settings:
            raise ValueError(
                f"{model.name} was decoded on {files[0]} with {earlier} ({log_path}); "
                f"now the choice is {settings}. The reported split is decoded once: a "
                "choice made after seeing it would be tuned on it")
        if os.path.exists(log_path):
            figure = _reported(log_path, model.runs[0].task.score_line)
            if figure is not None:
                return figure
    else:
        with open(settings_path, "w", encoding="utf-8") as record:
            record.write(settings)
    interrupts.describe(f"while decoding {model.name} on {files[0]}",
                        f"its settings are recorded ({settings_path}); run the same command "
                        "again to decode it with them")
    averaged = []
    for run in model.runs:
        average_dir = os.path.join(folder, f"{os.path.basename(run.folder)}_last{choice.average}")
        if not os.path.exists(os.path.join(average_dir, "checkpoint")):
            command(["t2t-avg-all", f"--model_dir={run.folder}/train",
                     f"--output_dir={average_dir}", f"--n={choice.average}"], log_path)
        averaged.append(average_dir)
    first, *others = averaged
    command(["t2t-decoder", *usr_flags(model.runs[0]), f"--output_dir={first}",
             f"--ensemble={','.join(others)}", f"--decode_hparams={choice.decode}",
             f"--decode_from_file={files[0]}", f"--decode_reference={files[1]}",
             f"--decode_to_file={os.path.join(folder, model.name + '.decoded')}"], log_path)
    figure = _reported(log_path, model.runs[0].task.score_line)
    if figure is None:
        raise SystemExit(f"t2t-decoder printed no score: see {log_path}")
    return figure


def _reported(log_path: str, score_line: str) -> float | None:
    with open(log_path, encoding="utf-8", errors="replace") as log:
        lines = log.read().splitlines()
    if not any(line.startswith(score_line) for line in lines):
        return None
    return headline(lines[::-1], score_line)  # the last report: a retried decode appends


def cpu_name() -> str:
    """The CPU as lscpu names it, its cores, and whether it has AMX (bfloat16's speed)."""
    name, amx = "an unknown CPU", False
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            text = info.read()
        found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
        name = found.group(1).strip() if found else name
        amx = "amx_tile" in text
    return f"{name}, {os.cpu_count()} cores, {'with' if amx else 'no'} AMX"


def trained_step(run: Run) -> int:
    """The step of the member's latest checkpoint."""
    from t2t_lite.training.checkpoint_state import checkpoint_step, checkpoints_on_disk

    latest = checkpoints_on_disk(os.path.join(run.folder, "train"))[-1:]
    return checkpoint_step(latest[0]) if latest else 0


def parse_flags(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = common.FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", required=True, choices=sorted(RECIPES))
    parser.add_argument("--root", required=True,
                        help="the recipe's folder: new, empty, or an earlier run's to resume")
    parser.add_argument("--hparams_set", default="", help="default: the recipe's")
    parser.add_argument("--hparams", default="", help="overrides of the set")
    parser.add_argument("--problem", default="",
                        help="another problem of the same data (e.g. another vocabulary, "
                             "registered by --t2t_usr_dir); default: the recipe's")
    parser.add_argument("--t2t_usr_dir", default=DEFAULT_USR_DIR,
                        help="the package registering --problem or --hparams_set "
                             "(default: benchmarks/multi30k_vocab)")
    parser.add_argument("--seeds", type=seed_list, default=[1234],
                        help="one member a seed; two or more are also decoded as an ensemble")
    add_budget_flags(parser, "member", "the recipe's, if it has a step budget")
    add_grid_flags(parser, averages="5,10", beams="4,5", alphas="0.6,1.0,1.4")
    parser.add_argument("--accept_grid_edges", action="store_true",
                        help="decode the reported split even where a choice is the largest "
                             "or smallest value of its grid flag (default: stop and say so)")
    parser.add_argument("--choose_only", action="store_true",
                        help="train and choose on the choosing split, never reading the "
                             "reported one: recipes compared on val before one is scored")
    args = parser.parse_args(argv)
    if args.choose_only and not RECIPES[args.recipe].choose_split:
        parser.error(f"--choose_only: the {args.recipe} recipe's decoding was chosen before "
                     "it (on other data), so there is nothing to choose; its figure is "
                     f"{RECIPES[args.recipe].report_split}'s")
    return args


def choose_all(recipe: Recipe, models: list[Model], root: str, args: argparse.Namespace,
               command: Command) -> list[tuple[Choice, float | None]]:
    """Each model's choice and its figure on the choosing split (None: chosen before)."""
    if not recipe.choose_split:
        return [(Choice(recipe.task.average, recipe.task.decode), None) for _ in models]
    grid = {"averages": args.averages, "beams": args.beams, "alphas": args.alphas}
    files = eval_files(models[0].runs[0], recipe.choose_split, root, command)
    return [choose(model, root, files, grid, command) for model in models]


def main(argv: Sequence[str] | None = None, train: Callable[[Run], None] = train_and_score,
         command: Command = run_command) -> None:
    args = parse_flags(argv)
    recipe = RECIPES[args.recipe]
    task = recipe.task
    recipe_lever = Lever("member", args.hparams_set, args.hparams, args.problem)
    usr_dir = os.path.abspath(args.t2t_usr_dir) if args.t2t_usr_dir else ""
    check_levers(task, [recipe_lever], usr_dir)
    root = output_paths.Paths("chosen_recipe").work_folder("--root", args.root)
    threads = threads_per_run(args.parallel)
    runs = [Run(task, recipe_lever, seed, os.path.join(root, f"member_seed{seed}"),
                args.train_steps or task.train_steps, args.minutes, usr_dir, threads,
                scored=False)
            for seed in args.seeds]
    check_records(runs, f"--root={args.root}",
                  "give the changed recipe a new --root (the old one's figures stay there)")
    write_records(runs)
    Sweep(train, args.parallel).train(
        [one for one in runs if finished(one.log_path, one.score_line) is None])

    models = [Model(f"seed{run.seed}", (run,)) for run in runs]
    if len(runs) > 1:
        models.append(Model("ensemble", tuple(runs)))
    # Every choice is made before the reported split is read, so a grid widened here
    # chooses again on the choosing split alone.
    chosen = choose_all(recipe, models, root, args, command)
    report_dir = os.path.join(root, recipe.report_split)
    at_edges = [f"{model.name}: {edge}" for model, (choice, _) in zip(models, chosen)
                for edge in choice.edges if not decoded_before(model, report_dir)]
    if at_edges and not args.choose_only and not args.accept_grid_edges:
        raise SystemExit(
            f"chosen_recipe.py: a choice on {recipe.choose_split} lies at the edge of the "
            f"grid, so the best may lie beyond it ({'; '.join(at_edges)}). Run again with "
            f"the grid widened (the sweeps are redone on {recipe.choose_split} only), or "
            f"with --accept_grid_edges to decode {recipe.report_split} with these choices")
    figures = [None] * len(models)
    if not args.choose_only:
        os.makedirs(report_dir, exist_ok=True)
        report_files = eval_files(runs[0], recipe.report_split, report_dir, command)
        figures = [decode_once(model, choice, report_dir, report_files, command)
                   for model, (choice, _) in zip(models, chosen)]
    print(report(recipe, models, chosen, figures, at_edges))


def report(recipe: Recipe, models: list[Model], chosen: list[tuple[Choice, float | None]],
           figures: list[float | None], at_edges: list[str]) -> str:
    """One row a model, the single models' mean and spread (on the reported split, or
    on the choosing one when the reported was not read), and the grid edges."""
    rows = [f"CPU: {cpu_name()}", "",
            f"| model | steps | training minutes | averaged | decoding | "
            f"{recipe.choose_split or 'chosen before'} | {recipe.report_split} |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for model, (choice, chosen_score), figure in zip(models, chosen, figures):
        steps = " + ".join(str(trained_step(run)) for run in model.runs)
        minutes = sum(finished(run.log_path, run.score_line)[1] for run in model.runs)
        rows.append(f"| {model.name} | {steps} | {minutes} | {choice.average} | "
                    f"{choice.decode} | {'' if chosen_score is None else f'{chosen_score:.2f}'} "
                    f"| {'not read' if figure is None else f'{figure:.2f}'} |")
    read = figures[0] is not None
    singles = [figure if read else chosen_score
               for model, (_, chosen_score), figure in zip(models, chosen, figures)
               if len(model.runs) == 1]
    mean = sum(singles) / len(singles)
    rows.append(f"\nsingle models on {recipe.report_split if read else recipe.choose_split}: "
                + (f"mean {mean:.2f}, spread {max(singles) - min(singles):.2f} "
                   f"({len(singles)} seeds)" if len(singles) > 1
                   else f"{mean:.2f} (one seed: no spread)"))
    return "\n".join(rows + [f"grid edge: {edge}" for edge in at_edges])


if __name__ == "__main__":
    sys.exit(common.run_main("chosen_recipe.py", main))
