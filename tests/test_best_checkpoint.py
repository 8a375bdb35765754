"""The best checkpoint by a dev metric (OUTPUT_DIR/best, OUTPUT_DIR/best.json), and
stopping once it stops improving: the rules, the trainer's folder, a resumed run."""
import functools
import json
import math
import os
import shutil

import numpy as np
import pytest

from cli_helpers import COMMON, USR_DIR, train_tiny
from t2t_lite.bin import t2t_avg_all, t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.metrics.scoring import headline_figure
from t2t_lite.training.best_checkpoint import (FOLDER, RECORD, BestCheckpointError, BestRecord,
                                               KeepBestOptions)
from t2t_lite.training.checkpoints import restore_model
from t2t_lite.training.trainer import Trainer
from toys import make_trainer, training_hparams


def fed(options: KeepBestOptions, values, folder="unused") -> BestRecord:
    record = BestRecord(options, str(folder))
    for step, value in enumerate(values, 1):
        record.add(step, value, f"figure {value}")
    return record


def test_a_tie_keeps_the_first_best_and_nan_never_improves():
    record = fed(KeepBestOptions("bleu"), [math.nan, 20.0, 30.0, 30.0, math.nan, 29.0])
    assert (record.best.step, record.best.value, record.since_best) == (3, 30.0, 3)
    assert fed(KeepBestOptions("bleu"), [math.nan, math.nan]).best is None


def test_the_loss_is_lowered_and_an_improvement_must_exceed_min_improvement():
    assert fed(KeepBestOptions("loss"), [2.0, 1.0, 1.5]).best.step == 2
    record = fed(KeepBestOptions("bleu", min_improvement=0.5), [10.0, 10.4, 10.6, 11.2])
    assert [record.best.step, record.since_best] == [4, 0]
    assert fed(KeepBestOptions("bleu", min_improvement=0.5), [10.0, 10.4, 10.5]).best.step == 1


def test_patience_counts_evaluations_or_steps():
    spent = [fed(KeepBestOptions("bleu", patience=2), [1.0, 3.0, 2.0, 3.0][:n]).patience_spent()
             for n in range(1, 5)]
    assert spent == [False, False, False, True]
    assert not fed(KeepBestOptions("bleu"), [5.0] + [1.0] * 50).patience_spent()  # 0: never
    by_steps = BestRecord(KeepBestOptions("loss", patience_steps=200), "unused")
    stops = []
    for step, loss in {100: 2.0, 200: 1.5, 300: 1.6, 400: 1.55, 500: 1.7}.items():
        by_steps.add(step, loss, "")
        stops.append(by_steps.patience_spent())
    assert stops == [False, False, False, True, True]  # tensor2tensor's rule


def test_a_resume_forgets_the_evaluations_after_its_checkpoint(tmp_path):
    options = KeepBestOptions("bleu", patience=3)
    killed = fed(options, [10.0, 30.0, 20.0, 25.0, 26.0], tmp_path)
    killed.write_record()
    resumed = BestRecord(options, str(tmp_path))
    resumed.resume(3)  # the kill came after the evaluation of step 5; ckpt-3 is the latest
    assert [e.step for e in resumed.history] == [1, 2, 3]
    assert (resumed.best.step, resumed.since_best) == (2, 1)
    assert not resumed.patience_spent()


def test_a_record_of_another_metric_or_a_damaged_one_is_refused(tmp_path):
    fed(KeepBestOptions("bleu"), [10.0], tmp_path).write_record()
    with pytest.raises(BestCheckpointError, match="keeps the best by 'bleu', not 'loss'"):
        BestRecord(KeepBestOptions("loss"), str(tmp_path)).resume(1)
    (tmp_path / RECORD).write_text('{"metric": "bleu", "history": [{"step": "x"}]}')
    with pytest.raises(BestCheckpointError, match="best.json is unreadable"):
        BestRecord(KeepBestOptions("bleu"), str(tmp_path)).resume(1)
    (tmp_path / RECORD).unlink()
    (tmp_path / FOLDER).mkdir()
    with pytest.raises(BestCheckpointError, match="exists but .*best.json.* does not"):
        BestRecord(KeepBestOptions("bleu"), str(tmp_path)).resume(1)


