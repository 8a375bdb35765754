"""Fine-tuning (t2t-trainer --warm_start_from): the weights of another run, the rest afresh;
the source only read; another model, architecture or vocabulary refused in one line."""
import json
import os
import shutil

import numpy as np
import pytest

from cli_helpers import COMMON, USR_DIR, digest_tree, train_tiny, with_flags
from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.builtins import load_builtins
from t2t_lite.experiment import Experiment
from t2t_lite.training.averaging import average_last_checkpoints
from t2t_lite.training.checkpoint_state import CheckpointStateError
from t2t_lite.training.warm_start import (RECORD_FILE, WarmStartError, plan_warm_start,
                                          recorded_source)
from toys import ShortCopy, SmallReverse, make_trainer, training_hparams

load_builtins()

STEPS = 3  # of the source run and of each fine-tuning


def trainer(data_dir, output_dir, **options):
    return make_trainer(data_dir, output_dir, training_hparams(), **{
        "evaluate": False, "train_steps": STEPS, "save_checkpoints_steps": 2,
        "log_every_steps": 100, **options})


def experiment(data_dir, output_dir, problem=None, model="transformer", hparams=None):
    return Experiment(problem or SmallReverse(), model, "test_hparams",
                      hparams or training_hparams(), data_dir, str(output_dir))


@pytest.fixture(scope="module")
def source(reverse_data, tmp_path_factory):
    """A run of STEPS steps (checkpoints 2 and 3) and its final weights."""
    output_dir = tmp_path_factory.mktemp("warm") / "source"
    run = trainer(reverse_data, output_dir)
    run.train()
    return str(output_dir), run.model.get_weights()


