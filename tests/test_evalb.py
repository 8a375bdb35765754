"""Tests for t2t_lite.parsing.evalb and the t2t-parse-eval CLI, with figures worked out by hand.

Brackets are written label[start,end) over the words left once punctuation
(gold POS in , : `` '' .) is deleted; the root TOP / unlabelled bracket is not scored.
"""
import os

import pytest

from t2t_lite.bin import t2t_parse_eval
from t2t_lite.parsing.evalb import evalb, format_report, score_sentence
from t2t_lite.parsing.linearize import with_placeholder_tags
from t2t_lite.parsing.trees import file_range_files, parse_trees, read_treebank

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTB_SAMPLE = os.path.join(REPO_ROOT, "..", "shared", "data", "ptb_sample", "combined")


def tree(text):
    return parse_trees(text)[0]


def score(gold_text, test_text, max_length=40):
    return evalb([tree(gold_text)], [tree(test_text)], max_length)


def test_unary_chains_count_with_multiplicity():
    gold = "(S (NP (NP (DT the) (NN dog))) (VP (VBZ barks)))"
    # gold: S[0,3) NP[0,2) NP[0,2) VP[2,3) = 4; test: S[0,3) NP[0,2) VP[2,3) = 3.
    # matched = S 1 + NP min(2,1) + VP 1 = 3: R = 3/4 = 75, P = 3/3 = 100,
    # F1 = 2*75*100/175 = 85.714.
    totals = score(gold, "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))").all
    assert (totals.gold_brackets, totals.test_brackets, totals.matched) == (4, 3, 3)
    assert totals.recall == 75.0 and totals.precision == 100.0
    assert totals.f1 == pytest.approx(85.714, abs=1e-3) and totals.exact_match == 0.0
    # test with three NPs: 5 brackets, matched = 1 + min(2,3) + 1 = 4: R = 4/4 = 100,
    # P = 4/5 = 80, F1 = 2*80*100/180 = 88.889.
    totals = score(gold, "(S (NP (NP (NP (DT the) (NN dog)))) (VP (VBZ barks)))").all
    assert (totals.matched, totals.recall, totals.precision) == (4, 100.0, 80.0)
    assert totals.f1 == pytest.approx(88.889, abs=1e-3)


def test_punctuation_is_deleted_by_gold_tags_and_empty_brackets_vanish():
    gold = "(S (`` ``) (NP (NNP John)) (VP (VBZ runs) (ADVP (RB fast))) (. .) ('' ''))"
    # Kept words: John runs fast. gold: S[0,3) NP[0,1) VP[1,3) ADVP[2,3) = 4.
    # test: NP holds `` John -> [0,1); VP holds runs fast . -> [1,3); FRAG holds only ''
    # -> covers nothing -> not scored; S[0,3) ADVP[2,3): 4 brackets, all matched.
    test = "(S (NP (`` ``) (NNP John)) (VP (VBZ runs) (ADVP (RB fast)) (. .)) (FRAG ('' '')))"
    result = score(gold, test)
    assert (result.all.gold_brackets, result.all.test_brackets, result.all.matched) == (4, 4, 4)
    assert result.all.f1 == 100.0 and result.all.exact_match == 100.0
    # The length counts punctuation: 6 words.
    assert result.sentences[0].length == 6
    # Punctuation is found by the GOLD tags, so a test tree without POS scores the same.
    placeholder = with_placeholder_tags(tree(test))
    assert evalb([tree(gold)], [placeholder]).all.matched == 4


def test_advp_and_prt_are_the_same_label():
    gold = "(S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))))"
    # 4 brackets each: S[0,3) NP[0,1) VP[1,3) PRT[2,3) vs ADVP[2,3): PRT == ADVP, 4 matched.
    assert score(gold, "(S (NP (PRP He)) (VP (VBD gave) (ADVP (RP up))))").all.matched == 4
    # ADJP is not equivalent: 3 of 4 matched, R = P = 75.
    totals = score(gold, "(S (NP (PRP He)) (VP (VBD gave) (ADJP (RP up))))").all
    assert (totals.matched, totals.recall, totals.precision) == (3, 75.0, 75.0)


