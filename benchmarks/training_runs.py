"""The runs the benchmarks train on this machine: a task (problem, set, the split
that scores it), a lever on it (another set, overrides or problem), one run a seed
through ``benchmarks/train_and_score.sh``, read back from its log; and a sweep that
trains them, several at once if asked, stopping every run in flight on an interrupt.
Used by ``lever_table.py`` (which lever beats the seed spread) and
``chosen_recipe.py`` (the chosen recipe's members, then the test split once).
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
import time
from typing import Callable

from sweep_decode import headline

from t2t_lite import interrupts
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
LSTM_PARSING_SLICE = Task("parsing_english_ptb_sample_lexical_tune", "lstm_attention_parsing",
                          "../shared/data/ptb_sample", "batch_size=32", "F1 ", 3500, 250, 5,
                          model="lstm_seq2seq_attention_luong")
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
    "lstm_parsing_slice": LSTM_PARSING_SLICE,
    # Its second round of levers (lever_table.PLANNED), the same task: in the same
    # root, the first round's runs of the same lever are read, not trained again.
    "lstm_parsing_slice_one_matrix": LSTM_PARSING_SLICE,
}
LEVER = re.compile(r"(?P<name>[\w.+-]+)(@(?P<hparams_set>\w+))?(:(?P<problem>\w+))?"
                   r"(/(?P<steps>[1-9]\d*))?=(?P<hparams>.*)")
DEFAULT_USR_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multi30k_vocab")
DONE = re.compile(r"^training: (\d+) min; everything: \d+ min$", re.MULTILINE)
TRAINING_MINUTES = re.compile(r'^\{"step": .*"training_minutes": ([\d.]+)', re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Lever:
    name: str
    hparams_set: str  # "" = the task's
    hparams: str
    problem: str = ""  # "" = the task's
    steps: int = 0  # 0 = the sweep's budget (another: a lever that costs more a step)


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
    save_steps: int = 0  # the checkpoint interval (0: the task's)
    scored: bool = True  # False: trained only (a recipe's member, its decoding chosen after)

    @property
    def log_path(self) -> str:
        return self.folder + ".log"

    @property
    def record_path(self) -> str:
        return self.folder + ".lever"

    @property
    def score_line(self) -> str | None:
        """The report line that scores the run (None: an unscored run's)."""
        return self.task.score_line if self.scored else None

    @property
    def problem(self) -> str:
        return self.lever.problem or self.task.problem

    @property
    def hparams_set(self) -> str:
        return self.lever.hparams_set or self.task.hparams_set

    @property
    def record(self) -> str:
        """What the run is: problem, set, overrides, steps (and checkpoint interval,
        if not the task's)."""
        interval = f", a checkpoint every {self.save_steps}" if self.save_steps else ""
        return (f"{self.problem} {self.hparams_set} [{self.lever.hparams}] "
                f"{self.train_steps} steps{interval}\n")


def lever(text: str) -> Lever:
    """An argparse ``type``: NAME[@HPARAMS_SET][:PROBLEM][/STEPS]=HPARAMS."""
    match = LEVER.fullmatch(text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME[@HPARAMS_SET][:PROBLEM][/STEPS]=HPARAMS (a name of "
            "letters, digits, '.', '+', '-' or '_'; STEPS a positive whole number; HPARAMS "
            "may be empty: the set as it is)")
    return Lever(match["name"], match["hparams_set"] or "", match["hparams"],
                 match["problem"] or "", int(match["steps"] or 0))


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


def finished(log_path: str, score_line: str | None) -> tuple[float | None, int] | None:
    """(score, training minutes) of a run whose log ends as a finished run's (its
    score first, unless ``score_line`` is None: a run trained only), else None.
    The minutes are the trainer's count over all the run's attempts (its summary's
    ``training_minutes``); in a log of before it, the script's, of the last attempt."""
    if not os.path.exists(log_path):
        return None
    with open(log_path, encoding="utf-8", errors="replace") as log:
        text = log.read()
    done = DONE.search(text)
    if not done:
        return None
    # The last report before the end: a resumed run's log holds its earlier attempts.
    report = text[:done.start()].splitlines()[::-1]
    counted = TRAINING_MINUTES.findall(text[:done.start()])
    minutes = round(float(counted[-1])) if counted else int(done.group(1))
    return (None if score_line is None else headline(report, score_line)), minutes


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
        step and ends), then waits for all of them, not only the shell that leads
        each group (it dies at once, while the trainer under it is still saving);
        SIGKILL to what is left after ``grace_seconds``."""
        with self._lock:
            self._stopped = True
            running = list(self._running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        for process in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.0, deadline - time.monotonic()))
            while _group_runs(process.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _group_runs(process.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)


def _group_runs(group: int) -> bool:
    """Whether a process of the process group ``group`` still runs. Zombies do not
    count: orphans wait for PID 1 to reap them, which in a container may never come."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    if not os.path.isdir("/proc"):
        return True  # no way to tell zombies apart here
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                # After "(comm)": state, parent, process group, ...
                state, _, process_group = stat.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # gone since the listing
        if state != "Z" and int(process_group) == group:
            return True
    return False


CHILDREN = Children()


def train_and_score(run: Run) -> None:
    """One run of benchmarks/train_and_score.sh, its output in ``run.log_path``."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_and_score.sh")
    task = run.task
    env = dict(os.environ, PROBLEM=run.problem, USR_DIR=run.usr_dir, MODEL=task.model,
               HPARAMS_SET=run.hparams_set, HPARAMS=run.lever.hparams, RAW_DIR=task.raw_dir,
               EVAL_SPLIT="dev" if run.scored else "", DECODE=task.decode, SEED=str(run.seed),
               ROOT=run.folder, TRAIN_STEPS=str(run.train_steps), MINUTES=str(run.minutes),
               SAVE_STEPS=str(run.save_steps or task.save_steps), AVERAGE=str(task.average),
               THREADS=str(run.threads or ""))
    with open(run.log_path, "a", encoding="utf-8") as log:
        status = CHILDREN.run(["bash", script], env, log)
    if status:
        raise SystemExit(f"{run.log_path}: the run stopped with status {status}; its log says "
                         "why, and running this command again resumes it")


def check_records(runs: list[Run], asked: str, remedy: str) -> None:
    """Refuses, before anything trains, a run whose record (written as it first
    started) says it was another lever or budget in the same folder: its log would
    be read as the new one's. ``asked`` names the flag (``{name}``: the lever's);
    ``remedy`` says what to do instead."""
    for run in runs:
        if os.path.exists(run.record_path):
            with open(run.record_path, encoding="utf-8") as record:
                recorded = record.read()
            if recorded != run.record:
                raise ValueError(
                    f"{asked.format(name=run.lever.name)}: {run.record_path} was trained as "
                    f"{recorded.strip()}, now asked as {run.record.strip()}; {remedy}")


def add_budget_flags(parser: argparse.ArgumentParser, kind: str, default_steps: str) -> None:
    """--train_steps, --minutes and --parallel: what each ``kind`` of run ("run",
    "member") trains for, and how many train at once."""
    parser.add_argument("--train_steps", type=common.at_least(1), default=None,
                        help=f"steps a {kind} (default: {default_steps})")
    parser.add_argument("--minutes", type=common.at_least(1), default=10000,
                        help=f"minutes a {kind} at most, in all its attempts (a step budget "
                             "holds on a shared machine)")
    parser.add_argument("--parallel", type=common.at_least(1), default=1,
                        help=f"{kind}s trained at once, the cores shared out between them")


def threads_per_run(parallel: int) -> int:
    """Each TensorFlow thread pool's size for ``parallel`` runs at once: the cores
    shared out (0, TensorFlow's own choice, for one run alone)."""
    return 0 if parallel == 1 else max(1, (os.cpu_count() or 1) // parallel)


def write_records(runs: list[Run]) -> None:
    """Each run's record, as it first starts (a run of before keeps its own)."""
    for run in runs:
        if not os.path.exists(run.record_path):
            with open(run.record_path, "w", encoding="utf-8") as record:
                record.write(run.record)


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
        if finished(one.log_path, one.score_line) is None:
            what = "its score and the time" if one.scored else "the time it trained"
            raise SystemExit(f"{one.log_path} does not end with {what}: see the log")

    def train(self, runs: list[Run]) -> None:
        with concurrent.futures.ThreadPoolExecutor(self._parallel) as pool:
            try:  # from the first submit: a run may start before the last is queued
                # Queued whole before a signal is raised: a run started by a submit that
                # an interrupt cut short would escape the pool's join and go on.
                with interrupts.deferred():
                    pending = {pool.submit(self._train, one) for one in runs}
                while pending:
                    # A timed wait comes back to Python each second, where Ctrl-C is
                    # raised; an untimed one would see it only when some run ends.
                    done, pending = concurrent.futures.wait(
                        pending, timeout=1.0, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in done:
                        future.result()
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                CHILDREN.stop()
                raise
