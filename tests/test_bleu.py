"""Tests for t2t_lite.metrics.bleu and the t2t-bleu command."""
import gzip
import math

import pytest

from t2t_lite.bin import t2t_bleu
from t2t_lite.metrics import bleu

HYPS = ["The cat sat on the mat.", "A state-of-the-art system, isn't it?"]
REFS = ["the cat sat on a mat.", "A state-of-the-art model, isn't it?"]


def test_sacre_bleu_pools_ngram_counts_over_the_corpus():
    hyps = ["the cat sat on the mat.", "a b c d"]
    refs = ["the cat sat on a mat.", "a b c d e f"]
    # 13a splits the final period: 7 + 4 hypothesis tokens, 7 + 6 reference tokens.
    # Matches (clipped) / hypothesis n-grams, sentence 1 + sentence 2:
    p1 = (6 + 4) / (7 + 4)  # "the" is counted once: the reference has one
    p2 = (4 + 3) / (6 + 3)  # the cat, cat sat, sat on, mat .
    p3 = (2 + 2) / (5 + 2)  # the cat sat, cat sat on
    p4 = (1 + 1) / (4 + 1)  # the cat sat on
    brevity_penalty = math.exp(1 - 13 / 11)
    score, signature = bleu.sacre_bleu(hyps, refs)
    assert score == pytest.approx(100 * brevity_penalty * (p1 * p2 * p3 * p4) ** 0.25)
    assert "tok:13a" in signature and "case:mixed" in signature and "nrefs:1" in signature


def test_lowercased_sacre_bleu_ignores_case():
    cased, _ = bleu.sacre_bleu(["The Cat sat ."], ["the cat sat ."])
    lower, signature = bleu.sacre_bleu(["The Cat sat ."], ["the cat sat ."], lowercase=True)
    assert lower == pytest.approx(100.0)
    assert cased < lower
    assert "case:lc" in signature


# What tokenizer.perl -l LANGUAGE prints after replace-unicode-punctuation.perl
# (both with their defaults; escaping on), worked out from the Perl rules.
@pytest.mark.parametrize("line, language, expected", [
    # Quotes: replace-unicode-punctuation maps “ to '"' but leaves „ alone.
    ("Er sagte: „Das ist z.B. gut.“", "de",
     "Er sagte : „ Das ist z.B. gut . &quot;"),
    # Hyphens inside words stay; numbers keep their inner commas and periods.
    ('Das sog. "Ost-West-Gefälle" ist groß, bzw. wächst (laut Prof. Schmidt).',
     "de", "Das sog. &quot; Ost-West-Gefälle &quot; ist groß , bzw. wächst "
     "( laut Prof. Schmidt ) ."),
    ("Die Preise stiegen um 3.5 Prozent auf 1,000.5 Mio. Euro.", "de",
     "Die Preise stiegen um 3.5 Prozent auf 1,000.5 Mio. Euro ."),
    ("Ein rich-text Format, 5,300 Euro... ja.", "de",
     "Ein rich-text Format , 5,300 Euro ... ja ."),
    # German lists "Nr" and the numbers 1-99 (ordinals) as plain nonbreaking prefixes.
    ("Siehe Nr. 5 und Nr. Sieben.", "de", "Siehe Nr. 5 und Nr. Sieben ."),
    ("Dr. Müller kam am 3. Oktober.", "de", "Dr. Müller kam am 3. Oktober ."),
    ("Er geht's an.", "de", "Er geht &apos; s an ."),  # no contraction rule for German
    ('"It\'s a state-of-the-art system," he said, "and it costs $1,000.50."', "en",
     "&quot; It &apos;s a state-of-the-art system , &quot; he said , "
     "&quot; and it costs $ 1,000.50 . &quot;"),
    ("Mr. O'Neil can't come; he's in St. Louis.", "en",
     "Mr. O &apos;Neil can &apos;t come ; he &apos;s in St. Louis ."),
    ("The U.S. economy grew 3.5% in the 1990's.", "en",
     "The U.S. economy grew 3.5 % in the 1990 &apos;s ."),
    # English "No" keeps its period only before a number.
    ("See No. 5 and No. Seven, etc. for details.", "en",
     "See No. 5 and No . Seven , etc. for details ."),
    ("I said 'yes.'", "en", "I said &apos; yes . &apos;"),
    # The period of an abbreviation ending the line stays, as in tokenizer.perl of
    # 2017; tokenizer.perl splits it since mosesdecoder#204 (Nov 2018): "U.S .".
    ("They live in the U.S.", "en", "They live in the U.S."),
    ("L'homme qu'il a vu n'est pas là.", "fr",
     "L&apos; homme qu&apos; il a vu n&apos; est pas là ."),
    ("« C'est aujourd'hui », a dit M. Dupont.", "fr",
     "« C&apos; est aujourd&apos; hui » , a dit M. Dupont ."),
    ("Le prix est de 1,000.5 euros, soit 3,5 % de plus.", "fr",
     "Le prix est de 1,000.5 euros , soit 3,5 % de plus ."),
    # No prefix list for "xx": English's, and the generic apostrophe rule.
    ("Mr. Smith isn't here.", "xx", "Mr. Smith isn &apos; t here ."),
])
def test_moses_tokenize_matches_tokenizer_perl(line, language, expected):
    assert bleu.moses_tokenize(line, language) == expected


