"""A usr_dir written for tensor2tensor runs unchanged, and means what it meant in T2T
(t2t_lite/compat/): T2T's import paths, its Problem contract (vocabulary, splits,
names, metrics, TranslateProblem's corpus entries) and one-line refusals naming the
user's FILE:LINE for what t2t-lite cannot honour. The contract's data side is
tests/test_t2t_problem_contract.py's."""
import json
import os
import sys
import textwrap

import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_usr_dirs import EXAMPLE, make_tmp_dir, refusal, write_usr_dir


@pytest.fixture(autouse=True)
def builtins():
    load_builtins()


def test_t2t_import_paths_are_the_twins(usr_dir_import):
    usr_dir_import(EXAMPLE)
    from t2t_lite.compat.tensor2tensor.utils import registry as twin
    from tensor2tensor.utils import registry as theirs
    import tensor2tensor.data_generators.text_problems  # noqa: F401
    assert theirs is twin
    assert sys.modules["tensor2tensor.data_generators.text_problems"] is \
        sys.modules["t2t_lite.compat.tensor2tensor.data_generators.text_problems"]
    assert {"chatbot_tiny", "translit_he_en", "translate_enzu_tiny"} <= set(registry.problems)
    assert "transformer_chat_tiny" in registry.hparams_sets


def test_a_name_t2t_had_and_we_lack_is_one_line_at_the_users_line(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        from tensor2tensor.data_generators import text_problems
        from tensor2tensor.data_generators.problem import Problem
        """)
    message = refusal(usr_dir_import, usr_dir)
    assert f"{usr_dir}/problems.py:2:" in message
    assert "data_generators.problem.Problem" in message and "Text2TextProblem" in message


def test_a_module_t2t_had_and_we_lack_is_one_line(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        import os
        from tensor2tensor.models.research import universal_transformer
        """)
    message = refusal(usr_dir_import, usr_dir)
    assert f"{usr_dir}/problems.py:2:" in message
    assert "tensor2tensor.models.research has no t2t-lite twin" in message


def test_a_module_imported_from_its_package_is_one_line_too(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        from tensor2tensor.utils import registry
        from tensor2tensor.layers import modalities
        """)
    message = refusal(usr_dir_import, usr_dir)
    assert f"{usr_dir}/problems.py:2:" in message
    assert "tensor2tensor.layers.modalities has no t2t-lite twin" in message


@pytest.mark.parametrize("body, named, line", [
    ("""\
        @property
        def has_inputs(self):
          return False
     """, "has_inputs=False", 6),
    ("""\
        def preprocess_example(self, example, mode, hparams):
          return example
     """, "preprocess_example", 6),
    ("""\
        def eval_metrics(self):
          return [metrics.Metrics.ROUGE_2_F]
     """, "rouge_2_fscore", 6),
    ("""\
        @property
        def packed_length(self):
          return 256
     """, "packed_length=256", 6),
])
def test_what_t2t_lite_cannot_honour_is_refused_at_its_line_and_the_rest_stays(
        usr_dir_import, tmp_path, caplog, body, named, line):
    usr_dir = write_usr_dir(tmp_path, textwrap.dedent("""\
        from tensor2tensor.data_generators import text_problems
        from tensor2tensor.utils import metrics, registry

        @registry.register_problem
        class Summarizer(text_problems.Text2TextProblem):
        """) + textwrap.indent(textwrap.dedent(body), "  ") + textwrap.dedent("""\
          @property
          def is_generate_per_split(self):
            return True

        @registry.register_problem
        class Headlines(Summarizer):
          pass

        @registry.register_problem
        class Chat(text_problems.Text2TextProblem):
          @property
          def is_generate_per_split(self):
            return True
        """))
    usr_dir_import(usr_dir)
    assert "chat" in registry.problems  # the usr_dir's other problems stay usable
    for name in ("summarizer", "headlines"):
        assert name not in registry.problems
        with pytest.raises(registry.UnknownNameError) as caught:
            registry.problems[name]
        message = str(caught.value)
        assert "\n" not in message and named in message
        assert f"{usr_dir}/problems.py:{line}:" in message
    assert f"problem summarizer is not registered: {usr_dir}/problems.py:{line}:" in caplog.text


def test_text2self_problem_is_refused_in_one_line_at_the_users_class(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        from tensor2tensor.data_generators import text_problems
        from tensor2tensor.utils import registry

        @registry.register_problem
        class PoetryLm(text_problems.Text2SelfProblem):
          @property
          def is_generate_per_split(self):
            return False
        """)
    usr_dir_import(usr_dir)
    with pytest.raises(registry.UnknownNameError) as caught:
        registry.problems["poetry_lm"]
    assert "has_inputs=False" in str(caught.value)
    assert f"{usr_dir}/problems.py:4:" in str(caught.value)