class ScriptedScorer:
    """A dev scorer that reports the given figure at each step, noting the weights of
    the model it was given then."""

    def __init__(self, figures: dict[int, float]):
        self.figures = figures
        self.weights: dict[int, list[np.ndarray]] = {}

    def __call__(self, model) -> list[str]:
        step = int(model.training_step())
        self.weights[step] = model.get_weights()
        return [f"score {self.figures[step]:.2f}"]

    def figure(self, report: list[str]) -> float:
        return headline_figure(report, "score")


def scripted_trainer(data_dir, output_dir, scorer, train_steps, patience, keep_max=1):
    return make_trainer(
        data_dir, output_dir, training_hparams(),
        trainer_class=functools.partial(Trainer, dev_scorer=scorer), train_steps=train_steps,
        evaluate=False, decode_eval_every_steps=1, save_checkpoints_steps=1000,
        keep_checkpoint_max=keep_max, log_every_steps=1000,
        keep_best=KeepBestOptions("sequence_accuracy", patience=patience))


def best_weights(trainer, output_dir) -> tuple[str, list[np.ndarray]]:
    model = trainer.experiment.build_model()
    model({"inputs": np.ones([1, 1], np.int32), "targets": np.ones([1, 1], np.int32)})
    path = restore_model(model, os.path.join(output_dir, FOLDER))
    return os.path.basename(path), model.get_weights()


def assert_same_weights(found, expected):
    assert len(found) == len(expected)
    for a, b in zip(found, expected):
        np.testing.assert_array_equal(a, b)


FIGURES = {1: 10.0, 2: 30.0, 3: 20.0, 4: 30.0, 5: 25.0, 6: 28.0, 7: 40.0}


def test_the_best_is_kept_and_a_resumed_run_keeps_it_and_its_patience(reverse_data, tmp_path,
                                                                       caplog):
    caplog.set_level("INFO")
    first = ScriptedScorer(FIGURES)
    scripted_trainer(reverse_data, tmp_path, first, train_steps=3, patience=3,
                     keep_max=5).train()
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["evaluations_since_best"] == 1
    # As a kill between the checkpoint of step 3 and its record leaves it: the resumed
    # run evaluates step 3 first.
    record["history"].pop()
    (tmp_path / RECORD).write_text(json.dumps(record))
    # As a kill between best.json and the best folder leaves it: the resumed run
    # rebuilds the folder from the run's checkpoint of the best step.
    shutil.rmtree(tmp_path / FOLDER)
    second = ScriptedScorer(FIGURES)
    resumed = scripted_trainer(reverse_data, tmp_path, second, train_steps=7, patience=3)
    resumed.train()
    assert any("rebuilding" in r.getMessage() for r in caplog.records)
    # Steps 3, 4 (a tie: the first best stays) and 5 do not improve on step 2.
    assert resumed.step == 5 and sorted(second.weights) == [3, 4, 5]
    assert_same_weights(second.weights[3], first.weights[3])
    name, weights = best_weights(resumed, tmp_path)
    assert name == "ckpt-2"  # kept though keep_checkpoint_max=1 rotated the run's away
    assert not os.path.exists(tmp_path / "ckpt-2.index")
    assert_same_weights(weights, first.weights[2])
    assert not np.array_equal(first.weights[2][0], second.weights[5][0])
    record = json.loads((tmp_path / RECORD).read_text())
    assert record["best"] == {"step": 2, "value": 30.0, "report": "score 30.00"}
    assert record["direction"] == "max" and record["stopped_early_at"] == 5
    assert [e["step"] for e in record["history"]] == [1, 2, 3, 4, 5]
    assert record["evaluations_since_best"] == 3
    assert json.loads((tmp_path / FOLDER / RECORD).read_text())["best"]["step"] == 2
    stops = [r.getMessage() for r in caplog.records if "stopping early" in r.getMessage()]
    assert stops == [f"stopping early at step 5: sequence_accuracy has not improved for 3 "
                     f"evaluations (--patience=3); the best, score 30.00 at step 2, is "
                     f"{tmp_path / FOLDER / 'ckpt-2'}"]
    assert resumed.best.summary()["best_step"] == 2
    # Run again, it trains no more: the patience is spent.
    again = scripted_trainer(reverse_data, tmp_path, ScriptedScorer(FIGURES), train_steps=7,
                             patience=3)
    again.train()
    assert again.step == 5
    assert any(r.getMessage().startswith("nothing to train: it stopped early at step 5")
               for r in caplog.records)