def test_paper_tokenize_splits_compounds_after_moses():
    assert (bleu.paper_tokenize("Das Ost-West-Gefälle, state-of-the-art.", "de")
            == "Das Ost ##AT##-##AT## West ##AT##-##AT## Gefälle , "
               "state ##AT##-##AT## of ##AT##-##AT## the ##AT##-##AT## art .")


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
    # "Ein rich ##AT##-##AT## text Format ." against "Ein plain ##AT##-##AT## text
    # Format .": a differing compound part costs one token, not the whole compound
    # (unsplit, no 3-gram would match and the score would be 0).
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert bleu.tokenized_bleu(["Ein rich-text Format."],
                               ["Ein plain-text Format."]) == pytest.approx(expected)


def test_lowercased_tokenized_bleu_ignores_case_only():
    assert bleu.tokenized_bleu(["Ein Hund läuft."], ["ein hund läuft ."]) < 100.0
    assert bleu.tokenized_bleu(["Ein Hund läuft."], ["ein hund läuft ."],
                               lowercase=True) == pytest.approx(100.0)


def test_mismatched_lengths_raise_clear_error():
    with pytest.raises(bleu.BleuInputError, match="2 translations but 1 references"):
        bleu.sacre_bleu(["a", "b"], ["a"])
    with pytest.raises(bleu.BleuInputError, match="empty"):
        bleu.tokenized_bleu([], [])


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_cli_prints_all_four_bleu_scores_then_chrf_and_ter(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.de", REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[4].startswith("chrF2:") and out[5].startswith("TER")
    assert "cased" in out[0] and "tok:13a" in out[0]
    assert "lowercased" in out[1] and "case:lc" in out[1]
    assert "tokenized" in out[2] and "Moses -l de tokens" in out[2]
    assert float(out[2].split()[3]) == pytest.approx(bleu.tokenized_bleu(HYPS, REFS), abs=0.01)
    assert "tokenized BLEU (lowercased)" in out[3]
    assert float(out[3].split()[3]) == pytest.approx(
        bleu.tokenized_bleu(HYPS, REFS, lowercase=True), abs=0.01)


FRENCH_REFS = ["l'homme qu'il a vu n'est pas là .", "c'est l'heure"]
FRENCH_HYPS = ["l'homme qu'elle voit n'est pas ici .", "c'est le moment"]


def test_cli_takes_the_language_from_the_reference_name(tmp_path, capsys):
    """French keeps l' whole, German splits it: the tokenized BLEU depends on the language."""
    hyp = _write(tmp_path / "hyp.txt", FRENCH_HYPS)
    reports = {}
    for name, flags in (("ref.fr", []), ("ref.fr.gz", []), ("plain_ref", ["--language=fr"]),
                        ("ref_as_de.de", [])):
        path = tmp_path / name
        if name.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in FRENCH_REFS))
        else:
            _write(path, FRENCH_REFS)
        assert t2t_bleu.main([f"--translation={hyp}", f"--reference={path}", *flags]) == 0
        reports[name] = capsys.readouterr().out.splitlines()[2:]
    assert reports["ref.fr"] == reports["ref.fr.gz"] == reports["plain_ref"]
    assert float(reports["ref.fr"][0].split()[3]) == pytest.approx(
        bleu.tokenized_bleu(FRENCH_HYPS, FRENCH_REFS, language="fr"), abs=0.01)
    assert float(reports["ref.fr"][0].split()[3]) != float(reports["ref_as_de.de"][0].split()[3])


def test_cli_without_a_language_prints_sacrebleu_and_asks_for_it(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.txt", REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5 and out[0].startswith("sacreBLEU (cased)")
    assert "tokenized BLEU: not computed" in out[2] and "--language" in out[2]
    assert out[3].startswith("chrF2:")  # chrF and TER need no language


def test_cli_refuses_a_language_the_reference_name_contradicts(tmp_path, capsys):
    hyp, ref = _write(tmp_path / "hyp.txt", HYPS), _write(tmp_path / "ref.fr", REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", "--language=de"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "give --language=fr" in err


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
                     (("src", sources), ("hyp", hyps), ("ref.en", refs)))
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", f"--source={src}",
                          "--length_buckets=3,20"]) == 0
    assert capsys.readouterr().out.splitlines()[6:] == [b.line() for b in buckets]
    with pytest.raises(bleu.BleuInputError, match="increasing positive integers"):
        bleu.bleu_by_source_length(sources, hyps, refs, [20, 3])
    with pytest.raises(bleu.BleuInputError, match="4 source lines but 5 translations"):
        bleu.bleu_by_source_length(sources[:4], hyps, refs, [3])


def test_decomposed_unicode_scores_as_the_same_text(caplog, tmp_path):
    """NFD letters (a letter and a combining accent) are the NFC text to a reader."""
    import unicodedata
    reference = ["Le café est très bon ce matin .", "Un été à Noël ."]
    decomposed = [unicodedata.normalize("NFD", line) for line in reference]
    assert decomposed != reference
    assert bleu.sacre_bleu(decomposed, reference)[0] == pytest.approx(100.0)
    assert bleu.tokenized_bleu(decomposed, reference, "fr") == pytest.approx(100.0)
    (tmp_path / "hyp.txt").write_text("\n".join(decomposed) + "\n")
    (tmp_path / "ref.txt").write_text("\n".join(reference) + "\n")
    bleu.read_translation_and_reference(str(tmp_path / "hyp.txt"), str(tmp_path / "ref.txt"))
    assert "hyp.txt: 2 lines hold decomposed (NFD) Unicode letters" in caplog.text