def test_fine_tuning_equals_training_on_from_the_weights_with_a_fresh_optimizer(
        reverse_data, source, tmp_path):
    source_dir, weights = source
    before = digest_tree(source_dir)
    tuned = trainer(reverse_data, tmp_path / "tuned")
    tuned.options.warm_start = plan_warm_start(tuned.experiment, source_dir)
    assert tuned.options.warm_start.checkpoint.endswith("ckpt-3")
    tuned.train()
    assert tuned.step == STEPS  # its own count, from 0
    reference = trainer(reverse_data, tmp_path / "reference")
    reference.model.set_weights(weights)
    reference.train()
    for a, b in zip(tuned.model.get_weights(), reference.model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert digest_tree(source_dir) == before
    record = json.loads((tmp_path / "tuned" / RECORD_FILE).read_text())
    assert record["source"] == os.path.abspath(source_dir)
    assert record["checkpoint"] == os.path.join(os.path.abspath(source_dir), "ckpt-3")
    assert record["checkpoint_step"] == STEPS

    # Re-running the command resumes the fine-tuning; another source is refused.
    assert plan_warm_start(tuned.experiment, source_dir) is None
    with pytest.raises(WarmStartError, match=f"fine-tuned from {os.path.abspath(source_dir)}"):
        plan_warm_start(tuned.experiment, os.path.join(source_dir, "ckpt-2"))
    # A trainer given a warm start beside checkpoints resumes: its weights are the run's.
    again = trainer(reverse_data, tmp_path / "tuned")
    again.options.warm_start = plan_warm_start(experiment(reverse_data, tmp_path / "other"),
                                               source_dir)
    again.train()
    for a, b in zip(tuned.model.get_weights(), again.model.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert recorded_source(str(tmp_path / "tuned")) == os.path.abspath(source_dir)


def test_sources_another_problem_and_training_hparams_are_allowed(reverse_data, source,
                                                                    tmp_path):
    source_dir, _ = source
    average_last_checkpoints(source_dir, str(tmp_path / "avg"), n=2)

    class OtherDomain(SmallReverse):  # another problem of the same vocabulary
        name = "reverse_other_domain"
        vocab_filename = SmallReverse().vocab_filename
    hparams = training_hparams("learning_rate=0.5,batch_size=256,relu_dropout=0.2,"
                               "learning_rate_warmup_steps=10")
    for given, read in ((source_dir, "ckpt-3"), (str(tmp_path / "avg"), "ckpt-3"),
                        (os.path.join(source_dir, "ckpt-2"), "ckpt-2")):
        plan = plan_warm_start(experiment(reverse_data, tmp_path / "new", OtherDomain(),
                                          hparams=hparams), given)
        assert plan.source == os.path.abspath(given)
        assert plan.checkpoint == os.path.join(os.path.dirname(plan.checkpoint), read)
    assert os.path.dirname(plan.checkpoint) == os.path.abspath(source_dir)


def test_another_model_architecture_or_vocabulary_is_refused(reverse_data, copy_data, source,
                                                              tmp_path):
    source_dir, _ = source
    new = tmp_path / "new"
    cases = [
        (experiment(reverse_data, new, hparams=training_hparams("filter_size=32")),
         "was trained with filter_size=64 and this run has filter_size=32: fine-tuning "
         "keeps the architecture"),
        (experiment(copy_data, new, ShortCopy()),
         f"was trained with another vocabulary than the one in --data_dir={copy_data}"),
        (experiment(reverse_data, new, model="lstm_seq2seq"),
         "holds a transformer model and this run trains lstm_seq2seq"),
    ]
    for refused, says in cases:
        with pytest.raises(WarmStartError, match=says):
            plan_warm_start(refused, source_dir)
    assert not new.exists()


def test_missing_damaged_or_resumed_sources_are_refused(reverse_data, source, tmp_path):
    source_dir, _ = source
    new = experiment(reverse_data, tmp_path / "new")
    with pytest.raises(FileNotFoundError, match="is neither a folder nor a checkpoint"):
        plan_warm_start(new, str(tmp_path / "nope"))
    prefix = os.path.join(source_dir, "ckpt-3")
    with pytest.raises(FileNotFoundError, match=f"give the checkpoint's prefix, "
                                                f"--warm_start_from={prefix}$"):
        plan_warm_start(new, prefix + ".index")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="or pass --warm_start_from$"):
        plan_warm_start(new, str(tmp_path / "empty"))
    damaged = tmp_path / "damaged"
    shutil.copytree(source_dir, damaged)
    data = damaged / "ckpt-3.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-5])
    with pytest.raises(CheckpointStateError, match=f"ckpt-3 is damaged .* pass "
                                                   f"--warm_start_from={damaged}/ckpt-2$"):
        plan_warm_start(new, str(damaged))
    # A run with checkpoints of its own resumes: a warm start into it is refused.
    with pytest.raises(WarmStartError, match="holds checkpoints of its own run \\(not "
                                             "warm-started\\)"):
        plan_warm_start(experiment(reverse_data, damaged), source_dir)


def test_cli_fine_tunes_another_problem_of_the_vocabulary_and_resumes(tmp_path, capsys):
    """Domain adaptation by the command: a tiny_reverse_binary run fine-tuned on
    tiny_copy_binary (the same vocabulary); the command run again resumes it."""
    data_dir, run = train_tiny(tmp_path)
    copy_data = str(tmp_path / "copy_data")
    assert t2t_datagen.main(["--problem=tiny_copy_binary", f"--t2t_usr_dir={USR_DIR}",
                             f"--data_dir={copy_data}"]) == 0
    before = digest_tree(run)
    tuned = str(tmp_path / "tuned")
    argv = with_flags(COMMON, "--problem=tiny_copy_binary", f"--data_dir={copy_data}",
                      f"--output_dir={tuned}", "--train_steps=2", "--schedule=train",
                      f"--warm_start_from={run}", "--hparams=learning_rate=0.1")
    assert t2t_trainer.main(argv) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 2
    assert digest_tree(run) == before
    assert recorded_source(tuned) == os.path.abspath(run)
    # The same command again resumes (at its last step: nothing to train, nothing traced).
    assert t2t_trainer.main(argv) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 2
    assert digest_tree(run) == before
