"""The package's floors point one way: a module imports only the floors that ``ALLOWED``
lists for its own (docs/DESIGN.md, "Layers"). The imports are read from the source
(every ``import``, at top level or inside a function, and every
``importlib.import_module`` of a literal name), not executed. And no test module
imports another."""
import ast
import graphlib
import os

import pytest

from source_files import PACKAGE_DIRS, REPO_ROOT, module_files

# The folders whose imports are checked: the package and the benchmarks that drive it.
SOURCE_DIRS = {**PACKAGE_DIRS, "benchmarks": "benchmarks"}

# The ground floor: rooms that import nothing of the package, so any floor may use them.
GROUND = {"registry", "hparam", "progress", "errors", "precision", "output_paths",
          "output_manifest", "contracts", "interrupts", "disk_space"}
# Floor -> the floors its modules may import. A module of t2t_lite.X is on floor X,
# one of benchmarks/ on "benchmarks". A floor's modules import one another only
# where the floor lists itself.
ALLOWED: dict[str, set[str]] = {
    **{room: set() for room in GROUND},
    "data": GROUND | {"data"},
    "parsing": GROUND | {"parsing", "data"},
    "metrics": GROUND | {"metrics", "data", "parsing"},
    "hparams": GROUND | {"hparams"},
    # Problems name their metric and hand over their constraint; they import neither
    # models nor the search.
    "problems": GROUND | {"problems", "data", "parsing"},
    # Layers and models read the choice tuples of the hparams sets that declare them.
    "layers": GROUND | {"layers", "hparams"},
    "models": GROUND | {"models", "layers", "hparams"},
    # The search sees a model through its interface only, never models/.
    "decoding": GROUND | {"decoding", "data", "metrics"},
    "experiment": GROUND | {"data", "hparams"},
    "training": GROUND | {"training", "data", "hparams", "experiment"},
    # A CTranslate2 export restates the Transformer's layers in CTranslate2's spec.
    "export": GROUND | {"export", "data", "decoding", "models", "layers"},
    "visualization": GROUND | {"visualization", "data", "decoding"},
    # tensor2tensor's import paths over ours: twins of T2T's modules for a usr_dir.
    "compat": GROUND | {"compat", "data"},
    "builtins": {"problems", "models", "hparams", "metrics", "compat", "registry"},
}
# Where a command may write reads what each command wrote (one ground room on another).
ALLOWED["output_paths"] = {"output_manifest"}
# HParams is one room of three modules: ranges, aliases, the values.
ALLOWED["hparam"] = {"hparam"}
# The commands may use every floor of the library; the benchmarks, the commands too.
LIBRARY = set(ALLOWED)
ALLOWED["bin"] = LIBRARY | {"bin"}
ALLOWED["benchmarks"] = LIBRARY | {"bin"}


def floor_of(name: str) -> str | None:
    """``t2t_lite.data.problem`` -> "data", ``benchmarks.speed`` -> "benchmarks"; the
    package root itself -> None."""
    parts = name.split(".")
    if parts[0] == "benchmarks":
        return "benchmarks"
    return parts[1] if len(parts) > 1 and parts[0] == "t2t_lite" else None


def imported_names(path: str, module: str) -> list[tuple[int, str]]:
    """(line, name) for everything of the package or the benchmarks that ``path``
    imports: ``from a.b import c`` gives ``a.b.c`` (a module or a name in one)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found if name.split(".")[0] in ("t2t_lite", "benchmarks")]


def forbidden_imports(modules) -> list[str]:
    """``FILE:LINE: floor imports name`` for each import of ``modules`` ((name, path)
    pairs) that its floor's row of ``ALLOWED`` does not list."""
    found = []
    for module, path in modules:
        own = floor_of(module)
        for line, name in imported_names(path, module):
            target = floor_of(name)
            if own and target and target not in ALLOWED[own]:
                found.append(f"{os.path.relpath(path, REPO_ROOT)}:{line}: {own} imports {name}")
    return found


def find_circle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of ``graph`` (node -> the nodes it imports), as [a, b, ..., a]; [] if none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return []


def test_every_floor_has_a_row_and_every_row_a_floor():
    floors = {floor_of(module) for module, _ in module_files(SOURCE_DIRS)} - {None}
    assert floors == set(ALLOWED), "ALLOWED (and docs/DESIGN.md) must name every floor"
    named = set().union(*ALLOWED.values())
    assert named <= set(ALLOWED), f"ALLOWED lists unknown floors {sorted(named - set(ALLOWED))}"


def test_no_module_imports_a_floor_its_own_may_not():
    assert forbidden_imports(module_files(SOURCE_DIRS)) == []


