"""The lever table: which change to a recipe beats the seed spread, on the split that
chooses settings (Multi30k's val, the treebank's tuning slice), never on test.

    python benchmarks/lever_table.py --task=multi30k_ende --root=runs/levers_ende
    python benchmarks/lever_table.py --task=parsing_slice --root=runs/levers_slice \\
        --seeds=1234,2 --train_steps=4000 \\
        --lever=baseline= --lever=relative@transformer_relative_parsing_sample=

A lever is ``NAME[@HPARAMS_SET][:PROBLEM][/STEPS]=HPARAMS``: overrides of the task's
hparams set (or of HPARAMS_SET), as ``t2t-trainer --hparams`` reads them, on the
task's problem (or on PROBLEM: another vocabulary is another problem, as in T2T, e.g.
``benchmarks/multi30k_vocab``'s, registered by ``--t2t_usr_dir``), trained for the
sweep's steps (or STEPS: a lever that costs twice as much a step is compared at the
same compute with half the steps); the first lever is
the baseline the others are compared with. Without ``--lever`` a task's planned levers
run (``PLANNED``: the ones issues 62 and 60 name, the LSTM's in two rounds). Every
lever's hparams are checked before anything trains. Each lever is trained once a seed by
``benchmarks/train_and_score.sh`` (``--train_steps`` or ``--minutes``, whichever
comes first; the last checkpoints averaged; the task's split decoded with the
decode settings earlier runs chose on it) into ``ROOT/NAME_seedSEED``, its log
``ROOT/NAME_seedSEED.log``. A run whose log ends with its score is read, not
trained again: an interrupted sweep picks up where it stopped (the interrupted run
resumes from its last checkpoint; its minutes are those of all its attempts), and
seeds or levers can be added to a finished one. A lever whose overrides or step
budget changed under the same name is refused (``NAME_seedSEED.lever`` records
what each run was).

With ``--parallel=N``, N runs train at once, each with a share of the cores for
its TensorFlow thread pools: on a 2-core CPU two runs of one thread each train
about 1.2x the steps of one run with both (docs/RESULTS.md, "Levers on Multi30k
val"), though each run takes about 1.7x the minutes. An interrupt (Ctrl-C, SIGTERM) is passed
on to every run in training as SIGTERM, so each saves its step before the sweep
ends.

The table gives each lever's scores, their mean and spread (max - min), and its
mean's difference from the baseline's. A lever "beats the spread" when that
difference is larger than both its own spread and the baseline's.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

from training_runs import (DEFAULT_USR_DIR, TASKS, Lever, Run, Runner, Sweep, Task,
                           add_budget_flags, check_levers, check_records, finished, lever,
                           seed_list, threads_per_run, train_and_score, write_records)

from t2t_lite import output_paths
from t2t_lite.bin import common


# The README's single models (the parsing set holds the slice's recipe) and the
# levers issue 62 names. In float32: the README's Multi30k rows trained in bfloat16
# on a CPU with AMX, but on one without it float32 is 1.34-1.39x faster, and
# xla=true no faster (transformer_multi30k_tiny, Intel Xeon model 207:
# docs/RESULTS.md, "Levers on Multi30k val").
_MULTI30K_LEVERS = (
    "baseline=",
    "relative@transformer_relative_multi30k_tiny=",
    "dropout_0.2=layer_prepostprocess_dropout=0.2",
    "label_smoothing_0.2=label_smoothing=0.2",
    # Half the vocabulary (benchmarks/multi30k_vocab, with --t2t_usr_dir): smaller
    # BPE vocabularies did better on small data in Sennrich and Zhang (2019).
    "vocab_4000:translate_{}_multi30k_vocab4000=",
    # Wu et al.'s 8,192-token updates: two 4,096-token batches a step, so half the
    # steps: the same compute and examples as the others (the budget is time).
    # The warmup halved with the steps, so that the rate peaks after as many examples
    # (and sqrt(2) higher, as the rate scales with the batch's square root); with the
    # set's 2,000-step warmup, all 2,000 steps warm up (one seed: 35.89, RESULTS.md).
    "updates_8192_tokens/2000=gradient_accumulation_steps=2,learning_rate_warmup_steps=1000",
    # The two that beat the spread on En->De at first (relative, dropout 0.2), together:
    # whether their gains add.
    "relative+dropout_0.2@transformer_relative_multi30k_tiny=layer_prepostprocess_dropout=0.2",
)
_ONE_MATRIX = "shared_embedding=true,shared_embedding_and_softmax_weights=true"


def _over_one_matrix(lever: str, overrides: str = "") -> str:
    """NAME[:PROBLEM] of the LSTM's second round: one matrix, and ``overrides``."""
    return f"{lever}={_ONE_MATRIX}" + (f",{overrides}" if overrides else "")


