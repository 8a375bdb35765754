"""End-to-end: t2t-datagen, t2t-trainer and t2t-decoder as a user runs them."""
import json
import os
import shutil

import pytest

from cli_helpers import COMMON, USR_DIR, error_of, sweep_decode_lines, train_tiny, with_flags
from t2t_lite.bin import t2t_attention, t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.hparam import HParams


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("cli"))


def test_registry_help(capsys):
    assert t2t_trainer.main(["--registry_help", f"--t2t_usr_dir={USR_DIR}"]) == 0
    out = capsys.readouterr().out
    assert "algorithmic_reverse_binary40" in out and "tiny_reverse_binary" in out
    assert "transformer_base" in out and "my_very_small_transformer" in out


def test_datagen_writes_eval_files_and_replaces_only_its_own(capsys, tmp_path):
    argv = ["--problem=tiny_reverse_binary", f"--t2t_usr_dir={USR_DIR}",
            f"--data_dir={tmp_path / 'data'}", f"--eval_files_dir={tmp_path / 'eval'}",
            "--eval_split=dev"]
    assert t2t_datagen.main(argv) == 0
    inputs, targets = (tmp_path / "eval" / f"tiny_reverse_binary.dev.{kind}"
                       for kind in ("inputs", "targets"))
    assert f"eval files: {inputs} {targets}" in capsys.readouterr().out
    lines = inputs.read_text().splitlines()
    assert len(lines) == len(targets.read_text().splitlines()) == 20
    assert [line.split()[::-1] for line in lines] == [
        line.split() for line in targets.read_text().splitlines()]
    assert t2t_datagen.main(argv) == 0  # its own earlier files: replaced
    targets.write_text("edited by hand\n")  # now the user's
    line = error_of(capsys, t2t_datagen.main, argv)
    assert "tiny_reverse_binary.dev.targets exists and was not written by t2t-datagen" in line
    assert targets.read_text() == "edited by hand\n"


def test_trainer_wrote_hparams_and_checkpoints(trained):
    _, output_dir = trained
    record = json.load(open(os.path.join(output_dir, "hparams.json")))
    assert record["problem"] == "tiny_reverse_binary"
    assert record["hparams"]["hidden_size"] == 32
    assert os.path.exists(os.path.join(output_dir, "ckpt-4.index"))


