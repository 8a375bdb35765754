"""Forced target prefixes and terminology constraints through files, windows, shards
and the commands (t2t_lite/decoding/target_guides.py, forced_prefix.py,
lexical_constraints.py; the search itself against the reference in
test_search_reference.py): each output begins with its line's prefix, scored as
teacher forcing scores it, and holds its line's phrases."""
import io
import os

import numpy as np
import pytest

from cli_helpers import USR_DIR, error_of, train_tiny
from decode_stand_ins import ENCODER, ReversingSearch, decoding, settings
from t2t_lite.bin import t2t_decoder
from t2t_lite.contracts.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.decoding.decoder import decode_interactive, decode_lines
from t2t_lite.decoding.file_decoding import Shard, decode_file, merge_shards
from t2t_lite.decoding.target_guides import GuideFiles

LINES = [f"line {'x' * (i % 7)} {i}" if i % 5 else "" for i in range(23)]
PREFIXES = [f"p{i} " if i % 5 and i % 3 else "" for i in range(23)]
IDENTITY = {"checkpoints": ["abc"], "vocabulary": {"problem": "p"}}
WINDOWED = "batch_size=2,read_window_lines=5"


class PrefixingSearch(ReversingSearch):
    """ReversingSearch whose outputs start with their row's prefix; records them."""

    def __init__(self, stop_on_call=-1):
        super().__init__()
        self.stop_on_call, self.prefixes = stop_on_call, []

    def __call__(self, inputs, max_decode_length, line_numbers=None, prefixes=None,
                 constraints=None):
        if len(self.calls) == self.stop_on_call:
            raise KeyboardInterrupt
        ids, scores = super().__call__(inputs, max_decode_length, line_numbers)
        ids = np.pad(ids, [(0, 0), (0, 0), (0, max_decode_length)])
        if prefixes is None:  # no line of the batch has one
            prefixes = np.zeros((len(inputs), 0), np.int32)
        for row, prefix in enumerate(np.asarray(prefixes).tolist()):
            forced = [token for token in prefix if token != PAD_ID]
            assert EOS_ID not in forced
            self.prefixes.append(forced)
            ids[row, 0] = np.concatenate([forced, ids[row, 0, :ids.shape[2] - len(forced)]])
        return ids, scores


class PhrasingSearch(ReversingSearch):
    """ReversingSearch whose outputs end with their row's phrases (space-separated);
    records each call's phrases (None: called without)."""

    def __init__(self, fail_on_call=-1):
        super().__init__(fail_on_call)
        self.phrases = []

    def __call__(self, inputs, max_decode_length, line_numbers=None, constraints=None):
        ids, scores = super().__call__(inputs, max_decode_length, line_numbers)
        self.phrases.append(None if constraints is None else np.asarray(constraints).copy())
        if constraints is None:
            return ids, scores
        ids = np.pad(ids, [(0, 0), (0, 0), (0, max_decode_length)])
        for row, phrases in enumerate(np.asarray(constraints).tolist()):
            held = [token for phrase in phrases if any(phrase)
                    for token in [ENCODER.encode(" ")[0]] + [t for t in phrase if t != PAD_ID]]
            content = ids[row, 0, :list(ids[row, 0]).index(EOS_ID)].tolist()
            ended = content + held + [EOS_ID]
            ids[row, 0] = 0
            ids[row, 0, :len(ended)] = ended
        return ids, scores


# Lines 7 and 8 (one batch of window 1 under WINDOWED) and blank lines hold none.
PHRASES = ["" if i % 5 == 0 or i in (7, 8) else (f"t{i}\tu v" if i % 2 else "w")
           for i in range(23)]


def expected(lines=LINES, prefixes=PREFIXES):
    return [(prefix.strip() + line.strip()[::-1]) if line else ""
            for line, prefix in zip(lines, prefixes)]


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_each_output_begins_with_its_lines_prefix_window_by_window(tmp_path):
    source, prefixes = write(tmp_path, "in.txt", LINES), write(tmp_path, "p.txt", PREFIXES)
    out = str(tmp_path / "out.txt")
    decode_file(source, out, decoding(PrefixingSearch(), WINDOWED), IDENTITY,
                guide_files=GuideFiles(prefixes=prefixes))
    assert open(out, encoding="utf-8").read().splitlines() == expected()
    assert decode_lines(LINES, decoding(PrefixingSearch(), "batch_size=3"),
                        prefixes=PREFIXES) == expected()
    # Without prefixes the search is called as before (no prefixes argument).
    assert decode_lines(LINES[:3], decoding(ReversingSearch())) == expected(
        LINES[:3], [""] * 3)


