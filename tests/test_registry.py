import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.registry import Registry, snake_case

import os

USR_DIR = os.path.join(os.path.dirname(__file__), "usr_dir_example")


def test_snake_case_names():
    assert snake_case("TranslateEndeWmt32k") == "translate_ende_wmt32k"
    assert snake_case("AlgorithmicReverseBinary40") == "algorithmic_reverse_binary40"
    assert snake_case("transformer_base") == "transformer_base"


def test_register_by_decorator_and_explicit_name():
    reg = Registry("thing")

    @reg.register
    class MyFancyThing:
        pass

    @reg.register("other_name")
    def func():
        return 1

    assert reg["my_fancy_thing"] is MyFancyThing
    assert reg["other_name"] is func
    assert reg.names() == ["my_fancy_thing", "other_name"]


def test_duplicate_registration_raises():
    reg = Registry("thing")

    @reg.register
    def thing_a():
        pass

    with pytest.raises(ValueError, match="already registered"):
        reg.register("thing_a")(lambda: None)


def test_unknown_name_lists_registered_grouped_by_prefix():
    reg = Registry("problem")
    for name in ("translate_ende_a", "translate_enfr_b", "algorithmic_c"):
        reg.register(name)(object())
    with pytest.raises(KeyError) as info:
        reg["translate_xx"]
    message = str(info.value)
    assert "unknown problem 'translate_xx'" in message
    assert "translate: translate_ende_a, translate_enfr_b" in message
    assert "algorithmic: algorithmic_c" in message


def test_builtins_registered():
    load_builtins()
    assert "transformer_base" in registry.hparams_sets
    assert "transformer" in registry.models
    assert "algorithmic_reverse_binary40" in registry.problems
    assert "bleu" in registry.metrics
    text = registry.registry_help()
    assert "problems:" in text and "models:" in text and "hparams sets:" in text


def test_usr_dir_registrations_appear():
    registry.import_usr_dir(USR_DIR)
    hparams = registry.hparams_sets["my_very_small_transformer"]()
    assert hparams.hidden_size == 32


def test_usr_dir_must_be_a_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="__init__.py"):
        registry.import_usr_dir(str(tmp_path))


def usr_package(tmp_path, name: str, files: dict) -> str:
    """A package ``name`` under ``tmp_path`` holding ``files`` (name -> source)."""
    package = tmp_path / name
    package.mkdir()
    for filename, source in files.items():
        (package / filename).write_text(source)
    return str(package)


@pytest.mark.parametrize("name, files, where, says", [
    ("usr_raises", {"__init__.py": "x = 1\nraise RuntimeError('no config\\nfound')\n"},
     "__init__.py:2", "RuntimeError: no config found"),
    ("usr_syntax", {"__init__.py": "from . import models\n",
                    "models.py": "A = 1\ndef f(:\n    pass\n"},
     "models.py:2", "SyntaxError: invalid syntax"),
    ("usr_missing", {"__init__.py": "\nimport no_such_module_here\n"},
     "__init__.py:2", "ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("usr_twice", {"__init__.py": "from t2t_lite.registry import register_model\n"
                                  "register_model('transformer')(object)\n"},
     "__init__.py:2", "ValueError: model 'transformer' is already registered"),
])
def test_usr_dir_that_fails_to_import_is_one_line_naming_its_file(tmp_path, name, files,
                                                                   where, says):
    load_builtins()
    path = usr_package(tmp_path, name, files)
    with pytest.raises(registry.UsrDirError) as info:
        registry.import_usr_dir(path)
    message = str(info.value)
    assert message.startswith(f"--t2t_usr_dir={path}: importing it failed: {path}/{where}: ")
    assert says in message and "\n" not in message


def test_errors_inside_our_code_keep_their_traceback(tmp_path):
    """Not a ValueError or KeyError raised on purpose: maybe our bug, so traced back."""
    path = usr_package(tmp_path, "usr_hits_our_code", {
        "__init__.py": "from t2t_lite.registry import snake_case\nsnake_case(None)\n"})
    with pytest.raises(TypeError):
        registry.import_usr_dir(path)
