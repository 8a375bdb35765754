"""Checkpoint state is checked, not trusted (t2t_lite/training/checkpoint_state.py):
an index naming a missing checkpoint, checkpoints without an index, a truncated or
unreadable checkpoint, hparams.json edited under a checkpoint. The trainer never
starts again from step 0 beside checkpoints nor points the index at a worse one;
the decoder, t2t-avg-all and t2t-exporter name the damaged file and the newest good
checkpoint. (The refusals that change no file are rows of test_bad_input.py too.)"""
import json
import logging
import os

import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, error_of, snapshot, train_tiny
from t2t_lite.bin import t2t_avg_all, t2t_decoder, t2t_exporter, t2t_trainer
from t2t_lite.hparam import HParams
from t2t_lite.models.luong import LSTMSeq2seqAttentionLuong
from t2t_lite.models.recurrent import RecurrentSeq2Seq
from t2t_lite.models.transformer import Transformer
from t2t_lite.training import checkpoint_state


@pytest.fixture
def run(tmp_path):
    """(data_dir, output_dir) of a tiny run with checkpoints 2 and 4."""
    return train_tiny(tmp_path)


def truncate(prefix: str, size_change: int = -5) -> None:
    data = prefix + ".data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) + size_change)


def remove(prefix: str) -> None:
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(os.path.basename(prefix) + "."):
            os.remove(os.path.join(os.path.dirname(prefix), name))


def edit_hparams(output_dir: str, **values) -> None:
    path = os.path.join(output_dir, "hparams.json")
    with open(path) as f:
        record = json.load(f)
    record["hparams"].update(values)
    with open(path, "w") as f:
        json.dump(record, f)


def train_args(data_dir, output_dir, steps=6):
    return COMMON + [f"--data_dir={data_dir}", f"--output_dir={output_dir}",
                     f"--train_steps={steps}", "--save_checkpoints_steps=2",
                     "--log_every_steps=100", "--schedule=train"]


def decode_args(output_dir, tmp_path, *flags):
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n")
    return [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
            f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out.txt'}",
            *flags]


def refused_unchanged(capsys, main, argv, root, *says):
    """``main(argv)`` fails in one line saying each of ``says``; no file under ``root``
    changes."""
    before = snapshot(root)
    line = error_of(capsys, main, argv)
    for text in says:
        assert text in line, line
    assert snapshot(root) == before
    return line


# ----- the trainer -----
def test_trainer_refuses_an_index_naming_a_missing_checkpoint(run, tmp_path, capsys):
    data_dir, output_dir = run
    remove(f"{output_dir}/ckpt-4")
    refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                      f"names {output_dir}/ckpt-4, which is missing",
                      f"the newest good checkpoint is {output_dir}/ckpt-2",
                      f"remove {output_dir}/checkpoint")


def test_trainer_refuses_a_truncated_checkpoint(run, tmp_path, capsys):
    data_dir, output_dir = run
    truncate(f"{output_dir}/ckpt-4")
    refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                      f"checkpoint {output_dir}/ckpt-4 is damaged",
                      "ckpt-4.data-00000-of-00001 is truncated or corrupt",
                      f"the newest good checkpoint is {output_dir}/ckpt-2")


def test_trainer_refuses_a_checkpoint_with_a_flipped_byte(run, tmp_path, capsys):
    data_dir, output_dir = run
    data = f"{output_dir}/ckpt-4.data-00000-of-00001"
    content = bytearray(open(data, "rb").read())
    content[len(content) // 2] ^= 0xFF
    open(data, "wb").write(bytes(content))
    refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                      "ckpt-4.data-00000-of-00001 is truncated or corrupt", "ckpt-2")


def test_trainer_refuses_a_garbage_index(run, tmp_path, capsys):
    data_dir, output_dir = run
    for garbage in (b"garbage {{{", b"", b"\xff\xfe\x00"):
        open(f"{output_dir}/checkpoint", "wb").write(garbage)
        refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                          f"the checkpoint index {output_dir}/checkpoint is unreadable",
                          f"the newest good checkpoint is {output_dir}/ckpt-4")


def test_trainer_resumes_from_the_newest_checkpoint_without_an_index(run, capsys, caplog):
    """What a kill between checkpoint 4's files and the index's update leaves; its input
    state damaged too, which is a warning, not a refusal. (One resumed run for both: each
    resume traces a training step, 3.5 s CPU; each half of the checks fails on its own.)"""
    data_dir, output_dir = run
    os.remove(f"{output_dir}/checkpoint")
    truncate(f"{output_dir}/input_state/worker_0/ckpt-4")
    with caplog.at_level(logging.INFO):
        assert t2t_trainer.main(train_args(data_dir, output_dir)) == 0
    assert f"resumed from {output_dir}/ckpt-4 at step 4" in caplog.text
    assert "checkpoint is missing" in caplog.text
    assert "no usable input state for step 4" in caplog.text
    assert "is truncated or corrupt" in caplog.text
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["step"] == 6
    state = tf.train.get_checkpoint_state(output_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "ckpt-2", "ckpt-4", "ckpt-6"]