PLANNED = {
    "multi30k_ende": tuple(text.format("ende") for text in _MULTI30K_LEVERS),
    "multi30k_enfr": tuple(text.format("enfr") for text in _MULTI30K_LEVERS),
    # The set has dropout 0.2, chosen on the slice over 0.3 and 0.4 (+2.75 F1 over 0.3,
    # the trend not yet turned: RESULTS.md), so 0.1 next. Labelled closers ")NP" are
    # issue 60's lever for the LSTM and the Transformer alike.
    "parsing_slice": ("baseline=", "relative@transformer_relative_parsing_sample=",
                      "dropout_0.1=layer_prepostprocess_dropout=0.1,attention_dropout=0.1",
                      "label_smoothing_0.2=label_smoothing=0.2",
                      "labelled_closers:parsing_english_ptb_sample_lexical_labelled_tune="),
    # Issue 60's levers over the set (U(-0.1, 0.1) init, its default): the old Keras
    # init, one softmax matrix, labelled closers, warmup, the papers' SGD with a
    # per-sentence loss, the general score, a bidirectional encoder; XX targets last.
    "lstm_parsing_slice": (
        "uniform_init=", "keras_init=initializer=keras",
        f"tied_softmax={_ONE_MATRIX}",
        # Which of tied_softmax's two ties does it: the source's embedding as the
        # target's, or the target's embedding as the softmax.
        "shared_embedding_only=shared_embedding=true",
        "tied_softmax_only=shared_embedding_and_softmax_weights=true",
        "labelled_closers:parsing_english_ptb_sample_lexical_labelled_tune=",
        "warmup=learning_rate_schedule=linear_warmup,learning_rate_warmup_steps=500",
        "sgd_sentences=optimizer=sgd,learning_rate=1.0,loss_normalizer=sentences,"
        "label_smoothing=0.0",
        "general_score=attention_score=general",
        "bidirectional=bidirectional_encoder=true",
        "xx:parsing_english_ptb_sample_tune=",
        "xx_labelled_closers:parsing_english_ptb_sample_labelled_tune="),
    # The second round, over the first's winner: one matrix for both embeddings and the
    # softmax (tied_softmax, whose attention aligned within the budget: 73.55 F1 on
    # seed 1234, against the set's 34.20 / 34.97). Whether each lever adds to a model
    # that attends; scheduled sampling is the two-hour recipe's third setting.
    "lstm_parsing_slice_one_matrix": (
        _over_one_matrix("tied_softmax"),
        _over_one_matrix("labelled_closers+tied:parsing_english_ptb_sample_lexical_labelled_tune"),
        _over_one_matrix("scheduled_sampling+tied",
                         "scheduled_sampling_prob=0.5,scheduled_sampling_warmup_steps=1500"),
        _over_one_matrix("warmup+tied",
                         "learning_rate_schedule=linear_warmup,learning_rate_warmup_steps=500"),
        _over_one_matrix("sgd_sentences+tied", "optimizer=sgd,learning_rate=1.0,"
                         "loss_normalizer=sentences,label_smoothing=0.0"),
        # Seed 1234 of each gained on one matrix's (warmup 82.14, scheduled sampling
        # 76.17, against 73.55): whether their gains add. They did not (seed 1234: 78.60).
        _over_one_matrix("warmup+scheduled_sampling+tied",
                         "learning_rate_schedule=linear_warmup,learning_rate_warmup_steps=500,"
                         "scheduled_sampling_prob=0.5,scheduled_sampling_warmup_steps=1500"),
        _over_one_matrix("general_score+tied", "attention_score=general"),
        _over_one_matrix("bidirectional+tied", "bidirectional_encoder=true"),
        _over_one_matrix("xx+tied:parsing_english_ptb_sample_tune")),
}


def spread(scores: list[float]) -> float:
    return max(scores) - min(scores)