@pytest.mark.parametrize("flag,expected,listed", [
    ("--problem=nope", "unknown problem 'nope'. Registered problems:", "algorithmic_reverse"),
    ("--model=transfomer", "unknown model 'transfomer'. Registered models:", "transformer"),
    ("--hparams_set=tiny", "unknown hparams set 'tiny'. Registered hparams sets:",
     "transformer_tiny"),
])
def test_unknown_names_list_what_exists(capsys, tmp_path, flag, expected, listed):
    flags = {"--problem": "--problem=algorithmic_reverse_binary40",
             "--model": "--model=transformer", "--hparams_set": "--hparams_set=transformer_tiny"}
    flags[flag.split("=")[0]] = flag
    assert t2t_trainer.main(list(flags.values()) + [
        f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert listed in err.split("\n", 1)[1]  # the listing follows the first line


def test_malformed_hparams_name_key_and_type(capsys, trained, tmp_path):
    data_dir, _ = trained
    line = error_of(capsys, t2t_trainer.main, COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={tmp_path}", "--hparams=hidden_size=big"])
    assert "hparam 'hidden_size' expects an int" in line
    assert not os.path.exists(tmp_path / "hparams.json")


def test_missing_data_dir(capsys, tmp_path):
    line = error_of(capsys, t2t_trainer.main, COMMON + [f"--output_dir={tmp_path}"])
    assert "--data_dir is required" in line
    line = error_of(capsys, t2t_trainer.main, COMMON + [
        f"--data_dir={tmp_path / 'empty'}", f"--output_dir={tmp_path / 'out'}"])
    assert "t2t-datagen" in line


def test_output_dir_of_another_shape_is_refused(capsys, trained):
    data_dir, output_dir = trained
    before = open(os.path.join(output_dir, "hparams.json")).read()
    line = error_of(capsys, t2t_trainer.main, COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={output_dir}", "--hparams=hidden_size=64",
        "--train_steps=6"])
    assert "hidden_size=32 -> 64" in line
    assert open(os.path.join(output_dir, "hparams.json")).read() == before


def test_output_dir_of_another_hparams_set_is_refused(capsys, trained):
    # Its saved values would silently win over the set asked for.
    data_dir, output_dir = trained
    line = error_of(capsys, t2t_trainer.main, [
        "--problem=tiny_reverse_binary", "--model=transformer", "--hparams_set=transformer_tiny",
        f"--t2t_usr_dir={USR_DIR}", f"--data_dir={data_dir}", f"--output_dir={output_dir}"])
    assert ("--hparams_set=transformer_tiny but" in line
            and "'my_very_small_transformer' run" in line)


def test_another_vocabulary_is_refused_by_trainer_and_decoder(capsys, trained, tmp_path):
    data_dir, output_dir = trained
    other_data = tmp_path / "other_data"
    shutil.copytree(data_dir, other_data)
    vocab = next(other_data.glob("vocab.*"))
    tokens = vocab.read_text().splitlines()
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]  # same size, other ids
    vocab.write_text("\n".join(tokens) + "\n")
    source = tmp_path / "in.txt"
    source.write_text("0 1\n")
    for main, flags in [(t2t_trainer.main, COMMON + ["--train_steps=6"]),
                        (t2t_decoder.main, [f"--t2t_usr_dir={USR_DIR}",
                                            f"--decode_from_file={source}"])]:
        line = error_of(capsys, main, flags + [f"--data_dir={other_data}",
                                               f"--output_dir={output_dir}"])
        assert f"the vocabulary in {other_data} is not the one {output_dir}" in line
    assert not (tmp_path / "in.txt.decoded").exists()


def test_trainer_scores_dev_decodes_as_the_decoder_would(trained, tmp_path, caplog):
    data_dir, output_dir = trained
    from t2t_lite import registry
    from t2t_lite.decoding.dev_eval import DevDecodeScorer
    from t2t_lite.decoding.settings import decode_settings
    problem = registry.problems["tiny_reverse_binary"]()
    scorer = DevDecodeScorer(problem, data_dir, decode_settings("", problem, HParams(xla=False)),
                             num_examples=5)
    # References come from the dev TFRecords: each is its source reversed.
    assert len(scorer.sources) == 5
    assert all(ref.split() == src.split()[::-1]
               for src, ref in zip(scorer.sources, scorer.references))
    caplog.set_level("INFO")
    assert t2t_trainer.main(COMMON + [
        f"--data_dir={data_dir}", f"--output_dir={tmp_path / 'scored'}", "--train_steps=2",
        "--decode_eval_every_steps=2", "--decode_eval_examples=3",
        "--decode_eval_hparams=beam_size=2",
        # Dev decodes score under --schedule=train too; the dev loss's evaluation
        # (traced apart: 0.6-1.2 of the test's 3.7-5.2 s CPU) guards nothing here.
        "--schedule=train"]) == 0
    logged = [r.getMessage() for r in caplog.records if "dev decodes at step 2" in r.getMessage()]
    assert len(logged) == 1 and "sequence accuracy" in logged[0]


def constant_model_checkpoint(output_dir, folder):
    """A checkpoint of the trained model whose decodes are known without running it.

    The 4-step model decodes every line to "" (it emits EOS at once), which would hide lines
    swapped, dropped or decoded by another model. Here the final decoder LayerNorm outputs a
    constant (gamma 0, beta 10 along channel 0) and, in the tied softmax matrix, channel 0 is
    +1 for the token "1", -1 for EOS and 0 for the others: logits are 10 for "1", -10 for EOS
    and 0 elsewhere at every step, whatever the input. Beam search then never finishes a
    hypothesis and returns "1" repeated up to the maximum decode length.
    """
    import numpy as np
    import tensorflow as tf

    from t2t_lite import experiment as experiment_lib
    from t2t_lite.contracts.reserved_ids import EOS_ID
    from t2t_lite.training.checkpoints import model_variables, restore_model
    experiment = experiment_lib.resolve(None, None, None, "", None, output_dir, must_exist=True)
    model = experiment.build_model()
    restore_model(model, output_dir)
    assert model.hparams.normalize_before and model.hparams.shared_embedding_and_softmax_weights
    hidden = model.hparams.hidden_size
    model.decoder_norm.gamma.assign(np.zeros(hidden, np.float32))
    model.decoder_norm.beta.assign(np.eye(hidden, dtype=np.float32)[0] * 10.0)
    (one,) = experiment.problem.feature_encoders(experiment.data_dir)["targets"].encode("1")
    embeddings = model.softmax_weights.embeddings.numpy()
    embeddings[:, 0] = 0.0
    embeddings[one, 0], embeddings[EOS_ID, 0] = 1.0, -1.0
    model.softmax_weights.embeddings.assign(embeddings)
    return tf.train.Checkpoint(model=model_variables(model)).save(str(folder / "constant"))


@pytest.mark.parametrize("terminal", [True, False])
def test_interactive_decoding_at_a_terminal_says_what_to_do_before_loading(
        terminal, capsys, monkeypatch):
    """TensorFlow and the model take seconds to load: a person at a terminal is
    told at once what to do when the prompt comes; piped input gets no hint."""
    class Stdin:
        def isatty(self):
            return terminal

    shown_at_start = []
    monkeypatch.setattr("sys.stdin", Stdin())
    monkeypatch.setattr("t2t_lite.bin.common.start_tensorflow",
                        lambda verbosity: shown_at_start.append(capsys.readouterr().err))
    t2t_decoder.parser().parse_args(["--output_dir=runs/x", "--decode_interactive"])
    hint = ("t2t-decoder: loading the model of runs/x; then type a sentence at the prompt "
            "(>) and press Enter; Ctrl-D ends\n")
    assert shown_at_start == [hint if terminal else ""]


def test_decode_from_file_writes_each_lines_decode_in_place(trained, tmp_path):
    _, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n\n1 0 0 0 1\n1\n0 0\n")
    target = tmp_path / "out.txt"
    assert t2t_decoder.main([
        f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
        f"--checkpoint_path={constant_model_checkpoint(output_dir, tmp_path / 'constant')}",
        f"--decode_from_file={source}", f"--decode_to_file={target}",
        "--decode_hparams=beam_size=2,alpha=0.6,extra_length=3,batch_size=1"]) == 0
    # One line a batch: a line of n tokens decodes to n + 1 (EOS) + extra_length 3 ones, so
    # every output line shows which input it came from; the empty line stays empty.
    assert target.read_text().split("\n") == [
        " ".join("1" * 7), "", " ".join("1" * 9), " ".join("1" * 5), " ".join("1" * 6), ""]


def test_decode_reference_scores_the_best_beam_when_lines_hold_beams(trained, tmp_path,
                                                                   capsys):
    """return_beams / write_beam_scores write fields; the score is the best beam's."""
    _, output_dir = trained
    checkpoint = constant_model_checkpoint(output_dir, tmp_path / "constant")
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_text("0 1 1\n1\n")
    reference.write_text(" ".join("1" * 7) + "\n" + " ".join("1" * 5) + "\n")
    reports = {}
    for name, fields in (("plain", ""), ("fielded", ",return_beams=true,write_beam_scores=true")):
        assert t2t_decoder.main([
            f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
            f"--checkpoint_path={checkpoint}", f"--decode_from_file={source}",
            f"--decode_to_file={tmp_path / name}", f"--decode_reference={reference}",
            f"--decode_hparams=beam_size=2,extra_length=3,batch_size=1{fields}"]) == 0
        reports[name] = capsys.readouterr().out.splitlines()[-1]
    assert "\t" in (tmp_path / "fielded").read_text()
    assert reports["plain"] == reports["fielded"] == "sequence accuracy 100.00% (2/2)"


def test_a_checkpoint_of_another_problem_is_refused(capsys, trained, tmp_path):
    """Same architecture and vocabulary size, other problem: its weights mean other tokens."""
    data_dir, output_dir = trained
    other = tmp_path / "copy_run"
    assert t2t_datagen.main(["--problem=tiny_copy_binary", f"--t2t_usr_dir={USR_DIR}",
                             f"--data_dir={data_dir}"]) == 0
    assert t2t_trainer.main([
        "--problem=tiny_copy_binary", "--model=transformer",
        "--hparams_set=my_very_small_transformer", f"--t2t_usr_dir={USR_DIR}",
        f"--data_dir={data_dir}", f"--output_dir={other}", "--train_steps=2",
        "--schedule=train"]) == 0
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n")
    line = error_of(capsys, t2t_decoder.main, [
        f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
        f"--checkpoint_path={other}/ckpt-2", f"--decode_from_file={source}",
        f"--decode_to_file={tmp_path / 'out.txt'}"])
    assert (f"checkpoint {other}/ckpt-2 was trained on problem tiny_copy_binary, "
            f"but {output_dir}/hparams.json is a tiny_reverse_binary run") in line
    assert not os.path.exists(tmp_path / "out.txt")


def test_ensemble_decodes_with_every_members_latest_checkpoint(trained, tmp_path, capsys):
    data_dir, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("0 1 1\n1\n")
    member = tmp_path / "member"
    shutil.copytree(output_dir, member)
    constant_model_checkpoint(str(member), member)  # the member's latest checkpoint
    target = tmp_path / "out.txt"
    flags = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
             f"--decode_from_file={source}", f"--decode_to_file={target}",
             "--decode_hparams=beam_size=2,alpha=0.6,extra_length=3,batch_size=1"]
    # Two copies of the constant model: their mean is the constant model's.
    assert t2t_decoder.main(flags + [
        f"--checkpoint_path={constant_model_checkpoint(output_dir, tmp_path / 'constant')}",
        f"--ensemble={member}"]) == 0
    assert target.read_text().split("\n") == [" ".join("1" * 7), " ".join("1" * 5), ""]
    # Members of another vocabulary or problem are refused before decoding.
    other_data = tmp_path / "other_data"
    shutil.copytree(data_dir, other_data)
    vocab = next(other_data.glob("vocab.*"))
    tokens = vocab.read_text().splitlines()
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]
    vocab.write_text("\n".join(tokens) + "\n")
    record = json.loads((member / "hparams.json").read_text())
    # (No fingerprint in its record, as in runs older than the record's fingerprint.)
    (member / "hparams.json").write_text(json.dumps(
        {**record, "data_dir": str(other_data), "vocab_fingerprint": None}))
    target.unlink()
    line = error_of(capsys, t2t_decoder.main, flags + [f"--ensemble={member}"])
    assert f"{member} was trained with another vocabulary" in line and not target.exists()
    line = error_of(capsys, t2t_decoder.main, [f"--output_dir={output_dir}",
                                               f"--score_file={source}", f"--ensemble={member}"])
    assert "--score_file scores one model" in line


