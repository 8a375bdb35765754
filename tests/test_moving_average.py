"""moving_average_decay: the weights' exponential moving average, as the rule says, the
same on two replicas, resumed exactly, and read in the weights' place by evaluation and
by every reader of the run (unless --raw_weights)."""
import json

import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, sweep_decode_lines, train_tiny
from t2t_lite.bin import t2t_avg_all, t2t_decoder, t2t_trainer
from t2t_lite.training.checkpoints import model_variables, restore_model
from t2t_lite.training.moving_average import AVERAGE, holds_average
from toys import fixed_reverse_batches, make_trainer, training_hparams

DECAY = 0.9
# Steps of the shared averaged run: after 3, a layer norm's average and weight (1.0000275
# against 1.0000336) are still np.allclose; after 4 they are not.
STEPS = 4


def averaged_trainer(reverse_data, folder, strategy=None, decay=DECAY):
    return make_trainer(reverse_data, folder, training_hparams(f"moving_average_decay={decay}"),
                        strategy, save_checkpoints_steps=10**6, eval_batches=1)


def trainable(trainer) -> dict[str, np.ndarray]:
    return {path: v.numpy() for path, v in model_variables(trainer.model).items() if v.trainable}


def averages(trainer) -> dict[str, np.ndarray]:
    return {path: v.numpy() for path, v in trainer.moving_average.averages.items()}


@pytest.fixture(scope="module")
def averaged_run(reverse_data, tmp_path_factory):
    """One averaged trainer stepped STEPS times on fixed_reverse_batches, a step at a time,
    then saved (ckpt-4): its initial weights, its trainable weights and averages after
    each step. Five tests read it (each trainer traces its own step, the costly part);
    they must not change it."""
    trainer = averaged_trainer(reverse_data, tmp_path_factory.mktemp("averaged"))
    initial = trainer.model.get_weights()
    weights, kept = [trainable(trainer)], [averages(trainer)]
    dataset = fixed_reverse_batches()
    for _ in range(STEPS):
        trainer.train_on(dataset.take(1), 1)
        weights.append(trainable(trainer))
        kept.append(averages(trainer))
    trainer.save()
    return trainer, initial, weights, kept


def test_the_average_follows_the_rule_step_by_step(averaged_run):
    """average = d * average + (1 - d) * weights after each step, d = min(decay,
    (1 + step) / (10 + step)), from the initial weights."""
    _, _, weights, kept = averaged_run
    expected = weights[0]
    assert all(np.array_equal(expected[p], a) for p, a in kept[0].items())
    for step in range(1, len(weights)):
        decay = min(DECAY, (1 + step) / (10 + step))
        expected = {p: decay * expected[p] + (1 - decay) * weights[step][p]
                    for p in weights[step]}
        for path, average in kept[step].items():
            np.testing.assert_allclose(average, expected[path], rtol=1e-5, atol=1e-7)
    for path, average in kept[-1].items():
        assert not np.allclose(average, weights[-1][path])  # an average, not the weights


def test_the_average_leaves_the_training_as_it_was(reverse_data, averaged_run, tmp_path):
    """The average only watches: the weights trained with it are those trained without
    (so one run measures both, docs/RESULTS.md)."""
    _, initial, weights, _ = averaged_run
    plain = make_trainer(reverse_data, tmp_path / "off", training_hparams(),
                         save_checkpoints_steps=10**6, eval_batches=1)
    plain.model.set_weights(initial)
    plain.train_on(fixed_reverse_batches(), STEPS)
    for path, trained in trainable(plain).items():
        np.testing.assert_allclose(weights[STEPS][path], trained, rtol=1e-6, atol=1e-7)


def test_two_replicas_keep_the_average_of_one_device(reverse_data, averaged_run, tmp_path,
                                                     two_cpu_strategy):
    _, initial, _, kept = averaged_run
    mirrored = averaged_trainer(reverse_data, tmp_path / "two", two_cpu_strategy)
    mirrored.model.set_weights(initial)
    mirrored.moving_average.reset()
    mirrored.train_on(fixed_reverse_batches(), STEPS)
    for path, average in kept[STEPS].items():
        np.testing.assert_allclose(averages(mirrored)[path], average, rtol=1e-4, atol=1e-6)


def test_evaluation_reads_the_average_and_gives_the_weights_back(averaged_run, monkeypatch):
    trainer, _, weights, kept = averaged_run
    seen = []
    monkeypatch.setattr(trainer, "_evaluation",
                        lambda split: seen.append(trainable(trainer)) or {"loss": 0.0})
    trainer.evaluate()
    for path, average in kept[STEPS].items():
        np.testing.assert_array_equal(seen[0][path], average)
        np.testing.assert_array_equal(trainable(trainer)[path], weights[STEPS][path])


