"""Only --t2t_usr_dir loads code; nothing read from a flag, a file or a checkpoint is
evaluated, unpickled or YAML-loaded; names taken from data never lead a write out of
the folder it goes to."""
import ast
import os

import tensorflow as tf

from source_files import module_files
from t2t_lite.training.averaging import average_last_checkpoints

# (module, attribute) pairs, or bare builtins, that run code or build objects from data.
FORBIDDEN = {("builtins", "eval"), ("builtins", "exec"), ("builtins", "compile"),
             ("builtins", "__import__"), ("pickle", "load"), ("pickle", "loads"),
             ("pickle", "Unpickler"), ("marshal", "loads"), ("yaml", "load"),
             ("yaml", "unsafe_load"), ("dill", "loads"), ("shelve", "open"),
             ("os", "system"), ("subprocess", "call"), ("subprocess", "run"),
             ("subprocess", "Popen")}
# The places that import code by name: --t2t_usr_dir, and the twins of the tensor2tensor
# modules that a usr_dir imports (only t2t_lite.compat.tensor2tensor.*, named by the
# user's own import statements). t2t_lite/builtins.py imports the built-in
# registrations with import statements.
IMPORTS_BY_NAME_ALLOWED = {"t2t_lite.registry", "t2t_lite.compat.aliases",
                           "t2t_lite.compat.refusals"}


def dangerous_calls(path: str, module: str) -> list[str]:
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    aliases = {}  # local name -> module it stands for (import pickle as p)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if (node.module, a.name) in FORBIDDEN:
                    return [f"{path}:{node.lineno}: imports {node.module}.{a.name}"]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and ("builtins", func.id) in FORBIDDEN:
            found.append(f"{path}:{node.lineno}: {func.id}()")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = aliases.get(func.value.id, func.value.id)
            if (owner, func.attr) in FORBIDDEN or (
                    owner == "importlib" and func.attr == "import_module"
                    and module not in IMPORTS_BY_NAME_ALLOWED):
                found.append(f"{path}:{node.lineno}: {owner}.{func.attr}()")
    return found


def test_no_code_is_loaded_from_data():
    found = [hit for module, path in module_files() for hit in dangerous_calls(path, module)]
    assert found == []


def test_the_scan_finds_what_it_looks_for(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import pickle as p\nimport importlib\n"
                    "def f(s):\n    eval(s)\n    p.loads(s)\n    importlib.import_module(s)\n")
    assert [hit.split(": ")[1] for hit in dangerous_calls(str(path), "t2t_lite.data.bad")] == [
        "eval()", "pickle.loads()", "importlib.import_module()"]


def test_checkpoint_names_from_a_state_file_cannot_lead_a_write_elsewhere(tmp_path):
    """A 'checkpoint' state file naming ../elsewhere/ckpt-3: the average is still
    written inside --output_dir, and nothing is written next to the named file."""
    elsewhere, model_dir, out = tmp_path / "elsewhere", tmp_path / "model", tmp_path / "avg"
    variable = tf.Variable([1.0, 2.0])
    tf.train.Checkpoint(v=variable).write(str(elsewhere / "ckpt-3"))
    model_dir.mkdir()
    tf.compat.v1.train.update_checkpoint_state(str(model_dir), "../elsewhere/ckpt-3",
                                               all_model_checkpoint_paths=["../elsewhere/ckpt-3"])
    before = sorted(os.listdir(elsewhere))
    averaged = average_last_checkpoints(str(model_dir), str(out), n=1)
    assert os.path.dirname(averaged.path) == str(out)
    assert sorted(os.listdir(elsewhere)) == before