def test_sweep_decode_of_an_ensemble_decodes_as_the_decoder_does(trained, tmp_path, capsys,
                                                                monkeypatch):
    """benchmarks/sweep_decode.py --ensemble averages each member as it averages
    --output_dir and decodes their ensemble: scored against t2t-decoder --ensemble's
    outputs on the same checkpoints, every line matches (100%), while each member
    alone matches none (the trained model decodes every line to "", the constant
    one to "1"s up to the maximum length, their ensemble to fewer "1"s)."""
    _, output_dir = trained
    source, reference = tmp_path / "in.txt", tmp_path / "ensemble.txt"
    source.write_text("0 1 1\n1\n1 0\n0 0 1 1 0\n")
    member = tmp_path / "member"
    shutil.copytree(output_dir, member)
    constant_model_checkpoint(str(member), member)  # the member's latest checkpoint
    # The exact rule: at alpha 2 it searches the constant member to its longest output.
    decode = "extra_length=3,batch_size=1,stop_rule=exact"
    assert t2t_decoder.main([f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
                             f"--decode_from_file={source}", f"--decode_to_file={reference}",
                             f"--decode_hparams={decode},beam_size=2,alpha=2.0",
                             f"--ensemble={member}"]) == 0
    assert all(reference.read_text().splitlines())
    sweep = [f"--output_dir={output_dir}", f"--source={source}", f"--reference={reference}",
             "--averages=1", "--beams=2", "--alphas=2.0", f"--decode_hparams={decode}"]
    assert "| 1 | 2 | 2.0 | 100.00 |" in sweep_decode_lines(
        monkeypatch, capsys, sweep + [f"--ensemble={member}"])[2]
    assert "| 1 | 2 | 2.0 | 0.00 |" in sweep_decode_lines(monkeypatch, capsys, sweep)[2]
    assert "| 1 | 2 | 2.0 | 0.00 |" in sweep_decode_lines(
        monkeypatch, capsys, with_flags(sweep, f"--output_dir={member}"))[2]
    with pytest.raises(ValueError, match="one model is named twice"):
        sweep_decode_lines(monkeypatch, capsys, sweep + [f"--ensemble={member},{member}/"])