def test_a_resumed_run_continues_the_average_exactly(reverse_data, tmp_path):
    """A run saved at step 2 and resumed to 4 ends with the average of the run that went
    on to 4 without stopping (that same trainer, stepped on after its save)."""
    whole = averaged_trainer(reverse_data, tmp_path)
    whole.train_on(fixed_reverse_batches(), 2)
    whole.save()
    whole.train_on(fixed_reverse_batches(), 2)
    resumed = averaged_trainer(reverse_data, tmp_path)
    assert resumed.restore() == 2
    resumed.train_on(fixed_reverse_batches(), 2)
    for path, average in averages(whole).items():
        np.testing.assert_allclose(averages(resumed)[path], average, rtol=1e-5, atol=1e-7)


def test_an_average_turned_on_at_resume_starts_from_the_weights(reverse_data, tmp_path, caplog):
    caplog.set_level("INFO")
    plain = averaged_trainer(reverse_data, tmp_path, decay=0.0)
    assert plain.moving_average is None
    plain.train_on(fixed_reverse_batches(), 2)
    plain.save()
    assert not holds_average(tf.train.latest_checkpoint(str(tmp_path)))
    resumed = averaged_trainer(reverse_data, tmp_path)
    assert resumed.restore() == 2
    assert all(np.array_equal(averages(resumed)[p], w) for p, w in trainable(resumed).items())
    assert any("holds no moving average" in r.getMessage() for r in caplog.records)


def test_readers_take_the_average_unless_told_otherwise(averaged_run):
    trainer, _, weights, kept = averaged_run
    output_dir = trainer.experiment.output_dir
    path = tf.train.latest_checkpoint(output_dir)
    assert path.endswith(f"ckpt-{STEPS}") and holds_average(path)
    assert any(name.startswith(AVERAGE + "/") for name, _ in tf.train.list_variables(path))
    for averaged, expected in ((True, kept[STEPS]), (False, weights[STEPS])):
        model = trainer.experiment.build_model()
        restore_model(model, output_dir, averaged=averaged)
        restored = {p: v.numpy() for p, v in model_variables(model).items() if v.trainable}
        for key, value in expected.items():
            np.testing.assert_array_equal(restored[key], value)


def test_the_decoder_decodes_the_average_and_raw_weights_on_request(tmp_path, capsys):
    """A run trained with an average: t2t-decoder's output is the average's, and
    --raw_weights decodes the weights as trained (their outputs' scores differ);
    t2t-avg-all averages the averages too."""
    data_dir, output_dir = train_tiny(tmp_path)
    assert t2t_trainer.main(COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--train_steps=8",
        "--schedule=train", "--hparams=moving_average_decay=0.5"]) == 0  # no dev eval: unread
    assert json.loads((tmp_path / "train" / "hparams.json").read_text())[
        "hparams"]["moving_average_decay"] == 0.5
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n1 0 0 1\n")
    scores = {}
    for name, flags in (("average", []), ("raw", ["--raw_weights"])):
        out = tmp_path / f"{name}.txt"
        assert t2t_decoder.main([f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
                                 f"--decode_from_file={source}", f"--decode_to_file={out}",
                                 "--decode_hparams=return_beams=true,write_beam_scores=true,"
                                 "beam_size=2"] + flags) == 0
        scores[name] = out.read_text()
    assert scores["average"] != scores["raw"]
    # ckpt-4, of before the average, is not averaged with ckpt-8: said, and --n=1 is fine.
    avg = ["--model_dir=" + output_dir, f"--output_dir={tmp_path / 'avg'}"]
    assert t2t_avg_all.main(avg + ["--n=2"]) == 2
    assert "holds a moving average of the weights and" in capsys.readouterr().err
    assert t2t_avg_all.main(avg + ["--n=1"]) == 0
    assert holds_average(tf.train.latest_checkpoint(str(tmp_path / "avg")))


def test_sweep_decode_sweeps_the_average_or_the_raw_weights(tmp_path, capsys, monkeypatch):
    """benchmarks/sweep_decode.py reads what t2t-decoder reads: the averages, or with
    --raw_weights the weights as trained (one run measures both, docs/RESULTS.md)."""
    from t2t_lite.training import checkpoints

    data_dir, output_dir = train_tiny(tmp_path)
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n1 0\n")
    read_averages = []
    restore = checkpoints.restore_model

    def spied(*args, averaged=True, **kwargs):
        read_averages.append(averaged)
        return restore(*args, averaged=averaged, **kwargs)

    monkeypatch.setattr(checkpoints, "restore_model", spied)
    sweep = [f"--output_dir={output_dir}", f"--source={source}", f"--reference={source}",
             "--averages=1", "--beams=1", "--alphas=0.6"]
    sweep_decode_lines(monkeypatch, capsys, sweep)
    sweep_decode_lines(monkeypatch, capsys, sweep + ["--raw_weights"])
    assert read_averages == [True, False]


def test_a_decay_outside_0_1_is_refused_by_its_range(reverse_data, tmp_path):
    with pytest.raises(ValueError, match="moving_average_decay"):
        training_hparams("moving_average_decay=1.0")