def test_t2t_transformer_base_is_t2ts_not_the_papers(usr_dir_import):
    usr_dir_import(EXAMPLE)
    from tensor2tensor.models import transformer
    t2t_base = transformer.transformer_base()
    assert t2t_base == registry.hparams_sets["transformer_base_v3"]()
    assert t2t_base != registry.hparams_sets["transformer_base"]()
    hparams = registry.hparams_sets["transformer_chat_tiny"]()
    assert (hparams.num_encoder_layers, hparams.num_decoder_layers) == (1, 1)
    assert hparams.normalize_before and hparams.max_input_seq_length == 40


def test_every_bad_key_of_a_users_set_in_one_line(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        from tensor2tensor.models import transformer
        from tensor2tensor.utils import registry

        @registry.register_hparams
        def my_bad_set():
          hparams = transformer.transformer_base()
          hparams.num_hidden_layerz = 2
          hparams.hidden_size = -3
          hparams.filter_size = 64
          hparams.label_smoothing = 7.0
          return hparams
        """)
    usr_dir_import(usr_dir)
    with pytest.raises(ValueError) as caught:
        registry.hparams_sets["my_bad_set"]()
    message = str(caught.value)
    assert "\n" not in message and message.startswith("hparams set my_bad_set")
    for line, key in ((7, "num_hidden_layerz"), (8, "hidden_size"), (10, "label_smoothing")):
        assert f"problems.py:{line}" in message and key in message


@pytest.mark.slow
def test_a_t2t_usr_dir_trains_decodes_averages_and_exports(usr_dir_import, tmp_path):
    """The README's commands on a usr_dir written for T2T, as its user runs them."""
    from t2t_lite.bin import t2t_avg_all, t2t_decoder, t2t_exporter, t2t_trainer

    usr_dir_import(EXAMPLE)  # as the commands will: the fixture forgets it afterwards
    tmp_dir, data_dir, output_dir = make_tmp_dir(tmp_path), tmp_path / "data", tmp_path / "run"
    usr = f"--t2t_usr_dir={EXAMPLE}"
    assert t2t_trainer.main([usr, "--problem=chatbot_tiny", "--model=transformer",
                             "--hparams_set=transformer_chat_tiny", "--generate_data",
                             f"--tmp_dir={tmp_dir}", f"--data_dir={data_dir}",
                             f"--output_dir={output_dir}", "--train_steps=4",
                             "--save_checkpoints_steps=2", "--eval_every_steps=4"]) == 0
    assert os.path.exists(data_dir / "vocab.chatbot_tiny.2048.subwords")
    with open(output_dir / "hparams.json") as f:
        assert json.load(f)["t2t_usr_dir"] == os.path.abspath(EXAMPLE)
    source = tmp_path / "in.txt"
    source.write_text("hello how are you\nwhat is your name\n")
    decode = ["--decode_hparams=beam_size=2,alpha=0.6,extra_length=5"]
    assert t2t_decoder.main([usr, f"--output_dir={output_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={tmp_path / 'out.txt'}"] + decode) == 0
    assert len((tmp_path / "out.txt").read_text().splitlines()) == 2
    assert t2t_avg_all.main([f"--model_dir={output_dir}", "--n=2",
                             f"--output_dir={tmp_path / 'avg'}"]) == 0
    assert t2t_exporter.main([usr, f"--output_dir={tmp_path / 'avg'}",
                              f"--export_dir={tmp_path / 'export'}"] + decode) == 0
    assert os.listdir(tmp_path / "export")


def test_a_real_tensor2tensor_is_used_and_said(tmp_path, monkeypatch, caplog):
    from t2t_lite.compat import aliases

    (tmp_path / "tensor2tensor").mkdir()
    (tmp_path / "tensor2tensor" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f is not aliases._FINDER])
    monkeypatch.delitem(sys.modules, "tensor2tensor", raising=False)
    assert aliases.install() is False
    assert aliases._FINDER not in sys.meta_path
    assert "a real tensor2tensor is installed" in caplog.text


def test_a_run_of_a_usr_dir_names_the_flag_a_command_then_needs(tmp_path):
    """A run records the usr_dir that registers its problem: without that flag, a
    command reading the run says which flag to pass, not 'unknown problem'."""
    from t2t_lite import experiment

    run = tmp_path / "run"
    run.mkdir()
    (run / "hparams.json").write_text(json.dumps({
        "problem": "their_own_problem", "model": "transformer",
        "hparams_set": "transformer_tiny", "data_dir": str(tmp_path),
        "t2t_usr_dir": "/home/them/usr", "hparams": {}}))
    with pytest.raises(experiment.ExperimentError,
                       match="their_own_problem of the run in .* is registered by "
                             "--t2t_usr_dir=/home/them/usr .*: pass that flag too"):
        experiment.resolve(None, None, None, "", None, str(run), must_exist=True)