def test_trainer_without_an_index_refuses_a_damaged_newest(run, tmp_path, capsys):
    data_dir, output_dir = run
    os.remove(f"{output_dir}/checkpoint")
    truncate(f"{output_dir}/ckpt-4", -1000)
    refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                      f"checkpoint {output_dir}/ckpt-4 is damaged",
                      f"the newest good checkpoint is {output_dir}/ckpt-2")


def test_trainer_refuses_hparams_json_edited_under_a_checkpoint(run, tmp_path, capsys):
    data_dir, output_dir = run
    edit_hparams(output_dir, num_heads=8)
    refused_unchanged(capsys, t2t_trainer.main, train_args(data_dir, output_dir), tmp_path,
                      f"{output_dir}/hparams.json says num_heads=8 but checkpoint "
                      f"{output_dir}/ckpt-4 was trained with num_heads=4")


# ----- decoder, t2t-avg-all, t2t-exporter -----
def test_decoder_names_the_damage_and_the_checkpoint_to_use(run, tmp_path, capsys):
    _, output_dir = run
    truncate(f"{output_dir}/ckpt-4")
    refused_unchanged(capsys, t2t_decoder.main, decode_args(output_dir, tmp_path), output_dir,
                      f"checkpoint {output_dir}/ckpt-4 is damaged",
                      f"pass --checkpoint_path={output_dir}/ckpt-2")
    refused_unchanged(capsys, t2t_decoder.main, decode_args(
        output_dir, tmp_path, f"--checkpoint_path={output_dir}/ckpt-4"), output_dir,
        "ckpt-4.data-00000-of-00001 is truncated or corrupt", f"{output_dir}/ckpt-2")
    assert t2t_decoder.main(decode_args(output_dir, tmp_path,
                                        f"--checkpoint_path={output_dir}/ckpt-2")) == 0
    remove(f"{output_dir}/ckpt-4")
    refused_unchanged(capsys, t2t_decoder.main, decode_args(output_dir, tmp_path), output_dir,
                      f"names {output_dir}/ckpt-4, which is missing",
                      f"pass --checkpoint_path={output_dir}/ckpt-2")
    os.remove(f"{output_dir}/checkpoint")
    refused_unchanged(capsys, t2t_decoder.main, decode_args(output_dir, tmp_path), output_dir,
                      "holds checkpoints but no index",
                      f"pass --checkpoint_path={output_dir}/ckpt-2")


def test_decoder_refuses_an_unreadable_checkpoint_index_file(run, tmp_path, capsys):
    _, output_dir = run
    with open(f"{output_dir}/ckpt-4.index", "r+b") as f:
        f.truncate(100)
    refused_unchanged(capsys, t2t_decoder.main, decode_args(output_dir, tmp_path), output_dir,
                      f"{output_dir}/ckpt-4.index is unreadable",
                      f"pass --checkpoint_path={output_dir}/ckpt-2")


def test_avg_all_refuses_a_damaged_source_and_averages_up_to_a_good_one(run, tmp_path,
                                                                        capsys):
    _, output_dir = run
    truncate(f"{output_dir}/ckpt-4")
    average = [f"--model_dir={output_dir}", f"--output_dir={tmp_path / 'avg'}", "--n=2"]
    refused_unchanged(capsys, t2t_avg_all.main, average, tmp_path,
                      f"checkpoint {output_dir}/ckpt-4 is damaged",
                      f"pass --checkpoint_path={output_dir}/ckpt-2")
    assert t2t_avg_all.main(average + [f"--checkpoint_path={output_dir}/ckpt-2"]) == 0
    assert tf.train.latest_checkpoint(str(tmp_path / "avg")).endswith("ckpt-2")


def test_avg_all_refuses_a_damaged_older_source(run, tmp_path, capsys):
    _, output_dir = run
    truncate(f"{output_dir}/ckpt-2")
    refused_unchanged(capsys, t2t_avg_all.main, [
        f"--model_dir={output_dir}", f"--output_dir={tmp_path / 'avg'}", "--n=2"], tmp_path,
        f"checkpoint {output_dir}/ckpt-2 is damaged", "pass --n=1 to average only")
    remove(f"{output_dir}/ckpt-2")
    refused_unchanged(capsys, t2t_avg_all.main, [
        f"--model_dir={output_dir}", f"--output_dir={tmp_path / 'avg'}", "--n=2"], tmp_path,
        f"checkpoint {output_dir}/ckpt-2 is damaged (no {output_dir}/ckpt-2.index)",
        "pass --n=1")


