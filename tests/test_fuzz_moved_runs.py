"""Runs that move: every way a run and its data can move, and every command that reads a
run on the moved paths (issues 61 and 85; the draws: tests/fuzz_cases.py's MOVES)."""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from typing import Callable

import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cli_helpers import USR_DIR, Said, digest_tree
from fuzz_cases import (DATA_MOVES, MOVE_CWDS, MOVES, RESUME_HPARAMS, RUN_COMMANDS, moved_path,
                        moved_run_refusal)
from fuzz_runner import report_violations, run_in_process, untrue_error
from t2t_lite.bin import t2t_attention, t2t_avg_all, t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.output_manifest import MANIFEST



@pytest.fixture
def template(fuzz_template):
    return fuzz_template


# Runs that move (issues 61 and 85): see fuzz_cases.MOVES. Each draw moves the run (trained
# with relative paths in a folder that is gone since) and its data, then runs every command
# that reads a run on the moved paths: each works (the trainer's resume exact: the same
# step on, the input where it was) or refuses in one line naming the flag to give.
MOVE_DRAWS = 2  # per ci run (x10 under --hypothesis-profile=long), and the example below


def move_folder(ws: str, name: str, how: str) -> str:
    """Moves ``ws/name`` ``how`` (fuzz_cases.MOVES); its path in ``ws`` now."""
    new = moved_path(name, how)
    source, target = os.path.join(ws, name), os.path.join(ws, new)
    elsewhere = os.path.join("elsewhere", "deeper", name)  # under another parent
    if how in ("reparent", "linked_back"):
        os.makedirs(os.path.join(ws, "elsewhere", "deeper"), exist_ok=True)
    if how in ("rename", "reparent"):
        os.rename(source, target)
    elif how == "copy":
        shutil.copytree(source, target, symlinks=True)
    elif how == "link":  # links/NAME -> ../NAME
        os.symlink(os.path.join("..", name), target)
    elif how == "linked_back":  # NAME -> elsewhere/deeper/NAME
        os.rename(source, os.path.join(ws, elsewhere))
        os.symlink(elsewhere, source)
    return new


def moved_argv(command: str, path: Callable[[str], str], run: str, data: str | None,
               hparams: str, export_format: str) -> list[str]:
    """``command``'s invocation on ``run`` (and ``data``: None leaves --data_dir out), its
    outputs in the workspace's new folder out/; ``path`` types a workspace path."""
    data_flag = [f"--data_dir={path(data)}"] if data else []
    usr = f"--t2t_usr_dir={USR_DIR}"
    return {
        "t2t-trainer": [usr, f"--output_dir={path(run)}", "--train_steps=4",
                        "--schedule=train"] + ([f"--hparams={hparams}"] if hparams else []),
        "t2t-decoder": [usr, f"--output_dir={path(run)}",
                        f"--decode_from_file={path('files/in.txt')}",
                        f"--decode_to_file={path('out/decoded.txt')}"],
        "t2t-avg-all": [f"--model_dir={path(run)}", f"--output_dir={path('out/avg')}", "--n=2"],
        "t2t-exporter": [usr, f"--output_dir={path(run)}", f"--export_dir={path('out/export')}",
                         f"--format={export_format}"],
        "t2t-attention": [usr, f"--output_dir={path(run)}", "--input=0 1 1", "--target=1 1 0",
                          f"--to={path('out/attention')}", "--dpi=20"],
    }[command] + (data_flag if command != "t2t-avg-all" else [])


MAINS = {"t2t-trainer": t2t_trainer.main, "t2t-decoder": t2t_decoder.main,
         "t2t-avg-all": t2t_avg_all.main, "t2t-exporter": t2t_exporter.main,
         "t2t-attention": t2t_attention.main}
# What a command's exit 0 leaves (a workspace path), beside its files in out/.
MADE = {"t2t-decoder": "out/decoded.txt", "t2t-avg-all": "out/avg/checkpoint",
        "t2t-attention": "out/attention/index.html"}
EXPORTED = {"saved_model": "out/export/saved_model.pb", "ctranslate2": "out/export/model.bin"}
# Mostly CTranslate2's (0.3 s; a SavedModel takes 5 s to trace): both read the run alike.
EXPORT_FORMATS = ["ctranslate2", "ctranslate2", "ctranslate2", "saved_model"]