def test_sweep_decode_up_to_steps_averages_the_checkpoints_ending_there(trained, tmp_path,
                                                                       capsys, monkeypatch):
    """--up_to_steps=S: the checkpoints averaged end at step S, not at the latest.
    The run's latest checkpoint (step 6) is the constant model, step 4 the trained
    one: scored against the constant model's decodes, step 6 matches every line and
    step 4 none; a step with no checkpoint is refused, naming the steps there are."""
    import glob

    from t2t_lite.training.checkpoint_state import write_index

    output_dir = str(tmp_path / "run")  # a copy: the module's run is read by other tests
    shutil.copytree(trained[1], output_dir)
    constant = constant_model_checkpoint(output_dir, tmp_path / "constant")
    for path in glob.glob(f"{constant}.*"):
        shutil.copy(path, os.path.join(output_dir, "ckpt-6" + path[len(constant):]))
    write_index(output_dir, [os.path.join(output_dir, f"ckpt-{step}") for step in (2, 4, 6)])
    source, reference = tmp_path / "in.txt", tmp_path / "constant.txt"
    source.write_text("0 1 1\n1\n1 0\n")
    decode = "extra_length=3,batch_size=1,beam_size=2,alpha=0.6"
    # The constant model's decodes at these settings, as
    # test_decode_from_file_writes_each_lines_decode_in_place has t2t-decoder give them: n + 1
    # + extra_length 3 ones for a line of n tokens (written here, not decoded: 1 s CPU).
    reference.write_text("".join(" ".join("1" * (len(line.split()) + 4)) + "\n"
                                 for line in source.read_text().splitlines()))
    sweep = [f"--output_dir={output_dir}", f"--source={source}", f"--reference={reference}",
             "--averages=1", "--beams=2", "--alphas=0.6", f"--decode_hparams={decode}"]
    rows = sweep_decode_lines(monkeypatch, capsys, sweep + ["--up_to_steps=4,6"])
    assert "| 4 | 1 | 2 | 0.6 | 0.00 |" in rows[2] and "| 6 | 1 | 2 | 0.6 | 100.00 |" in rows[3]
    assert "up to step 6 averaged" in rows[-1]
    assert "| 6 | 1 | 2 | 0.6 | 100.00 |" in sweep_decode_lines(monkeypatch, capsys, sweep)[2]
    with pytest.raises(ValueError, match="no checkpoint at step 5; it has steps 2, 4, 6"):
        sweep_decode_lines(monkeypatch, capsys, sweep + ["--up_to_steps=4,5"])


