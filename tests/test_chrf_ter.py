"""chrF and TER: sacreBLEU's numbers in t2t-bleu's report, and either one ranking a run's
checkpoints (TER downwards)."""
import json
import math
import os

import pytest
from sacrebleu.metrics import CHRF, TER

from cli_helpers import COMMON, train_tiny
from t2t_lite import registry
from t2t_lite.bin import t2t_bleu, t2t_trainer
from t2t_lite.builtins import load_builtins
from t2t_lite.metrics import chrf_ter
from t2t_lite.metrics.scoring import headline_figure, lower_is_better
from t2t_lite.training.best_checkpoint import RECORD, BestRecord, KeepBestOptions

load_builtins()

HYPS = ["the cat sat on the mat", "a dog runs", "green houses under a tree"]
REFS = ["the cat sat on a mat", "the dog runs", "green houses under the trees"]


def test_the_scores_are_sacrebleus_own_and_look_alike_text_scores_the_same():
    assert chrf_ter.chrf(HYPS, REFS).value == pytest.approx(
        CHRF().corpus_score(HYPS, [REFS]).score)
    assert chrf_ter.ter(HYPS, REFS).value == pytest.approx(
        TER().corpus_score(HYPS, [REFS]).score)
    assert (chrf_ter.chrf(REFS, REFS).value, chrf_ter.ter(REFS, REFS).value) == (100.0, 0.0)
    hidden = [line.replace(" ", " \u200b", 1) for line in HYPS]  # zero-width spaces
    assert chrf_ter.chrf(hidden, REFS) == chrf_ter.chrf(HYPS, REFS)
    assert chrf_ter.ter(hidden, REFS) == chrf_ter.ter(HYPS, REFS)
    assert chrf_ter.ter(HYPS, REFS).signature.startswith("nrefs:1|case:lc|tok:tercom")


def test_t2t_bleu_reports_chrf_and_ter_after_bleu(tmp_path, capsys):
    (tmp_path / "out.txt").write_text("\n".join(HYPS) + "\n")
    (tmp_path / "ref.en").write_text("\n".join(REFS) + "\n")
    assert t2t_bleu.main([f"--translation={tmp_path / 'out.txt'}",
                          f"--reference={tmp_path / 'ref.en'}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("chrF2:") and lines[-1].startswith("TER (lower is better):")
    assert headline_figure(lines[-1:], "ter") == pytest.approx(
        round(TER().corpus_score(HYPS, [REFS]).score, 2))


def test_ter_ranks_downwards_and_every_other_registered_metric_upwards():
    assert lower_is_better("ter")
    assert not any(lower_is_better(name) for name in registry.metrics.names() if name != "ter")
    record = BestRecord(KeepBestOptions("ter", lower_is_better=True), "unused")
    for step, value in enumerate([60.0, 55.0, 58.0, math.nan], 1):
        record.add(step, value, f"TER {value}")
    assert (record.best.step, record.since_best) == (2, 2)
    assert record.to_json()["direction"] == "min"


def test_a_run_keeps_its_best_checkpoint_by_ter(tmp_path, caplog):
    """The dev decodes are scored by TER first (what ranks) and by the problem's own
    metric after; best.json goes down."""
    caplog.set_level("INFO")
    data_dir, output_dir = train_tiny(tmp_path)  # at step 4
    assert t2t_trainer.main(COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=6",
        "--eval_every_steps=1", "--eval_batches=1", "--decode_eval_every_steps=1",
        "--decode_eval_examples=4", "--best_checkpoint_metric=ter"]) == 0
    record = json.loads((tmp_path / "train" / RECORD).read_text())
    assert record["metric"] == "ter" and record["direction"] == "min"
    assert [entry["step"] for entry in record["history"]] == [4, 5, 6]  # the resumed step first
    assert all(entry["report"].startswith("TER (lower is better):")
               for entry in record["history"])
    values = [entry["value"] for entry in record["history"]]
    assert record["best"]["value"] == min(values)
    assert os.path.exists(os.path.join(output_dir, "best", f"ckpt-{record['best']['step']}.index"))
    scores = [r.getMessage() for r in caplog.records if r.getMessage().startswith("dev decodes")]
    assert len(scores) == 3 and all(" | sequence accuracy " in line for line in scores)