def test_avg_all_keeps_the_architecture_record_and_checks_it(run, tmp_path, capsys):
    _, output_dir = run
    assert t2t_avg_all.main([f"--model_dir={output_dir}",
                             f"--output_dir={tmp_path / 'avg'}"]) == 0
    averaged = tf.train.latest_checkpoint(str(tmp_path / "avg"))
    assert checkpoint_state.recorded_architecture(averaged)["num_heads"] == 4
    edit_hparams(output_dir, num_heads=8)
    refused_unchanged(capsys, t2t_avg_all.main, [
        f"--model_dir={output_dir}", f"--output_dir={tmp_path / 'avg2'}"], tmp_path,
        "hparams.json says num_heads=8 but checkpoint")


def test_exporter_refuses_a_truncated_checkpoint(run, tmp_path, capsys):
    _, output_dir = run
    truncate(f"{output_dir}/ckpt-4")
    refused_unchanged(capsys, t2t_exporter.main, [
        f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
        f"--export_dir={tmp_path / 'export'}"], tmp_path,
        f"checkpoint {output_dir}/ckpt-4 is damaged", f"--checkpoint_path={output_dir}/ckpt-2")


# ----- the architecture a checkpoint records -----
def test_decoder_refuses_hparams_json_edited_under_a_checkpoint(run, tmp_path, capsys):
    _, output_dir = run
    edit_hparams(output_dir, num_heads=2)
    refused_unchanged(capsys, t2t_decoder.main, decode_args(output_dir, tmp_path), output_dir,
                      "hparams.json says num_heads=2 but checkpoint",
                      "was trained with num_heads=4; restore")


def test_a_checkpoint_without_the_record_still_decodes(run, tmp_path):
    """Checkpoints written before the architecture was recorded: the model's weights only."""
    from t2t_lite import experiment as experiment_lib
    from t2t_lite.training.checkpoints import model_variables, restore_model

    _, output_dir = run
    experiment = experiment_lib.resolve(None, None, None, "", None, output_dir)
    model = experiment.build_model()
    restore_model(model, output_dir)
    old = tf.train.Checkpoint(model=model_variables(model)).save(f"{tmp_path}/old/ckpt")
    assert checkpoint_state.recorded_architecture(old) is None
    edit_hparams(output_dir, num_heads=2)  # nothing recorded to disagree with
    assert t2t_decoder.main(decode_args(output_dir, tmp_path, f"--checkpoint_path={old}")) == 0


def test_architecture_keys():
    transformer = Transformer.architecture_keys(HParams(position_embedding="timing"))
    assert {"num_heads", "normalize_before", "hidden_size",
            "shared_embedding_and_softmax_weights"} <= set(transformer)
    assert "layer_prepostprocess_dropout" not in transformer
    assert "reverse_source" in RecurrentSeq2Seq.architecture_keys(HParams())
    assert "dropout" not in RecurrentSeq2Seq.architecture_keys(HParams())
    local = HParams(attention_scope="local_p")
    assert "attention_window" in LSTMSeq2seqAttentionLuong.architecture_keys(local)
    assert "attention_window" not in LSTMSeq2seqAttentionLuong.architecture_keys(
        HParams(attention_scope="global"))


def test_a_checkpoint_the_trainer_rotates_away_while_the_decoder_reads_it(
        run, tmp_path, capsys, caplog, monkeypatch):
    """A trainer keeping --keep_checkpoint_max removes older checkpoints; the decoder
    reads the run's new latest, or (--checkpoint_path given) says so in one line."""
    from t2t_lite.training import checkpoints

    data_dir, output_dir = run
    reading = checkpoints.load_weights

    def rotated_first(model, path, averaged):  # the trainer saved step 6 and removed this one
        monkeypatch.setattr(checkpoints, "load_weights", reading)
        remove(path)
        if path.endswith("ckpt-4"):
            checkpoint_state.write_index(output_dir, [f"{output_dir}/ckpt-2"])
        reading(model, path, averaged)

    monkeypatch.setattr(checkpoints, "load_weights", rotated_first)
    with caplog.at_level(logging.WARNING):
        assert t2t_decoder.main(decode_args(output_dir, tmp_path)) == 0
    assert f"checkpoint {output_dir}/ckpt-4 went while it was read" in caplog.text
    monkeypatch.setattr(checkpoints, "load_weights", rotated_first)
    (tmp_path / "again").mkdir()
    line = error_of(capsys, t2t_decoder.main, decode_args(
        output_dir, tmp_path / "again", f"--checkpoint_path={output_dir}/ckpt-2"))
    assert f"checkpoint {output_dir}/ckpt-2 went while it was read" in line
