"""Text that looks the same scores the same, or the scorer says why (t2t_lite/metrics/lookalike.py).

Properties: a hypothesis with look-alike characters inserted scores as the one
without, in every scorer (sacreBLEU, the paper's tokenized BLEU, EVALB, the
registry's metrics through ``score_decodes``), and the warnings count exactly the
lines changed; the classes kept as written warn, naming the file and counting
the lines; an override is refused in one line naming file, line and column.
"""
import contextlib
import logging
import re
import sys
import unicodedata

import pytest
from hypothesis import example, given, settings, strategies as st

from t2t_lite.bin import t2t_bleu, t2t_parse_eval
from t2t_lite.data.problem import Problem
from t2t_lite.metrics import bleu, lookalike
from t2t_lite.metrics.scoring import score_decodes
from t2t_lite.registry import register_metric

WORDS = ["der", "die", "Hund", "läuft", "über", "café", "Straße", "finden", "schnell",
         "Öl", "flach", "Effekt", "heute", ",", ".", "Zürich", "naïve", "été", "groß", "und"]
# Removed wherever they stand in Latin text (ZWJ and ZWNJ too: Latin does not shape).
INVISIBLE = ["\u200b", "\u00ad", "\u2060", "\ufeff", "\u200e", "\u200f", "\u061c",
             "\u202a", "\u202b", "\u202c", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u2061", "\u2064", "\u206a", "\ufff9", "\U000e0001", "\U000e0041",
             "\u200c", "\u200d", "\u180e"]
SPACES = ["\u00a0", "\u1680", "\u2000", "\u2002", "\u2003", "\u2007", "\u2009", "\u200a",
          "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
LIGATURES = {"ff": "\ufb00", "fi": "\ufb01", "fl": "\ufb02"}


@contextlib.contextmanager
def warnings_logged():
    """The messages logged at WARNING or above inside the block (caplog is a function
    fixture, which hypothesis's examples would share)."""
    messages = []

    class Collect(logging.Handler):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Collect(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


def lines_counted(messages, name, what):
    """The line count of the one warning about ``what`` in ``name``; 0 when none."""
    found = [m for m in messages if m.startswith(f"{name}: ") and what in m]
    assert len(found) <= 1, found
    if not found:
        return 0
    count = found[0].split(": ", 1)[1].split()[0]
    return int(count)


def warned(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def scores(hyps, refs):
    return (bleu.sacre_bleu(hyps, refs)[0], bleu.tokenized_bleu(hyps, refs, "de"))


sentences = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
                     min_size=1, max_size=4)


@st.composite
def corpus(draw):
    """Hypotheses and references over a small vocabulary (so that n-grams match)."""
    refs = draw(sentences)
    hyps = [draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join))
            if draw(st.booleans()) else ref for ref in refs]
    return hyps, refs


@st.composite
def inserted(draw, lines, alphabet):
    """``lines`` with characters of ``alphabet`` inserted at drawn places, and the
    numbers of the lines changed."""
    out, changed = [], set()
    for number, line in enumerate(lines, 1):
        chars = list(line)
        for _ in range(draw(st.integers(0, 3))):
            chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(alphabet)))
        out.append("".join(chars))
        if out[-1] != line:
            changed.add(number)
    return out, changed


@st.composite
def respaced(draw, lines):
    """``lines`` with some of their spaces drawn from the non-standard ones."""
    return ["".join(draw(st.sampled_from([" "] + SPACES)) if char == " " else char
                    for char in line) for line in lines]


# --- the classes cover every character they should -----------------------------------

def test_every_format_character_has_exactly_one_class():
    classes = {"override": lookalike._OVERRIDES, "joiner": lookalike._JOINERS,
               "drawn": lookalike._DRAWN_FORMAT, "invisible": lookalike._INVISIBLE_FORMAT}
    compiled = {name: re.compile(f"[{chars}]") for name, chars in classes.items()}
    for code in range(sys.maxunicode + 1):
        if unicodedata.category(chr(code)) == "Cf":
            found = [name for name, pattern in compiled.items() if pattern.fullmatch(chr(code))]
            assert len(found) == 1, f"U+{code:04X}: {found}"


