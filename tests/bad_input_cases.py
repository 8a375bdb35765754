"""The bad-input table (docs/RELIABILITY.md, "Every bad input"): each row a command, its
flags in a workspace (tests/test_bad_input.py builds it) and what its one error line
says. Rows are added here; the tests that run them are in test_bad_input.py."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from cli_helpers import COMMON, USR_DIR, with_flags
from t2t_lite.bin import (t2t_avg_all, t2t_bleu, t2t_datagen, t2t_decoder, t2t_exporter,
                          t2t_parse_eval, t2t_trainer)

Workspace = Any  # test_bad_input.Workspace: root, data_dir, output_dir, usr_dirs, path()


def run_dir(ws):
    return [f"--output_dir={ws.output_dir}", f"--t2t_usr_dir={USR_DIR}"]


def train_args(ws, *flags):
    return with_flags(COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.output_dir}",
                                "--train_steps=6"], *flags)


def new_run_args(ws, *flags):
    """Flags for a run in a folder that does not exist yet (and must not after)."""
    return with_flags(COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/new_run",
                                "--train_steps=6"], *flags)


def files_datagen(ws, train: str) -> list[str]:
    """translate_files into a new data dir: ``train``'s files, a good dev set."""
    return ["--problem=translate_files", f"--data_dir={ws.root}/new_data",
            f"--data_options={train},dev_source={ws.path('in.txt')},"
            f"dev_target={ws.path('in.txt')}"]


def beside(ws, name: str, text: str) -> str:
    """A file of ``text`` made for one case, beside the workspace (whose files the test
    checks are left as they were) rather than in it."""
    folder = os.path.join(os.path.dirname(ws.root), "bad_input_beside")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


@dataclasses.dataclass
class Case:
    name: str
    main: Callable
    argv: Callable[[Workspace], list[str]]
    says: str  # found in the error line
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    # Changes the machine for the case (a monkeypatch's setattr): a full disk.
    machine: Callable[[Any], None] | None = None