def test_the_decode_length_makes_room_for_the_longest_prefix():
    search = PrefixingSearch()
    decode_lines(["ab"], decoding(search, "extra_length=5"), prefixes=["a long prefix"])
    assert search.calls[0][1] == len(ENCODER.encode("a long prefix")) + 1 + 5


def test_a_prefix_file_that_does_not_fit_the_input_is_refused(tmp_path):
    source, out = write(tmp_path, "in.txt", LINES), str(tmp_path / "out.txt")
    short = write(tmp_path, "short.txt", PREFIXES[:-1])
    with pytest.raises(ValueError, match=r"short.txt has 22 lines but .*in.txt has 23: give "
                                         r"one prefix a line \(an empty line for none\)"):
        decode_file(source, out, decoding(PrefixingSearch()), IDENTITY, guide_files=GuideFiles(prefixes=short))
    on_blank = write(tmp_path, "blank.txt", ["", "", "", "", "", "p"] + [""] * 17)
    with pytest.raises(ValueError, match=r"blank.txt:6: a prefix for a blank line of "):
        decode_file(source, out, decoding(PrefixingSearch()), IDENTITY, guide_files=GuideFiles(prefixes=on_blank))
    with pytest.raises(ValueError, match=r"2 prefixes for 3 lines of input"):
        decode_lines(LINES[1:4], decoding(PrefixingSearch()), prefixes=["a", "b"])
    assert not os.path.exists(out)


def test_a_prefix_past_the_models_positions_names_its_line(tmp_path):
    from t2t_lite.decoding.input_rules import InputRules
    rules = InputRules(max_input_length=0, max_positions=8)
    source = write(tmp_path, "in.txt", ["ab", "cd"])
    prefixes = write(tmp_path, "p.txt", ["", "x" * 8])
    search = PrefixingSearch()
    with pytest.raises(ValueError, match=r"p.txt:2: the prefix has 8 tokens, but the model "
                                         r"decodes at most 8 \(its positions\): shorten it"):
        decode_file(source, str(tmp_path / "out.txt"), decoding(search, rules=rules), IDENTITY,
                    guide_files=GuideFiles(prefixes=prefixes))
    assert search.calls == []  # refused while the input was read, before any decode


def test_kept_windows_and_shards_of_other_prefixes_are_refused(tmp_path):
    source, out = write(tmp_path, "in.txt", LINES), str(tmp_path / "out.txt")
    prefixes = write(tmp_path, "p.txt", PREFIXES)
    whole = str(tmp_path / "whole.txt")
    decode_file(source, whole, decoding(PrefixingSearch(), WINDOWED), IDENTITY,
                guide_files=GuideFiles(prefixes=prefixes))
    with pytest.raises(KeyboardInterrupt):
        decode_file(source, out, decoding(PrefixingSearch(stop_on_call=3), WINDOWED), IDENTITY,
                    guide_files=GuideFiles(prefixes=prefixes))
    other = write(tmp_path, "other.txt", PREFIXES[:1] + ["q "] + PREFIXES[2:])
    with pytest.raises(ValueError, match=r"window 0 \(lines 1-5\) of another input \(its "
                                         r"lines, --decode_prefixes or --decode_constraints differ"):
        decode_file(source, out, decoding(PrefixingSearch(), WINDOWED), IDENTITY,
                    guide_files=GuideFiles(prefixes=other))
    search = PrefixingSearch()  # the same prefixes go on from the kept window
    decode_file(source, out, decoding(search, WINDOWED), IDENTITY, guide_files=GuideFiles(prefixes=prefixes))
    assert open(out, "rb").read() == open(whole, "rb").read()
    # Window 0's lines are not decoded again.
    assert len(search.prefixes) == sum(1 for line in LINES[5:] if line)

    merged = str(tmp_path / "merged.txt")
    for index in range(2):
        decode_file(source, Shard(index, 2).part_path(merged), decoding(
            PrefixingSearch(), WINDOWED), IDENTITY, Shard(index, 2), guide_files=GuideFiles(prefixes=prefixes))
    with pytest.raises(ValueError, match=r"shard-0-of-2 was decoded from other lines or "
                                         r"guides than .*in.txt's part 0 of 2 now"):
        merge_shards(source, merged, IDENTITY, settings(WINDOWED), 2)
    assert merge_shards(source, merged, IDENTITY, settings(WINDOWED), 2,
                        GuideFiles(prefixes=prefixes)) == 23
    assert open(merged, "rb").read() == open(whole, "rb").read()