def test_root_bracket_is_ignored_but_a_different_sentence_label_counts():
    gold = "( (S (NP (PRP He)) (VP (VBD left))) )"
    # The unlabelled outer bracket and TOP are not scored: S[0,2) NP[0,1) VP[1,2) = 3.
    assert score(gold, "(TOP (S (NP (PRP He)) (VP (VBD left))))").all.f1 == 100.0
    # SINV instead of S: 3 brackets each, 2 matched: P = R = 2/3 = 66.667.
    totals = score(gold, "(TOP (SINV (NP (PRP He)) (VP (VBD left))))").all
    assert (totals.gold_brackets, totals.test_brackets, totals.matched) == (3, 3, 2)
    assert totals.f1 == pytest.approx(66.667, abs=1e-3)


def test_raw_gold_with_empty_elements_and_function_tags():
    gold = ("( (S (NP-SBJ-1 (NNP Pierre)) (VP (VBD said) (SBAR (-NONE- 0) (S (-NONE- *T*-2))))"
            " (. .)) )")
    # SBAR and its S cover only -NONE-: removed. S[0,2) NP[0,1) VP[1,2) = 3, all matched.
    result = score(gold, "(S (NP (NNP Pierre)) (VP (VBD said)) (. .))")
    assert (result.all.gold_brackets, result.all.matched) == (3, 3)
    assert result.sentences[0].length == 3   # -NONE- is not counted, the period is


def test_crossing_brackets():
    gold = "(S (NP (DT a) (NN b)) (VP (VBZ c) (NN d)))"
    # gold S[0,4) NP[0,2) VP[2,4); test S[0,4) X[1,3): matched S only, R = 1/3, P = 1/2.
    # X[1,3) crosses NP[0,2) (and VP[2,4)); it counts once: crossing = 1.
    totals = score(gold, "(S (DT a) (X (NN b) (VBZ c)) (NN d))").all
    assert totals.matched == 1 and totals.crossing == 1 and totals.average_crossing == 1.0
    assert totals.recall == pytest.approx(33.333, abs=1e-3) and totals.precision == 50.0


def test_tagging_accuracy_skips_punctuation_and_untagged_test_trees():
    gold = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))"
    # Scored tags: the/DT dog/NN barks/VBZ (the period is deleted, its wrong tag ignored).
    # test gets dog wrong: 2/3 = 66.667.
    test = "(S (NP (DT the) (NNS dog)) (VP (VBZ barks)) (, .))"
    assert score(gold, test).all.tagging_accuracy == pytest.approx(66.667, abs=1e-3)
    untagged = str(with_placeholder_tags(tree(test)))
    assert score(gold, untagged).all.tagging_accuracy is None
    # A tagged and an untagged sentence: only the tagged one counts, 2/3 again.
    mixed = evalb([tree(gold), tree(gold)], [tree(test), tree(untagged)])
    assert mixed.all.tagged_words == 3 and mixed.all.correct_tags == 2