def test_decode_non_utf8_names_line_and_keeps_output(trained, tmp_path, capsys):
    _, output_dir = trained
    source = tmp_path / "bad.txt"
    source.write_bytes(b"0 1\n1 \xff 0\n")
    target = tmp_path / "out.txt"
    flags = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
             f"--decode_from_file={source}", f"--decode_to_file={target}"]
    assert "line 2 is not valid UTF-8" in error_of(capsys, t2t_decoder.main, flags)
    assert not target.exists()
    # A file the decoder did not write is never its output.
    target.write_text("precious\n")
    source.write_text("0 1\n")
    assert "was not written by t2t-decoder" in error_of(capsys, t2t_decoder.main, flags)
    assert target.read_text() == "precious\n"


def test_attention_pictures_of_a_trained_model(trained, tmp_path, capsys):
    _, output_dir = trained
    out = tmp_path / "pictures"
    assert t2t_attention.main([f"--output_dir={output_dir}", "--input=0 1 1", f"--to={out}",
                               f"--t2t_usr_dir={USR_DIR}"]) == 0
    printed = capsys.readouterr().out
    assert "decoded:" in printed and "index.html" in printed
    names = sorted(os.listdir(out))
    assert "index.html" in names
    assert {name.split("_layer")[0] for name in names if name.endswith(".png")} == {
        "encoder_self", "decoder_self", "encoder_decoder"}
    assert "--input is empty" in error_of(capsys, t2t_attention.main, [
        f"--output_dir={output_dir}", "--input= ", f"--to={out}", f"--t2t_usr_dir={USR_DIR}"])