def table(levers: list[Lever], scores: dict[str, dict[int, float]],
          minutes: dict[str, list[int]]) -> list[str]:
    """The Markdown rows: one a lever, the first the baseline."""
    rows = ["| lever | hparams | seeds | scores | mean | spread | minutes a run "
            "| vs the first | beats the spread |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    base = list(scores[levers[0].name].values())
    for index, each in enumerate(levers):
        mine = list(scores[each.name].values())
        mean = sum(mine) / len(mine)
        difference = mean - sum(base) / len(base)
        if index == 0:
            versus, verdict = "", "(baseline)"
        else:
            versus = f"{difference:+.2f}"
            if min(len(mine), len(base)) < 2:
                verdict = "one seed: no spread"
            else:
                verdict = "yes" if abs(difference) > max(spread(mine), spread(base)) else "no"
                if verdict == "yes" and difference < 0:
                    verdict = "yes, worse"
        hparams = " ".join(part for part in (each.problem, each.hparams_set,
                                             each.hparams or "(set)") if part)
        budget = f", {each.steps} steps" if each.steps else ""
        listed = " / ".join(f"{score:.2f}" for score in mine)
        spent = sum(minutes[each.name]) / len(minutes[each.name])
        seeds = ", ".join(map(str, scores[each.name]))
        rows.append(f"| {each.name} | `{hparams}`{budget} | {seeds} "
                    f"| {listed} | {mean:.2f} | {spread(mine):.2f} | {spent:.0f} | {versus} "
                    f"| {verdict} |")
    return rows


def interval(task: Task, each: Lever, steps: int) -> int:
    """The checkpoint interval of a lever with its own step budget: the task's scaled
    alike, so that the checkpoints averaged span the same share of its training
    (0: the task's)."""
    if not each.steps or each.steps == steps:
        return 0
    return max(1, task.save_steps * each.steps // steps)


def main(argv: Sequence[str] | None = None, run: Runner = train_and_score) -> None:
    parser = common.FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--root", required=True,
                        help="the runs' folder: new, empty, or an earlier sweep's to resume")
    parser.add_argument("--lever", type=lever, action="append", default=[],
                        help="NAME[@HPARAMS_SET][:PROBLEM]=HPARAMS, repeated; the first "
                             "is the baseline (default: the task's planned levers)")
    parser.add_argument("--t2t_usr_dir", default=DEFAULT_USR_DIR,
                        help="the package registering the levers' problems and sets "
                             "(default: benchmarks/multi30k_vocab, the planned vocabularies)")
    parser.add_argument("--only", type=lambda text: text.split(","), default=None,
                        help="NAME,NAME: of the task's planned levers, only these (the "
                             "first planned, the baseline, always)")
    parser.add_argument("--seeds", type=seed_list, default=[1234, 2])
    add_budget_flags(parser, "run", "the task's recipe")
    args = parser.parse_args(argv)
    levers = args.lever or [lever(text) for text in PLANNED[args.task]]
    if args.only is not None:
        if args.lever:
            parser.error("--only picks among the planned levers; --lever gives them itself")
        unknown = sorted(set(args.only) - {each.name for each in levers})
        if unknown:
            parser.error(f"--only: no planned lever {', '.join(unknown)} for --task="
                         f"{args.task}; the planned: {', '.join(e.name for e in levers)}")
        levers = [levers[0]] + [each for each in levers[1:] if each.name in args.only]
    names = [each.name for each in levers]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        parser.error(f"--lever: the name {', '.join(twice)} is given twice")
    task = TASKS[args.task]
    usr_dir = os.path.abspath(args.t2t_usr_dir) if args.t2t_usr_dir else ""
    check_levers(task, levers, usr_dir)
    steps = args.train_steps or task.train_steps
    # New, empty, or a sweep of this script's to resume: never a folder of other files.
    root = output_paths.Paths("lever_table").work_folder("--root", args.root)
    threads = threads_per_run(args.parallel)
    runs = [Run(task, each, seed, os.path.join(root, f"{each.name}_seed{seed}"),
                each.steps or steps, args.minutes, usr_dir, threads, interval(task, each, steps))
            for each in levers for seed in args.seeds]
    check_records(runs, "--lever={name}", "give the new lever a new name")
    write_records(runs)
    Sweep(run, args.parallel).train(
        [one for one in runs if finished(one.log_path, task.score_line) is None])
    scores: dict[str, dict[int, float]] = {each.name: {} for each in levers}
    minutes: dict[str, list[int]] = {each.name: [] for each in levers}
    for one in runs:
        scores[one.lever.name][one.seed], spent = finished(one.log_path, task.score_line)
        minutes[one.lever.name].append(spent)
    print("\n".join(table(levers, scores, minutes)))


if __name__ == "__main__":
    sys.exit(common.run_main("lever_table.py", main))
