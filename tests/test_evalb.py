"""Tests for t2t_lite.parsing.evalb and the t2t-parse-eval CLI, with figures worked out by hand.

Brackets are written label[start,end) over the words left once punctuation
(gold POS in , : `` '' .) is deleted; the root TOP / unlabelled bracket is not scored.
"""
import os

import pytest

from t2t_lite.bin import t2t_parse_eval
from t2t_lite.parsing.evalb import evalb, format_report, score_sentence
from t2t_lite.parsing.linearize import with_placeholder_tags
from t2t_lite.parsing.trees import parse_trees, read_tree_file

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


# Real WSJ trees from ../shared, read raw as EVALB reads the gold file (outer unlabelled
# bracket, function tags, -NONE- elements and traces), each scored against a damaged parse
# written by hand the way a parser prints it. Beside each case: the kept words (numbered once
# -NONE- and the punctuation of COLLINS.prm are deleted), the gold and test brackets over them,
# and the EVALB figures worked out by hand. Counts are (length, gold brackets, test brackets,
# matched, crossing, tagged words, correct tags); figures (recall, precision, F1).
DAMAGED_PARSES = [
    pytest.param(
        # Pierre0 Vinken1 ,- 61_2 years3 old4 ,- will5 join6 the7 board8 as9 a10
        # nonexecutive11 director12 Nov.13 29_14 .-   length 18: punctuation counts.
        # gold 11: S[0,15) NP[0,5) NP[0,2) ADJP[2,5) NP[2,4) VP[5,15) VP[6,15) NP[7,9) PP[9,13)
        #          NP[10,13) NP[13,15)
        # test: a TOP root (not scored); the second comma moved out of the subject NP, which
        # still covers [0,5) once commas are deleted; "as a nonexecutive director" attached to
        # "the board": one extra bracket NP[7,13), nested in VP[6,15), crossing nothing.
        # 11 of 12 matched: R 100, P 91.667, F1 2*100*91.667/191.667 = 95.652.
        "wsj_0001", 0,
        "(TOP (S (NP (NP (NNP Pierre) (NNP Vinken)) (, ,) (ADJP (NP (CD 61) (NNS years))"
        " (JJ old))) (, ,) (VP (MD will) (VP (VB join) (NP (NP (DT the) (NN board)) (PP (IN as)"
        " (NP (DT a) (JJ nonexecutive) (NN director)))) (NP (NNP Nov.) (CD 29)))) (. .)))",
        (18, 11, 12, 11, 0, 15, 15), (100.0, 91.667, 95.652),
        id="punctuation-moved-and-wrong-attachment"),
    pytest.param(
        # Younkers0 rang1 up2 sales3 *ICH*- in4 1988_5 of6 $7 313_8 million9 *U*- .-
        # length 11: the two -NONE- elements do not count (DELETE_LABEL_FOR_LENGTH).
        # gold 11: S[0,10) NP[0,1) VP[1,10) PRT[2,3) NP[3,4) NP[3,4) PP[4,6) NP[5,6) PP[6,10)
        #          NP[7,10) QP[7,10)
        # NP[3,4) twice: (NP (NP sales) (PP *ICH*)) loses its empty PP, leaving a unary chain.
        # test 10: ADVP for PRT (EQ_LABEL ADVP PRT: matched); one NP over "sales" (matches one
        # of the two); the QP labelled NP (NP[7,10) twice in test, once in gold: one matched).
        # 9 matched: R 9/11 = 81.818, P 9/10 = 90, F1 2*9/(11+10) = 85.714.
        "wsj_0156", 3,
        "(S (NP (NNS Younkers)) (VP (VBD rang) (ADVP (RP up)) (NP (NNS sales)) (PP (IN in)"
        " (NP (CD 1988))) (PP (IN of) (NP (NP ($ $) (CD 313) (CD million))))) (. .))",
        (11, 11, 10, 9, 0, 10, 10), (81.818, 90.0, 85.714),
        id="advp-for-prt-collapsed-unary-and-wrong-label"),
    pytest.param(
        # The same sentence parsed right, printed as a parser prints it (no function tags,
        # no -NONE-): the unary chain NP[3,4) NP[3,4) must match twice. 11 of 11: complete.
        "wsj_0156", 3,
        "(S (NP (NNS Younkers)) (VP (VBD rang) (PRT (RP up)) (NP (NP (NNS sales))) (PP (IN in)"
        " (NP (CD 1988))) (PP (IN of) (NP (QP ($ $) (CD 313) (CD million))))) (. .))",
        (11, 11, 11, 11, 0, 10, 10), (100.0, 100.0, 100.0),
        id="unary-chain-reproduced"),
    pytest.param(
        # This0 cute1 child2 turns3 out4 *-1- to5 be6 a7 blessing8 and9 a10 curse11 .-  length 13
        # gold 10: S[0,12) NP[0,3) VP[3,12) PRT[4,5) S[5,12) VP[5,12) VP[6,12) NP[7,12) NP[7,9)
        #          NP[10,12)   (the S over "to be ..." keeps its label once its -NONE- subject
        #          goes: S[5,12) and VP[5,12) are two brackets over the same words)
        # test 9: no S over "to be ..." (missing bracket); "be a blessing" coordinated with "a
        # curse" (VP[6,9) instead of NP[7,12); VP[6,9) crosses NP[7,12): 1 crossing); "out"
        # tagged IN instead of RP: 11 of 12 tags right.
        # 8 matched: R 8/10 = 80, P 8/9 = 88.889, F1 2*8/(10+9) = 84.211.
        "wsj_0039", 20,
        "(S (NP (DT This) (JJ cute) (NN child)) (VP (VBZ turns) (PRT (IN out)) (VP (TO to)"
        " (VP (VP (VB be) (NP (DT a) (NN blessing))) (CC and) (NP (DT a) (NN curse))))) (. .))",
        (13, 10, 9, 8, 1, 12, 11), (80.0, 88.889, 84.211),
        id="missing-bracket-crossing-and-wrong-tag"),
    pytest.param(
        # `- *- Sit0 down1 !-   length 4: the quote (tag ``) and the "!" (tag .) count,
        # the -NONE- subject does not. gold 3: S[0,2) VP[0,2) PRT[1,2).
        # test: ADVP for PRT, nothing else changed: 3 of 3, a complete match.
        "wsj_0118", 100,
        "(S (`` `) (VP (VB Sit) (ADVP (RB down))) (. !))",
        (4, 3, 3, 3, 0, 2, 2), (100.0, 100.0, 100.0),
        id="complete-match-with-advp-for-prt"),
    pytest.param(
        # Mr.0 Vinken1 is2 chairman3 of4 Elsevier5 N.V.6 ,- the7 Dutch8 publishing9 group10 .-
        # length 13. gold 9: S[0,11) NP[0,2) VP[2,11) NP[3,11) NP[3,4) PP[4,11) NP[5,11)
        #                    NP[5,7) NP[7,11)
        # test 11: two extra unary NPs over "chairman" (NP[3,4) three times in test, once in
        # gold: one matched); the comma inside the first NP of the apposition (deleted: no
        # effect). 9 matched: R 100, P 9/11 = 81.818, F1 2*9/(9+11) = 90.
        "wsj_0001", 1,
        "(S (NP (NNP Mr.) (NNP Vinken)) (VP (VBZ is) (NP (NP (NP (NP (NN chairman)))) (PP (IN of)"
        " (NP (NP (NNP Elsevier) (NNP N.V.) (, ,)) (NP (DT the) (NNP Dutch) (VBG publishing)"
        " (NN group)))))) (. .))",
        (13, 9, 11, 9, 0, 11, 11), (100.0, 81.818, 90.0),
        id="extra-unary-chain"),
]