def test_every_space_but_the_plain_one_becomes_it():
    odd = [chr(c) for c in range(sys.maxunicode + 1)
           if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp") and c != 0x20]
    assert lookalike.normalised_lines(["a" + "b".join(odd) + "c"]) == [
        "a" + "b".join(" " * len(odd)) + "c"]


# --- properties: look-alikes score as the text without them --------------------------

@settings(max_examples=60)
@given(st.data())
def test_invisible_format_characters_score_as_without_and_are_counted(data):
    hyps, refs = data.draw(corpus())
    dirty, changed = data.draw(inserted(hyps, INVISIBLE))
    assert scores(dirty, refs) == scores(hyps, refs)
    with warnings_logged() as messages:
        clean, _ = lookalike.scored_pair(dirty, refs, "hyp.txt", "ref.de")
    assert clean == hyps
    assert lines_counted(messages, "hyp.txt", "invisible format characters") == len(changed)
    assert not [m for m in messages if m.startswith("ref.de")]


@settings(max_examples=60)
@given(st.data())
def test_odd_spaces_score_as_plain_ones_and_are_counted(data):
    hyps, refs = data.draw(corpus())
    dirty = data.draw(respaced(hyps))
    assert scores(dirty, refs) == scores(hyps, refs)
    with warnings_logged() as messages:
        clean, _ = lookalike.scored_pair(dirty, refs, "hyp.txt", "ref.de")
    assert clean == hyps
    assert lines_counted(messages, "hyp.txt", "non-standard spaces") == sum(
        d != h for d, h in zip(dirty, hyps))


@settings(max_examples=60)
@given(corpus(), st.data())
def test_decomposed_letters_and_ligatures_score_as_the_composed_letters(pair, data):
    hyps, refs = pair
    dirty = []
    for line in hyps:
        if data.draw(st.booleans()):
            line = unicodedata.normalize("NFD", line)
        if data.draw(st.booleans()):
            for letters, ligature in LIGATURES.items():
                line = line.replace(letters, ligature)
        dirty.append(line)
    assert scores(dirty, refs) == scores(hyps, refs)
    with warnings_logged() as messages:
        clean, _ = lookalike.scored_pair(dirty, refs, "hyp.txt", "ref.de")
    assert clean == hyps
    assert lines_counted(messages, "hyp.txt", "decomposed (NFD)") == sum(
        not unicodedata.is_normalized("NFC", line) for line in dirty)
    assert lines_counted(messages, "hyp.txt", "ligatures") == sum(
        any(lig in line for lig in LIGATURES.values()) for line in dirty)


@settings(max_examples=40)
@given(st.data())
def test_both_sides_are_treated_alike(data):
    hyps, refs = data.draw(corpus())
    dirty_hyps = data.draw(respaced(data.draw(inserted(hyps, INVISIBLE))[0]))
    dirty_refs = data.draw(respaced(data.draw(inserted(refs, INVISIBLE))[0]))
    assert scores(dirty_hyps, dirty_refs) == scores(hyps, refs)


@given(st.text())
@example("\u0301\u094d\u200c")  # NFC reorders the marks: the joiner's neighbour changes
def test_normalising_is_idempotent(text):
    text = text.replace("\u202d", "").replace("\u202e", "")
    once = lookalike.normalised_lines([text])
    assert lookalike.normalised_lines(once) == once


# --- kept as written: the scorer says why the score moves ----------------------------

LOOKALIKE_LETTERS = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "c": "\u0441",
                     "p": "\u0440", "x": "\u0445", "H": "\u041d", "O": "\u039f"}


@settings(max_examples=60)
@given(corpus(), st.data())
def test_a_cyrillic_or_greek_lookalike_letter_is_scored_as_written_with_a_warning(pair, data):
    hyps, refs = pair
    dirty, changed = [], 0
    for line in hyps:
        letters = [i for i, c in enumerate(line) if c in LOOKALIKE_LETTERS]
        if letters and data.draw(st.booleans()):
            i = data.draw(st.sampled_from(letters))
            line = line[:i] + LOOKALIKE_LETTERS[line[i]] + line[i + 1:]
            # a word of one letter (none in WORDS) would not be a mixed word
            changed += 1
        dirty.append(line)
    with warnings_logged() as messages:
        clean, _ = lookalike.scored_pair(dirty, refs, "hyp.txt", "ref.de")
    assert clean == dirty  # not folded
    assert lines_counted(messages, "hyp.txt", "words mixing Latin letters") == changed
    if scores(dirty, refs) != scores(hyps, refs):
        assert changed


