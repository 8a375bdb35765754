"""The lever table: which change to a recipe beats the seed spread, on the split that
chooses settings (Multi30k's val, the treebank's tuning slice), never on test.

    python benchmarks/lever_table.py --task=multi30k_ende --root=runs/levers_ende
    python benchmarks/lever_table.py --task=parsing_slice --root=runs/levers_slice \\
        --seeds=1234,2 --train_steps=4000 \\
        --lever=baseline= --lever=relative@transformer_relative_parsing_sample=

A lever is ``NAME[@HPARAMS_SET][:PROBLEM]=HPARAMS``: overrides of the task's hparams
set (or of HPARAMS_SET), as ``t2t-trainer --hparams`` reads them, on the task's
problem (or on PROBLEM: another vocabulary is another problem, as in T2T, e.g.
``benchmarks/multi30k_vocab``'s, registered by ``--t2t_usr_dir``); the first lever is
the baseline the others are compared with. Without ``--lever`` a task's planned levers
run (``PLANNED``: the ones issue 62 names). Every lever's hparams are checked
before anything trains. Each lever is trained once a seed by
``benchmarks/train_and_score.sh`` (``--train_steps`` or ``--minutes``, whichever
comes first; the last checkpoints averaged; the task's split decoded with the
decode settings earlier runs chose on it) into ``ROOT/NAME_seedSEED``, its log
``ROOT/NAME_seedSEED.log``. A run whose log ends with its score is read, not
trained again: an interrupted sweep picks up where it stopped (the interrupted run
resumes from its last checkpoint; its minutes are then its last attempt's), and
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

import argparse
import concurrent.futures
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Callable, Sequence

from sweep_decode import headline

from t2t_lite import interrupts, output_paths
from t2t_lite.bin import common


@dataclasses.dataclass(frozen=True)
class Task:
    """What train_and_score.sh needs for one task, and the report line that scores it."""
    problem: str
    hparams_set: str
    raw_dir: str
    decode: str  # decode hparams chosen on this split by earlier runs
    score_line: str  # the start of the report line whose first figure is the score
    train_steps: int
    save_steps: int
    average: int
    model: str = "transformer"


MULTI30K_DECODE = "beam_size=4,alpha=1.0,batch_size=64"  # docs/RESULTS.md, chosen on val
TASKS = {
    "multi30k_ende": Task("translate_ende_multi30k", "transformer_multi30k_tiny",
                          "../shared/data/multi30k", MULTI30K_DECODE,
                          "tokenized BLEU (lowercased)", 4000, 200, 10),
    "multi30k_enfr": Task("translate_enfr_multi30k", "transformer_multi30k_tiny",
                          "../shared/data/multi30k", MULTI30K_DECODE,
                          "tokenized BLEU (lowercased)", 4000, 200, 10),
    # The slice's recipe: 4,600 steps, the last 10 checkpoints, beam 10, alpha 2.0.
    "parsing_slice": Task("parsing_english_ptb_sample_lexical_tune", "transformer_parsing_sample",
                          "../shared/data/ptb_sample", "beam_size=10,alpha=2.0,batch_size=32",
                          "F1 ", 4600, 200, 10),
    # Issue 60's LSTM with attention on the slice: 3,500 steps, as its attention aligns
    # only after about 2,000 (benchmarks/lstm_parse_levers.sh); the problem's decoding.
    "lstm_parsing_slice": Task("parsing_english_ptb_sample_lexical_tune", "lstm_attention_parsing",
                               "../shared/data/ptb_sample", "batch_size=32", "F1 ", 3500, 250, 5,
                               model="lstm_seq2seq_attention_luong"),
}
# The README's single models (the parsing set holds the slice's recipe) and the
# levers issue 62 names. In float32: the README's Multi30k rows trained in bfloat16
# on a CPU with AMX, but on one without it float32 is 1.34-1.39x faster, and
# xla=true no faster (transformer_multi30k_tiny, Intel Xeon model 207:
# docs/RESULTS.md, "Levers on Multi30k val").
# A sweep trains them in this order: the lever that costs two batches a step last.
_MULTI30K_LEVERS = (
    "baseline=",
    "relative@transformer_relative_multi30k_tiny=",
    "dropout_0.2=layer_prepostprocess_dropout=0.2",
    "label_smoothing_0.2=label_smoothing=0.2",
    # Half the vocabulary (benchmarks/multi30k_vocab, with --t2t_usr_dir): smaller
    # BPE vocabularies did better on small data in Sennrich and Zhang (2019).
    "vocab_4000:translate_{}_multi30k_vocab4000=",
    # Wu et al.'s 8,192-token updates: two 4,096-token batches a step.
    "updates_8192_tokens=gradient_accumulation_steps=2",
)
PLANNED = {
    "multi30k_ende": tuple(text.format("ende") for text in _MULTI30K_LEVERS),
    "multi30k_enfr": tuple(text.format("enfr") for text in _MULTI30K_LEVERS),
    "parsing_slice": ("baseline=", "relative@transformer_relative_parsing_sample=",
                      "dropout_0.3=layer_prepostprocess_dropout=0.3",
                      "label_smoothing_0.2=label_smoothing=0.2"),
    # Issue 60's levers over the set (U(-0.1, 0.1) init, its default): the old Keras
    # init, one softmax matrix, labelled closers, warmup, the papers' SGD with a
    # per-sentence loss, the general score, a bidirectional encoder; XX targets last.
    "lstm_parsing_slice": (
        "uniform_init=", "keras_init=initializer=keras",
        "tied_softmax=shared_embedding=true,shared_embedding_and_softmax_weights=true",
        "labelled_closers:parsing_english_ptb_sample_lexical_labelled_tune=",
        "warmup=learning_rate_schedule=linear_warmup,learning_rate_warmup_steps=500",
        "sgd_sentences=optimizer=sgd,learning_rate=1.0,loss_normalizer=sentences,"
        "label_smoothing=0.0",
        "general_score=attention_score=general",
        "bidirectional=bidirectional_encoder=true",
        "xx:parsing_english_ptb_sample_tune=",
        "xx_labelled_closers:parsing_english_ptb_sample_labelled_tune="),
}
LEVER = re.compile(r"(?P<name>[\w.+-]+)(@(?P<hparams_set>\w+))?(:(?P<problem>\w+))?"
                   r"=(?P<hparams>.*)")
DEFAULT_USR_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multi30k_vocab")
DONE = re.compile(r"^training: (\d+) min; everything: \d+ min$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Lever:
    name: str
    hparams_set: str  # "" = the task's
    hparams: str
    problem: str = ""  # "" = the task's


@dataclasses.dataclass(frozen=True)
class Run:
    """One lever trained with one seed, in ``folder`` (its log and record beside it)."""
    task: Task
    lever: Lever
    seed: int
    folder: str
    train_steps: int
    minutes: int
    usr_dir: str = ""  # --t2t_usr_dir: the registrations of a lever's problem or set
    threads: int = 0  # each TensorFlow thread pool's size (0: TensorFlow's choice)

    @property
    def log_path(self) -> str:
        return self.folder + ".log"

    @property
    def record_path(self) -> str:
        return self.folder + ".lever"

    @property
    def problem(self) -> str:
        return self.lever.problem or self.task.problem

    @property
    def hparams_set(self) -> str:
        return self.lever.hparams_set or self.task.hparams_set

    @property
    def record(self) -> str:
        """What the run is: problem, set, overrides and steps."""
        return (f"{self.problem} {self.hparams_set} [{self.lever.hparams}] "
                f"{self.train_steps} steps\n")


def lever(text: str) -> Lever:
    """An argparse ``type``: NAME[@HPARAMS_SET][:PROBLEM]=HPARAMS."""
    match = LEVER.fullmatch(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME[@HPARAMS_SET][:PROBLEM]=HPARAMS (a name of letters, "
            "digits, '.', '+', '-' or '_'; HPARAMS may be empty: the set as it is)")
    return Lever(match["name"], match["hparams_set"] or "", match["hparams"],
                 match["problem"] or "")


def check_levers(task: Task, levers: list[Lever], usr_dir: str) -> None:
    """Every lever's problem, set and overrides as the trainer will read them, before
    any run trains (a typo found after an hour's baseline is an hour lost)."""
    common.start_tensorflow(0)  # quietly: the sets import the models
    from t2t_lite import registry
    from t2t_lite.builtins import load_builtins

    load_builtins()
    if usr_dir:
        registry.import_usr_dir(usr_dir)
    for each in levers:
        registry.problems[each.problem or task.problem]  # unknown: lists the registered
        hparams_set = each.hparams_set or task.hparams_set
        registry.hparams_sets[hparams_set]().parse(each.hparams,
                                                   source=f"--lever={each.name}")


def seed_list(text: str) -> list[int]:
    try:
        seeds = [int(seed) for seed in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of seeds")
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r} names a seed twice")
    return seeds


def finished(log_path: str, score_line: str) -> tuple[float, int] | None:
    """(score, training minutes) of a run whose log ends with its score, else None."""
    if not os.path.exists(log_path):
        return None
    with open(log_path, encoding="utf-8", errors="replace") as log:
        text = log.read()
    done = DONE.search(text)
    if not done:
        return None
    # The last report before the end: a resumed run's log holds its earlier attempts.
    report = text[:done.start()].splitlines()[::-1]
    return headline(report, score_line), int(done.group(1))


class Children:
    """The commands in flight, each the leader of its own process group, so that
    ``stop`` reaches the trainer under the shell script (killing only the shell
    would leave the trainer running on, orphaned, in the folder a resumed sweep
    trains in)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen] = set()
        self._stopped = False

    def run(self, command: list[str], env: dict[str, str], log) -> int:
        """Runs ``command`` to its end, its output into ``log``: its exit status
        (128 + SIGTERM, not started, once ``stop`` was called)."""
        with self._lock:
            if self._stopped:
                return 128 + signal.SIGTERM
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            self._running.add(process)
        try:
            return process.wait()
        finally:
            with self._lock:
                self._running.discard(process)

    def stop(self, grace_seconds: float = 600.0) -> None:
        """SIGTERM to every command in flight and all it started (a trainer saves its
        step and ends), then waits for them; SIGKILL after ``grace_seconds``."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in running:
            try:
                process.wait(grace_seconds)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)


