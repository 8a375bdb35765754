"""Tests for t2t_lite.metrics.bleu and the t2t-bleu command."""
import math

import pytest
import sacrebleu

from t2t_lite.bin import t2t_bleu
from t2t_lite.metrics import bleu

HYPS = ["The cat sat on the mat.", "A state-of-the-art system, isn't it?"]
REFS = ["the cat sat on a mat.", "A state-of-the-art model, isn't it?"]


def test_sacre_bleu_matches_sacrebleu_and_reports_signature():
    score, signature = bleu.sacre_bleu(HYPS, REFS)
    assert score == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score)
    assert "tok:13a" in signature and "case:mixed" in signature and "nrefs:1" in signature


def test_lowercased_sacre_bleu_ignores_case():
    cased, _ = bleu.sacre_bleu(["The Cat sat ."], ["the cat sat ."])
    lower, signature = bleu.sacre_bleu(["The Cat sat ."], ["the cat sat ."], lowercase=True)
    assert lower == pytest.approx(100.0)
    assert cased < lower
    assert "case:lc" in signature


@pytest.mark.parametrize("line, language, expected", [
    ("Er sagte: „Das ist z.B. gut.“", "de", 'Er sagte : " Das ist z.B. gut . "'),
    ("Ein rich-text Format, 5,300 Euro... ja.", "de", "Ein rich-text Format , 5,300 Euro ... ja ."),
    ("Dr. Smith doesn't like the 1990's in the U.S.", "en",
     "Dr. Smith doesn 't like the 1990 's in the U.S."),
    ("L'homme (vraiment) !", "fr", "L' homme ( vraiment ) !"),
    ("Siehe Nr. 5 und Nr. Sieben.", "de", "Siehe Nr. 5 und Nr . Sieben ."),
    ("it's 100% [x]", "de", "it ' s 100 % [ x ]"),
])
def test_moses_tokenize_follows_moses_rules(line, language, expected):
    assert bleu.moses_tokenize(line, language) == expected


def test_split_compounds_uses_at_convention_without_overlap():
    assert bleu.split_compounds("rich-text format") == "rich ##AT##-##AT## text format"
    assert bleu.split_compounds("a-b-c - d") == "a ##AT##-##AT## b-c - d"


def test_tokenized_bleu_is_unsmoothed_multi_bleu():
    hyp, ref = ["the cat sat on the mat"], ["the cat sat on a mat"]
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25  # p1..p4 counted by hand, BP=1
    assert bleu.tokenized_bleu(hyp, ref) == pytest.approx(expected)
    assert bleu.tokenized_bleu(["a b c d"], ["a b c e"]) == 0.0  # no 4-gram match, no smoothing
    assert bleu.sacre_bleu(["a b c d"], ["a b c e"])[0] > 0.0  # sacreBLEU smooths


def test_tokenized_bleu_splits_compounds_and_punctuation():
    score = bleu.tokenized_bleu(["Ein rich-text Format."], ["Ein rich-text Format ."])
    assert score == pytest.approx(100.0)
    # Hyphenation differences cost one token, not the whole compound.
    partial = bleu.tokenized_bleu(["Das ist ein rich-text Format für alle Leute."],
                                  ["Das ist ein rich text Format für alle Leute."])
    assert 0.0 < partial < 100.0 and not math.isnan(partial)


def test_mismatched_lengths_raise_clear_error():
    with pytest.raises(bleu.BleuInputError, match="2 translations but 1 references"):
        bleu.sacre_bleu(["a", "b"], ["a"])
    with pytest.raises(bleu.BleuInputError, match="empty"):
        bleu.tokenized_bleu([], [])


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_cli_prints_all_three_scores(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.txt", REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert "cased" in out[0] and "tok:13a" in out[0]
    assert "lowercased" in out[1] and "case:lc" in out[1]
    assert "tokenized" in out[2]
    assert float(out[2].split()[3]) == pytest.approx(bleu.tokenized_bleu(HYPS, REFS), abs=0.01)


def test_cli_line_count_mismatch_names_both_files(tmp_path, capsys):
    hyp = _write(tmp_path / "hyp.txt", HYPS)
    ref = _write(tmp_path / "ref.txt", REFS + ["extra"])
    assert t2t_bleu.main(["--translation", hyp, "--reference", ref]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{hyp} has 2 lines" in err and f"{ref} has 3" in err


def test_cli_missing_file_is_one_line_error(tmp_path, capsys):
    ref = _write(tmp_path / "ref.txt", REFS)
    missing = str(tmp_path / "nope.txt")
    assert t2t_bleu.main(["--translation", missing, "--reference", ref]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and missing in err


def test_bleu_by_source_length_scores_each_bucket_alone(tmp_path, capsys):
    sources = ["one two", "a b c d e", "short one here", "x " * 12, "y " * 25]
    refs = ["the dog runs fast today", "a cat sleeps on the sofa", "we go home now",
            "long sentence of many words here", "longest of them all by far here"]
    # Short sources translated perfectly, the middle ones badly, long ones perfectly.
    hyps = [refs[0], "zz qq", refs[2], "nothing at all matches", refs[4]]
    buckets = bleu.bleu_by_source_length(sources, hyps, refs, [3, 20])
    assert [(b.low, b.high, b.sentences) for b in buckets] == [(1, 3, 2), (4, 20, 2),
                                                               (21, None, 1)]
    assert [round(b.lowercased) for b in buckets] == [100, 0, 100]
    assert buckets[2].line().startswith("source     21+ words:     1 sentences")
    src, hyp, ref = (_write(tmp_path / name, lines) for name, lines in
                     (("src", sources), ("hyp", hyps), ("ref", refs)))
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", f"--source={src}",
                          "--length_buckets=3,20"]) == 0
    assert capsys.readouterr().out.splitlines()[3:] == [b.line() for b in buckets]
    with pytest.raises(bleu.BleuInputError, match="increasing positive integers"):
        bleu.bleu_by_source_length(sources, hyps, refs, [20, 3])
    with pytest.raises(bleu.BleuInputError, match="4 source lines but 5 translations"):
        bleu.bleu_by_source_length(sources[:4], hyps, refs, [3])
