"""benchmarks/lever_table.py and training_runs.py: levers read from their flags, runs
read from their logs (finished runs not trained again), and the verdict against the
seed spread."""
import os
import signal
import sys
import threading
import time

import pytest

from t2t_lite import interrupts

# The benchmarks run as scripts, importing their siblings (lever_table: sweep_decode).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
import lever_table  # noqa: E402
import training_runs  # noqa: E402

BLEU = "tokenized BLEU (lowercased)"


def log_text(score: float, minutes: int = 30, score_line: str = BLEU) -> str:
    """What train_and_score.sh prints for a run (a translation's by default), abridged."""
    return (f"07:01:03 step 4000: loss 1.52\n"
            f"sacreBLEU (lowercased): {score + 1:.2f}  (sacrebleu ...)\n"
            f"{score_line.rstrip(':')}: {score:.2f}  (the report ...)\n"
            f"training: {minutes} min; everything: {minutes + 2} min\n")


def test_a_lever_names_its_set_and_overrides():
    lever, Lever = training_runs.lever, training_runs.Lever
    assert lever("relative@transformer_relative_multi30k_tiny=") == Lever(
        "relative", "transformer_relative_multi30k_tiny", "")
    assert lever("dropout_0.2=layer_prepostprocess_dropout=0.2,label_smoothing=0") == \
        Lever("dropout_0.2", "", "layer_prepostprocess_dropout=0.2,label_smoothing=0")
    assert lever("v@transformer_multi30k:translate_ende_multi30k_vocab4000=") == \
        Lever("v", "transformer_multi30k", "", "translate_ende_multi30k_vocab4000")
    assert lever("u/2000=gradient_accumulation_steps=2") == \
        Lever("u", "", "gradient_accumulation_steps=2", "", 2000)


def test_a_lever_with_its_own_steps_keeps_the_averaged_share_of_its_training(tmp_path,
                                                                               capsys):
    trained, intervals = [], []
    write_log = fake_runs({("base", 1): 40.0, ("big", 1): 41.0}, trained)

    def run(one):
        intervals.append(one.save_steps)
        write_log(one)
    lever_table.main(["--task=multi30k_ende", f"--root={tmp_path}", "--seeds=1",
                      "--lever=base=", "--lever=big/2000=gradient_accumulation_steps=2"],
                     run=run)
    assert trained == [("base", 1, 4000), ("big", 1, 2000)]
    assert intervals == [0, 100]  # the task's 200 for 4,000 steps, halved with the steps
    assert (tmp_path / "big_seed1.lever").read_text() == (
        "translate_ende_multi30k transformer_multi30k_tiny [gradient_accumulation_steps=2] "
        "2000 steps, a checkpoint every 100\n")
    assert (tmp_path / "base_seed1.lever").read_text().endswith("] 4000 steps\n")
    assert "| big | `gradient_accumulation_steps=2`, 2000 steps | 1 | 41.00 |" in \
        capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--lever=no equals sign"], "is not NAME[@HPARAMS_SET][:PROBLEM][/STEPS]=HPARAMS"),
    (["--lever=a/0="], "STEPS a positive whole number"),
    (["--lever=a=", "--lever=a=relu_dropout=0.1"], "the name a is given twice"),
    (["--lever=a=", "--seeds=1,1"], "names a seed twice"),
    (["--lever=a=", "--seeds=1,x"], "not a comma-separated list of seeds"),
    (["--lever=a=", "--task=wmt"],
     "invalid choice: 'wmt' (choose from 'lstm_parsing_slice', 'lstm_parsing_slice_one_matrix', "
     "'multi30k_ende', 'multi30k_enfr', 'parsing_slice')"),
])
def test_bad_flags_are_refused_in_one_line(flags, message, tmp_path, capsys):
    given = {flag.split("=")[0] for flag in flags}
    argv = [flag for flag in ("--task=multi30k_ende", f"--root={tmp_path}")
            if flag.split("=")[0] not in given] + flags
    with pytest.raises(SystemExit) as stopped:
        lever_table.main(argv, run=lambda one: pytest.fail("trained on bad flags"))
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_a_log_without_its_end_is_not_finished(tmp_path):
    log = tmp_path / "run.log"
    assert training_runs.finished(str(log), BLEU) is None
    log.write_text("07:01:03 step 100: loss 5.0\n")
    assert training_runs.finished(str(log), BLEU) is None
    log.write_text(log_text(40.5, minutes=31))
    assert training_runs.finished(str(log), BLEU) == (40.5, 31)


def test_a_run_trained_only_is_finished_by_its_end_line_without_a_score(tmp_path):
    log = tmp_path / "run.log"
    summary = '{"step": 4000, "loss": 1.68, "training_minutes": 57.6}\n'
    log.write_text(summary)
    assert training_runs.finished(str(log), None) is None
    log.write_text(summary + "training: 57 min; everything: 57 min\n")
    assert training_runs.finished(str(log), None) == (None, 58)


