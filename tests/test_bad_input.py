"""Every bad input we know of, in one table (the README's "Reliability" list): each
command exits with status 2 and one error line that says what is wrong and what to do,
and leaves every file it was given, the output dir included, as it was."""
import dataclasses
import gzip
import json
import os
import shutil
from typing import Callable

import pytest
import tensorflow as tf

from cli_helpers import COMMON, USR_DIR, train_tiny
from t2t_lite.bin import (t2t_attention, t2t_avg_all, t2t_bleu, t2t_datagen, t2t_decoder,
                          t2t_exporter, t2t_parse_eval, t2t_trainer)


@dataclasses.dataclass
class Workspace:
    root: str
    data_dir: str
    output_dir: str
    usr_dirs: str  # outside root: importing writes __pycache__ beside the code

    def path(self, name: str) -> str:
        return os.path.join(self.root, "files", name)


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    data_dir, output_dir = train_tiny(root)
    files = root / "files"
    files.mkdir()
    (files / "in.txt").write_text("0 1 1\n1 0\n")
    (files / "one_line.txt").write_text("1 1 0\n")
    (files / "latin1.txt").write_bytes(b"0 1\ncaf\xe9\n")
    (files / "empty.txt").write_text("")
    (files / "no_tab.txt").write_text("0 1\t1 0\n0 1 1\n")
    (files / "gold.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks)))\n")
    (files / "unbalanced.trees").write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks))\n")
    (files / "two.trees").write_text("(S (NP (NN a)))\n(S (NP (NN b)))\n")
    with gzip.open(files / "latin1.gz", "wb") as f:
        f.write(b"ok\n\xff\n")
    (root / "empty_dir").mkdir()
    corrupt = root / "truncated_data"
    shutil.copytree(data_dir, corrupt)
    shard = corrupt / "tiny_reverse_binary-train-00003-of-00010"
    shard.write_bytes(shard.read_bytes()[:-5])
    (root / "broken_run").mkdir()
    (root / "broken_run" / "hparams.json").write_text("{not json")
    (files / "nul.txt").write_bytes(b"0 1\n1\x000\n")
    (files / "lone_cr.txt").write_bytes(b"0 1\n1 0\r1\n")
    (files / "plain.gz").write_text("0 1\n1 0\n")
    (files / "packed.trees").write_bytes(gzip.compress(b"(S (NN a))\n"))
    (files / "damaged.gz").write_bytes(gzip.compress(b"0 1\n" * 1000)[:-20])
    (files / "a_folder").mkdir()
    (files / "huge_line.txt").write_text("0 1\n" + "1 " * (1 << 20) + "\n")
    (files / "long_target.txt").write_text("0 1\t1 0\n1\t" + "0 " * 300 + "\n")
    (files / "deep.trees").write_text("(S (NN a))\n" + "(X " * 5000 + "(NN a)" + ")" * 5000 + "\n")
    usr_dirs = tmp_path_factory.mktemp("bad_usr_dirs")
    for name, source in (("usr_raises", "import os\nraise RuntimeError('no config found')\n"),
                         ("usr_syntax", "def my_hparams(:\n    pass\n")):
        (usr_dirs / name).mkdir()
        (usr_dirs / name / "__init__.py").write_text(source)
    (root / "export_taken").mkdir()
    (root / "export_taken" / "saved_model.pb").write_text("an earlier export")
    for name, dropout in (("edited_run", 2.0), ("nan_run", float("nan"))):
        (root / name).mkdir()
        record = json.loads((root / "train" / "hparams.json").read_text())
        record["hparams"]["layer_prepostprocess_dropout"] = dropout  # edited by hand
        (root / name / "hparams.json").write_text(json.dumps(record))
    damaged_runs(root, output_dir)
    tf.train.Checkpoint(model=tf.Module()).write(str(files / "other_model" / "ckpt-1"))
    other = tf.Module()
    other.w = tf.Variable([1.0])
    tf.train.Checkpoint(model=other).write(str(files / "other_model" / "ckpt-2"))
    shutil.copytree(output_dir, root / "train_copy")
    assert t2t_avg_all.main([f"--model_dir={output_dir}", f"--output_dir={root}/average"]) == 0
    return Workspace(str(root), data_dir, output_dir, str(usr_dirs))


