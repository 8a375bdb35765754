"""Tests for problems/translate_files.py and t2t_lite/data/data_options.py: translation
from the user's own files, their options recorded in --data_dir."""
import io
import re
import json
import os

import pytest
import sentencepiece as spm

from cli_helpers import corpus_sentences, error_of, write_lines
from t2t_lite import registry
from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.data import data_options
from t2t_lite.data.subword import SubwordTextEncoder

@pytest.fixture
def corpus(tmp_path):
    """train.{en,de} (de gzipped), valid.{en,de}, and a pairs file of the same dev set."""
    for split, count in (("train", 120), ("valid", 8)):
        source = corpus_sentences(count, len(split))
        write_lines(tmp_path / f"{split}.en", source)
        gz = split == "train"
        write_lines(tmp_path / f"{split}.de{'.gz' if gz else ''}", [s.upper() for s in source], gz)
    write_lines(tmp_path / "valid.tsv", [f"{s}\t{s.upper()}" for s in corpus_sentences(8, 5)])
    return tmp_path


def _datagen(data_dir, options, *flags):
    return t2t_datagen.main(["--problem=translate_files", f"--data_dir={data_dir}",
                             f"--data_options={options}", *flags])


def _records(problem, data_dir, split):
    return [{key: value.numpy().tolist() for key, value in example.items()}
            for example in problem.dataset(split, str(data_dir))]


def test_prefix_files_recorded_absolute_and_read_back(corpus, monkeypatch):
    monkeypatch.chdir(corpus)
    assert _datagen("data", "train=train,dev=valid,source_lang=en,target_lang=de,"
                            "vocab_size=320,vocab_type=unigram") == 0
    record = json.loads((corpus / "data" / "translate_files.data_options.json").read_text())
    assert record["train_target"] == str(corpus / "train.de.gz")  # .gz found, made absolute
    assert record["vocab_size"] == 320 and record["vocab_type"] == "unigram"
    monkeypatch.chdir("/")  # later commands work from any folder
    problem = registry.problems["translate_files"]()
    data_dir = str(corpus / "data")
    encoders = problem.feature_encoders(data_dir)
    assert encoders["inputs"] is encoders["targets"]  # shared: one object, one embedding
    assert encoders["targets"].vocab_size == 320
    dev = _records(problem, data_dir, "dev")
    assert encoders["inputs"].decode(dev[0]["inputs"]) == corpus_sentences(8, 5)[0]
    assert encoders["targets"].decode(dev[0]["targets"]) == corpus_sentences(8, 5)[0].upper()
    assert problem.eval_metric_options() == {"language": "de"}
    with pytest.raises(FileNotFoundError, match="no test data: no test files were given"):
        problem.dataset("test", data_dir)


def test_pairs_file_and_explicit_files_make_the_same_shards(corpus):
    write_lines(corpus / "valid_pairs.tsv", [f"{s}\t{s.upper()}" for s in corpus_sentences(8, 5)])
    explicit = (f"train_source={corpus}/train.en,train_target={corpus}/train.de.gz,"
                f"vocab_size=320,")
    assert _datagen(corpus / "a", explicit + f"dev_pairs={corpus}/valid.tsv") == 0
    write_lines(corpus / "v.src", corpus_sentences(8, 5))
    write_lines(corpus / "v.tgt", [s.upper() for s in corpus_sentences(8, 5)])
    assert _datagen(corpus / "b", explicit + f"dev_source={corpus}/v.src,"
                                             f"dev_target={corpus}/v.tgt") == 0
    problem = registry.problems["translate_files"]()
    assert _records(problem, corpus / "a", "dev") == _records(problem, corpus / "b", "dev")
    assert problem.eval_metric_options() == {"language": None}  # no language given


def test_other_options_on_the_same_data_dir_are_refused(corpus, capsys):
    options = f"train={corpus}/train,dev={corpus}/valid,source_lang=en,target_lang=de,"
    assert _datagen(corpus / "data", options + "vocab_size=320") == 0
    before = sorted(os.listdir(corpus / "data"))
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={corpus}/data",
        f"--data_options={options}vocab_size=330"])
    assert "other options (vocab_size=320 -> 330;" in line
    assert _datagen(corpus / "data", options + "vocab_size=320") == 0  # the same: resumes
    assert _datagen(corpus / "data", "") == 0  # none: the recorded ones
    assert sorted(os.listdir(corpus / "data")) == before


