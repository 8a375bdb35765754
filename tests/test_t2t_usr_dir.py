"""A usr_dir written for tensor2tensor runs unchanged, and means what it meant in T2T
(t2t_lite/compat/): T2T's import paths, its Problem contract (vocabulary, splits,
names, metrics, TranslateProblem's corpus entries) and one-line refusals naming the
user's FILE:LINE for what t2t-lite cannot honour."""
import io
import json
import os
import random
import sys
import tarfile
import textwrap

import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.data.subword import SubwordTextEncoder

EXAMPLE = os.path.join(os.path.dirname(__file__), "t2t_usr_dir_example")
WORDS = ("hello how are you fine thanks what is your name my name is ana good night see "
         "you soon where do you live i live near the river").split()


@pytest.fixture(autouse=True)
def builtins():
    load_builtins()


def make_tmp_dir(root) -> str:
    """The files the example usr_dir's problems read, made up: a dialog file, a
    transliteration corpus per split and the Zulu corpus archive a download would give."""
    tmp_dir = str(root / "tmp")
    os.makedirs(tmp_dir)
    rng = random.Random(0)

    def sentence(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    with open(os.path.join(tmp_dir, "dialogs.tsv"), "w", encoding="utf-8") as f:
        for i in range(303):
            f.write(f"{sentence(5)} {i}\t{sentence(4)}\n")
    for split, count in (("train", 60), ("dev", 6), ("test", 5)):
        for side, word in (("he", "שלום"), ("en", "shalom")):
            with open(os.path.join(tmp_dir, f"translit.{split}.{side}"), "w",
                      encoding="utf-8") as f:
                f.writelines(f"{word}{i}\n" for i in range(count))
    with tarfile.open(os.path.join(tmp_dir, "en-zu.tgz"), "w:gz") as archive:
        for split, count in (("train", 200), ("dev", 10)):
            for side in ("en", "zu"):
                text = "".join(f"{sentence(6)} {side}\n" for _ in range(count)).encode()
                member = tarfile.TarInfo(f"en-zu/{split}.{side}")
                member.size = len(text)
                archive.addfile(member, io.BytesIO(text))
    return tmp_dir


def write_usr_dir(root, source: str, name: str = "their_t2t") -> str:
    """A one-module usr_dir holding ``source`` (T2T-style code) as ``problems.py``."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("from . import problems\n")
    (package / "problems.py").write_text(textwrap.dedent(source))
    return str(package)


def refusal(usr_dir_import, usr_dir: str) -> str:
    with pytest.raises(registry.UsrDirError) as caught:
        usr_dir_import(usr_dir)
    message = str(caught.value)
    assert "\n" not in message
    return message


def read_split(problem, data_dir: str, split: str) -> list[str]:
    encoder = problem.feature_encoders(data_dir)["targets"]
    return [encoder.decode(example["targets"].numpy())
            for example in problem.dataset(split, data_dir)]


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


def test_one_stream_is_dealt_over_the_splits_never_copied(usr_dir_import, tmp_path):
    usr_dir_import(EXAMPLE)
    problem = registry.problems["chatbot_tiny"]()
    data_dir, tmp_dir = str(tmp_path / "data"), make_tmp_dir(tmp_path)
    problem.generate_data(data_dir, tmp_dir)
    train, dev = read_split(problem, data_dir, "train"), read_split(problem, data_dir, "dev")
    # 303 samples round robin over 4 train shards and 1 dev shard, as T2T dealt them.
    assert (len(train), len(dev)) == (243, 60)
    assert not os.path.exists(problem.shard_paths(data_dir, "test")[0])
    sources = [example["inputs"].numpy() for example in problem.dataset("dev", data_dir)]
    train_sources = {tuple(example["inputs"].numpy())
                     for example in problem.dataset("train", data_dir)}
    assert not any(tuple(ids) in train_sources for ids in sources)  # each line is unique


def test_subword_vocabulary_near_the_asked_size_or_smaller_with_a_warning(
        usr_dir_import, tmp_path, caplog):
    usr_dir_import(EXAMPLE)
    problem = registry.problems["chatbot_tiny"]()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, make_tmp_dir(tmp_path))
    path = os.path.join(data_dir, "vocab.chatbot_tiny.2048.subwords")
    encoder = problem.feature_encoders(data_dir)["inputs"]
    assert isinstance(encoder, SubwordTextEncoder) and os.path.exists(path)
    # 30 words and 303 numbers cannot fill 2048 pieces: the builder says so and fits.
    assert ByteTextEncoder().vocab_size < encoder.vocab_size < 2048
    assert any("2048-id vocabulary was asked for" in r.message for r in caplog.records)
    assert len(encoder.encode("hello how are you")) < len("hello how are you")


def test_the_registered_name_is_the_problems_name(usr_dir_import, tmp_path):
    """T2T's registry overwrote a class's own ``name`` ("he_to_en") with the name it
    registered: the run records one that every command looks up."""
    usr_dir_import(EXAMPLE)
    problem = registry.problems["translit_he_en"]()
    assert problem.name == "translit_he_en" and "he_to_en" not in registry.problems
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, make_tmp_dir(tmp_path))
    assert isinstance(problem.feature_encoders(data_dir)["inputs"], ByteTextEncoder)
    assert [len(read_split(problem, data_dir, split)) for split in ("train", "dev", "test")] \
        == [60, 6, 5]
    assert len(problem.shard_paths(data_dir, "train")) == 2
    assert read_split(problem, data_dir, "test")[0] == "shalom0"


def test_translate_problem_reads_its_corpus_archive_from_tmp_dir(usr_dir_import, tmp_path):
    usr_dir_import(EXAMPLE)
    problem = registry.problems["translate_enzu_tiny"]()
    data_dir, tmp_dir = str(tmp_path / "data"), make_tmp_dir(tmp_path)
    problem.generate_data(data_dir, tmp_dir)  # no download: the archive is in tmp_dir
    assert len(read_split(problem, data_dir, "train")) == 200
    dev = read_split(problem, data_dir, "dev")
    assert len(dev) == 10 and all(line.endswith(" zu") for line in dev)
    assert os.path.exists(os.path.join(tmp_dir, "translate_enzu_tiny-compiled-dev.lang1"))
    assert problem.eval_metric == "bleu"


def test_token_vocabulary_from_tmp_dir_with_its_oov_token(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        from tensor2tensor.data_generators import text_problems
        from tensor2tensor.utils import registry

        @registry.register_problem
        class DataToTextTiny(text_problems.Text2TextProblem):
          @property
          def vocab_type(self):
            return text_problems.VocabType.TOKEN

          @property
          def oov_token(self):
            return "<unk>"

          @property
          def is_generate_per_split(self):
            return False

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            for i in range(30):
              yield {"inputs": "name = ana", "targets": "ana is here %d" % (i % 3)}
        """)
    usr_dir_import(usr_dir)
    problem = registry.problems["data_to_text_tiny"]()
    tmp_dir, data_dir = tmp_path / "tmp", str(tmp_path / "data")
    tmp_dir.mkdir()
    (tmp_dir / "vocab.data_to_text_tiny.tokens").write_text("name\n=\nana\nis\nhere\n0\n1\n")
    problem.generate_data(data_dir, str(tmp_dir))
    encoder = problem.feature_encoders(data_dir)["targets"]
    assert isinstance(encoder, TokenTextEncoder)
    assert encoder.decode(encoder.encode("ana is here 2")) == "ana is here <unk>"


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


