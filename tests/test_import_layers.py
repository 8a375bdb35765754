"""The package's layers point one way: a module imports only from its own layer or
the layers below it (docs/DESIGN.md, "Layers"); and no test module imports another.
The imports are read from the source (every ``import``, at top level or inside a
function), not executed."""
import ast
import os

import pytest

from source_files import REPO_ROOT, module_files

# Lowest first. A module of t2t_lite.X belongs to the layer naming X.
LAYERS = [
    {"registry", "hparam", "progress", "errors", "precision", "output_paths"},
    {"data"},
    {"parsing"},
    {"metrics"},
    {"problems", "hparams"},
    {"layers"},
    {"models"},
    {"decoding"},
    {"experiment"},
    {"training"},
    {"export", "visualization"},
    {"bin"},
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def layer_of(module: str) -> str | None:
    """``t2t_lite.data.problem`` -> "data"; the package root itself -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "t2t_lite" else None


def imported_modules(path: str, module: str) -> list[tuple[int, str]]:
    """(line, module) for every module that ``path`` (module ``module``) imports."""
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
            # "from t2t_lite import registry" imports t2t_lite.registry.
            found += [(node.lineno, f"{base}.{alias.name}" if base == "t2t_lite" else base)
                      for alias in node.names]
    return found


def package_imports(path: str, module: str) -> list[tuple[int, str]]:
    """(line, module) for every t2t_lite module that ``path`` imports."""
    return [(line, name) for line, name in imported_modules(path, module)
            if name.startswith("t2t_lite.")]


def test_every_layer_is_known():
    unknown = {layer_of(module) for module, _ in module_files()} - set(RANK) - {None}
    assert not unknown, f"add {sorted(unknown)} to LAYERS (and to docs/DESIGN.md)"


def upward_imports():
    for module, path in module_files():
        own = layer_of(module)
        for line, imported in package_imports(path, module):
            target = layer_of(imported)
            if own and target and RANK[target] > RANK[own]:
                yield f"{os.path.relpath(path, REPO_ROOT)}:{line}: {own} imports {imported}"


def test_no_module_imports_from_a_layer_above_its_own():
    assert list(upward_imports()) == []


def test_the_walk_sees_an_upward_import(tmp_path):
    """The check itself can fail: a data module importing decoding is caught."""
    path = tmp_path / "bad.py"
    path.write_text("def f():\n    from t2t_lite.decoding import beam_search\n")
    imports = package_imports(str(path), "t2t_lite.data.bad")
    assert imports == [(2, "t2t_lite.decoding")]
    assert RANK[layer_of(imports[0][1])] > RANK["data"]


@pytest.mark.parametrize("source, module, expected", [
    ("from t2t_lite import registry", "t2t_lite.data.x", "t2t_lite.registry"),
    ("from . import beam_search", "t2t_lite.decoding.x", "t2t_lite.decoding"),
    ("from ..parsing import trees", "t2t_lite.metrics.x", "t2t_lite.parsing"),
    ("import t2t_lite.models.base", "t2t_lite.bin.x", "t2t_lite.models.base"),
])
def test_imports_are_resolved(tmp_path, source, module, expected):
    path = tmp_path / "m.py"
    path.write_text(source + "\n")
    assert package_imports(str(path), module) == [(1, expected)]


def imports_of_test_modules(path: str) -> list[tuple[int, str]]:
    """(line, module) for every test module that the test file ``path`` imports."""
    return [(line, name) for line, name in imported_modules(path, "tests")
            if name.split(".")[0].startswith("test_")]


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
