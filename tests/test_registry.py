import sys

import pytest

from cli_helpers import USR_DIR, usr_dir_imports
from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.registry import Registry, snake_case


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


def test_a_refused_name_fails_in_one_line_unless_registered():
    reg = Registry("hparams set")
    reg.refuse("old_tpu_set", "use --hparams_set=new_set")
    with pytest.raises(KeyError) as info:
        reg["old_tpu_set"]
    assert str(info.value) == ("hparams set 'old_tpu_set' is tensor2tensor's and has no "
                               "t2t-lite twin: use --hparams_set=new_set")
    assert "old_tpu_set" not in reg and reg.names() == []
    reg.register("old_tpu_set")(dict)  # a user's own set of that name wins
    assert reg["old_tpu_set"] is dict


def test_builtins_registered():
    load_builtins()
    assert "transformer_base" in registry.hparams_sets
    assert "transformer" in registry.models
    assert "algorithmic_reverse_binary40" in registry.problems
    assert "bleu" in registry.metrics
    text = registry.registry_help()
    assert "problems:" in text and "models:" in text and "hparams sets:" in text


def test_usr_dir_registrations_appear(usr_dir_import):
    usr_dir_import(USR_DIR)
    hparams = registry.hparams_sets["my_very_small_transformer"]()
    assert hparams.hidden_size == 32


def test_usr_dir_import_leaves_nothing_behind(tmp_path):
    """What the usr_dir_import fixture promises: a user's registration, module and
    sys.path entry are gone after the test, and a later import registers it again."""
    path = usr_package(tmp_path, "usr_leaves", {
        "__init__.py": "from t2t_lite.registry import register_hparams\n"
                       "from t2t_lite.hparams.transformer import transformer_tiny\n"
                       "register_hparams('usr_leaves_set')(transformer_tiny)\n"})
    for _ in range(2):
        with usr_dir_imports() as import_usr_dir:
            import_usr_dir(path)
            assert "usr_leaves_set" in registry.hparams_sets and str(tmp_path) in sys.path
        assert "usr_leaves_set" not in registry.hparams_sets
        assert "usr_leaves" not in sys.modules and str(tmp_path) not in sys.path


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
def test_usr_dir_that_fails_to_import_is_one_line_naming_its_file(tmp_path, usr_dir_import,
                                                                   name, files, where, says):
    load_builtins()
    path = usr_package(tmp_path, name, files)
    with pytest.raises(registry.UsrDirError) as info:
        usr_dir_import(path)
    message = str(info.value)
    assert message.startswith(f"--t2t_usr_dir={path}: importing it failed: {path}/{where}: ")
    assert says in message and "\n" not in message


def test_errors_inside_our_code_keep_their_traceback(tmp_path, usr_dir_import):
    """Not a ValueError or KeyError raised on purpose: maybe our bug, so traced back."""
    path = usr_package(tmp_path, "usr_hits_our_code", {
        "__init__.py": "from t2t_lite.registry import snake_case\nsnake_case(None)\n"})
    with pytest.raises(TypeError):
        usr_dir_import(path)


def test_every_registered_hparams_set_is_made_for_a_model():
    """No set holds a key that nobody reads (it would be ignored, T2T's untyped magic keys):
    every key of every set is the trainer's or one model's, which reads them all."""
    from t2t_lite.experiment import sets_made_for
    load_builtins()
    made = {name for model in registry.models.names() for name in sets_made_for(model)}
    ours = [name for name in registry.hparams_sets.names()
            if registry.hparams_sets[name].__module__.startswith("t2t_lite.")]
    assert len(ours) > 40 and [name for name in ours if name not in made] == []
    assert sets_made_for("lstm_seq2seq") == ["lstm_seq2seq", "lstm_seq2seq_multi30k",
                                             "lstm_sutskever"]