def test_tf1_gfile_and_logging_that_t2t_code_calls(usr_dir_import, tmp_path):
    usr_dir = write_usr_dir(tmp_path, """\
        import tensorflow as tf
        from tensor2tensor.data_generators import text_problems
        from tensor2tensor.utils import registry

        @registry.register_problem
        class LinesTiny(text_problems.Text2TextProblem):
          @property
          def is_generate_per_split(self):
            return False

          def generate_samples(self, data_dir, tmp_dir, dataset_split):
            path = tmp_dir + "/lines.txt"
            tf.logging.info("reading %s", path)
            with tf.gfile.Open(path) as f:
              lines = [line.strip() for line in f if tf.gfile.Exists(path)]
            for i, line in enumerate(lines):
              yield {"inputs": line, "targets": lines[(i + 1) % len(lines)]}
        """)
    usr_dir_import(usr_dir)
    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    (tmp_dir / "lines.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    problem = registry.problems["lines_tiny"]()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_dir))
    assert len(read_split(problem, data_dir, "train")) + \
        len(read_split(problem, data_dir, "dev")) == 20


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


def test_the_reading_helpers_refuse_files_out_of_line(tmp_path):
    from t2t_lite.compat.text_iterators import (
        text2text_distill_iterator, text2text_txt_iterator, txt_line_iterator)

    for name, lines in (("a", "one\ntwo\n"), ("b", "uno\ndos\ntres\n"), ("c", "1\n2\n")):
        (tmp_path / name).write_text(lines)
    a, b, c = (str(tmp_path / name) for name in "abc")
    assert list(txt_line_iterator(a)) == ["one", "two"]
    assert next(text2text_distill_iterator(a, c, c)) == {
        "inputs": "one", "targets": "1", "dist_targets": "1"}
    with pytest.raises(ValueError, match=f"{b} has more lines than {a}"):
        list(text2text_txt_iterator(a, b))


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


def character_problem(class_name: str, members: str, after: str = "") -> str:
    """T2T-style source of one registered Text2TextProblem on bytes (lines 1-8),
    ``members``, its own body, from line 9, and module code ``after`` it."""
    return textwrap.dedent(f"""\
        from tensor2tensor.data_generators import generator_utils, problem, text_problems
        from tensor2tensor.utils import registry

        @registry.register_problem
        class {class_name}(text_problems.Text2TextProblem):
          @property
          def vocab_type(self):
            return text_problems.VocabType.CHARACTER
        """) + textwrap.indent(textwrap.dedent(members), "  ") + textwrap.dedent(after)


def test_a_split_dealt_no_sample_is_said(usr_dir_import, tmp_path, caplog):
    """T2T's 9999-shard train splits with a few hundred samples leave dev empty: its
    dev figures would be 0 with exit 0. The datagen says so."""
    usr_dir_import(write_usr_dir(tmp_path, character_problem("GecTiny", """\
        @property
        def is_generate_per_split(self):
          return False

        @property
        def dataset_splits(self):
          return [{"split": problem.DatasetSplit.TRAIN, "shards": 9},
                  {"split": problem.DatasetSplit.EVAL, "shards": 1}]

        def generate_samples(self, data_dir, tmp_dir, dataset_split):
          for i in range(5):
            yield {"inputs": "a%d" % i, "targets": "b%d" % i}
        """)))
    registry.problems["gec_tiny"]().generate_data(str(tmp_path / "data"), str(tmp_path))
    assert "the dev split got none of the 5 samples dealt over 10 shards" in caplog.text


def test_what_t2t_ignored_is_ignored_and_said(usr_dir_import, tmp_path, caplog):
    usr_dir_import(write_usr_dir(tmp_path, character_problem("OldStyle", """\
        @property
        def vocab_size(self):
          return 8000

        @property
        def targeted_vocab_size(self):
          return 8000

        @property
        def is_generate_per_split(self):
          return False

        def generate_samples(self, data_dir, tmp_dir, dataset_split):
          for i in range(20):
            yield {"inputs": "a%d" % i, "targets": "b%d" % i}
        """, after="""\

        @registry.register_ranged_hparams
        def my_ranges(rhp):
          rhp.set_float("learning_rate", 0.1, 0.3)
        """)))
    problem = registry.problems["old_style"]()
    data_dir = str(tmp_path / "data")
    problem.generate_data(data_dir, str(tmp_path))
    assert problem.vocab_size(data_dir) == ByteTextEncoder().vocab_size
    for attribute, line in (("vocab_size", 9), ("targeted_vocab_size", 13)):
        assert (f"problems.py:{line}: problem old_style defines {attribute}, which "
                "tensor2tensor ignored, as t2t-lite does") in caplog.text
    assert "ranged hparams my_ranges: t2t-lite has no hyperparameter tuner" in caplog.text


def test_a_users_own_generate_data_with_t2ts_writers(usr_dir_import, tmp_path):
    usr_dir_import(write_usr_dir(tmp_path, character_problem("OwnWriter", """\
        @property
        def is_generate_per_split(self):
          return True

        def generate_samples(self, data_dir, tmp_dir, dataset_split):
          for i in range(8 if dataset_split == problem.DatasetSplit.TRAIN else 2):
            yield {"inputs": "x%d" % i, "targets": "y%d" % i}

        def generate_data(self, data_dir, tmp_dir, task_id=-1):
          generator_utils.generate_dataset_and_shuffle(
              self.generate_encoded_samples(data_dir, tmp_dir, problem.DatasetSplit.TRAIN),
              self.training_filepaths(data_dir, 10, shuffled=False),
              self.generate_encoded_samples(data_dir, tmp_dir, problem.DatasetSplit.EVAL),
              self.dev_filepaths(data_dir, 1, shuffled=False))
        """)))
    problem = registry.problems["own_writer"]()
    data_dir = str(tmp_path / "data")
    os.makedirs(data_dir)
    problem.generate_data(data_dir, str(tmp_path))
    assert read_split(problem, data_dir, "dev") == ["y0", "y1"]
    assert len(read_split(problem, data_dir, "train")) == 8