def test_interactive_lines_give_their_prefix_after_a_tab():
    out = io.StringIO()
    decode_interactive(decoding(PrefixingSearch()), input_stream=io.BytesIO(
        b"abc\tzz \nxy\n\n"), output_stream=out, prefix_after_tab=True)
    assert out.getvalue() == "zzcba\nyx\n\n"
    with pytest.raises(ValueError, match=r"<stdin>:1: a line holds two tabs"):
        decode_interactive(decoding(PrefixingSearch()), input_stream=io.BytesIO(b"a\tb\tc\n"),
                           output_stream=out, prefix_after_tab=True)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("forced_prefixes"))


def test_the_decoder_forces_prefixes_scored_as_teacher_forcing_scores_them(
        trained, tmp_path, capsys):
    """Each output begins with its prefix, and its beam score (alpha 0: the sum of the
    log-probabilities) is --score_file's log P(output | input) of the same pair: the
    prefix's tokens are scored by the model, not taken for free."""
    _, output_dir = trained
    sources = [f"{'0 1 ' * (i % 4)}1 1" for i in range(6)]
    prefixes = ["1 0 0", "", "0", "1 1 1 1 1 1", "", "0 0"]
    source, prefix_path = write(tmp_path, "in.txt", sources), write(tmp_path, "p.txt", prefixes)
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}"]
    out = tmp_path / "out.txt"
    assert t2t_decoder.main(run + [
        f"--decode_from_file={source}", f"--decode_prefixes={prefix_path}",
        f"--decode_to_file={out}",
        "--decode_hparams=beam_size=3,alpha=0,write_beam_scores=true"]) == 0
    decoded = [line.split("\t") for line in out.read_text().splitlines()]
    for (text, _), prefix in zip(decoded, prefixes):
        assert text.split()[:len(prefix.split())] == prefix.split()
    pairs = write(tmp_path, "pairs.tsv", [f"{s}\t{t}" for s, (t, _) in zip(sources, decoded)])
    assert t2t_decoder.main(run + [f"--score_file={pairs}"]) == 0
    teacher_forced = [float(x) for x in open(pairs + ".scores").read().split()]
    np.testing.assert_allclose([float(score) for _, score in decoded], teacher_forced,
                               atol=2e-3)
    error = error_of(capsys, t2t_decoder.main, run + [
        f"--decode_from_file={source}", f"--decode_prefixes={write(tmp_path, 'p2.txt', ['0'])}",
        f"--decode_to_file={tmp_path / 'other.txt'}"])
    assert "p2.txt has 1 lines but" in error and not (tmp_path / "other.txt").exists()


def phrased(lines=LINES, phrases=PHRASES):
    return [line.strip()[::-1] + "".join(f" {p}" for p in held.split("\t") if p)
            if line else "" for line, held in zip(lines, phrases)]


def test_each_output_holds_its_lines_phrases_through_windows_kept_windows_and_shards(
        tmp_path):
    source, terms = write(tmp_path, "in.txt", LINES), write(tmp_path, "terms.txt", PHRASES)
    files = GuideFiles(constraints=terms)
    whole = str(tmp_path / "whole.txt")
    search = PhrasingSearch()
    decode_file(source, whole, decoding(search, WINDOWED), IDENTITY, guide_files=files)
    assert open(whole, encoding="utf-8").read().splitlines() == phrased()
    # Phrases as [B, N, L] ids; a batch without any is searched without them.
    assert any(call is None for call in search.phrases)
    assert {call.ndim for call in search.phrases if call is not None} == {3}
    assert decode_lines(LINES, decoding(PhrasingSearch(), "batch_size=3"),
                        constraints=PHRASES) == phrased()
    # Kept windows of other phrases are refused; the same phrases go on from them.
    out = str(tmp_path / "out.txt")
    with pytest.raises(RuntimeError):
        decode_file(source, out, decoding(PhrasingSearch(fail_on_call=3), WINDOWED), IDENTITY,
                    guide_files=files)
    other = write(tmp_path, "other.txt", PHRASES[:1] + ["x"] + PHRASES[2:])
    with pytest.raises(ValueError, match=r"window 0 \(lines 1-5\) of another input"):
        decode_file(source, out, decoding(PhrasingSearch(), WINDOWED), IDENTITY,
                    guide_files=GuideFiles(constraints=other))
    decode_file(source, out, decoding(PhrasingSearch(), WINDOWED), IDENTITY, guide_files=files)
    assert open(out, "rb").read() == open(whole, "rb").read()
    merged = str(tmp_path / "merged.txt")
    for index in range(2):
        decode_file(source, Shard(index, 2).part_path(merged), decoding(
            PhrasingSearch(), WINDOWED), IDENTITY, Shard(index, 2), guide_files=files)
    with pytest.raises(ValueError, match=r"guides than .*in.txt's part 0 of 2 .*other.txt's "
                                         r"phrases"):
        merge_shards(source, merged, IDENTITY, settings(WINDOWED), 2,
                     GuideFiles(constraints=other))
    assert merge_shards(source, merged, IDENTITY, settings(WINDOWED), 2, files) == 23
    assert open(merged, "rb").read() == open(whole, "rb").read()