CHILDREN = Children()


def train_and_score(run: Run) -> None:
    """One run of benchmarks/train_and_score.sh, its output in ``run.log_path``."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_and_score.sh")
    task = run.task
    env = dict(os.environ, PROBLEM=run.problem, USR_DIR=run.usr_dir, MODEL=task.model,
               HPARAMS_SET=run.hparams_set, HPARAMS=run.lever.hparams,
               RAW_DIR=task.raw_dir, EVAL_SPLIT="dev", DECODE=task.decode, SEED=str(run.seed),
               ROOT=run.folder, TRAIN_STEPS=str(run.train_steps), MINUTES=str(run.minutes),
               SAVE_STEPS=str(task.save_steps), AVERAGE=str(task.average),
               THREADS=str(run.threads or ""))
    with open(run.log_path, "a", encoding="utf-8") as log:
        status = CHILDREN.run(["bash", script], env, log)
    if status:
        raise SystemExit(f"{run.log_path}: the run stopped with status {status}; its log says "
                         "why, and running this command again resumes it")


def check_records(runs: list[Run]) -> None:
    """Refuses, before anything trains, a run whose record (written as it first
    started) says it was another lever or budget under the same name: its log
    would be read as the new lever's."""
    for run in runs:
        if os.path.exists(run.record_path):
            with open(run.record_path, encoding="utf-8") as record:
                recorded = record.read()
            if recorded != run.record:
                raise ValueError(
                    f"--lever={run.lever.name}: {run.record_path} was trained as "
                    f"{recorded.strip()}, now asked as {run.record.strip()}; give the new "
                    "lever a new name")


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
        listed = " / ".join(f"{score:.2f}" for score in mine)
        spent = sum(minutes[each.name]) / len(minutes[each.name])
        rows.append(f"| {each.name} | `{hparams}` | {', '.join(map(str, scores[each.name]))} "
                    f"| {listed} | {mean:.2f} | {spread(mine):.2f} | {spent:.0f} | {versus} "
                    f"| {verdict} |")
    return rows


