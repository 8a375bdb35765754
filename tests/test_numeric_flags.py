"""Flags: every int or float flag of every t2t-* command declares its range
(bin/common.py's argparse types), and a value outside it, NaN or an infinity fails
in argparse's one line, naming the flag, the range and the value (issue 24); every
flag given twice with two values, or abbreviated, fails in one line too (argparse
would keep the last value, or guess the flag, without a word)."""
import argparse

import pytest

from t2t_lite.bin import (common, t2t_attention, t2t_avg_all, t2t_bleu, t2t_datagen,
                          t2t_decoder, t2t_exporter, t2t_parse_eval, t2t_trainer)

COMMANDS = [t2t_attention, t2t_avg_all, t2t_bleu, t2t_datagen, t2t_decoder, t2t_exporter,
            t2t_parse_eval, t2t_trainer]


class _Parsed(Exception):
    """Stops a command once its parser is built."""


def command_parser(module, monkeypatch) -> argparse.ArgumentParser:
    def capture(self, args=None, namespace=None):
        raise _Parsed(self)
    monkeypatch.setattr(common.CommandParser, "parse_args", capture)
    with pytest.raises(_Parsed) as parsed:
        module.main([])
    return parsed.value.args[0]


@pytest.mark.parametrize("module", COMMANDS, ids=[m.__name__ for m in COMMANDS])
def test_every_numeric_flag_declares_its_range(module, monkeypatch):
    parser = command_parser(module, monkeypatch)
    for action in parser._actions:
        if action.type in (int, float):
            assert action.choices, f"{action.option_strings} has no declared range"
        elif action.type and isinstance(action.default, (int, float)):
            assert action.type(str(action.default)) == action.default  # in its own range


@pytest.mark.parametrize("main, flag, message", [
    (t2t_trainer.main, "--train_steps=0", "--train_steps: must be an int >= 1, got '0'"),
    (t2t_trainer.main, "--train_minutes=nan", "--train_minutes: must be a finite number >= 0"),
    (t2t_trainer.main, "--train_minutes=-1", "--train_minutes: must be a finite number >= 0"),
    (t2t_trainer.main, "--eval_every_steps=0",
     "--eval_every_steps/--local_eval_frequency: must be an int >= 1"),
    (t2t_trainer.main, "--local_eval_frequency=1e3", "must be an int >= 1, got '1e3'"),
    (t2t_trainer.main, "--eval_batches=-1", "--eval_batches/--eval_steps: must be an int >= 0"),
    (t2t_trainer.main, "--eval_early_stopping_steps=-5", "must be an int >= 0, got '-5'"),
    (t2t_trainer.main, "--decode_eval_every_steps=-1", "must be an int >= 0"),
    (t2t_trainer.main, "--patience=-1", "--patience: must be an int >= 0, got '-1'"),
    (t2t_trainer.main, "--min_improvement=nan", "--min_improvement: must be a finite number >= 0"),
    (t2t_trainer.main, "--decode_eval_examples=0", "--decode_eval_examples: must be an int >= 1"),
    (t2t_trainer.main, "--save_checkpoints_steps=0", "must be an int >= 1"),
    (t2t_trainer.main, "--save_checkpoints_minutes=0", "must be a finite number > 0, got '0'"),
    (t2t_trainer.main, "--save_checkpoints_secs=inf", "must be a finite number > 0, got 'inf'"),
    (t2t_trainer.main, "--keep_checkpoint_max=-1", "--keep_checkpoint_max: must be an int >= 1"),
    (t2t_trainer.main, "--keep_checkpoint_every_n_hours=-inf", "must be a finite number >= 0"),
    (t2t_trainer.main, "--log_every_steps=0", "--log_every_steps: must be an int >= 1"),
    (t2t_trainer.main, "--seed=-1",
     "--seed/--random_seed: must be an int in [0, 4294967295], got '-1'"),
    (t2t_trainer.main, "--intra_op_parallelism_threads=-1", "must be an int >= 0"),
    (t2t_avg_all.main, "--n=0", "--n: must be an int >= 1, got '0'"),
    (t2t_parse_eval.main, "--max_length=0", "--max_length: must be an int >= 1"),
    (t2t_attention.main, "--dpi=100000", "--dpi: must be an int in [10, 1200]"),
    (t2t_decoder.main, "--decode_shards=0", "--decode_shards: must be an int >= 1"),
])
def test_a_numeric_flag_out_of_range_is_one_line(main, flag, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([flag])
    assert exit_info.value.code == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1 and message in errors[0], errors
    assert errors[0].startswith("t2t-") and "error: argument " in errors[0]


def test_flag_types_accept_their_ranges():
    assert common.at_least(0)("0") == 0 and common.between(1, 3)("3") == 3
    assert common.non_negative_float("0") == 0.0 and common.positive_float("1e-3") == 1e-3
    for parse, text in ((common.at_least(1), "x"), (common.positive_float, "1e999"),
                        (common.non_negative_float, "NaN"), (common.between(1, 3), "4")):
        with pytest.raises(argparse.ArgumentTypeError, match=f"got '{text}'"):
            parse(text)


def value_flags(module, monkeypatch) -> list[argparse.Action]:
    """The flags of ``module``'s command that take a value (not --help, not the
    tensor2tensor flags refused whatever their value)."""
    parser = command_parser(module, monkeypatch)
    return [action for action in parser._actions
            if action.option_strings and action.nargs != 0
            and not isinstance(action, common._Refused)]


@pytest.mark.parametrize("module", COMMANDS, ids=[m.__name__ for m in COMMANDS])
def test_every_flag_given_twice_with_two_values_is_refused(module, monkeypatch, capsys):
    actions = value_flags(module, monkeypatch)
    monkeypatch.undo()
    assert actions
    for action in actions:
        first, last = action.option_strings[0], action.option_strings[-1]
        for args in ([f"{first}=1", f"{last}=2"], [first, "1", f"{first}=2"]):
            with pytest.raises(SystemExit) as exit_info:
                module.main(args)
            assert exit_info.value.code == 2, args
            errors = capsys.readouterr().err.strip().splitlines()
            assert len(errors) == 1, errors
            assert (f"{first} is given twice with different values ({first}=1, "
                    f"then {args[-1]})") in errors[0], errors


def test_a_flag_repeated_with_one_value_passes():
    parsed = t2t_trainer.parser().parse_args(["--seed=7", "--random_seed", "7", "--seed=7",
                                              "--generate_data", "--generate_data"])
    assert parsed.seed == 7 and parsed.generate_data


@pytest.mark.parametrize("module", COMMANDS, ids=[m.__name__ for m in COMMANDS])
def test_an_abbreviated_flag_is_unknown(module, monkeypatch, capsys):
    longest = max((option for action in value_flags(module, monkeypatch)
                   for option in action.option_strings), key=len)
    monkeypatch.undo()
    with pytest.raises(SystemExit):
        module.main([f"{longest[:-1]}=1"])
    assert f"unrecognized arguments: {longest[:-1]}=1" in capsys.readouterr().err