def damaged_runs(root, output_dir) -> None:
    """Copies of the trained run (checkpoints 2 and 4) with their checkpoint state damaged."""
    def copy(name):
        shutil.copytree(output_dir, root / name)
        return root / name
    for name in ("missing_ckpt", "no_index"):
        copy(name)
    for path in (root / "missing_ckpt").glob("ckpt-4.*"):
        path.unlink()
    (root / "no_index" / "checkpoint").unlink()
    data = copy("truncated_ckpt") / "ckpt-4.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:-5])
    (copy("garbage_index") / "checkpoint").write_text("garbage {{{")
    record = copy("edited_hparams") / "hparams.json"
    record.write_text(record.read_text().replace('"num_heads": 4', '"num_heads": 8'))


def run_dir(ws):
    return [f"--output_dir={ws.output_dir}", f"--t2t_usr_dir={USR_DIR}"]


def train_args(ws, *flags):
    return COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.output_dir}",
                     "--train_steps=6", *flags]


def new_run_args(ws, *flags):
    """Flags for a run in a folder that does not exist yet (and must not after)."""
    return COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/new_run",
                     "--train_steps=6", *flags]


@dataclasses.dataclass
class Case:
    name: str
    main: Callable
    argv: Callable[[Workspace], list[str]]
    says: str  # found in the error line
    env: dict[str, str] = dataclasses.field(default_factory=dict)