@settings(max_examples=60)
@given(corpus(), st.data())
def test_full_width_letters_are_scored_as_written_with_a_warning(pair, data):
    hyps, refs = pair
    full = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
    dirty = [line.translate(str.maketrans(full)) if data.draw(st.booleans()) else line
             for line in hyps]
    with warnings_logged() as messages:
        clean, _ = lookalike.scored_pair(dirty, refs, "hyp.txt", "ref.de")
    assert clean == dirty
    widened = sum(d != h for d, h in zip(dirty, hyps))
    assert lines_counted(messages, "hyp.txt", "compatibility characters that ref.de") == widened
    if scores(dirty, refs) != scores(hyps, refs):
        assert widened


def test_compatibility_characters_both_sides_use_are_not_warned_about():
    """A Chinese hypothesis and reference both with full-width commas: no word."""
    with warnings_logged() as messages:
        lookalike.scored_pair(["我们，今天"], ["他们，明天"], "hyp.zh", "ref.zh")
    assert messages == []


# --- joiners: kept where they shape the letters, removed where invisible -------------

@pytest.mark.parametrize("text", [
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian mi-khaham, ZWNJ
    "\u0915\u094d\u200d\u0937",                          # Devanagari half form, ZWJ
    "\u0d28\u0d4d\u200d",                                 # Malayalam old chillu, word end
    "\U0001f468\u200d\U0001f469\u200d\U0001f467",         # an emoji family
    "\U0001f3f3\ufe0f\u200d\U0001f308",                   # rainbow flag
    "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",  # England
    "\u0600\u0661\u0662",                                 # Arabic number sign
])
def test_joiners_and_drawn_format_characters_are_kept(text):
    with warnings_logged() as messages:
        assert lookalike.scored_pair([text], ["x"], "hyp", "ref")[0] == [text]
    assert not [m for m in messages if "format characters" in m]
    # a Persian hypothesis without its ZWNJ is another spelling and scores as one
    plain = text.replace("\u200c", "").replace("\u200d", "")
    if plain != text:
        assert bleu.sacre_bleu([plain], [text])[0] < 100


def test_joiners_between_latin_letters_are_removed():
    assert lookalike.normalised_lines(["co\u200coperate", "e\u200dmail", "\u200cab"]) == [
        "cooperate", "email", "ab"]


# --- refused ------------------------------------------------------------------------

@pytest.mark.parametrize("override", ["\u202d", "\u202e"])
def test_an_override_is_refused_naming_the_line_and_column(override):
    with pytest.raises(lookalike.LookalikeTextError,
                       match=rf"^hyp.txt:2: bidirectional override U\+{ord(override):04X} .* "
                             r"at column 3: .*remove it"):
        lookalike.scored_pair(["fine", "ab" + override + "cd"], ["x", "y"], "hyp.txt", "ref")
    with pytest.raises(lookalike.LookalikeTextError, match="^translations:1: "):
        bleu.sacre_bleu([override + "x"], ["x"])


# --- the commands ----------------------------------------------------------------------

def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


REFS = ["Der schnelle braune Hund läuft über die Straße .", "Das Café ist heute geschlossen ."]
DIRTY = ["Der schnelle\u200b braune Hund l\u00ada\u0308uft über\u00a0die Straße .",
         "Das \ufeffCafe\u0301 ist heute geschlossen\u2060 ."]


