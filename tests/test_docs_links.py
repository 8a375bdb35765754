"""Every relative link in README.md and docs/*.md resolves: the file (or folder) it
names exists, and its #anchor, if any, is one of the target's headings as GitHub
slugs them. Links to other sites (http:, https:, mailto:) are not followed."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))

# [text](target) and ![alt](target), target up to an optional "title"; the text may
# hold one level of brackets or code (`[x]`).
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def _prose(text):
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else re.sub(r"`[^`]*`", "``", line))
    return lines


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lowercased, punctuation but
    hyphens and underscores removed, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"[`*]|<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _heading_lines(text):
    """The lines outside fenced code blocks as written (inline code kept: a heading's
    code is part of its anchor)."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path):
    """The anchors a page offers: one per heading, repeats numbered -1, -2, ..."""
    seen, found = {}, set()
    for line in _heading_lines(open(path, encoding="utf-8").read()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    # HTML anchors (<a id="x"> / name="x") count too.
    text = open(path, encoding="utf-8").read()
    found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return found


def links(path):
    """(line number, target) of each link on a page, outside code."""
    return [(number, match.group(1))
            for number, line in enumerate(_prose(open(path, encoding="utf-8").read()), 1)
            for match in LINK.finditer(line)]


def broken(path):
    """'PAGE:LINE: TARGET: why' for each relative link of a page that does not resolve."""
    problems = []
    for number, target in links(path):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        where = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                 if file_part else path)
        name = f"{os.path.relpath(path, ROOT)}:{number}: {target}"
        if not os.path.exists(where):
            problems.append(f"{name}: no such file")
        elif anchor and (not where.endswith(".md") or anchor not in anchors(where)):
            problems.append(f"{name}: no heading #{anchor} there")
    return problems


def test_there_are_pages_and_links():
    assert os.path.join(ROOT, "docs", "RESULTS.md") in PAGES
    assert len(links(os.path.join(ROOT, "README.md"))) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda path: os.path.relpath(path, ROOT))
def test_every_relative_link_resolves(page):
    assert broken(page) == []


def test_the_readme_links_every_docs_page():
    linked = {os.path.normpath(os.path.join(ROOT, target.partition("#")[0]))
              for _, target in links(os.path.join(ROOT, "README.md"))}
    assert [page for page in PAGES[1:] if page not in linked] == []


def test_slugs_are_githubs():
    assert slug("Multi30k En->De") == "multi30k-en-de"
    assert slug("Parsing: the Transformer against an LSTM with attention") == \
        "parsing-the-transformer-against-an-lstm-with-attention"
    assert slug("Your own problems, models and hparams sets") == \
        "your-own-problems-models-and-hparams-sets"
    assert slug("`t2t-exporter` and **TF Serving**") == "t2t-exporter-and-tf-serving"
    assert slug("snake_case names") == "snake_case-names"


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "OTHER.md").write_text("# Other page\n\n## A section\n\n## A section\n"
                                                "\n## With `code=1` in it\n")
    (tmp_path / "picture.png").write_bytes(b"")
    page = tmp_path / "README.md"
    page.write_text("\n".join([
        "# Title",
        "[fine](docs/OTHER.md) [fine too](docs/OTHER.md#a-section) "
        "[repeat](docs/OTHER.md#a-section-1) ![picture](picture.png) [here](#title) "
        "[code in a heading](docs/OTHER.md#with-code1-in-it)",
        "[site](https://example.com/nowhere.md) [mail](mailto:someone@example.com)",
        "[missing file](docs/MISSING.md)",
        "[missing anchor](docs/OTHER.md#no-such-section)",
        "![missing picture](docs/nothing.png)",
        "[missing local anchor](#nowhere)",
        "```",
        "[inside code](docs/IGNORED.md)",
        "```",
        "`[inline code](docs/IGNORED.md)`",
    ]) + "\n")
    name = os.path.relpath(page, ROOT)
    assert broken(str(page)) == [
        f"{name}:4: docs/MISSING.md: no such file",
        f"{name}:5: docs/OTHER.md#no-such-section: no heading #no-such-section there",
        f"{name}:6: docs/nothing.png: no such file",
        f"{name}:7: #nowhere: no heading #nowhere there",
    ]