@pytest.fixture(scope="module")
def sample_gold():
    """(file name, tree index) -> that raw gold tree of the Penn Treebank sample."""
    if not os.path.isdir(PTB_SAMPLE):
        pytest.skip(f"Penn Treebank sample not found at {os.path.normpath(PTB_SAMPLE)} "
                    "(../shared/data/ptb_sample, beside the project)")
    files = {}

    def gold(name, index):
        if name not in files:
            files[name] = read_tree_file(os.path.join(PTB_SAMPLE, f"{name}.mrg"))
        return files[name][index]
    return gold


@pytest.mark.parametrize("name,index,test_text,counts,figures", DAMAGED_PARSES)
def test_damaged_parse_of_a_real_sentence(sample_gold, name, index, test_text, counts,
                                          figures):
    result = evalb([sample_gold(name, index)], [tree(test_text)])
    got = result.sentences[0]
    assert (got.length, got.gold_brackets, got.test_brackets, got.matched, got.crossing,
            got.tagged_words, got.correct_tags) == counts
    recall, precision, f1 = figures
    assert result.all.recall == pytest.approx(recall, abs=1e-3)
    assert result.all.precision == pytest.approx(precision, abs=1e-3)
    assert result.all.f1 == pytest.approx(f1, abs=1e-3)
    assert result.all.exact_match == (100.0 if counts[1] == counts[2] == counts[3] else 0.0)


def test_report_over_the_damaged_real_sentences(sample_gold):
    cases = [param.values for param in DAMAGED_PARSES]
    gold = [sample_gold(name, index) for name, index, *_ in cases]
    result = evalb(gold, [tree(test_text) for _, _, test_text, *_ in cases], max_length=12)
    # All six: gold 11+11+11+10+3+9 = 55, test 12+10+11+9+3+11 = 56, matched
    # 11+9+11+8+3+9 = 51: R 51/55 = 92.727, P 51/56 = 91.071, F1 2*51/(55+56) = 91.892;
    # complete matches 2 of 6 = 33.333; 1 crossing / 6 = 0.16667; tags 59 right of 60 = 98.333.
    totals = result.all
    assert (totals.sentences, totals.gold_brackets, totals.test_brackets, totals.matched) == (
        6, 55, 56, 51)
    assert totals.recall == pytest.approx(92.727, abs=1e-3)
    assert totals.precision == pytest.approx(91.071, abs=1e-3)
    assert totals.f1 == pytest.approx(91.892, abs=1e-3)
    assert totals.exact_match == pytest.approx(33.333, abs=1e-3)
    assert totals.average_crossing == pytest.approx(0.16667, abs=1e-5)
    assert totals.tagging_accuracy == pytest.approx(98.333, abs=1e-3)
    # Lengths 18, 11, 11, 13, 4, 13: len<=12 holds the two Younkers parses and "Sit down".
    # It would also take "This cute child ..." (12) and "Mr. Vinken ..." (11) if punctuation
    # were not counted, and lose the Younkers sentence (13) if its -NONE- elements were.
    # gold 11+11+3 = 25, test 10+11+3 = 24, matched 9+11+3 = 23: R 92, P 95.833,
    # F1 2*23/(25+24) = 93.878; complete 2 of 3.
    short = result.short
    assert (short.sentences, short.gold_brackets, short.test_brackets, short.matched) == (
        3, 25, 24, 23)
    assert short.f1 == pytest.approx(93.878, abs=1e-3)
    assert short.exact_match == pytest.approx(66.667, abs=1e-3)
    report = format_report(result)
    assert "-- All --" in report and "Bracketing FMeasure       =  91.89" in report
    assert "-- len<=12 --" in report and "Bracketing Precision      =  95.83" in report