def check_moved_run(template: str, run_move: str, data_move: str, relative: bool, cwd: str,
                    data_given: bool, hparams: str, export_format: str) -> list[str]:
    """The violations of one draw: each command in RUN_COMMANDS on the moved run."""
    root = tempfile.mkdtemp(prefix="fuzz_move_")
    try:
        ws = os.path.join(root, "ws")
        shutil.copytree(template, ws, symlinks=True)
        os.makedirs(os.path.join(root, "outside"))
        os.makedirs(os.path.join(ws, "out"))
        # As if trained here: hparams.json names the workspace's data (it was trained in a
        # folder that is gone, so no saved path may lead anywhere).
        record_path = os.path.join(ws, "rel_run", "hparams.json")
        with open(record_path) as f:
            record = json.load(f)
        record["data_dir"] = os.path.join(ws, "data")
        with open(record_path, "w") as f:
            json.dump(record, f)
        run = move_folder(ws, "rel_run", run_move)
        data = move_folder(ws, "data", data_move) if data_move != "other" else "other_data"
        real_run = os.path.relpath(os.path.realpath(os.path.join(ws, run)),
                                   os.path.realpath(ws))
        here = os.path.join(ws, cwd)

        def path(name: str) -> str:
            full = os.path.join(ws, name)
            return os.path.relpath(full, here) if relative else full

        problems = []
        for command in ("t2t-decoder", "t2t-avg-all", "t2t-exporter", "t2t-attention",
                        "t2t-trainer"):  # the readers on the run as it moved, then a resume
            argv = moved_argv(command, path, run, data if data_given else None, hparams,
                              export_format)
            made = {**MADE, "t2t-exporter": EXPORTED[export_format]}.get(command)
            before = digest_tree(ws)
            previous, said = os.getcwd(), Said()
            os.chdir(here)
            logger = logging.getLogger()
            level = logger.level
            logger.addHandler(said)
            logger.setLevel(logging.INFO)  # the trainer says where its input continues
            try:
                outcome = run_in_process(MAINS[command], argv)
            finally:
                os.chdir(previous)
                logger.removeHandler(said)
                logger.setLevel(level)
            after = digest_tree(ws)
            changed = sorted(p for p in set(before) | set(after)
                             if before.get(p) != after.get(p)
                             and os.path.basename(p) != MANIFEST)
            found = []
            lines = outcome.err.strip().splitlines()
            if outcome.escaped is not None or "Traceback" in outcome.err:
                found.append(f"traceback: {outcome.escaped or outcome.err[-300:]}")
            elif outcome.code not in (0, 2):
                found.append(f"exit {outcome.code}")
            must_name = moved_run_refusal(command, data_move, data_given, hparams)
            if outcome.code == 0 and must_name:
                found.append("exit 0, though it must be refused")
            if outcome.code == 2 and not must_name:
                found.append(f"refused: {lines[-1:]}")
            if outcome.code == 2 and must_name and not (lines and must_name in lines[-1]):
                found.append(f"refused without naming {must_name}: {lines[-1:]}")
            if outcome.code == 2 and lines and "t2t-datagen" in lines[-1]:
                found.append(f"moved data to make again: {lines[-1:]}")  # it is all there
            if outcome.code == 2 and changed:
                found.append(f"refused but changed {changed[:3]}")
            found += untrue_error(outcome, argv, here)
            if os.listdir(os.path.join(root, "outside")):
                found.append(f"wrote {os.listdir(os.path.join(root, 'outside'))} in the "
                             "working folder")
            own = real_run if command == "t2t-trainer" else "out"
            if outcome.code == 0 and [p for p in changed if not p.startswith(own + os.sep)]:
                found.append(f"changed outside {own}: "
                             f"{[p for p in changed if not p.startswith(own + os.sep)][:3]}")
            if outcome.code == 0 and made and not os.path.isfile(os.path.join(ws, made)):
                found.append(f"exit 0 but no {made}")
            if outcome.code == 0 and command == "t2t-trainer":
                with open(os.path.join(ws, real_run, "hparams.json")) as f:
                    named = json.load(f)["data_dir"]
                if os.path.realpath(named) != os.path.realpath(os.path.join(ws, data)):
                    found.append(f"hparams.json names {named}, not {data}")
                latest = tf.train.latest_checkpoint(os.path.join(ws, real_run)) or ""
                if not latest.endswith("ckpt-4"):
                    found.append(f"no checkpoint of step 4 ({latest or 'none'})")
                if "the input continues where step 2 left it" not in said.lines:
                    found.append("the input did not continue: "
                                 f"{[line for line in said.lines if 'input' in line][:2]}")
            if found:
                problems.append(f"{command}: {'; '.join(found)}")
        shown = (f"run {run_move} ({run}), data {data_move} ({data}), "
                 f"{'relative' if relative else 'absolute'} paths from {cwd or '.'}, "
                 f"{'with' if data_given else 'without'} --data_dir"
                 + (f", --hparams={hparams}" if hparams else "") + f", {export_format}")
        print(f"  {shown}: {len(problems)} of {len(RUN_COMMANDS)} commands failing")
        return [f"{shown}: {line}" for line in problems]
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow  # a handful of draws of five commands each
def test_moved_runs_work_or_are_refused_in_one_line(template):
    violations: list[str] = []
    draws = [0]
    print()

    @settings(max_examples=max(1, int(MOVE_DRAWS * settings.default.max_examples / 100)))
    @given(st.sampled_from(MOVES), st.sampled_from(DATA_MOVES), st.booleans(),
           st.sampled_from(MOVE_CWDS), st.sampled_from([True, True, True, False]),
           st.sampled_from(RESUME_HPARAMS), st.sampled_from(EXPORT_FORMATS))
    # Issue 85's report: the data renamed, the new --data_dir given.
    @example("stay", "rename", False, "", True, "", "saved_model")
    # The data moved under another parent and no --data_dir: the readers ask for it (1 s).
    @example("link", "reparent", True, "../outside", False, "", "ctranslate2")
    def draw(run_move, data_move, relative, cwd, data_given, hparams, export_format):
        draws[0] += 1
        violations.extend(check_moved_run(template, run_move, data_move, relative, cwd,
                                          data_given, hparams, export_format))

    draw()
    report_violations(violations, f"runs that move: {draws[0]} draws of "
                                  f"{len(RUN_COMMANDS)} commands, {len(violations)} failing")
