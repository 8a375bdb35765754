"""tensor2tensor users' flags: each one works in t2t-lite, or fails in one line that
names the t2t-lite way (the table of docs/FROM_T2T.md, "Coming from tensor2tensor")."""
import json
import os
import re
import subprocess
import sys

import pytest

from cli_helpers import COMMON, USR_DIR, error_of, train_tiny
from t2t_lite.bin import t2t_decoder, t2t_trainer
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40
from t2t_lite.training.best_checkpoint import KeepBestOptions

FROM_T2T = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "docs", "FROM_T2T.md")
TRAINER_FLAGS = ["--schedule", "--worker_gpu", "--eval_steps", "--local_eval_frequency",
                 "--random_seed", "--save_checkpoints_secs", "--keep_checkpoint_every_n_hours",
                 "--eval_early_stopping_steps", "--export_saved_model",
                 "--intra_op_parallelism_threads", "--inter_op_parallelism_threads"]
DECODER_FLAGS = ["--decode_shards", "--worker_id", "--score_file", "--decode_in_memory"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("t2t_flags"))


def test_the_from_t2t_table_lists_every_flag():
    text = open(FROM_T2T, encoding="utf-8").read()
    table = text[text.index("# Coming from tensor2tensor"):]
    for flag in TRAINER_FLAGS + DECODER_FLAGS + ["write_beam_scores", "batch_size"]:
        assert re.search(rf"^\| `{flag}", table, re.M), flag


def test_spellings_map_to_the_same_options():
    args = t2t_trainer.parser().parse_args([
        "--random_seed=7", "--eval_steps=3", "--local_eval_frequency=50",
        "--save_checkpoints_secs=90", "--keep_checkpoint_every_n_hours=2",
        "--eval_early_stopping_steps=500", "--schedule=continuous_train_and_eval"])
    options = t2t_trainer.train_options(
        args, t2t_trainer.keep_best_options(args, AlgorithmicReverseBinary40()))
    assert (options.seed, options.eval_batches, options.eval_every_steps) == (7, 3, 50)
    assert options.save_checkpoints_minutes == 1.5
    assert options.keep_checkpoint_every_n_hours == 2.0
    # tensor2tensor's early stopping is the best checkpoint by the dev loss, its
    # patience in steps.
    assert options.keep_best == KeepBestOptions("loss", patience_steps=500) and options.evaluate
    assert not t2t_trainer.train_options(
        t2t_trainer.parser().parse_args(["--schedule=train"])).evaluate
    default = t2t_trainer.train_options(t2t_trainer.parser().parse_args(
        ["--schedule=continuous_train_and_eval"]))
    assert default.evaluate and default.save_checkpoints_minutes == 10.0


@pytest.mark.parametrize("main, flag, says", [
    (t2t_trainer.main, "--worker_gpu=4", "CUDA_VISIBLE_DEVICES"),
    (t2t_trainer.main, "--worker_replicas=2", "TF_CONFIG"),
    (t2t_trainer.main, "--ps_replicas=1", "no parameter servers"),
    (t2t_trainer.main, "--use_tpu=true", "CPUs and GPUs"),
])
def test_flags_done_another_way_say_which(capsys, main, flag, says):
    error = error_of(capsys, main, [flag, "--output_dir=nowhere"])
    assert says in error and flag.split("=")[0] in error


def test_values_that_ask_for_what_t2t_lite_does_pass():
    t2t_trainer.parser().parse_args(["--use_tpu=false", "--ps_replicas=0",
                                     "--worker_replicas=1"])
    with pytest.raises(ValueError, match="--use_tpu is not a t2t-lite flag"):
        t2t_trainer.parser().parse_args(["--use_tpu"])


def test_thread_pool_flags_size_tensorflows_pools(capsys):
    script = ("from t2t_lite.bin.common import CommandParser\n"
              "CommandParser(prog='t2t-x').parse_args(['--intra_op_parallelism_threads=1',"
              " '--inter_op_parallelism_threads=3'])\n"
              "import tensorflow as tf\n"
              "print(tf.config.threading.get_intra_op_parallelism_threads(),"
              " tf.config.threading.get_inter_op_parallelism_threads())\n")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert shown.stdout.split() == ["1", "3"], shown.stderr
    with pytest.raises(SystemExit):
        t2t_trainer.parser().parse_args(["--intra_op_parallelism_threads=-2"])
    assert "must be an int >= 0, got '-2'" in capsys.readouterr().err


def test_an_unknown_flag_is_one_line_not_a_usage_dump(capsys):
    with pytest.raises(SystemExit) as exit_info:
        t2t_trainer.main(["--train_stpes=10"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "t2t-trainer: error: unrecognized arguments: --train_stpes=10 "
        "(did you mean --train_steps?) (see t2t-trainer --help)"]


@pytest.mark.slow
def test_schedules_train_and_evaluate(trained, capsys, caplog):
    data_dir, output_dir = trained
    flags = COMMON + [f"--data_dir={data_dir}", f"--output_dir={output_dir}"]
    caplog.set_level("INFO")
    assert t2t_trainer.main(flags + ["--schedule=train", "--train_steps=6",
                                     "--export_saved_model"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["step"] == 6 and "loss" not in summary  # trained, never evaluated
    assert not [r for r in caplog.records if r.getMessage().startswith("eval ")]
    assert summary["export_dir"] == os.path.join(output_dir, "export", "6")
    assert os.path.exists(os.path.join(summary["export_dir"], "saved_model.pb"))
    assert t2t_trainer.main(flags + ["--schedule=evaluate"]) == 0
    evaluated = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert evaluated["step"] == 6 and evaluated["loss"] > 0  # evaluated, not trained


def test_score_file_writes_a_log_prob_per_line(trained, tmp_path):
    _, output_dir = trained
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("0 1 1\t1 1 0\n1 0 0 0 1\t1 0 0 0 1\n1 0\t\n")
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
                             f"--score_file={pairs}", "--decode_in_memory",
                             f"--decode_to_file={tmp_path / 'scores'}"]) == 0
    scores = [float(x) for x in (tmp_path / "scores").read_text().split()]
    assert len(scores) == 3 and all(-100 < score < 0 for score in scores)


def test_write_beam_scores_follows_each_beam_with_its_score(trained, tmp_path):
    _, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n")
    assert t2t_decoder.main([
        f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
        "--decode_hparams=beam_size=3,return_beams=true,write_beam_scores=true",
        f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out.txt'}"]) == 0
    fields = (tmp_path / "out.txt").read_text().rstrip("\n").split("\t")
    scores = [float(x) for x in fields[1::2]]
    assert len(fields) == 6 and scores == sorted(scores, reverse=True)


def test_score_file_lines_need_one_tab(trained, tmp_path, capsys):
    _, output_dir = trained
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("0 1\t1 0\n0 1 1\n")
    assert f"{pairs}: line 2 has 0 tabs" in error_of(capsys, t2t_decoder.main, [
        f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}", f"--score_file={pairs}"])
    assert not os.path.exists(f"{pairs}.scores")