def test_data_options_refused_where_they_do_nothing(corpus, capsys):
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_ende_multi30k", f"--data_dir={corpus}/data",
        "--data_options=vocab_size=100"])
    assert "takes no data options" in line
    with pytest.raises(SystemExit):
        t2t_trainer.main([
            "--problem=translate_files", f"--data_dir={corpus}/data", f"--output_dir={corpus}/r",
            "--model=transformer", "--hparams_set=transformer_tiny",
            "--data_options=vocab_size=9"])
    assert "--data_options acts only with --generate_data" in capsys.readouterr().err
    assert not os.path.exists(corpus / "data")


def test_trainer_generate_data_records_the_options(corpus, capsys):
    # --schedule=evaluate stops right after the data (there is no run to evaluate): the wiring
    # without a training step.
    line = error_of(capsys, t2t_trainer.main, [
        "--problem=translate_files", f"--data_dir={corpus}/data", f"--output_dir={corpus}/run",
        "--model=transformer", "--hparams_set=transformer_tiny", "--generate_data",
        "--schedule=evaluate", f"--data_options=train={corpus}/train,dev={corpus}/valid,"
        "source_lang=en,target_lang=de,vocab_size=320"])
    assert "is not a run folder written by t2t-trainer or t2t-avg-all" in line
    assert data_options.load(registry.problems["translate_files"](),
                             str(corpus / "data")).vocab_size == 320


@pytest.mark.parametrize("files, says", [
    ({"s": "a\nb\n", "t": "A\n"}, "s:2: {d}/t ends at line 1"),
    ({"s": "", "t": ""}, "s:1: the file is empty"),
    ({"s": "a\n", "t": "A\n", "p": "x y\n"}, "p:1: no tab"),
    ({"s": "a\n", "t": "A\n", "p": "x\ty\tz\n"}, "p:1: 2 tabs"),
    ({"s": "a\n\xe9\n".encode("latin-1"), "t": "A\nB\n"}, "s: line 2 is not valid UTF-8"),
])
def test_bad_files_are_one_line_naming_file_and_line_and_write_nothing(
        tmp_path, capsys, files, says):
    for name, text in files.items():
        (tmp_path / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    dev = f"dev_pairs={tmp_path}/p" if "p" in files else f"dev_source={tmp_path}/s,dev_target={tmp_path}/t"
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={tmp_path}/data",
        f"--data_options=train_source={tmp_path}/s,train_target={tmp_path}/t,{dev}"])
    assert says.format(d=tmp_path) in line
    assert not os.listdir(tmp_path / "data") if os.path.exists(tmp_path / "data") else True


@pytest.mark.parametrize("options, says", [
    ("dev=x", "no train data"),
    ("train=x,dev=x", "train=x needs source_lang and target_lang"),
    ("train=nope,dev=nope,source_lang=en,target_lang=de", "neither of nope.en and nope.en.gz"),
    ("train_source=nope,train_target=nope,dev=x", "train_source: no such file: nope"),
    ("train_source={c}/train.en,dev=x", "train_target is missing"),
    ("train={c}/train,train_pairs={c}/valid.tsv,dev=x,source_lang=en,target_lang=de",
     "train is given twice"),
    ("vocab_size=0", "'vocab_size' must be >= 3, got 0"),
    ("character_coverage=1.5", "'character_coverage' must be in (0, 1]"),
    ("vocab_sample=50", "'vocab_sample' must be 0 (off) or > 100, got 50"),
    ("vocab_type=wordpiece", "'vocab_type' must be one of 'bpe', 'unigram'"),
    ("size=8", "unknown hparam 'size'"),
    ("train={c}/train,dev={c}/valid,source_lang=en,target_lang=de,source_vocab_model=x",
     "source_vocab_model goes with shared_vocab=false"),
])
def test_bad_options_are_refused_before_any_work(corpus, capsys, options, says):
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={corpus}/data",
        f"--data_options={options.format(c=corpus)}"])
    assert line.startswith("t2t-datagen: error: ") and says in line
    assert not os.path.exists(corpus / "data" / "translate_files.data_options.json")