@pytest.mark.slow  # its first train_tiny of a session trains the template run
def test_the_commands_that_read_a_run_take_the_best_folder(tmp_path, capsys):
    data_dir, output_dir = train_tiny(tmp_path)  # at step 4
    assert t2t_trainer.main(COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=5",
        "--eval_batches=1", "--best_checkpoint_metric=loss"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    best = os.path.join(output_dir, FOLDER)
    assert summary["best_checkpoint"] == os.path.join(best, f"ckpt-{summary['best_step']}")
    assert summary["best_metric"] == "loss" and not summary["stopped_early"]
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n1 0\n")
    assert t2t_decoder.main([f"--output_dir={best}", f"--t2t_usr_dir={USR_DIR}",
                             f"--decode_from_file={source}",
                             f"--decode_to_file={tmp_path / 'out.txt'}"]) == 0
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 2
    assert t2t_avg_all.main([f"--model_dir={best}", f"--output_dir={tmp_path / 'avg'}",
                             "--n=1"]) == 0
    assert os.path.exists(tmp_path / "avg" / f"ckpt-{summary['best_step']}.index")
    assert t2t_exporter.main([f"--output_dir={best}", f"--t2t_usr_dir={USR_DIR}",
                              f"--export_dir={tmp_path / 'export'}",
                              "--format=ctranslate2"]) == 0  # 0.3 s; a SavedModel traces 5 s
    assert f"exported {best}/ckpt-{summary['best_step']}" in capsys.readouterr().out


def test_a_new_best_keeps_what_a_user_put_in_the_old_one(tmp_path):
    """An export below OUTPUT_DIR/best (t2t-exporter allows it) is not deleted when a
    better checkpoint takes the folder's place: the old folder stays as best-STEP."""
    import tensorflow as tf
    variable = tf.Variable([1.0])
    (tmp_path / "hparams.json").write_text("{}")
    record = BestRecord(KeepBestOptions("bleu"), str(tmp_path))
    for step, value in ((1, 10.0), (2, 20.0)):
        tf.train.Checkpoint(v=variable).write(str(tmp_path / f"ckpt-{step}"))
        record.add(step, value, f"BLEU {value}")
        record.keep(str(tmp_path / f"ckpt-{step}"))
        if step == 1:
            (tmp_path / FOLDER / "export").mkdir()
    assert sorted(os.listdir(tmp_path / FOLDER)) == [
        "best.json", "checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index", "hparams.json"]
    assert "export" in os.listdir(tmp_path / "best-1")
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".best")]


def test_the_headline_figure_is_the_first_decimal_of_the_first_line():
    assert headline_figure(["F1 87.50 (EVALB, COLLINS.prm; 10 sentences)", "1.0"], "evalb") == 87.5
    assert headline_figure(["sacreBLEU (cased):       27.31  nrefs:1|case:mixed"], "bleu") == 27.31
    assert math.isnan(headline_figure(["score nan"], "mine"))
    with pytest.raises(ValueError, match="metric mine's report begins 'score 12'"):
        headline_figure(["score 12"], "mine")
