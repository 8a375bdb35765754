"""Text that looks the same scores the same, or the scorer says why not.

sacreBLEU, the Moses scripts and EVALB compare code points, so two lines a
reader cannot tell apart could score differently with exit 0 and no word: a
zero-width space inside a word made it another token (two lines translated
exactly, each with one, scored sacreBLEU 76.77), one inside a tree's label made
it another label (F1 66.67 for a perfect parse), and a word typed decomposed
(NFD) in the test trees stopped ``t2t-parse-eval`` with "word 2 is 'café' in
gold but 'café' in test". Every scorer (``t2t-bleu``,
``t2t-parse-eval``, ``score_decodes`` behind ``t2t-decoder --decode_reference``,
the dev-decode scorer and the benchmarks) passes both sides through this module
first, the hypotheses and the references alike, so that they cannot drift:
``scored_pair`` (both files, with warnings), ``scored_lines`` (one file, e.g. the
source of the length buckets) and ``normalised_lines`` (silent, idempotent: what
``t2t_lite.metrics.bleu``'s functions apply to text a library caller passes in).

Decided per class. "Normalised" means changed in both files alike, with one
warning a class and file counting its lines; "kept" means scored as written.

* Invisible format characters (Unicode category Cf) are removed: zero-width
  space U+200B, word joiner U+2060, soft hyphen U+00AD (a hyphenation hint,
  drawn only where a line wraps), U+FEFF inside a line (a byte-order mark of a
  concatenated file; the one opening a file is already dropped as it is read),
  the direction marks LRM/RLM/ALM, the bidirectional embeddings and isolates
  (U+202A-U+202C, U+2066-U+2069: they only place runs of mixed-direction text;
  the letters and their stored order, which is what is scored, are the same),
  the invisible math operators U+2061-U+2064, the deprecated U+206A-U+206F, the
  interlinear annotation marks U+FFF9-U+FFFB and the tag characters outside an
  emoji flag. None is drawn, none is a letter of any orthography, and removing
  one never joins two words that a space parted (a zero-width space in Thai
  marks a word edge, but the scorers split on white space only, so "A<ZWSP>B"
  was one token before as "AB" is now). Neither sacreBLEU nor Moses removes
  them; their score of text without them is unchanged.
* Zero-width non-joiner and joiner (U+200C, U+200D) and the Mongolian vowel
  separator (U+180E) are kept where they change what is drawn: next to a letter
  or mark of a script that shapes with them (Arabic, Syriac, N'Ko, Mongolian,
  Tibetan and the Brahmic scripts of South and Southeast Asia: the Persian
  ZWNJ of "می‌خواهم" keeps two letters apart, an Indic ZWJ picks a half form),
  and a ZWJ between two emoji (a family is one glyph). A Persian hypothesis
  without its ZWNJ looks different and is a different spelling, so it scores
  as one. Elsewhere (between Latin letters, at a word's edge in a script that
  does not shape) they are invisible and removed with the other format
  characters.
* Bidirectional overrides (LRO U+202D, RLO U+202E) are refused in one line
  naming the file, line and column: they draw the letters that follow in an
  order other than the stored one, so the line read on screen is not the line
  scored, and which of the two was meant cannot be known. No translation needs
  one (the "Trojan Source" trick uses them).
* Format characters that are drawn, or lay out the symbols around them, are
  kept: the Arabic and Syriac prepended concatenation marks (U+0600-U+0605,
  U+06DD, U+070F, U+0890-U+0891, U+08E2, U+110BD, U+110CD: a sign drawn over the
  digits that follow), the Egyptian hieroglyph, Duployan shorthand and musical
  symbol format controls, and an emoji flag's tag sequence (England's flag).
* Non-standard spaces (the other Zs characters: no-break space U+00A0, the
  spaces U+2000-U+200A, narrow no-break U+202F, medium mathematical U+205F,
  ideographic U+3000, Ogham U+1680; and the line and paragraph separators
  U+2028, U+2029) become one plain space each. sacreBLEU's and Moses' splitting
  already treated them as spaces (so no built-in score moves), but a metric of
  the registry need not, and U+2028 is a line's end to some tools (Python's
  ``splitlines``) and a space to others.
* Canonical equivalents: every line is scored in NFC, so a letter and its
  combining accent (NFD, as macOS and some tools write) is the composed letter,
  and the Kelvin, Ohm and Angstrom signs are K, Omega and A-ring; sacreBLEU
  scored a decomposed exact match at 67.87.
* Latin and Armenian ligatures (U+FB00-U+FB06 "ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ", U+FB13-U+FB17)
  become their letters: presentation forms left by PDF text extraction, which
  no orthography spells with; Unicode keeps them only for compatibility.
* The other compatibility characters (those NFKC changes: full-width and
  half-width forms, superscripts, fractions, circled and math-styled letters,
  the micro sign, "…") are kept, not folded: NFKC would make "x²" and "x2",
  "①" and "1" the same text, which they are not, and the full-width comma of
  Chinese is its standard one (sacreBLEU's Chinese scores keep it). When one
  file uses such characters that the other never does (a "Ｔｅｓｔ" against
  "Test"), the scorer warns naming them, the file and the lines, and scores as
  written: that difference is scored as the different characters it is.
* Look-alike letters of other scripts (a Cyrillic "а" in a Latin word, as
  web text and spam carry) are kept: each is another letter, and folding
  would spell Russian with Latin letters. A warning counts the lines with a
  word that mixes Latin letters with Cyrillic ones, or with the Greek ones that
  look Latin, and shows the first.

Not changed, deliberately: Unicode punctuation ("„“" quotes, en dashes, "’") is
drawn differently and kept, as sacreBLEU keeps it (the paper's tokenized BLEU
passes it through Moses' replace-unicode-punctuation, as get_ende_bleu.sh did);
variation selectors choose a visible glyph (an emoji's colour form, a
Japanese name's ideograph) and are kept. Control characters and tabs never
reach here: ``t2t_lite.data.text_files`` refuses them as files are read.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import re
import unicodedata
from typing import Iterable, Sequence


class LookalikeTextError(ValueError):
    """A line whose scored text would not be the text a reader sees."""


# Every Cf character of Unicode 14-15 is in exactly one of these classes
# (tests/test_lookalike_text.py checks it against the running Python's tables).
_OVERRIDES = "\u202d\u202e"
_JOINERS = "\u200c\u200d\u180e"
_DRAWN_FORMAT = ("\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd"
                 "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a")
_TAGS = "\U000e0020-\U000e007f"
_INVISIBLE_FORMAT = ("\u00ad\u061c\u200b\u200e\u200f\u202a-\u202c\u2060-\u2064"
                     "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0001" + _TAGS)
_SPACES = "\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_LIGATURES = "\ufb00-\ufb06\ufb13-\ufb17"

_OVERRIDE = re.compile(f"[{_OVERRIDES}]")
# An emoji flag's tag sequence (black flag, tag letters, cancel tag) is drawn.
_SPECIAL = re.compile(f"(?P<flag>\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f)"
                      f"|(?P<joiner>[{_JOINERS}]+)"
                      f"|(?P<invisible>[{_INVISIBLE_FORMAT}])"
                      f"|(?P<space>[{_SPACES}])"
                      f"|(?P<ligature>[{_LIGATURES}])")

# Scripts whose letters the joiners shape (code point blocks; a neighbour must also
# be a letter or a mark): Arabic to N'Ko and Mandaic, the Brahmic scripts (Devanagari
# to Sinhala, Tibetan, Myanmar, Khmer, Balinese, Javanese ... and the historic ones of
# the SMP), Mongolian and Phags-pa, the joining scripts of the SMP (Manichaean, Psalter
# Pahlavi, Hanifi Rohingya, Sogdian, Chorasmian, Adlam), Arabic presentation forms.
_SHAPING_BLOCKS = ((0x0600, 0x08FF), (0x0900, 0x0DFF), (0x0F00, 0x0FFF), (0x1000, 0x109F),
                   (0x1780, 0x18AF), (0x1900, 0x194F), (0x1A00, 0x1AAF), (0x1B00, 0x1C4F),
                   (0x1CD0, 0x1CFF), (0xA800, 0xA8FF), (0xA900, 0xAA7F), (0xAAE0, 0xAAFF),
                   (0xABC0, 0xABFF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFE), (0x10A00, 0x10A5F),
                   (0x10AC0, 0x10AFF), (0x10B80, 0x10BAF), (0x10D00, 0x10D3F),
                   (0x10F30, 0x10FDF), (0x11000, 0x11DFF), (0x1E900, 0x1E95F))
_EMOJI_BEFORE = ("So", "Sk")  # a pictograph or a skin-tone modifier
_EMOJI_TAIL = "\ufe0f\u20e3"  # emoji presentation selector, keycap

# Latin letters, and the Cyrillic letters and the Greek ones that look Latin.
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
_CYRILLIC = "\u0400-\u0481\u048a-\u052f"
_GREEK_LATINLIKE = "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1" \
                   "\u03a4\u03a5\u03a7\u03bf\u03b9\u03bd"
_LATIN_LETTER = re.compile(f"[{_LATIN}]")
_OTHER_LOOKALIKE = re.compile(f"[{_CYRILLIC}{_GREEK_LATINLIKE}]")
_LETTER_RUN = re.compile(r"[^\W\d_]+")

_SHOWN = 3  # characters named in a warning


def _shapes(char: str) -> bool:
    code = ord(char)
    return (unicodedata.category(char)[0] in "LM"
            and any(low <= code <= high for low, high in _SHAPING_BLOCKS))


def _emoji_before(char: str) -> bool:
    return char in _EMOJI_TAIL or unicodedata.category(char) in _EMOJI_BEFORE


def _joiner_kept(line: str, start: int, end: int) -> bool:
    """Whether the joiners at ``line[start:end]`` change what is drawn."""
    before = line[start - 1] if start else ""
    after = line[end] if end < len(line) else ""
    if any(_shapes(char) for char in (before, after) if char):
        return True
    return (bool(before) and bool(after) and _emoji_before(before)
            and unicodedata.category(after) == "So")


@dataclasses.dataclass
class _Class:
    """How many lines of one file a class changed, and the characters it changed."""
    lines: int = 0
    chars: collections.Counter = dataclasses.field(default_factory=collections.Counter)


def normalise_line(line: str, where: str = "<line>") -> tuple[str, dict[str, collections.Counter]]:
    """``line`` as it is scored, and what was changed: {class: Counter of characters}
    for the classes "invisible", "space", "ligature", "decomposed". An override is
    refused (LookalikeTextError naming ``where`` and the column)."""
    override = _OVERRIDE.search(line)
    if override:
        code = ord(override.group())
        raise LookalikeTextError(
            f"{where}: bidirectional override U+{code:04X} ({unicodedata.name(override.group())})"
            f" at column {override.start() + 1}: it shows the letters after it in an order "
            "other than the stored one, so the line on screen is not the line scored; "
            "remove it from the file")
    found: dict[str, collections.Counter] = {}
    # A pass can bring two marks together that NFC then reorders, which changes a
    # kept joiner's neighbour: passes repeat until the line is stable (idempotent;
    # a second pass is needed only for such pathological mark sequences).
    while True:
        text = _one_pass(line, found)
        if text == line:
            return text, found
        line = text


def _one_pass(line: str, found: dict[str, collections.Counter]) -> str:
    def replace(match: re.Match) -> str:
        kind = match.lastgroup
        text = match.group()
        if kind == "flag" or (kind == "joiner"
                              and _joiner_kept(line, match.start(), match.end())):
            return text
        kind = "invisible" if kind == "joiner" else kind
        found.setdefault(kind, collections.Counter()).update(text)
        if kind == "space":
            return " "
        if kind == "ligature":
            return unicodedata.normalize("NFKC", text)
        return ""

    text = _SPECIAL.sub(replace, line)
    if not unicodedata.is_normalized("NFC", text):
        found.setdefault("decomposed", collections.Counter())
        text = unicodedata.normalize("NFC", text)
    return text


def normalised_lines(lines: Iterable[str], name: str = "<text>") -> list[str]:
    """``lines`` as every scorer scores them, silently (``scored_lines`` warns)."""
    return _normalise(lines, name)[0]


def _normalise(lines: Iterable[str], name: str) -> tuple[list[str], dict[str, _Class]]:
    out: list[str] = []
    classes: dict[str, _Class] = collections.defaultdict(_Class)
    for number, line in enumerate(lines, 1):
        text, found = normalise_line(line, f"{name}:{number}")
        out.append(text)
        for kind, chars in found.items():
            classes[kind].lines += 1
            classes[kind].chars.update(chars)
    return out, classes


def _describe(chars: collections.Counter, folded: bool = False) -> str:
    """The most frequent of ``chars``: "U+200B ZERO WIDTH SPACE, ... and 2 more"."""
    shown = []
    for char, _ in chars.most_common(_SHOWN):
        label = f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"
        if folded:
            label = f"U+{ord(char):04X} {char!r} -> {unicodedata.normalize('NFKC', char)!r}"
        shown.append(label)
    more = len(chars) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _lines(count: int) -> str:
    """"1 line holds", "3 lines hold"."""
    return f"{count} line holds" if count == 1 else f"{count} lines hold"


_MESSAGES = {
    "invisible": "{name}: {lines} invisible format characters ({chars}); scored "
                 "without them, as the same text",
    "space": "{name}: {lines} non-standard spaces ({chars}); scored as plain "
             "spaces (sacreBLEU and Moses split on them too)",
    "ligature": "{name}: {lines} ligatures ({chars}); scored as their letters, "
                "as the same text",
    "decomposed": "{name}: {lines} decomposed (NFD) Unicode letters; scored "
                  "composed (NFC), as the same text",
}


def _mixed_script_word(line: str) -> str | None:
    """The first word of ``line`` mixing Latin letters with Cyrillic or Latin-looking
    Greek ones, described; None if there is none."""
    if not _OTHER_LOOKALIKE.search(line) or not _LATIN_LETTER.search(line):
        return None
    for run in _LETTER_RUN.finditer(line):
        word = run.group()
        other = _OTHER_LOOKALIKE.search(word)
        if other and _LATIN_LETTER.search(word):
            char = other.group()
            return f"{word!r}, whose {char!r} is U+{ord(char):04X} {unicodedata.name(char)}"
    return None


@functools.cache
def _compatibility(char: str) -> bool:
    return unicodedata.normalize("NFKC", char) != char


def compatibility_characters(line: str) -> set[str]:
    """The characters of (normalised) ``line`` that NFKC would change."""
    if unicodedata.is_normalized("NFKC", line):
        return set()
    return {char for char in set(line) if _compatibility(char)}


def scored_lines(lines: Sequence[str], name: str) -> list[str]:
    """``lines`` of the file ``name`` normalised as the module docstring says, with one
    warning a class (what was done, to how many lines of ``name``); an override is
    refused in one line naming ``name``, the line and the column."""
    out, classes = _normalise(lines, name)
    for kind, message in _MESSAGES.items():
        if kind in classes:
            found = classes[kind]
            logging.warning(message.format(name=name, lines=_lines(found.lines),
                                           chars=_describe(found.chars, kind == "ligature")))
    mixed = [(number, word) for number, word in
             ((n, _mixed_script_word(line)) for n, line in enumerate(out, 1)) if word]
    if mixed:
        number, word = mixed[0]
        logging.warning(f"{name}: {_lines(len(mixed))} words mixing Latin letters with "
                        f"Cyrillic or Latin-looking Greek ones (line {number}: {word}); "
                        "scored as written: a look-alike letter is another letter, and which "
                        "was meant cannot be known")
    return out


def scored_pair(hypotheses: Sequence[str], references: Sequence[str],
                hypotheses_name: str = "hypotheses",
                references_name: str = "references") -> tuple[list[str], list[str]]:
    """Both sides normalised alike (``scored_lines``, warnings naming each), and a
    warning for each side that uses compatibility characters the other never does."""
    hyps = scored_lines(hypotheses, hypotheses_name)
    refs = scored_lines(references, references_name)
    per_line = {side: [compatibility_characters(line) for line in lines]
                for side, lines in (("h", hyps), ("r", refs))}
    used = {side: set().union(*sets) for side, sets in per_line.items()}
    for side, other, name, other_name in (("h", "r", hypotheses_name, references_name),
                                          ("r", "h", references_name, hypotheses_name)):
        only = used[side] - used[other]
        if not only:
            continue
        chars = collections.Counter(char for sets in per_line[side]
                                    for char in sorted(sets & only))
        lines = sum(bool(sets & only) for sets in per_line[side])
        logging.warning(f"{name}: {_lines(lines)} compatibility characters that "
                        f"{other_name} never uses ({_describe(chars, folded=True)}); scored "
                        "as written: they are other characters, and folding them (NFKC) "
                        "would also make 'x²' the same text as 'x2'")
    return hyps, refs