def test_a_resumed_runs_log_gives_its_last_report(tmp_path):
    log = tmp_path / "run.log"
    # An attempt that decoded, then stopped before its end line; then the resumed run.
    log.write_text(log_text(39.0).rsplit("training:", 1)[0] + log_text(40.25, minutes=12))
    assert training_runs.finished(str(log), BLEU) == (40.25, 12)


def test_a_resumed_runs_minutes_are_the_trainers_count_over_its_attempts(tmp_path):
    log = tmp_path / "run.log"
    summary = '{"step": 4000, "loss": 1.68, "training_minutes": 57.6}\n'
    log.write_text(log_text(39.0).rsplit("training:", 1)[0] + summary
                   + log_text(40.25, minutes=12))
    assert training_runs.finished(str(log), BLEU) == (40.25, 58)


def test_a_parsing_log_is_scored_by_its_f1_line(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("F1 78.71 (EVALB, COLLINS.prm; 273 sentences)\n-- All --\n"
                   "Bracketing FMeasure       =  78.71\ntraining: 40 min; everything: 41 min\n")
    assert training_runs.finished(str(log), training_runs.TASKS["parsing_slice"].score_line) == \
        (78.71, 40)


def fake_runs(scores: dict[tuple[str, int], float], trained: list, score_line: str = BLEU):
    """A runner that writes each run's log with the score given for it."""
    def run(one):
        trained.append((one.lever.name, one.seed, one.train_steps))
        with open(one.log_path, "a") as log:
            log.write(log_text(scores[one.lever.name, one.seed], score_line=score_line))
    return run


def test_the_table_compares_each_lever_with_the_baseline_against_the_spread(tmp_path, capsys):
    scores = {("base", 1): 40.0, ("base", 2): 40.4, ("better", 1): 41.0, ("better", 2): 41.2,
              ("noise", 1): 40.1, ("noise", 2): 40.7, ("worse", 1): 38.0, ("worse", 2): 38.1}
    trained = []
    argv = ["--task=multi30k_ende", f"--root={tmp_path}", "--seeds=1,2", "--train_steps=50",
            "--lever=base=", "--lever=better=label_smoothing=0.2",
            "--lever=noise=attention_dropout=0.2", "--lever=worse@transformer_multi30k="]
    lever_table.main(argv, run=fake_runs(scores, trained))
    assert [(name, seed) for name, seed, _ in trained] == list(scores)
    assert {steps for _, _, steps in trained} == {50}
    rows = capsys.readouterr().out.splitlines()
    assert rows[2] == ("| base | `(set)` | 1, 2 | 40.00 / 40.40 | 40.20 | 0.40 | 30 |  "
                       "| (baseline) |")
    assert rows[3] == ("| better | `label_smoothing=0.2` | 1, 2 | 41.00 / 41.20 | 41.10 | 0.20 "
                       "| 30 | +0.90 | yes |")
    assert rows[4].endswith("| 40.40 | 0.60 | 30 | +0.20 | no |")
    assert rows[5].startswith("| worse | `transformer_multi30k (set)` |")
    assert rows[5].endswith("| -2.15 | yes, worse |")


def test_finished_runs_are_read_not_trained_again(tmp_path, capsys):
    scores = {("base", 1): 40.0, ("base", 2): 40.4}
    argv = ["--task=multi30k_enfr", f"--root={tmp_path / 'sweep'}", "--seeds=1,2", "--lever=base="]

    def interrupted(one):
        with open(one.log_path, "a") as log:
            log.write(log_text(40.0) if one.seed == 1 else "07:01:03 step 100: loss 5.0\n")
        if one.seed == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        lever_table.main(argv, run=interrupted)
    trained = []
    lever_table.main(argv, run=fake_runs(scores, trained))
    # The interrupted run is trained again (the trainer resumes it), with the task's steps.
    assert trained == [("base", 2, training_runs.TASKS["multi30k_enfr"].train_steps)]
    assert "| 40.00 / 40.40 | 40.20 |" in capsys.readouterr().out


def test_a_folder_of_other_files_is_refused_as_root(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    argv = ["--task=multi30k_ende", f"--root={tmp_path}", "--lever=base="]
    with pytest.raises(ValueError, match="holds files lever_table did not start"):
        lever_table.main(argv, run=lambda one: pytest.fail("trained in a user's folder"))


def test_one_seed_has_no_spread_to_beat(tmp_path, capsys):
    scores = {("base", 7): 40.0, ("other", 7): 45.0}
    argv = ["--task=multi30k_ende", f"--root={tmp_path}", "--seeds=7", "--lever=base=",
            "--lever=other=relu_dropout=0.1"]
    lever_table.main(argv, run=fake_runs(scores, []))
    assert capsys.readouterr().out.splitlines()[3].endswith("| +5.00 | one seed: no spread |")


def test_a_run_that_leaves_no_score_stops_the_sweep_with_its_log(tmp_path):
    def run(one):
        with open(one.log_path, "a") as log:
            log.write("training: 3 min; everything: 3 min\n")  # but no report line
    argv = ["--task=multi30k_ende", f"--root={tmp_path / 'sweep'}", "--seeds=1", "--lever=base="]
    with pytest.raises(SystemExit, match="no report line starts with 'tokenized BLEU"):
        lever_table.main(argv, run=run)


def test_a_levers_bad_hparams_are_refused_before_anything_trains(tmp_path):
    argv = ["--task=multi30k_ende", f"--root={tmp_path}", "--lever=base=",
            "--lever=typo=label_smothing=0.2"]
    with pytest.raises(ValueError, match="label_smothing") as refused:
        lever_table.main(argv, run=lambda one: pytest.fail("trained before the check"))
    assert "--lever=typo" in str(refused.value)


@pytest.mark.parametrize("task", sorted(training_runs.TASKS))
def test_without_levers_the_tasks_planned_ones_run(task, tmp_path):
    planned = [training_runs.lever(text) for text in lever_table.PLANNED[task]]
    # Each one's problem is registered (benchmarks/multi30k_vocab's, by default) and
    # its overrides parse on its set.
    training_runs.check_levers(training_runs.TASKS[task], planned, training_runs.DEFAULT_USR_DIR)
    scores = {(each.name, 1): 40.0 for each in planned}
    trained = []
    lever_table.main([f"--task={task}", f"--root={tmp_path}", "--seeds=1"],
                     run=fake_runs(scores, trained, training_runs.TASKS[task].score_line))
    assert [name for name, _, _ in trained] == [each.name for each in planned]


def test_a_lever_on_another_problem_trains_it_with_the_usr_dir_that_registers_it(
        tmp_path, capsys):
    runs = []

    def run(one):
        runs.append(one)
        fake_runs({(one.lever.name, 1): 40.0}, [])(one)
    lever_table.main(["--task=multi30k_enfr", f"--root={tmp_path}", "--seeds=1", "--lever=base=",
                      "--lever=v:translate_enfr_multi30k_vocab4000=label_smoothing=0.2"], run=run)
    assert [(one.problem, one.hparams_set) for one in runs] == [
        ("translate_enfr_multi30k", "transformer_multi30k_tiny"),
        ("translate_enfr_multi30k_vocab4000", "transformer_multi30k_tiny")]
    assert {one.usr_dir for one in runs} == {training_runs.DEFAULT_USR_DIR}
    assert (tmp_path / "v_seed1.lever").read_text().startswith(
        "translate_enfr_multi30k_vocab4000 transformer_multi30k_tiny [label_smoothing=0.2]")
    assert "| v | `translate_enfr_multi30k_vocab4000 label_smoothing=0.2` |" in \
        capsys.readouterr().out


def test_an_unknown_problem_is_refused_with_the_registered_ones_before_anything_trains(
        tmp_path):
    argv = ["--task=multi30k_ende", f"--root={tmp_path}", "--lever=base=",
            "--lever=v:translate_ende_multi30k_vocab9="]
    with pytest.raises(KeyError, match="translate_ende_multi30k_vocab4000"):
        lever_table.main(argv, run=lambda one: pytest.fail("trained before the check"))


def test_a_lever_changed_under_its_name_is_refused_not_read_as_the_old_run(tmp_path, capsys):
    root = f"--root={tmp_path / 'sweep'}"
    lever_table.main(["--task=multi30k_ende", root, "--seeds=1", "--lever=base=relu_dropout=0.1"],
                     run=fake_runs({("base", 1): 40.0}, []))
    for changed in (["--lever=base=relu_dropout=0.2"], ["--lever=base=relu_dropout=0.1",
                                                        "--train_steps=10"]):
        with pytest.raises(ValueError, match="--lever=base: .* was trained as translate_ende_"
                                             "multi30k transformer_multi30k_tiny"):
            lever_table.main(["--task=multi30k_ende", root, "--seeds=1"] + changed,
                             run=lambda one: pytest.fail("trained a changed lever"))


def test_parallel_runs_train_at_once_each_with_its_share_of_the_cores(tmp_path, monkeypatch,
                                                                        capsys):
    monkeypatch.setattr(training_runs.os, "cpu_count", lambda: 2)
    together = threading.Barrier(2, timeout=20)  # broken unless two runs are in flight
    scores = {("base", 1): 40.0, ("base", 2): 40.4, ("other", 1): 41.0, ("other", 2): 41.2}
    trained, threads = [], []
    write_log = fake_runs(scores, trained)

    def run(one):
        threads.append(one.threads)
        together.wait()
        write_log(one)
    lever_table.main(["--task=multi30k_ende", f"--root={tmp_path}", "--seeds=1,2",
                      "--parallel=2", "--lever=base=", "--lever=other=relu_dropout=0.2"],
                     run=run)
    assert sorted(trained) == sorted((name, seed, 4000) for name, seed in scores)
    assert threads == [1, 1, 1, 1]
    assert "| 41.00 / 41.20 | 41.10 |" in capsys.readouterr().out


def test_an_interrupt_stops_the_parallel_runs_in_flight(tmp_path, monkeypatch):
    """Ctrl-C while two runs train: the sweep stops both (CHILDREN.stop, as SIGTERM
    stops a trainer) and ends with the KeyboardInterrupt, under the handlers
    common.run_main gives the script. The test waits on events only: the runs end
    when stopped, and the SIGINT is sent again until the sweep has taken one. (Sent
    once, it was seen late about once in a hundred: one that lands as the main
    thread goes into its wait on the runs is noticed by CPython only when that wait
    ends, and the test passed then by its runs' 20-second timeout. handling_signals
    also sends again one raised inside a garbage callback, which Python drops.)"""
    in_flight = threading.Barrier(3, timeout=120)  # both runs and the interrupter
    released, done = threading.Event(), threading.Event()
    lock = threading.Lock()
    stopped, ended, runners = [], [], []

    def run(one):
        runners.append(threading.current_thread())
        in_flight.wait()
        # Released by the sweep's stop; the timeout only ends a broken sweep's test.
        ended.append(released.wait(120))

    def stop():
        with lock:  # no signal is sent after this
            stopped.append(True)
            released.set()
    monkeypatch.setattr(training_runs.CHILDREN, "stop", stop)
    main = threading.main_thread().ident

    def interrupt():
        in_flight.wait()
        while not done.is_set():
            with lock:
                if stopped:
                    return
                signal.pthread_kill(main, signal.SIGINT)  # a second one is ignored
            released.wait(0.05)
    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    try:
        with interrupts.handling_signals(), pytest.raises(KeyboardInterrupt):
            lever_table.main(["--task=multi30k_ende", f"--root={tmp_path}", "--seeds=1,2",
                              "--parallel=2", "--lever=base="], run=run)
    finally:
        done.set()
        interrupter.join()
        for runner in runners:  # an interrupt inside the pool's start of a run's thread
            runner.join()       # leaves that thread out of the pool's own join
    assert stopped == [True]
    assert ended == [True, True]  # both stopped by the sweep, not by the timeout


def test_stopping_the_children_reaches_the_command_under_the_shell(tmp_path):
    """SIGTERM must reach the trainer a script runs (so that it saves its step), not
    only the shell, which would die and leave the trainer running orphaned."""
    ready, saved = tmp_path / "ready", tmp_path / "saved"
    inner = f"trap 'echo saved > {saved}; exit 143' TERM; touch {ready}; sleep 30 & wait"
    children = training_runs.Children()
    status = []
    with open(tmp_path / "log", "w") as log:
        worker = threading.Thread(target=lambda: status.append(
            children.run(["bash", "-c", f'bash -c "{inner}"; echo the shell went on'],
                         dict(os.environ), log)))
        worker.start()
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        children.stop(grace_seconds=20)
        worker.join(20)
    assert saved.read_text() == "saved\n"
    assert status and status[0] != 0
    assert "went on" not in (tmp_path / "log").read_text()


def test_only_trains_the_named_planned_levers_after_the_baseline(tmp_path):
    planned = [training_runs.lever(text) for text in lever_table.PLANNED["lstm_parsing_slice"]]
    scores = {(each.name, 1): 30.0 for each in planned}
    trained, models = [], []
    write_log = fake_runs(scores, trained, training_runs.TASKS["lstm_parsing_slice"].score_line)

    def run(one):
        models.append(one.task.model)
        write_log(one)
    lever_table.main(["--task=lstm_parsing_slice", f"--root={tmp_path}", "--seeds=1",
                      "--only=warmup,xx"], run=run)
    assert [name for name, _, _ in trained] == ["uniform_init", "warmup", "xx"]
    assert set(models) == {"lstm_seq2seq_attention_luong"}


@pytest.mark.parametrize("flags, message", [
    (["--only=warmup,typo"], "--only: no planned lever typo for --task=lstm_parsing_slice; "
                             "the planned: uniform_init, keras_init"),
    (["--only=warmup", "--lever=a="], "--only picks among the planned levers"),
])
def test_only_names_planned_levers(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        lever_table.main(["--task=lstm_parsing_slice", f"--root={tmp_path}"] + flags,
                         run=lambda one: pytest.fail("trained on bad flags"))
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
