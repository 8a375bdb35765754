"""A flag or decode hparam typed where it would change nothing is refused in one line,
not dropped without a word (argparse and a caller that skips a key both drop it)."""
import pytest

from t2t_lite.bin import t2t_bleu, t2t_datagen, t2t_decoder, t2t_trainer
from t2t_lite.decoding.settings import decode_settings
from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40

# (parser, flags where the flag acts, the flag, what makes it do nothing)
CASES = [
    (t2t_trainer.parser, ["--schedule=train_and_evaluate"], "--eval_every_steps=5",
     ["--schedule=train"]),
    (t2t_trainer.parser, [], "--local_eval_frequency=5", ["--schedule=evaluate"]),
    (t2t_trainer.parser, [], "--eval_early_stopping_steps=500", ["--schedule=train"]),
    (t2t_trainer.parser, ["--schedule=evaluate"], "--eval_batches=3", ["--schedule=train"]),
    (t2t_trainer.parser, [], "--eval_steps=3", ["--schedule=train"]),
    (t2t_trainer.parser, ["--schedule=train"], "--decode_eval_every_steps=5",
     ["--schedule=evaluate"]),
    (t2t_trainer.parser, [], "--export_saved_model", ["--schedule=evaluate"]),
    (t2t_trainer.parser, [], "--warm_start_from=runs/a", ["--schedule=evaluate"]),
    (t2t_trainer.parser, ["--decode_eval_every_steps=5"], "--decode_eval_hparams=beam_size=2",
     []),
    (t2t_trainer.parser, ["--decode_eval_every_steps=5"], "--decode_eval_examples=10",
     ["--decode_eval_every_steps=0"]),
    (t2t_trainer.parser, ["--generate_data"], "--tmp_dir=raw", []),
    (t2t_trainer.parser, [], "--best_checkpoint_metric=loss", ["--schedule=evaluate"]),
    (t2t_trainer.parser, ["--best_checkpoint_metric=loss"], "--patience=3", []),
    (t2t_trainer.parser, ["--eval_early_stopping_steps=100"], "--min_improvement=0.1", []),
    (t2t_trainer.parser, ["--generate_data"], "--data_options=vocab_size=8000", []),
    (t2t_trainer.parser, ["--generate_data"], "--num_concurrent_processes=2", []),
    (t2t_decoder.parser, ["--decode_from_file=in.txt"], "--decode_to_file=out.txt",
     ["--decode_interactive"]),
    (t2t_decoder.parser, ["--score_file=pairs.tsv"], "--decode_to_file=out.txt", []),
    (t2t_decoder.parser, ["--decode_shards=4"], "--worker_id=2", []),
    (t2t_decoder.parser, ["--decode_shards=4", "--decode_from_file=in.txt"], "--merge_shards",
     ["--decode_from_file=in.txt"]),
    (t2t_decoder.parser, ["--decode_from_file=in.txt"], "--decode_prefixes=prefixes.txt",
     ["--decode_interactive"]),
    (t2t_decoder.parser, ["--decode_from_file=in.txt"], "--decode_alignments=out.align",
     ["--decode_interactive"]),
    (t2t_decoder.parser, ["--decode_interactive"], "--prefix_after_tab",
     ["--decode_from_file=in.txt"]),
    (t2t_decoder.parser, ["--decode_from_file=in.txt"], "--decode_constraints=terms.txt",
     ["--score_file=pairs.tsv"]),
    (t2t_decoder.parser, ["--decode_interactive"], "--constraints_after_tab",
     ["--decode_from_file=in.txt"]),
    (t2t_decoder.parser, ["--decode_from_file=in.txt"], "--vocabulary_map=vmap.txt",
     ["--score_file=pairs.tsv"]),
    (t2t_datagen.parser, ["--eval_files_dir=eval"], "--eval_split=dev", []),
    (t2t_bleu.parser, ["--source=src.txt"], "--length_buckets=5,10", []),
]
FILES = ["--output_dir=run", "--translation=hyp.txt", "--reference=ref.txt"]


def _argv(parser, flags):
    required = [flag for flag in FILES
                if flag.split("=")[0] in parser()._option_string_actions]
    return required + flags


@pytest.mark.parametrize("parser, acts, flag, idle", CASES,
                         ids=[f"{case[0].__module__.split('.')[-1]} {case[2]}" for case in CASES])
def test_a_flag_that_would_change_nothing_is_refused(parser, acts, flag, idle, capsys):
    parser().parse_args(_argv(parser, acts + [flag]))  # where it acts, it passes
    with pytest.raises(SystemExit) as exit_info:
        parser().parse_args(_argv(parser, idle + [flag]))
    name = flag.split("=")[0]
    error = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and len(error.splitlines()) == 1
    assert f"error: {name} acts only " in error and "leave it out" in error


def test_every_flag_that_acts_only_sometimes_is_tried():
    tried = {(parser, flag.split("=")[0]) for parser, _, flag, _ in CASES}
    declared = {(parser, action_flag)
                for parser in {case[0] for case in CASES}
                for declared_flag, _, _ in parser()._acting
                for action_flag in parser()._option_string_actions[declared_flag].option_strings}
    assert declared - tried == set()


@pytest.mark.parametrize("overrides, refused", [
    ("return_beams=true", "return_beams"), ("beam_size=2,batch_size=8", "batch_size"),
    ("batch_size=32,beam_size=2", None),    # batch_size at its default changes nothing
    ("return_beams=false,alpha=1.0", None),
])
def test_decode_hparams_a_caller_does_not_apply_are_refused_when_set(overrides, refused):
    unused = {"batch_size": "one sentence", "return_beams": "the best output only"}
    problem, run = AlgorithmicReverseBinary40(), transformer_tiny()
    if refused is None:
        decode_settings(overrides, problem, run, "--decode_hparams", unused)
        return
    with pytest.raises(HParamsError, match=f"--decode_hparams: {refused} changes nothing here "
                                           rf"\({unused[refused]}\); leave it out"):
        decode_settings(overrides, problem, run, "--decode_hparams", unused)
    decode_settings(overrides, problem, run)  # a caller that applies every key