CASES = [
    # Registry names and flags.
    Case("unknown problem", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--problem=nope"), "unknown problem 'nope'"),
    Case("unknown model", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--model=transfomer"), "unknown model 'transfomer'"),
    Case("unknown hparams set", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams_set=tiny"), "unknown hparams set 'tiny'"),
    Case("unknown datagen problem", t2t_datagen.main,
         lambda ws: ["--problem=translate_ende_wmt33k", f"--data_dir={ws.data_dir}"],
         "unknown problem 'translate_ende_wmt33k'"),
    Case("unknown flag", t2t_trainer.main,
         lambda ws: train_args(ws, "--train_stpes=3"), "unrecognized arguments: --train_stpes"),
    Case("T2T flag done another way", t2t_trainer.main,
         lambda ws: train_args(ws, "--worker_gpu=8"), "CUDA_VISIBLE_DEVICES"),
    Case("unknown schedule", t2t_trainer.main,
         lambda ws: train_args(ws, "--schedule=continuous_eval"), "invalid choice"),
    Case("usr_dir not a package", t2t_trainer.main,
         lambda ws: train_args(ws, f"--t2t_usr_dir={ws.path('in.txt')}"),
         "is not a Python package"),
    # --hparams strings.
    Case("unknown hparam", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=hiden_size=64"), "unknown hparam 'hiden_size'"),
    Case("hparam of the wrong type", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=num_heads=two"), "'num_heads' expects an int"),
    Case("malformed hparams", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=num_heads"), "malformed hparams string"),
    Case("bad decode hparam value", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=beam_size=0"], "'beam_size' must be >= 1"),
    Case("unknown decode hparam", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=beams=3"], "unknown hparam 'beams'"),
    # Output dirs that disagree with the request.
    Case("output dir of another problem", t2t_trainer.main,
         lambda ws: train_args(ws, "--problem=algorithmic_identity_decimal40"),
         "holds a 'tiny_reverse_binary' run"),
    Case("model shape changed under a checkpoint", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=hidden_size=64"), "hidden_size"),
    Case("output dir with unreadable hparams.json", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.root}/broken_run",
                     f"--decode_from_file={ws.path('in.txt')}"], "fix or remove it"),
    Case("decoding a dir no trainer wrote", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.root}/empty_dir",
                     f"--decode_from_file={ws.path('in.txt')}"],
         "must be a directory written by t2t-trainer"),
    Case("evaluating a dir no trainer wrote", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/empty_dir",
                              "--schedule=evaluate"], "must be a directory written by"),
    # Missing or unreadable data and files.
    Case("no data in data_dir", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.root}/empty_dir",
                              f"--output_dir={ws.root}/fresh_run"], "t2t-datagen"),
    Case("truncated training shard", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.root}/truncated_data",
                              f"--output_dir={ws.root}/fresh_run"],
         "tiny_reverse_binary-train-00003-of-00010 is corrupt or truncated"),
    Case("missing --data_dir", t2t_trainer.main,
         lambda ws: COMMON + [f"--output_dir={ws.output_dir}"], "--data_dir is required"),
    Case("generate_data without a problem", t2t_trainer.main,
         lambda ws: [f"--data_dir={ws.data_dir}", f"--output_dir={ws.output_dir}",
                     "--generate_data"], "--problem is required with --generate_data"),
    Case("missing input file", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('absent.txt')}"],
         "no such file"),
    Case("non-UTF-8 input line", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('latin1.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}"],
         "line 2 is not valid UTF-8"),
    Case("references not line-aligned", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_reference={ws.path('one_line.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}"],
         "must be line-aligned"),
    Case("score file line without a tab", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--score_file={ws.path('no_tab.txt')}"],
         "line 2 has 0 tabs"),
    Case("missing checkpoint", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--checkpoint_path={ws.path('ckpt-99')}"], "not found"),
    Case("checkpoint of another model", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--checkpoint_path={ws.path('other_model/ckpt-2')}"],
         "does not hold this model's weights"),
    # Contradicting flags.
    Case("two inputs to decode", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_interactive"], "give one of"),
    Case("reference without a file to decode", t2t_decoder.main,
         lambda ws: run_dir(ws) + ["--decode_interactive",
                                   f"--decode_reference={ws.path('in.txt')}"],
         "--decode_reference needs --decode_from_file"),
    Case("decode shards", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_shards=4"], "one t2t-decoder per part"),
    # Scoring.
    Case("BLEU line counts differ", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}",
                     f"--reference={ws.path('one_line.txt')}"], "line counts differ"),
    Case("BLEU of an empty translation", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('empty.txt')}",
                     f"--reference={ws.path('one_line.txt')}"], "line counts differ"),
    Case("BLEU of a non-UTF-8 gz reference", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}",
                     f"--reference={ws.path('latin1.gz')}"], "line 2 is not valid UTF-8"),
    Case("BLEU bad length buckets", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}", f"--reference={ws.path('in.txt')}",
                     f"--source={ws.path('in.txt')}", "--length_buckets=10,5"],
         "length bucket bounds must be increasing"),
    Case("tree with unbalanced brackets", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}",
                     f"--test={ws.path('unbalanced.trees')}"], "unbalanced"),
    Case("tree files of different lengths", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}", f"--test={ws.path('two.trees')}"],
         "gold has 1 trees but test has 2"),
    Case("non-UTF-8 tree file", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}", f"--test={ws.path('latin1.txt')}"],
         "line 2 is not valid UTF-8"),
    # Checkpoint averaging and export.
    Case("averaging a dir without checkpoints", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.root}/empty_dir", f"--output_dir={ws.root}/avg"],
         "no 'checkpoint' state file"),
    Case("averaging into the model dir", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", f"--output_dir={ws.output_dir}"],
         "which t2t-avg-all reads"),
    Case("averaging no checkpoints", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", f"--output_dir={ws.root}/avg", "--n=0"],
         "--n: must be an int >= 1"),
    Case("export into a used folder", t2t_exporter.main,
         lambda ws: run_dir(ws) + [f"--export_dir={ws.root}/export_taken"],
         "holds files t2t-exporter did not write"),
    # Declared ranges (issue 24).
    Case("hparam out of range", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=layer_prepostprocess_dropout=1.5"),
         "--hparams: hparam 'layer_prepostprocess_dropout' must be in [0, 1), got 1.5"),
    Case("NaN hparam", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=learning_rate=nan"),
         "hparam 'learning_rate' must be finite and > 0, got nan"),
    Case("infinite hparam", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=label_smoothing=1e999"),
         "hparam 'label_smoothing' must be finite and in [0, 1), got inf"),
    Case("hparam not among its choices", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=optimizer=adamw"),
         "hparam 'optimizer' must be one of 'adam', 'sgd', 'adadelta', got 'adamw'"),
    Case("heads that do not split hidden_size", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=num_heads=3"),
         "hidden_size=32 is not divisible by num_heads=3"),
    Case("hparams.json edited out of range", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.root}/edited_run", f"--t2t_usr_dir={USR_DIR}",
                     f"--decode_from_file={ws.path('in.txt')}"],
         "edited_run: hparam 'layer_prepostprocess_dropout' must be in [0, 1), got 2.0"),
    Case("NaN in hparams.json", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/nan_run"],
         "nan_run: hparam 'layer_prepostprocess_dropout' must be finite and in [0, 1)"),
    Case("decode alpha infinite", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=alpha=inf"],
         "--decode_hparams: hparam 'alpha' must be finite and >= 0, got inf"),
    Case("negative decode extra_length", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=extra_length=-5"],
         "hparam 'extra_length' must be >= 0, got -5"),
    Case("dev decode hparam out of range", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--decode_eval_every_steps=2",
                                 "--decode_eval_hparams=beam_size=0"),
         "--decode_eval_hparams: hparam 'beam_size' must be >= 1, got 0"),
    Case("zero train steps", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--train_steps=0"),
         "argument --train_steps: must be an int >= 1, got '0'"),
    Case("negative keep_checkpoint_max", t2t_trainer.main,
         lambda ws: train_args(ws, "--keep_checkpoint_max=-1"),
         "argument --keep_checkpoint_max: must be an int >= 1, got '-1'"),
    Case("NaN train minutes", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--train_minutes=nan"),
         "argument --train_minutes: must be a finite number >= 0, got 'nan'"),
    Case("zero save_checkpoints_secs", t2t_trainer.main,
         lambda ws: train_args(ws, "--save_checkpoints_secs=0"),
         "argument --save_checkpoints_secs: must be a finite number > 0, got '0'"),
    Case("evaluating every 0 steps", t2t_trainer.main,
         lambda ws: train_args(ws, "--eval_every_steps=0"),
         "must be an int >= 1, got '0'"),
    Case("parse-eval length cut-off of 0", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}", f"--test={ws.path('gold.trees')}",
                     "--max_length=0"], "argument --max_length: must be an int >= 1"),
    # Outputs never destroy an input, a run or a user's file (issue 24).
    Case("decode output is the input", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('in.txt')}"],
         "is also read as --decode_from_file"),
    Case("score output is the score file", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--score_file={ws.path('no_tab.txt')}",
                                   f"--decode_to_file={ws.path('no_tab.txt')}"],
         "is also read as --score_file"),
    Case("decode output over a user's file", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('one_line.txt')}"],
         "exists and was not written by t2t-decoder"),
    Case("decode output inside a run folder", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.output_dir}/out.txt"],
         "inside the run folder"),
    Case("decode output is a folder", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.root}/empty_dir"],
         "is a folder; give a file name"),
    Case("decode output below a file", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('in.txt')}/out.txt"],
         "is a file, not a folder"),
    Case("training into a folder of a user's files", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/files"],
         "holds files t2t-trainer did not write"),
    Case("training inside another run", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.output_dir}/sub"],
         "inside the run folder"),
    Case("training into an average", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/average"],
         "holds the output of t2t-avg-all"),
    Case("averaging over another run's average", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.root}/train_copy", f"--output_dir={ws.root}/average"],
         "another output of it"),
    Case("attention pictures into a user's folder", t2t_attention.main,
         lambda ws: run_dir(ws) + ["--input=0 1", f"--to={ws.root}/files"],
         "holds files t2t-attention did not write"),
    Case("export inside another run", t2t_exporter.main,
         lambda ws: run_dir(ws) + [f"--export_dir={ws.root}/broken_run/export"],
         "inside the run folder"),
    Case("datagen into a run folder", t2t_datagen.main,
         lambda ws: ["--problem=tiny_reverse_binary", f"--t2t_usr_dir={USR_DIR}",
                     f"--data_dir={ws.output_dir}"], "inside the run folder"),
    Case("averaging into an empty --output_dir", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", "--output_dir="],
         "--output_dir is empty"),
    Case("BLEU reference is a folder", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}", f"--reference={ws.root}/empty_dir"],
         "is a folder; give a file"),
    # Strict input text and no tracebacks (issue 24).
    Case("NUL in an input line", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('nul.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}"],
         "nul.txt:2: control character U+0000 (NUL) at column 2"),
    Case("carriage return inside a line", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('lone_cr.txt')}",
                     f"--reference={ws.path('in.txt')}"],
         "lone_cr.txt:2: control character U+000D (carriage return)"),
    Case("plain file named .gz", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}",
                     f"--reference={ws.path('plain.gz')}"],
         "plain.gz is named .gz but is not gzip data"),
    Case("gzip file not named .gz", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('packed.trees')}", f"--test={ws.path('gold.trees')}"],
         "packed.trees holds gzip data but is not named .gz"),
    Case("damaged gzip file", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}",
                     f"--reference={ws.path('damaged.gz')}"], "is damaged gzip data"),
    Case("folder given as the input file", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('a_folder')}"],
         "is a folder; give a file"),
    Case("input line over a megabyte", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('huge_line.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}"],
         "huge_line.txt:2: line is longer than 1048576 bytes"),
    Case("score file target longer than the model takes", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--score_file={ws.path('long_target.txt')}"],
         "long_target.txt:2: the target has 300 tokens"),
    Case("usr_dir that raises", t2t_trainer.main,
         lambda ws: train_args(ws, f"--t2t_usr_dir={ws.usr_dirs}/usr_raises"),
         "usr_raises/__init__.py:2: RuntimeError: no config found"),
    Case("usr_dir with a syntax error", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.output_dir}", f"--t2t_usr_dir={ws.usr_dirs}/usr_syntax",
                     f"--decode_from_file={ws.path('in.txt')}"],
         "usr_syntax/__init__.py:1: SyntaxError: invalid syntax"),
    Case("malformed TF_CONFIG", t2t_trainer.main, lambda ws: train_args(ws),
         "TF_CONFIG is not JSON", env={"TF_CONFIG": "{'cluster': 1}"}),
    Case("TF_CONFIG task outside its cluster", t2t_trainer.main, lambda ws: train_args(ws),
         "TF_CONFIG: task index 2 is not one of the 1 worker addresses",
         env={"TF_CONFIG": '{"cluster": {"worker": ["localhost:2222"]}, '
                           '"task": {"type": "worker", "index": 2}}'}),
    Case("trees nested too deep", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('deep.trees')}", f"--test={ws.path('deep.trees')}"],
         "deep.trees:2: brackets nested more than 200 deep"),
    # Checkpoint state (issue 24).
    Case("index names a missing checkpoint", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/missing_ckpt"),
         "missing_ckpt/ckpt-4, which is missing"),
    Case("truncated checkpoint data", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.root}/truncated_ckpt", f"--t2t_usr_dir={USR_DIR}",
                     f"--decode_from_file={ws.path('in.txt')}"],
         "ckpt-4.data-00000-of-00001 is truncated or corrupt"),
    Case("resuming beside a truncated checkpoint", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/truncated_ckpt"),
         "truncated_ckpt/ckpt-2: move"),
    Case("checkpoints without an index", t2t_decoder.main,
         lambda ws: [f"--output_dir={ws.root}/no_index", f"--t2t_usr_dir={USR_DIR}",
                     f"--decode_from_file={ws.path('in.txt')}"],
         "holds checkpoints but no index"),
    Case("garbage checkpoint index", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/garbage_index"),
         "garbage_index/checkpoint is unreadable"),
    Case("hparams.json edited under a checkpoint", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/edited_hparams"),
         "hparams.json says num_heads=8 but checkpoint"),
    Case("averaging a damaged checkpoint", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.root}/truncated_ckpt", f"--output_dir={ws.root}/avg"],
         "truncated_ckpt/ckpt-4 is damaged"),
    Case("exporting a truncated checkpoint", t2t_exporter.main,
         lambda ws: [f"--output_dir={ws.root}/truncated_ckpt", f"--t2t_usr_dir={USR_DIR}",
                     f"--export_dir={ws.root}/export_new"], "truncated_ckpt/ckpt-4 is damaged"),
]


def snapshot(root: str) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime) by relative path."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            stat = os.stat(path)
            found[os.path.relpath(path, root)] = (stat.st_size, stat.st_mtime_ns)
    return found


def test_at_least_thirty_cases_with_distinct_names():
    assert len(CASES) >= 30 and len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_fails_in_one_line_and_changes_nothing(ws, case, capsys, monkeypatch):
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    before = snapshot(ws.root)
    try:
        code = case.main(case.argv(ws))
    except SystemExit as exit_info:  # argparse's own errors
        code = exit_info.code
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert code == 2
    assert len(errors) == 1 and case.says in errors[0], errors
    assert snapshot(ws.root) == before


def test_the_readme_lists_every_case():
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "README.md")
    text = open(readme, encoding="utf-8").read()
    section = text[text.index("## Reliability"):text.index("## Layout")]
    assert [case.name for case in CASES if f"| {case.name} |" not in section] == []