Runner = Callable[[Run], None]


class Sweep:
    """Trains runs, ``parallel`` at once, each to its score; an interrupt, or a run that
    fails, stops the ones in flight (each saves its step, to resume from)."""

    def __init__(self, run: Runner, parallel: int):
        self._run = run
        self._parallel = parallel
        self._lock = threading.Lock()
        self._training: list[Run] = []

    def _describe(self) -> None:
        names = ", ".join(f"{one.lever.name}, seed {one.seed}" for one in self._training)
        folders = ", ".join(one.folder for one in self._training)
        interrupts.describe(f"while training {names}",
                            f"the finished runs are kept and the ones in training have their "
                            f"checkpoints ({folders}); run the same command again to resume "
                            "the sweep")

    def _train(self, one: Run) -> None:
        # One write: print's line and its end would interleave with another thread's.
        sys.stderr.write(f"training {one.lever.name}, seed {one.seed}: {one.log_path}\n")
        sys.stderr.flush()
        with self._lock:
            self._training.append(one)
            self._describe()
        try:
            self._run(one)
        finally:
            with self._lock:
                self._training.remove(one)
        if finished(one.log_path, one.task.score_line) is None:
            raise SystemExit(f"{one.log_path} has no score at its end: see the log")

    def train(self, runs: list[Run]) -> None:
        with concurrent.futures.ThreadPoolExecutor(self._parallel) as pool:
            try:  # from the first submit: a run may start before the last is queued
                futures = [pool.submit(self._train, one) for one in runs]
                for future in concurrent.futures.as_completed(futures):
                    future.result()
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                CHILDREN.stop()
                raise


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
    parser.add_argument("--train_steps", type=common.at_least(1), default=None,
                        help="steps a run (default: the task's recipe)")
    parser.add_argument("--minutes", type=common.at_least(1), default=10000,
                        help="minutes a run at most (a step budget holds on a shared machine)")
    parser.add_argument("--parallel", type=common.at_least(1), default=1,
                        help="runs trained at once, the cores shared out between them")
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
    threads = 0 if args.parallel == 1 else max(1, (os.cpu_count() or 1) // args.parallel)
    runs = [Run(task, each, seed, os.path.join(root, f"{each.name}_seed{seed}"), steps,
                args.minutes, usr_dir, threads) for each in levers for seed in args.seeds]
    check_records(runs)
    for one in runs:
        if not os.path.exists(one.record_path):  # as it starts (or a run of before records)
            with open(one.record_path, "w", encoding="utf-8") as record:
                record.write(one.record)
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