def test_t2t_bleu_scores_lookalikes_as_the_text_and_says_so(tmp_path, capsys, caplog):
    ref = _write(tmp_path / "ref.de", REFS)
    clean = _write(tmp_path / "clean.txt", REFS)
    dirty = _write(tmp_path / "dirty.txt", DIRTY)
    source = _write(tmp_path / "source.txt", DIRTY)
    assert t2t_bleu.main([f"--translation={clean}", f"--reference={ref}"]) == 0
    expected = capsys.readouterr().out
    assert warned(caplog) == [] and "100.00" in expected
    assert t2t_bleu.main([f"--translation={dirty}", f"--reference={ref}",
                          f"--source={source}", "--length_buckets=5"]) == 0
    assert capsys.readouterr().out.startswith(expected)
    messages = warned(caplog)
    assert len(messages) == 2 * 3 and all("\n" not in m for m in messages)
    for name in (dirty, source):  # the translation, and the source of the length buckets
        assert lines_counted(messages, name, "invisible format characters") == 2
        assert lines_counted(messages, name, "non-standard spaces") == 1
        assert lines_counted(messages, name, "decomposed (NFD)") == 2


def test_t2t_bleu_refuses_an_override_in_one_line(tmp_path, capsys):
    ref = _write(tmp_path / "ref.de", REFS)
    bad = _write(tmp_path / "bad.txt", [REFS[0], "\u202e" + REFS[1]])
    assert t2t_bleu.main([f"--translation={bad}", f"--reference={ref}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"t2t-bleu: error: {bad}:2: bidirectional")


GOLD = "(S (NP (DT The) (NN café)) (VP (VBZ barks)))"


def test_t2t_parse_eval_scores_lookalikes_as_the_text(tmp_path, capsys, caplog):
    gold = _write(tmp_path / "gold.trees", [GOLD])
    test = _write(tmp_path / "test.trees", [
        "(S (NP\u200b (DT The) (NN cafe\u0301)) (VP\u00a0(VBZ barks)))"])
    assert t2t_parse_eval.main([f"--gold={gold}", f"--test={test}"]) == 0
    assert "Bracketing FMeasure       = 100.00" in capsys.readouterr().out
    messages = warned(caplog)
    assert len(messages) == 3
    assert lines_counted(messages, test, "invisible format characters") == 1
    assert lines_counted(messages, test, "decomposed (NFD)") == 1
    assert lines_counted(messages, test, "non-standard spaces") == 1
    bad = _write(tmp_path / "bad.trees", ["(S (NP (DT The) (NN \u202dcafé)) (VP (VBZ barks)))"])
    assert t2t_parse_eval.main([f"--gold={gold}", f"--test={bad}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:1: bidirectional override U+202D" in err[0]


seen = []


@register_metric("lookalike_test_metric")
def _seen_metric(hypotheses, references):
    seen.append((hypotheses, references))
    return ["seen 1.00"]


class MetricProblem(Problem):
    eval_metric = "bleu"

    def eval_metric_options(self):
        return {"language": "de"} if self.eval_metric == "bleu" else {}

    def generate_data(self, data_dir, tmp_dir):
        raise NotImplementedError

    def feature_encoders(self, data_dir):
        raise NotImplementedError


@pytest.mark.parametrize("metric, references, dirty", [
    ("bleu", REFS, DIRTY),
    ("evalb", [GOLD], ["(S (NP\u200b (DT The) (NN cafe\u0301)) (VP (VBZ barks)))"]),
    ("sequence_accuracy", ["1 0 1", "0 1"], ["1\u00a00 1\u200b", "0 \u20601"]),
    ("lookalike_test_metric", REFS, DIRTY),
])
def test_score_decodes_scores_lookalikes_as_the_text(metric, references, dirty, caplog):
    """What t2t-decoder --decode_reference, the dev-decode scorer and the benchmarks print."""
    problem = MetricProblem()
    problem.eval_metric = metric
    expected = score_decodes(problem, references, references)
    assert warned(caplog) == []
    assert score_decodes(problem, dirty, references, "out.txt", "ref.txt") == expected
    assert lines_counted(warned(caplog), "out.txt", "invisible format characters") == sum(
        any(c in line for c in INVISIBLE) for line in dirty)
    if metric == "lookalike_test_metric":
        assert seen[-1] == (REFS, REFS)  # a user's metric gets the normalised text too
    with pytest.raises(lookalike.LookalikeTextError, match="^the decoded lines:1: "):
        score_decodes(problem, ["\u202e" + line for line in dirty], references)
