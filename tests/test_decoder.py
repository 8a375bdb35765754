"""Line decoding: order, empty lines, batching, files, stdin and decode hparams."""
import io
import os

import numpy as np
import pytest

from decode_stand_ins import (ENCODER, SEARCH, UNLIMITED, ReversingSearch, decoding,
                              settings)
from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.decoding.decoder import decode_interactive, decode_lines
from t2t_lite.decoding.file_decoding import decode_from_file
from t2t_lite.decoding.input_rules import InputRules
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.settings import DecodeSettings, decode_hparams
from t2t_lite.hparam import HParamsError
from t2t_lite.hparams.transformer import transformer_tiny
from t2t_lite.models.transformer import Transformer
from toy_models import ToyRecurrentModel


def test_decode_lines_keeps_order_and_batches_longest_first():
    search = ReversingSearch()
    lines = ["abc", "", "  hello world ", "x", "\t", "xy"]
    outputs = decode_lines(lines, decoding(search, "batch_size=2,extra_length=5"))
    assert outputs == ["cba", "", "dlrow olleh", "x", "", "yx"]
    assert [len(inputs) for inputs, _ in search.calls] == [2, 2]
    lengths = [int((row != 0).sum()) for inputs, _ in search.calls for row in inputs]
    assert lengths == [12, 4, 3, 2]  # every non-empty line once, with EOS, longest first
    for inputs, max_decode_length in search.calls:
        assert np.all(inputs[np.arange(len(inputs)), (inputs != 0).sum(axis=1) - 1] == EOS_ID)
        assert max_decode_length == inputs.shape[1] + 5


def test_decode_lines_of_only_empty_lines_never_searches():
    search = ReversingSearch()
    assert decode_lines(["", "  ", "\r"], decoding(search)) == ["", "", ""]
    assert search.calls == []


def test_return_beams_writes_every_real_beam_tab_separated():
    outputs = decode_lines(["ab", "c\td"], decoding(ReversingSearch(), "return_beams=true"))
    assert outputs == ["ba\tab", "d c\tc d"]  # tabs inside a beam become spaces


@pytest.mark.parametrize("fields", ["return_beams=true", "write_beam_scores=true",
                                    "return_beams=true,write_beam_scores=true"])
def test_decode_from_file_gives_the_best_beams_to_score(tmp_path, fields):
    """The file holds the fields; what a reference scores is each line's best beam."""
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("ab\n\nc\n")
    outputs, _ = decode_from_file(str(source), str(target),
                                  decoding(ReversingSearch(), fields))
    assert outputs == ["ba", "", "c"]
    assert all("\t" in line for line in target.read_text().splitlines() if line)


def test_line_breaks_inside_a_decoded_text_become_spaces():
    assert decode_lines(["a\rb"], decoding(ReversingSearch())) == ["b a"]


@pytest.mark.parametrize("text, line", [
    ("a\n", "a"), ("a\r\nb", "a b"), ("a\n\nb", "a  b"), ("a\u2028b\x85", "a b"),
    ("\n\r", ""), ("a\tb", "a\tb")])
def test_one_line_turns_each_line_break_into_a_space_and_drops_trailing_ones(text, line):
    assert UNLIMITED.one_line(text) == line


def test_max_input_length_truncates_and_keeps_eos():
    search = ReversingSearch()
    assert decode_lines(["abcdef"], decoding(search, rules=InputRules(3, None))) == ["ba"]
    assert search.calls[0][0].shape == (1, 3)


def test_decode_from_file_writes_one_line_per_input_line(tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"first\r\n\nsecond line\nlast")
    target = tmp_path / "out" / "decoded.txt"
    decode_from_file(str(source), str(target), decoding(ReversingSearch()))
    assert target.read_text(encoding="utf-8") == "tsrif\n\nenil dnoces\ntsal\n"
    assert os.listdir(target.parent) == ["decoded.txt"]