def test_a_failed_vocabulary_leaves_nothing_behind(corpus, capsys):
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={corpus}/data",
        f"--data_options=train={corpus}/train,dev={corpus}/valid,source_lang=en,"
        "target_lang=de,vocab_size=100000"])
    assert "could not train a 100000-token bpe vocabulary" in line
    assert os.listdir(corpus / "data") == []  # a corrected rerun starts afresh
    assert _datagen(corpus / "data", f"train={corpus}/train,dev={corpus}/valid,"
                                     "source_lang=en,target_lang=de,vocab_size=320") == 0


def test_separate_vocabularies(corpus):
    assert _datagen(corpus / "data", f"train={corpus}/train,dev={corpus}/valid,"
                                     "source_lang=en,target_lang=de,vocab_size=310,"
                                     "shared_vocab=false") == 0
    problem = registry.problems["translate_files"]()
    data_dir = str(corpus / "data")
    encoders = problem.feature_encoders(data_dir)
    assert encoders["inputs"] is not encoders["targets"]
    source_pieces = set(encoders["inputs"].token_strings(range(310)))
    target_pieces = set(encoders["targets"].token_strings(range(310)))
    assert "▁the" in source_pieces - target_pieces and "▁THE" in target_pieces - source_pieces
    assert len(problem.vocab_files(data_dir)) == 2
    dev = _records(problem, data_dir, "dev")
    assert encoders["targets"].decode(dev[1]["targets"]) == corpus_sentences(8, 5)[1].upper()
    fingerprint = problem.vocab_fingerprint(data_dir)
    target = corpus / "data" / "vocab.translate_files.target.model"
    other = SubwordTextEncoder.build(["x y z"] * 50, 265, path_prefix=str(corpus / "o"))
    other.store_to_file(str(target))  # only the target vocabulary changes
    assert problem.vocab_fingerprint(data_dir) != fingerprint
    with pytest.raises(ValueError, match="encoded with another vocabulary"):
        problem.dataset("dev", data_dir)


def test_vocabulary_options_reach_sentencepiece(corpus, caplog):
    from sentencepiece import sentencepiece_model_pb2

    caplog.set_level("INFO")
    assert _datagen(corpus / "data", f"train={corpus}/train,dev={corpus}/valid,"
                                     "source_lang=en,target_lang=de,vocab_size=300,"
                                     "vocab_type=unigram,character_coverage=0.99,"
                                     "vocab_sample=200") == 0
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString((corpus / "data" / "vocab.translate_files.model").read_bytes())
    spec = model.trainer_spec
    assert (spec.model_type, spec.vocab_size) == (sentencepiece_model_pb2.TrainerSpec.UNIGRAM,
                                                  300)
    assert spec.character_coverage == pytest.approx(0.99)
    # The sample is drawn before sentencepiece (which, given a sample size, would
    # reorder even a corpus below it), and said.
    assert re.search(r"a seeded sample of 200 of the \d+ sentences", caplog.text)


def _user_model(path, lines, **flags):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model,
                                   vocab_size=60, minloglevel=2, **flags)
    path.write_bytes(model.getvalue())
    return spm.SentencePieceProcessor(model_file=str(path))


def test_a_users_own_sentencepiece_model(corpus, capsys):
    lines = corpus_sentences(120, 5) + [s.upper() for s in corpus_sentences(120, 5)]
    theirs = _user_model(corpus / "user.model", lines)  # unk 0, bos 1, eos 2: the defaults
    options = (f"train={corpus}/train,dev={corpus}/valid,source_lang=en,target_lang=de,"
               f"vocab_model={corpus}/user.model")
    line = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={corpus}/data",
        f"--data_options={options},vocab_size=100"])
    assert "vocab_size would train a vocabulary, but every vocabulary is a model of yours" in line
    assert _datagen(corpus / "data", options) == 0
    encoder = registry.problems["translate_files"]().feature_encoders(str(corpus / "data"))[
        "inputs"]
    text = "the big cat"
    assert encoder.token_strings(encoder.encode(text)) == theirs.encode(text, out_type=str)
    assert encoder.decode(encoder.encode(text) + [1, 5]) == text  # EOS is id 1 now
    assert encoder.vocab_size == theirs.get_piece_size()