def test_the_floors_have_no_circle():
    """The table draws floors one above another: no floor reaches itself through others."""
    assert find_circle({floor: below - {floor} for floor, below in ALLOWED.items()}) == []


def test_no_modules_import_each_other_in_a_circle():
    modules = dict(module_files(SOURCE_DIRS))

    def module_of(name: str) -> str:  # t2t_lite.registry.register_model -> t2t_lite.registry
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {module: {module_of(name) for _, name in imported_names(path, module)} - {module, ""}
             for module, path in modules.items()}
    assert find_circle(graph) == []


@pytest.mark.parametrize("module, source, bad", [
    # Upward, as the old line of ranks also caught: a data module importing decoding.
    ("t2t_lite.data.bad", "def f():\n    from t2t_lite.decoding import beam_search\n",
     "t2t_lite.decoding.beam_search"),
    # Between floors the old ranks let through because one was lower than the other.
    ("t2t_lite.layers.bad", "from t2t_lite.problems.algorithmic import x\n",
     "t2t_lite.problems.algorithmic.x"),
    ("t2t_lite.models.bad", "import t2t_lite.metrics.scoring\n", "t2t_lite.metrics.scoring"),
    # Between rooms of the ground floor, and the ground floor naming the top by a string.
    ("t2t_lite.registry", "from t2t_lite.hparam import HParams\n", "t2t_lite.hparam.HParams"),
    ("t2t_lite.registry", "import importlib\nimportlib.import_module('t2t_lite.problems')\n",
     "t2t_lite.problems"),
    # A floor importing itself where its row does not list it, and the library a benchmark.
    ("t2t_lite.builtins", "from t2t_lite import builtins\n", "t2t_lite.builtins"),
    ("t2t_lite.bin.bad", "from benchmarks import speed\n", "benchmarks.speed"),
])
def test_the_check_catches_a_bad_import(tmp_path, module, source, bad):
    path = tmp_path / "bad.py"
    path.write_text(source)
    [found] = forbidden_imports([(module, str(path))])
    assert found.endswith(f"{floor_of(module)} imports {bad}")


def test_the_check_passes_an_allowed_import(tmp_path):
    path = tmp_path / "good.py"
    path.write_text("from t2t_lite.contracts.reserved_ids import PAD_ID\n"
                    "from t2t_lite.layers.attention import SelfAttention\n")
    assert forbidden_imports([("t2t_lite.models.good", str(path))]) == []


def test_a_circle_is_caught():
    circle = find_circle({"registry": {"problems"}, "problems": {"data"}, "data": {"registry"}})
    assert sorted(set(circle)) == ["data", "problems", "registry"]


@pytest.mark.parametrize("source, module, expected", [
    ("from t2t_lite import registry", "t2t_lite.data.x", "t2t_lite.registry"),
    ("from . import beam_search", "t2t_lite.decoding.x", "t2t_lite.decoding.beam_search"),
    ("from ..parsing import trees", "t2t_lite.metrics.x", "t2t_lite.parsing.trees"),
    ("import t2t_lite.models.base", "t2t_lite.bin.x", "t2t_lite.models.base"),
    ("importlib.import_module('t2t_lite.models')", "t2t_lite.x", "t2t_lite.models"),
    ("from benchmarks import speed", "benchmarks.x", "benchmarks.speed"),
])
def test_imports_are_resolved(tmp_path, source, module, expected):
    path = tmp_path / "m.py"
    path.write_text(source + "\n")
    assert imported_names(str(path), module) == [(1, expected)]


def imports_of_test_modules(path: str) -> list[tuple[int, str]]:
    """(line, module) for every test module (``test_*``) that the file ``path`` imports."""
    found = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0].startswith("test_")]


def test_no_test_module_imports_another():
    """Tests share builders through conftest.py and the helper modules (toys.py,
    cli_helpers.py, ...): a test module imported by another runs its module-level
    setup there too, and a fixture imported by name ties one file's tests to
    another's helpers (pytest finds conftest.py's fixtures without an import)."""
    tests_dir = os.path.join(REPO_ROOT, "tests")
    found = [f"tests/{name}:{line} imports {imported}"
             for name in sorted(os.listdir(tests_dir)) if name.endswith(".py")
             for line, imported in imports_of_test_modules(os.path.join(tests_dir, name))]
    assert found == []


def test_modules_imported_from_a_test_module(tmp_path):
    """The check above can fail: both ways of importing a test module are seen."""
    path = tmp_path / "test_a.py"
    path.write_text("import test_b\nfrom toys import tiny_transformer\n"
                    "def f():\n    from test_c import helper\n")
    assert imports_of_test_modules(str(path)) == [(1, "test_b"), (4, "test_c")]