def test_non_utf8_line_is_reported_before_anything_is_written(tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"ok\nfine\n\xff\xfe bad\nok again\n")
    target = tmp_path / "out.txt"
    target.write_text("previous output\n")
    search = ReversingSearch()
    with pytest.raises(ValueError, match=r"in\.txt: line 3 is not valid UTF-8"):
        decode_from_file(str(source), str(target), decoding(search))
    assert search.calls == []
    assert target.read_text() == "previous output\n"
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.txt"]


def test_failed_decoding_leaves_the_existing_output_untouched(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a\nbb\nccc\n")
    target = tmp_path / "out.txt"
    target.write_text("previous output\n")
    with pytest.raises(RuntimeError, match="search failed"):
        decode_from_file(str(source), str(target),
                         decoding(ReversingSearch(fail_on_call=1), "batch_size=1"))
    assert target.read_text() == "previous output\n"
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.txt"]


def test_misaligned_reference_is_refused_before_decoding(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a\nbb\nccc\n")
    reference = tmp_path / "ref.txt"
    reference.write_text("a\nbb\n")
    search = ReversingSearch()
    with pytest.raises(ValueError, match=r"ref\.txt has 2 lines but .*in\.txt has 3"):
        decode_from_file(str(source), str(tmp_path / "out.txt"), decoding(search),
                         reference_path=str(reference))
    assert search.calls == [] and not (tmp_path / "out.txt").exists()
    reference.write_text("x\ny\nz\n")
    outputs, references = decode_from_file(str(source), str(tmp_path / "out.txt"),
                                           decoding(search), reference_path=str(reference))
    assert outputs == ["a", "bb", "ccc"] and references == ["x", "y", "z"]


def test_outputs_are_decoded_with_the_target_encoder():
    class UpperCaseTargets(ByteTextEncoder):
        def decode(self, ids):
            return super().decode(ids).upper()

    outputs = decode_lines(["abc", "", "xy"],
                           decoding(ReversingSearch(), target_encoder=UpperCaseTargets()))
    assert outputs == ["CBA", "", "YX"]


def test_decode_interactive_answers_each_line_until_eof():
    out = io.StringIO()
    decode_interactive(decoding(ReversingSearch()),
                       input_stream=io.BytesIO(b"abc\n\nxy\n"), output_stream=out)
    assert out.getvalue() == "cba\n\nyx\n"


def test_decode_interactive_prompts_before_each_line_it_reads(capsys):
    """The prompt is on stderr when the next line is read (stdout holds only the
    decodes); after the last, a newline, so Ctrl-D leaves no prompt behind."""
    shown_when_read = []

    class Typed(io.BytesIO):
        def readline(self, size=-1):
            shown_when_read.append(capsys.readouterr().err)
            return super().readline(size)

    out = io.StringIO()
    decode_interactive(decoding(ReversingSearch()), input_stream=Typed(b"abc\nxy\n"),
                       output_stream=out, prompt="> ")
    assert shown_when_read == ["> ", "> ", "> "] and out.getvalue() == "cba\nyx\n"
    assert capsys.readouterr().err == "\n"


def test_decode_hparams_layers_library_problem_and_user_settings():
    library = decode_hparams()
    assert library.values() == {"beam_size": 4, "alpha": 0.6, "stop_rule": "beam_finished",
                                "extra_length": 50,
                                "batch_size": 32, "batch_type": "sentences",
                                "read_window_lines": 4096, "parallel_batches": 0,
                                "return_beams": False,
                                "write_beam_scores": False, "max_input_length": 0,
                                "length_bucket": 16, **SEARCH}
    parsing = {"beam_size": 21, "alpha": 0.3, "extra_length": 300}
    hparams = decode_hparams("alpha=1.0,return_beams=true", parsing)
    assert (hparams.beam_size, hparams.alpha, hparams.extra_length, hparams.return_beams) == (
        21, 1.0, 300, True)


@pytest.mark.parametrize("overrides, defaults, message", [
    ("beam=4", None, "unknown hparam 'beam'"),
    ("beam_size=wide", None, "'beam_size' expects an int"),
    ("", {"beam_width": 3}, "unknown hparam 'beam_width'"),
    ("beam_size=0", None, "--decode_hparams: hparam 'beam_size' must be >= 1, got 0"),
    ("extra_length=-1", None, "'extra_length' must be >= 0"),
    ("alpha=inf", None, "'alpha' must be finite and >= 0, got inf"),
    ("alpha=nan", None, "'alpha' must be finite and >= 0, got nan"),
    ("alpha=-0.5", None, "'alpha' must be >= 0, got -0.5"),
    ("batch_size=0", None, "'batch_size' must be >= 1"),
    ("max_input_length=-1", None, "'max_input_length' must be >= 0"),
    ("length_bucket=0", None, "'length_bucket' must be >= 1"),
    ("stop_rule=fast", None, "'stop_rule' must be one of 'beam_finished', 'exact'"),
    ("", {"beam_size": 0}, "the problem's decode defaults: hparam 'beam_size' must be >= 1"),
    ("", {"alpha": float("inf")}, "the problem's decode defaults: hparam 'alpha' must be finite"),
])
def test_decode_hparams_rejects_bad_settings(overrides, defaults, message):
    with pytest.raises(HParamsError, match=message):
        decode_hparams(overrides, defaults)


def test_decode_hparams_name_the_flag_they_came_from():
    with pytest.raises(HParamsError, match="^--decode_eval_hparams: hparam 'beam_size'"):
        decode_hparams("beam_size=-3", source="--decode_eval_hparams")


def test_decode_settings_are_the_decode_hparams_and_the_runs_xla():
    assert settings("beam_size=2,length_bucket=8", xla=True) == DecodeSettings(
        beam_size=2, alpha=0.6, stop_rule="beam_finished", extra_length=50, batch_size=32,
        batch_type="sentences", read_window_lines=4096, parallel_batches=0, return_beams=False,
        write_beam_scores=False, max_input_length=0, length_bucket=8, **SEARCH, xla=True)
    assert settings("length_bucket=8").padded_length_bucket == 0  # only XLA pads


def test_every_decode_hparam_declares_its_range():
    hparams = decode_hparams()
    assert [key for key in hparams if hparams.range_of(key) is None
            and not isinstance(getattr(hparams, key), bool)] == []


def test_beam_search_decoder_works_as_search_fn_and_traces_once():
    model = ToyRecurrentModel(vocab_size=ENCODER.vocab_size, seed=4)
    search = BeamSearchDecoder(model, SearchOptions(beam_size=2, alpha=0.6))
    lines = ["hello", "", "a much longer line", "hi", "hey"]
    forward = decode_lines(lines, decoding(search, "batch_size=2,extra_length=3"))
    backward = decode_lines(lines[::-1], decoding(search, "batch_size=2,extra_length=3"))
    assert len(forward) == len(lines) and forward[1] == ""
    assert forward == backward[::-1]  # same batches, outputs put back in input order
    assert model.encode_calls == 1


def test_length_bucket_pads_batches_to_few_shapes_and_changes_no_output():
    lines = ["a", "abc", "abcdefghij", "ab", "x y"]
    plain = decode_lines(lines, decoding(ReversingSearch(), "batch_size=2,extra_length=5"))
    search = ReversingSearch()
    bucketed = decode_lines(lines, decoding(search, "batch_size=2,extra_length=5,"
                                                    "length_bucket=8", xla=True))
    assert bucketed == plain
    shapes = [(inputs.shape, max_decode_length) for inputs, max_decode_length in search.calls]
    # 11 tokens -> 16; 4 and 4 -> 8; the last batch of one line is filled to two rows.
    assert shapes == [((2, 16), 21), ((2, 8), 13), ((2, 8), 13)]
    filler = search.calls[-1][0][1]
    assert filler.tolist() == [EOS_ID] + [0] * 7


WORDS = TokenTextEncoder(["a", "b", "c"])


def test_unknown_tokens_are_counted_in_one_warning(tmp_path, caplog):
    source = tmp_path / "in.txt"
    source.write_text("a b\na foo\n\nbar c baz\nfoo\n")
    outputs, _ = decode_from_file(str(source), str(tmp_path / "out.txt"),
                                  decoding(ReversingSearch(), encoder=WORDS))
    assert outputs == ["b a", "<UNK> a", "", "<UNK> c <UNK>", "<UNK>"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [f"{source}: 4 tokens in 3 lines are not in the vocabulary (first: "
                        "'foo' line 2, 'bar' line 4, 'baz' line 4, 'foo' line 5); they were "
                        "decoded as <UNK>"]


def test_bytes_and_subwords_represent_everything():
    assert ENCODER.unknown_tokens("anything \u00e9 \U0001F600") == []
    assert WORDS.unknown_tokens("a <pad> <UNK> zz") == ["<pad>", "zz"]


def test_long_inputs_are_cut_with_one_warning(caplog):
    search = ReversingSearch()
    outputs = decode_lines(["abcdef", "ab", "xyz", "abcd"],
                           decoding(search, rules=InputRules(4, None)), source="in.txt")
    assert outputs == ["cba", "ba", "zyx", "cba"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(
        "in.txt: 2 of 4 input lines are longer than the 3 tokens (and EOS) this model takes")
    assert "cut to their first 3 tokens" in warnings[0]


@pytest.mark.parametrize("position_embedding, decode, expected", [
    ("timing", "", 256), ("learned", "", 256), ("timing", "max_input_length=1000", 1000),
    ("learned", "max_input_length=1000", 256), ("learned", "max_input_length=9", 9)])
def test_input_length_limit_is_the_models_unless_asked_for_less(position_embedding, decode,
                                                                expected):
    hparams = transformer_tiny().parse(f"position_embedding={position_embedding}")
    model = Transformer(hparams, 10)
    rules = InputRules.for_model(settings(decode).max_input_length, model.hparams.max_length,
                                 model.max_positions)
    assert rules.max_input_length == expected


def test_decodes_and_length_buckets_stop_at_the_models_positions():
    search = ReversingSearch()
    rules = InputRules.for_model(0, 256, 6)
    outputs = decode_lines(["abcdefgh", "ab"], decoding(
        search, "batch_size=1,extra_length=5,length_bucket=4", rules=rules, xla=True))
    assert outputs == ["edcba", "ba"]  # cut to 5 tokens and EOS
    # 6 tokens pad to the 6 positions, not to the bucket's 8; 3 pad to 4.
    assert [(inputs.shape, length) for inputs, length in search.calls] == [((1, 6), 6),
                                                                          ((1, 4), 6)]
    assert (rules.decode_length(5), rules.padded_length(7, 0)) == (5, 6)


def test_interactive_lines_are_read_strictly_and_warned_about(caplog):
    out = io.StringIO()
    decode_interactive(decoding(ReversingSearch(), encoder=WORDS),
                       input_stream=io.BytesIO(b"\xef\xbb\xbfa b\r\nzz a\n"), output_stream=out)
    assert out.getvalue() == "b a\na <UNK>\n"
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "<stdin>: 1 token in 1 line is not in the vocabulary (first: 'zz' line 2); they were "
        "decoded as <UNK>"]
    out = io.StringIO()
    with pytest.raises(ValueError, match=r"<stdin>:2: control character U\+0000 \(NUL\)"):
        decode_interactive(decoding(ReversingSearch(), encoder=WORDS),
                           input_stream=io.BytesIO(b"a\nb\x00\nc\n"), output_stream=out)
    assert out.getvalue() == "a\n"