def test_length_cutoff_counts_punctuation_not_empty_elements():
    words40 = " ".join(f"(NN w{i})" for i in range(40))
    # 40 words plus a -NONE-: length 40, in the <=40 set. gold S[0,40) VP[0,40) (the NP holds
    # only -NONE-), test the same: 2 of 2 matched.
    short_gold = f"(S (NP (-NONE- *)) (VP {words40}))"
    short_test = f"(S (VP {words40}))"
    words20 = " ".join(f"(NN v{i})" for i in range(20))
    words19 = " ".join(f"(NN u{i})" for i in range(19))
    # 39 words plus 2 punctuation: length 41, not in the <=40 set. gold S[0,39) NP[0,20)
    # VP[20,39) = 3; test S[0,39) NP[0,39) = 2; matched S only = 1.
    long_gold = f"(S (NP {words20}) (VP {words19}) (, ,) (. .))"
    long_test = f"(S (NP {words20} {words19}) (, ,) (. .))"
    result = evalb([tree(short_gold), tree(long_gold)], [tree(short_test), tree(long_test)])
    assert [s.length for s in result.sentences] == [40, 41]
    # All: gold 2+3 = 5, test 2+2 = 4, matched 2+1 = 3: R = 60, P = 75,
    # F1 = 2*60*75/135 = 66.667; exact match 1 of 2 = 50.
    assert (result.all.sentences, result.all.recall, result.all.precision) == (2, 60.0, 75.0)
    assert result.all.f1 == pytest.approx(66.667, abs=1e-3) and result.all.exact_match == 50.0
    # len<=40: the first sentence only, perfect.
    assert (result.short.sentences, result.short.f1, result.short.exact_match) == (1, 100.0, 100.0)
    wider = evalb([tree(short_gold), tree(long_gold)], [tree(short_test), tree(long_test)], 41)
    assert wider.short.sentences == 2 and wider.short.matched == 3


def test_mismatches_name_the_sentence():
    gold = [tree("(S (NN a) (NN b))"), tree("(S (NN c) (NN d) (NN e))")]
    with pytest.raises(ValueError, match="gold has 2 trees but test has 1: sentence 2 is missing "
                                         "from test"):
        evalb(gold, gold[:1])
    with pytest.raises(ValueError, match="sentence 2 is missing from gold"):
        evalb(gold[:1], gold)
    with pytest.raises(ValueError, match="sentence 2: word 2 is 'd' in gold but 'x' in test"):
        evalb(gold, [gold[0], tree("(S (NN c) (NN x) (NN e))")])
    with pytest.raises(ValueError, match="sentence 2: gold has 3 words but test has 2"):
        evalb(gold, [gold[0], tree("(S (NN c) (NN d))")])
    with pytest.raises(ValueError, match="sentence 7: the test tree has no words"):
        score_sentence(gold[0], tree("(S (-NONE- *))"), sentence=7)


def test_format_report():
    report = format_report(score("(S (NP (NP (DT the) (NN dog))) (VP (VBZ barks)))",
                                 "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"))
    assert "-- All --" in report and "-- len<=40 --" in report
    assert "Bracketing FMeasure       =  85.71" in report
    assert "Tagging accuracy          = 100.00" in report


def test_cli(tmp_path, capsys):
    gold = tmp_path / "gold.mrg"
    gold.write_text("( (S (NP-SBJ (PRP He))\n    (VP (VBD gave) (PRT (RP up)))) )\n")
    test = tmp_path / "test.txt"
    test.write_text("(S (NP (XX He)) (VP (XX gave) (ADVP (XX up))))\n")
    assert t2t_parse_eval.main([f"--gold={gold}", f"--test={test}", "--max_length=2"]) == 0
    out = capsys.readouterr().out
    assert "Bracketing FMeasure       = 100.00" in out and "-- len<=2 --" in out
    test.write_text("(S (NP (XX He)) (VP (XX gave) (ADVP (XX down))))\n")
    assert t2t_parse_eval.main([f"--gold={gold}", f"--test={test}"]) == 2
    assert "sentence 1: word 3 is 'up' in gold but 'down' in test" in capsys.readouterr().err


def test_real_sample_scores_100_against_itself():
    if not os.path.isdir(PTB_SAMPLE):
        pytest.skip(f"Penn Treebank sample not found at {os.path.normpath(PTB_SAMPLE)}")
    gold = read_treebank(file_range_files(PTB_SAMPLE, "wsj_0001", "wsj_0199"))
    result = evalb(gold, [with_placeholder_tags(t) for t in gold])
    assert result.all.sentences == len(gold) and result.all.f1 == 100.0
    assert result.all.exact_match == 100.0 and result.short.f1 == 100.0
    assert 0 < result.short.sentences < len(gold)
