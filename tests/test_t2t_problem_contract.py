"""tensor2tensor's Text2TextProblem contract, honoured (t2t_lite/compat/problem_contract.py,
translate_sources.py): the vocabulary it asks for, its splits dealt as T2T dealt them,
its registered name, TranslateProblem's corpus entries, what T2T ignored, a user's own
generate_data, and the reading helpers."""
import os

import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_usr_dirs import (EXAMPLE, character_problem, make_tmp_dir, read_split,
                          write_usr_dir)


@pytest.fixture(autouse=True)
def builtins():
    load_builtins()


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