def test_text2text_tmpdir(tmp_path, capsys):
    tmp_dir = tmp_path / "raw"
    tmp_dir.mkdir()
    for split, count in (("train", 80), ("eval", 6)):
        write_lines(tmp_dir / f"inputs.{split}.txt", corpus_sentences(count, 1))
        write_lines(tmp_dir / f"targets.{split}.txt", corpus_sentences(count, 2))
    argv = ["--problem=text2text_tmpdir", f"--data_dir={tmp_path}/data", f"--tmp_dir={tmp_dir}"]
    assert t2t_datagen.main(argv + ["--data_options=vocab_size=310"]) == 0
    problem = registry.problems["text2text_tmpdir"]()
    encoders = problem.feature_encoders(str(tmp_path / "data"))
    dev = _records(problem, tmp_path / "data", "dev")
    assert [encoders["inputs"].decode(example["inputs"]) for example in dev] == \
        corpus_sentences(6, 1)
    assert t2t_datagen.main(argv) == 0  # a rerun: the recorded options
    other = tmp_path / "other"
    other.mkdir()
    for name in os.listdir(tmp_dir):
        (other / name).write_bytes((tmp_dir / name).read_bytes())
    line = error_of(capsys, t2t_datagen.main, argv[:2] + [f"--tmp_dir={other}"])
    assert "other options (dev_source=" in line
    line = error_of(capsys, t2t_datagen.main, argv + [f"--data_options=train_source={other}/x"])
    assert "text2text_tmpdir finds train_source itself (in --tmp_dir)" in line


def test_record_is_checked_when_read(corpus):
    assert _datagen(corpus / "data", f"train={corpus}/train,dev={corpus}/valid,"
                                     "source_lang=en,target_lang=de,vocab_size=320") == 0
    path = corpus / "data" / "translate_files.data_options.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "vocab_size": -1}))
    with pytest.raises(ValueError, match="hparam 'vocab_size' must be >= 3"):
        data_options.load(registry.problems["translate_files"](), str(corpus / "data"))


MULTI30K_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "..", "shared", "data", "multi30k")


def test_multi30k_files_give_the_registered_problems_vocabulary_and_shards(tmp_path):
    """The acceptance: translate_files on Multi30k's raw files writes the very bytes of
    translate_ende_multi30k (so training on it is the same run, BLEU included)."""
    if not os.path.isfile(os.path.join(MULTI30K_DIR, "train.en.gz")):
        pytest.skip(f"Multi30k raw files not found in {os.path.abspath(MULTI30K_DIR)}")
    registered = registry.problems["translate_ende_multi30k"]()
    registered.generate_data(str(tmp_path / "registered"), MULTI30K_DIR)
    m = MULTI30K_DIR
    assert _datagen(tmp_path / "files", f"train={m}/train,dev={m}/val,test={m}/test_2016_flickr,"
                                        "source_lang=en,target_lang=de") == 0
    files = registry.problems["translate_files"]()
    files_dir = str(tmp_path / "files")
    [vocabulary] = files.vocab_files(files_dir)
    assert open(vocabulary, "rb").read() == \
        (tmp_path / "registered" / registered.vocab_filename).read_bytes()
    for split in ("train", "dev", "test"):
        for ours, theirs in zip(files.shard_paths(files_dir, split),
                                registered.shard_paths(str(tmp_path / "registered"), split),
                                strict=True):
            with open(ours, "rb") as a, open(theirs, "rb") as b:
                assert a.read() == b.read(), ours
    assert files.vocab_fingerprint(files_dir) == \
        registered.vocab_fingerprint(str(tmp_path / "registered"))