# The table's first half: names, flags, ranges; run and file rows are in
# bad_output_cases.py (CASES there).
CASES = [
    # Registry names and flags.
    Case("unknown problem", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--problem=nope"), "unknown problem 'nope'"),
    Case("unknown model", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--model=transfomer"), "unknown model 'transfomer'"),
    Case("unknown hparams set", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams_set=tiny"), "unknown hparams set 'tiny'"),
    Case("T2T TPU hparams set", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams_set=transformer_tpu"),
         "use --hparams_set=transformer_base_v3"),
    Case("hparams set of another model", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--model=lstm_seq2seq",
                                 "--hparams_set=lstm_luong_multi30k"),
         "model lstm_seq2seq reads no attention_scope"),
    Case("bidirectional encoder of an odd size", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--model=lstm_seq2seq_attention_luong",
                                 "--hparams_set=lstm_luong_multi30k",
                                 "--hparams=bidirectional_encoder=true,hidden_size=255"),
         "hidden_size must be even, got 255"),
    Case("shared embedding across separate vocabularies", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--problem=number_words_to_digits",
                                 f"--data_dir={ws.root}/words_digits_data",
                                 "--model=lstm_seq2seq", "--hparams_set=lstm_sutskever",
                                 "--hparams=shared_embedding=true"),
         "shared_embedding=true ties the source and target embeddings, but the inputs and "
         "targets have separate vocabularies (13 and 15 ids): set shared_embedding=false"),
    Case("unknown datagen problem", t2t_datagen.main,
         lambda ws: ["--problem=translate_ende_wmt33k", f"--data_dir={ws.data_dir}"],
         "unknown problem 'translate_ende_wmt33k'"),
    Case("unknown flag", t2t_trainer.main,
         lambda ws: train_args(ws, "--train_stpes=3"), "unrecognized arguments: --train_stpes"),
    Case("flag given twice", t2t_trainer.main,
         lambda ws: new_run_args(ws) + ["--hparams=num_heads=2", "--hparams=hidden_size=32"],
         "--hparams is given twice with different values (--hparams=num_heads=2, then "
         "--hparams=hidden_size=32); only the last would count: give it once"),
    Case("abbreviated flag", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--train_step=3"),
         "unrecognized arguments: --train_step=3 (did you mean --train_steps?)"),
    Case("flag that would change nothing", t2t_trainer.main,
         lambda ws: train_args(ws, "--schedule=train", "--eval_early_stopping_steps=500"),
         "--eval_early_stopping_steps acts only when --schedule trains and evaluates "
         "(train_and_evaluate); here it would change nothing: leave it out"),
    Case("output file of interactive decoding", t2t_decoder.main,
         lambda ws: run_dir(ws) + ["--decode_interactive",
                                   f"--decode_to_file={ws.path('out.txt')}"],
         "--decode_to_file acts only with --decode_from_file or --score_file"),
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
    Case("hparam given twice", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=batch_size=256,num_heads=2,batch_size=128"),
         "--hparams: hparam 'batch_size' is given twice (batch_size=256, then batch_size=128)"),
    Case("hparam of the wrong type", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=num_heads=two"), "'num_heads' expects an int"),
    Case("malformed hparams", t2t_trainer.main,
         lambda ws: train_args(ws, "--hparams=num_heads"), "malformed hparams string"),
    Case("subword sampling without a sentencepiece vocabulary", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=sentencepiece_alpha=0.1"),
         "sentencepiece_alpha=0.1: problem tiny_reverse_binary has no sentencepiece "
         "vocabulary to sample segmentations from"),
    Case("subword sampling alpha out of range", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=sentencepiece_alpha=1.5"),
         "'sentencepiece_alpha' must be in [0, 1], got 1.5"),
    Case("bad decode hparam value", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=beam_size=0"], "'beam_size' must be >= 1"),
    Case("unknown decode hparam", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=beams=3"], "unknown hparam 'beams'"),
    Case("sampling with a beam", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=sampling_method=random"],
         "--decode_hparams: sampling_method=random draws each token, it does not search: "
         "set beam_size=1, not 4"),
    Case("sampling top-p out of range", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=sampling_method=random,beam_size=1,"
                                   "sampling_keep_top_p=0"],
         "hparam 'sampling_keep_top_p' must be in (0, 1] (1: every token), got 0"),
    Case("sampling key of a search", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=sampling_temp=0.7"],
         "sampling_temp=0.7 shapes sampling_method=random only, and this decode searches"),
    Case("length penalty of samples", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_hparams=sampling_method=random,beam_size=1,"
                                   "alpha=1.0"],
         "--decode_hparams: alpha changes nothing here (a sample is scored by its "
         "log-probability, with no length penalty)"),
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
         "is not a run folder written by t2t-trainer or t2t-avg-all"),
    Case("evaluating a dir no trainer wrote", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.data_dir}", f"--output_dir={ws.root}/empty_dir",
                              "--schedule=evaluate"], "is not a run folder written by"),
    # Missing or unreadable data and files.
    Case("no data in data_dir", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.root}/empty_dir",
                              f"--output_dir={ws.root}/fresh_run"], "t2t-datagen"),
    Case("truncated training shard", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.root}/truncated_data",
                              f"--output_dir={ws.root}/fresh_run"],
         "tiny_reverse_binary-train-00003-of-00010 is corrupt or truncated"),
    Case("shards of another vocabulary", t2t_trainer.main,
         lambda ws: COMMON + [f"--data_dir={ws.root}/rebuilt_vocab_data",
                              f"--output_dir={ws.root}/new_run", "--train_steps=6"],
         "were encoded with another vocabulary than"),
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
    Case("checkpoint of another problem", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--checkpoint_path={ws.root}/copy_run/ckpt-2"],
         "hparams.json is a tiny_reverse_binary run: its weights mean other tokens"),
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
    Case("decode shard past the last", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   "--decode_shards=4", "--worker_id=4"],
         "--worker_id=4: must be in 0 .. 3"),
    Case("decode shards merged before they are decoded", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}",
                                   "--decode_shards=2", "--merge_shards"],
         "2 of the 2 parts are not decoded yet"),
    Case("prefixes not line-aligned with the input", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_prefixes={ws.path('one_line.txt')}"],
         "one_line.txt has 1 lines but"),
    Case("prefix of a blank input line", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('blank_line.txt')}",
                                   f"--decode_prefixes={ws.path('in.txt')}"],
         "in.txt:2: a prefix for a blank line of"),
    # The best checkpoint (issue 58).
    Case("best checkpoint metric the problem is not scored by", t2t_trainer.main,
         lambda ws: train_args(ws, "--best_checkpoint_metric=evalb"),
         "--best_checkpoint_metric=evalb: choose loss (the dev loss), sequence_accuracy (the "
         "decode metric of tiny_reverse_binary) or a score of any text: bleu, chrf, ter"),
    Case("best checkpoint by a decode metric without decodes", t2t_trainer.main,
         lambda ws: train_args(ws, "--best_checkpoint_metric=sequence_accuracy"),
         "is measured by decoding the dev sample: give --decode_eval_every_steps=N"),
    Case("best checkpoint by the loss without evaluations", t2t_trainer.main,
         lambda ws: train_args(ws, "--best_checkpoint_metric=loss", "--schedule=train"),
         "needs the dev evaluations of --schedule=train_and_evaluate"),
    Case("two patiences", t2t_trainer.main,
         lambda ws: train_args(ws, "--best_checkpoint_metric=loss", "--patience=2",
                               "--eval_early_stopping_steps=100"),
         "--patience and --eval_early_stopping_steps are two patiences for one metric"),
    Case("early stopping steps on a decode metric", t2t_trainer.main,
         lambda ws: train_args(ws, "--best_checkpoint_metric=sequence_accuracy",
                               "--decode_eval_every_steps=2", "--eval_early_stopping_steps=100"),
         "--eval_early_stopping_steps stops on the dev loss, not on sequence_accuracy"),
    Case("patience without a metric", t2t_trainer.main,
         lambda ws: train_args(ws, "--patience=3"),
         "--patience acts only with --best_checkpoint_metric"),
    Case("damaged record of the best", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/broken_best",
                               "--best_checkpoint_metric=loss"),
         "broken_best/best.json is unreadable"),
    Case("best folder without its record", t2t_trainer.main,
         lambda ws: train_args(ws, f"--output_dir={ws.root}/best_without_record",
                               "--best_checkpoint_metric=loss"),
         "best_without_record/best exists but"),
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
    Case("BLEU language the reference's name contradicts", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}", f"--reference={ws.path('ref.fr')}",
                     "--language=de"],
         "is named as fr: give --language=fr"),
    Case("BLEU of a file against itself", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}", f"--reference={ws.path('in.txt')}"],
         "scored against itself it gets BLEU 100 whatever the system did; give the "
         "system's output as --translation"),
    Case("trees scored against themselves", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}", f"--test={ws.path('gold.trees')}"],
         "--test and --gold are one file"),
    Case("BLEU bad length buckets", t2t_bleu.main,
         lambda ws: [f"--translation={ws.path('in.txt')}", f"--reference={ws.path('ref.fr')}",
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
    Case("bidirectional override in a translation", t2t_bleu.main,
         lambda ws: ["--translation=" + beside(ws, "override.txt", "0 1\n1 \u202e0\n"),
                     f"--reference={ws.path('in.txt')}"],
         "override.txt:2: bidirectional override U+202E (RIGHT-TO-LEFT OVERRIDE) at column 3"),
    Case("bidirectional override in a tree", t2t_parse_eval.main,
         lambda ws: [f"--gold={ws.path('gold.trees')}", "--test=" + beside(
             ws, "override.trees", "(S (NP (DT The) (NN \u202ddog)) (VP (VBZ barks)))\n")],
         "override.trees:1: bidirectional override U+202D (LEFT-TO-RIGHT OVERRIDE) at column 21"),
    # Checkpoint averaging and export.
    Case("averaging a dir without checkpoints", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.root}/empty_dir", f"--output_dir={ws.root}/avg"],
         "no 'checkpoint' state file"),
    Case("averaging into the model dir", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", f"--output_dir={ws.output_dir}"],
         "which t2t-avg-all reads"),
    Case("averaging up to another run's checkpoint", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", f"--output_dir={ws.root}/avg_mixed",
                     f"--checkpoint_path={ws.root}/train_copy/ckpt-4"],
         "the average would mix two runs' weights"),
    Case("averaging no checkpoints", t2t_avg_all.main,
         lambda ws: [f"--model_dir={ws.output_dir}", f"--output_dir={ws.root}/avg", "--n=0"],
         "--n: must be an int >= 1"),
    Case("decode hparam the export does not use", t2t_exporter.main,
         lambda ws: run_dir(ws) + [f"--export_dir={ws.root}/export_beams",
                                   "--decode_hparams=beam_size=2,return_beams=true"],
         "--decode_hparams: return_beams changes nothing here (serving_default returns the "
         "best output; the beams signature, every beam)"),
    Case("dev decode hparam the score does not use", t2t_trainer.main,
         lambda ws: train_args(ws, "--decode_eval_every_steps=2",
                               "--decode_eval_hparams=write_beam_scores=true"),
         "--decode_eval_hparams: write_beam_scores changes nothing here (the dev score is of "
         "each input's best output)"),
    Case("training hparam given to the decoder", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}",
                                   "--hparams=batch_size=8"],
         "--hparams: batch_size changes nothing in t2t-decoder (of a trained model it reads "
         "dtype, xla, max_length and the architecture's keys; the decode batch is "
         "--decode_hparams=batch_size=N); leave it out"),
    Case("hparam the export does not read", t2t_exporter.main,
         lambda ws: run_dir(ws) + [f"--export_dir={ws.root}/export_xla", "--hparams=xla=true"],
         "--hparams: xla changes nothing in t2t-exporter (of a trained model it reads dtype, "
         "max_length and the architecture's keys)"),
    Case("ensemble of a run with itself", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}",
                                   f"--ensemble={ws.output_dir}"],
         "in the ensemble already; an ensemble of a checkpoint with itself decodes as "
         "that checkpoint alone"),
    Case("ensemble of a run with its copy", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_to_file={ws.path('out.txt')}",
                                   f"--ensemble={ws.root}/train_copy"],
         "holds the weights of"),
    Case("alignments of an ensemble", t2t_decoder.main,
         lambda ws: run_dir(ws) + [f"--decode_from_file={ws.path('in.txt')}",
                                   f"--decode_alignments={ws.path('out.align')}",
                                   f"--ensemble={ws.root}/train_copy"],
         "--decode_alignments reads one model's cross-attention: leave out --ensemble"),
    Case("exporting a dir no trainer or average wrote", t2t_exporter.main,
         lambda ws: [f"--output_dir={ws.root}/empty_dir", f"--export_dir={ws.root}/export_none"],
         "is not a run folder written by t2t-trainer or t2t-avg-all"),
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
         "hparam 'optimizer' must be one of 'adam', 'sgd', 'adadelta', 'adam_w', 'adafactor', "
         "'momentum', 'multistep_adam', got 'adamw'"),
    Case("heads that do not split hidden_size", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=num_heads=3"),
         "hidden_size=32 is not divisible by num_heads=3"),
    Case("relative attention without a distance", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=self_attention_type=dot_product_relative"),
         "self_attention_type=dot_product_relative needs max_relative_position >= 1"),
    Case("a distance plain attention does not read", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=max_relative_position=20"),
         "max_relative_position=20 is read only with self_attention_type=dot_product_relative"),
    Case("no positions of any kind", t2t_trainer.main,
         lambda ws: new_run_args(ws, "--hparams=position_embedding=none"),
         "self_attention_type=dot_product blind to word order"),
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
]
