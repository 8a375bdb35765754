"""The documents stay short and the design's module map matches the tree (issue 84).

- README.md is at most README_MAX_LINES lines: the rest lives in docs/.
- (Every relative link and anchor in README.md and docs/ resolves:
  tests/test_docs_links.py.)
- docs/DESIGN.md's module map (its "Layout" block) names only modules that
  exist, and every module under t2t_lite/, problems/, hparams/ and bin/ is
  named there.

Pure text checks: no TensorFlow, no network.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DESIGN = os.path.join(ROOT, "docs", "DESIGN.md")
README_MAX_LINES = 320
FENCE = re.compile(r"^\s*(```|~~~)")


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_the_readme_is_short():
    count = len(read(README).splitlines())
    assert count <= README_MAX_LINES, (
        f"README.md has {count} lines, more than {README_MAX_LINES}: move the detail "
        "to docs/ (RESULTS.md, SPEED.md, ...) and link to it")


# docs/DESIGN.md's module map: a fenced block under "## Layout" drawn as a tree,
# a name per entry line (indented two spaces a level, at most NAME_COLUMN) and its
# description beside and below it, from NAME_COLUMN on.
NAME_COLUMN = 25
MAPPED_ROOTS = ("t2t_lite", "problems", "hparams", "bin")
# Module paths inside a description: a/b.py, b.py, dir/{x,y} (each x, y a module),
# dir/name (lowercase names only, so that "I/O" is not one).
DESCRIBED = re.compile(r"(?<![\w./-])((?:[a-z_][a-z0-9_]*/)*(?:\{[a-z0-9_,]+\}|[a-z_][a-z0-9_]*)"
                       r"(?:\.py)?)(?![\w-])")


def layout_block():
    """The lines of the fenced block that follows DESIGN.md's '## Layout' heading."""
    lines = read(DESIGN).split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == "## Layout")
    opening = next(i for i in range(start + 1, len(lines)) if FENCE.match(lines[i]))
    closing = next(i for i in range(opening + 1, len(lines)) if FENCE.match(lines[i]))
    return lines[opening + 1:closing]


def layout_entries():
    """[(path of the entry, its description joined to one line)] in map order: a
    folder's path ends in '/'."""
    entries, folders = [], []
    for line in layout_block():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            continue
        if indent < NAME_COLUMN:
            name, _, description = line.strip().partition(" ")
            depth = indent // 2
            folders = folders[:depth]
            path = "".join(folders) + name
            entries.append([path, description.strip()])
            if name.endswith("/"):
                folders.append(name)
        elif entries:
            entries[-1][1] += " " + line.strip()
    # A path broken over two lines ("data_generators/" then "{problem,...}") is one.
    return [(path, re.sub(r"/\s+\{", "/{", description)) for path, description in entries]


def described_modules(folder, description):
    """The module paths (from the repository's root, with .py) a folder entry's
    description names: 'x.py', 'dir/{a,b}', 'dir/name', each under the folder."""
    named = set()
    for token in DESCRIBED.findall(description):
        if "/" not in token and not token.endswith(".py"):
            continue  # a plain word
        head, _, last = token.rpartition("/")
        names = last.strip("{}").split(",") if last.startswith("{") else [last]
        for name in names:
            relative = (head + "/" if head else "") + name
            named.add(folder + (relative if relative.endswith(".py") else relative + ".py"))
    return named


def mapped_modules():
    """Every module path (from the root, '.py') the map names: its file entries, and
    the modules its folder entries' descriptions name under them."""
    named = set()
    for path, description in layout_entries():
        if path.endswith(".py"):
            named.add(path)
        elif path.endswith("/"):
            named |= described_modules(path, description)
    return named


def mentioned_paths():
    """Module paths written out in full anywhere in the map's descriptions
    ('bin/common.py', 't2t_lite/decoding/search_decoder.py', 'data/text_files.py'),
    as given."""
    found = set()
    for _, description in layout_entries():
        found.update(re.findall(r"(?<![\w./-])((?:[a-z_][a-z0-9_]*/)+[a-z_][a-z0-9_]*\.py)",
                                description))
    return found


def repository_modules():
    """Every module under the mapped roots, from the root: package __init__.py files
    are their folders', so left out."""
    found = set()
    for top in MAPPED_ROOTS:
        for directory, subdirectories, files in os.walk(os.path.join(ROOT, top)):
            subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
            for name in files:
                if name.endswith(".py") and name != "__init__.py":
                    found.add(os.path.relpath(os.path.join(directory, name), ROOT))
    return found


def module_exists(path):
    """A module path (from the root, '.py') is a file, or a package of that name."""
    return (os.path.isfile(os.path.join(ROOT, path))
            or os.path.isfile(os.path.join(ROOT, path[:-len(".py")], "__init__.py")))


def test_the_design_map_names_modules_that_exist():
    # A folder's description may name a file from the root (bin/'s tests/test_progress.py).
    missing = sorted(path for path in mapped_modules() if not module_exists(path)
                     and not any(module_exists(path[len(top) + 1:]) for top in MAPPED_ROOTS
                                 if path.startswith(top + "/")))
    folders = sorted(path for path, _ in layout_entries()
                     if path.endswith("/") and not os.path.isdir(os.path.join(ROOT, path)))
    assert (missing, folders) == ([], []), (
        "docs/DESIGN.md's module map names modules or folders that do not exist: "
        + ", ".join(missing + folders))


def test_every_module_is_named_in_the_design_map():
    named = mapped_modules()
    # A path written out in a description names that module too, read from the
    # root or from t2t_lite/ (the map's own shorthand: data/text_files.py).
    for path in mentioned_paths():
        named.update({path, "t2t_lite/" + path})
    unnamed = sorted(repository_modules() - named)
    assert unnamed == [], (
        f"{len(unnamed)} module(s) under {', '.join(r + '/' for r in MAPPED_ROOTS)} are not "
        "named in docs/DESIGN.md's module map (its Layout block); add a line for each: "
        + ", ".join(unnamed))


def test_the_map_parser_reads_a_tree():
    assert described_modules("t2t_lite/compat/tensor2tensor/",
                             "the twins: utils/{registry,hparam}, layers/common_hparams, "
                             "no I/O") == {
        "t2t_lite/compat/tensor2tensor/utils/registry.py",
        "t2t_lite/compat/tensor2tensor/utils/hparam.py",
        "t2t_lite/compat/tensor2tensor/layers/common_hparams.py"}
    entries = dict(layout_entries())
    assert "t2t_lite/registry.py" in entries
    assert "t2t_lite/data/encoders.py" in entries