def test_phrases_that_do_not_fit_the_input_or_the_model_are_refused_naming_the_line(tmp_path):
    from t2t_lite.decoding.input_rules import InputRules
    source, out = write(tmp_path, "in.txt", LINES), str(tmp_path / "out.txt")
    short = write(tmp_path, "short.txt", PHRASES[:-1])
    with pytest.raises(ValueError, match=r"short.txt has 22 lines but .*in.txt has 23: give "
                                         r"one set of phrases a line"):
        decode_file(source, out, decoding(PhrasingSearch()), IDENTITY,
                    guide_files=GuideFiles(constraints=short))
    on_blank = write(tmp_path, "blank.txt", ["", "", "", "", "", "p\tq"] + [""] * 17)
    with pytest.raises(ValueError, match=r"blank.txt:6: phrases for a blank line of "):
        decode_file(source, out, decoding(PhrasingSearch()), IDENTITY,
                    guide_files=GuideFiles(constraints=on_blank))
    rules = InputRules(max_input_length=0, max_positions=8)
    two = write(tmp_path, "in2.txt", ["ab", "cd"])
    prefixes, terms = write(tmp_path, "p.txt", ["", "wxyz"]), write(tmp_path, "t.txt",
                                                                   ["abcdefg", "ab\tcd"])
    search = PhrasingSearch()
    decode_file(two, out, decoding(search, rules=rules), IDENTITY,  # 7 tokens and an EOS fit
                guide_files=GuideFiles(constraints=write(tmp_path, "t7.txt", ["abcdefg", ""])))
    with pytest.raises(ValueError, match=r"t.txt:2: the phrases take 4 tokens and the prefix "
                                         r"4, but the model decodes at most 8 with the EOS"):
        decode_file(two, out, decoding(PhrasingSearch(), rules=rules), IDENTITY,
                    guide_files=GuideFiles(prefixes, terms))
    assert not os.path.exists(out + ".kept")


def test_the_decode_length_makes_room_for_the_prefix_and_phrases():
    search = PhrasingSearch()
    decode_lines(["ab"], decoding(search, "extra_length=5"), constraints=["a long\tphrase"])
    assert search.calls[0][1] == len("a long") + len("phrase") + 1 + 5


def test_interactive_lines_give_their_phrases_after_the_source_and_prefix():
    out = io.StringIO()
    decode_interactive(decoding(PhrasingSearch()), input_stream=io.BytesIO(
        b"abc\tzz\tyy\nxy\n\n"), output_stream=out, constraints_after_tab=True)
    assert out.getvalue() == "cba zz yy\nyx\n\n"


def test_the_decoder_holds_every_phrase_in_every_beam(trained, tmp_path, capsys):
    """The trained model's outputs, every beam of a beam search, a greedy decode and
    every sample drawn, hold their lines' phrases (tokens in a row)."""
    _, output_dir = trained
    sources = [f"{'0 1 ' * (i % 4)}1 1" for i in range(6)]
    terms = ["1 0 0 1", "", "0 0 0\t1 1", "1", "0 1 0 1 0", "1 1 1"]
    source, term_path = write(tmp_path, "in.txt", sources), write(tmp_path, "t.txt", terms)
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
           f"--decode_from_file={source}", f"--decode_constraints={term_path}"]
    for hparams in ("beam_size=3,return_beams=true", "beam_size=1",
                    "sampling_method=random,beam_size=1,num_samples=2"):
        out = tmp_path / f"out{len(hparams)}.txt"
        assert t2t_decoder.main(run + [f"--decode_to_file={out}",
                                       f"--decode_hparams={hparams}"]) == 0
        for line, held in zip(out.read_text().splitlines(), terms):
            for beam in line.split("\t"):
                tokens = f" {beam} "
                assert all(f" {phrase} " in tokens for phrase in held.split("\t") if phrase), (
                    beam, held)
    error = error_of(capsys, t2t_decoder.main, run[:3] + [
        f"--decode_constraints={write(tmp_path, 't2.txt', ['0'])}",
        f"--decode_to_file={tmp_path / 'other.txt'}"])
    assert "t2.txt has 1 lines but" in error and not (tmp_path / "other.txt").exists()
