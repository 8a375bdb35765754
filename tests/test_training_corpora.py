"""Several training corpora in translate_files (problems/training_corpora.py): each its
share of the training stream by weight, whatever its length, resumed exactly; a tag
that begins each source of its corpus, one piece of the vocabulary; refusals in one line."""
import collections

import pytest
import tensorflow as tf

from cli_helpers import corpus_sentences, error_of, train_and_resume_files_run, write_lines
from t2t_lite import registry
from t2t_lite.bin import t2t_datagen
from t2t_lite.data.pipeline import batch_examples
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_lite.data.tfrecords import CORPUS

SIZES = {"para": 60, "bt": 180}  # the second corpus three times the first


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """para.{en,de} and bt.{en,de} (three times as long), dev.{en,de}."""
    root = tmp_path_factory.mktemp("corpora")
    for name, count in (*SIZES.items(), ("dev", 8)):
        source = corpus_sentences(count, len(name))
        write_lines(root / f"{name}.en", source)
        write_lines(root / f"{name}.de", [" ".join(reversed(s.split())) for s in source])
    return root


def datagen(corpora, folder, options, capsys=None, vocabulary=",vocab_size=320"):
    argv = ["--problem=translate_files", f"--data_dir={corpora / folder}",
            f"--data_options=train={corpora}/para,train2={corpora}/bt,dev={corpora}/dev,"
            f"source_lang=en,target_lang=de{vocabulary}{options}"]
    if capsys is not None:
        return error_of(capsys, t2t_datagen.main, argv)
    assert t2t_datagen.main(argv) == 0
    return str(corpora / folder)


def problem_of(data_dir):
    problem = registry.problems["translate_files"]()
    return problem, problem.feature_encoders(data_dir)["inputs"]


@pytest.fixture(scope="module")
def tagged(corpora):
    return datagen(corpora, "tagged", ",train2_tag=<BT>,train_weight=3,train2_weight=1")


def shares(data_dir, weights, batches=60):
    """The share of each corpus among the training stream's first examples."""
    problem, encoder = problem_of(data_dir)
    tag = encoder.encode("<BT>")[-1]
    stream = batch_examples(problem.dataset("train", data_dir, with_corpus=True), 512, 256,
                            True, seed=5, corpus_weights=weights)
    counts = collections.Counter()
    for batch in stream.take(batches):
        for row in batch["inputs"].numpy():
            counts["bt" if tag in row[:2] else "para"] += 1
    return {name: count / sum(counts.values()) for name, count in counts.items()}


def test_each_corpus_is_written_with_its_index_and_tag(tagged):
    problem, encoder = problem_of(tagged)
    assert problem.corpus_weights(tagged) == [3.0, 1.0]
    pieces = [encoder._token_string(i) for i in encoder.encode("<BT> the cat")]
    assert "<BT>" in pieces  # one piece, never split
    examples = list(problem.dataset("train", tagged, with_corpus=True))
    by_corpus = collections.Counter(int(e[CORPUS][0]) for e in examples)
    assert by_corpus == {0: SIZES["para"], 1: SIZES["bt"]}
    for example in examples:
        text = encoder.decode(example["inputs"].numpy().tolist())
        assert text.startswith("<BT> ") == (int(example[CORPUS][0]) == 1), text
    dev = [encoder.decode(e["inputs"].numpy().tolist()) for e in problem.dataset("dev", tagged)]
    assert dev == corpus_sentences(8, 3) and not any("<BT>" in line for line in dev)
    assert set(next(iter(problem.dataset("dev", tagged)))) == {"inputs", "targets"}


def test_the_weights_share_the_stream_whatever_the_lengths(tagged, corpora):
    assert shares(tagged, [3.0, 1.0])["para"] == pytest.approx(0.75, abs=0.06)
    assert shares(tagged, [1.0, 1.0])["para"] == pytest.approx(0.5, abs=0.06)
    unweighted = datagen(corpora, "unweighted", "")  # 1 each: half the stream each
    assert problem_of(unweighted)[0].corpus_weights(unweighted) == [1.0, 1.0]


def test_the_stream_resumes_where_it_was(tagged, tmp_path):
    problem, _ = problem_of(tagged)

    def stream():
        return iter(batch_examples(problem.dataset("train", tagged, with_corpus=True), 512,
                                   256, True, seed=5, corpus_weights=[3.0, 1.0]))

    iterator = stream()
    for _ in range(3):
        next(iterator)
    saved = tf.train.Checkpoint(input=iterator).save(str(tmp_path / "input"))
    expected = [next(iterator)["inputs"].numpy().tolist() for _ in range(3)]
    resumed = stream()
    tf.train.Checkpoint(input=resumed).restore(saved)
    assert [next(resumed)["inputs"].numpy().tolist() for _ in range(3)] == expected


def test_a_single_corpus_is_written_as_before(corpora):
    data_dir = str(corpora / "single")
    assert t2t_datagen.main(["--problem=translate_files", f"--data_dir={data_dir}",
                             f"--data_options=train={corpora}/para,dev={corpora}/dev,"
                             "source_lang=en,target_lang=de,vocab_size=320"]) == 0
    problem, _ = problem_of(data_dir)
    assert problem.corpus_weights(data_dir) == []
    record = next(iter(tf.data.TFRecordDataset(problem.shard_paths(data_dir, "train")[0])))
    assert set(tf.train.Example.FromString(record.numpy()).features.feature) == {
        "inputs", "targets"}


def test_a_users_own_vocabulary_gets_the_tag_as_a_piece(corpora):
    plain = datagen(corpora, "plain", "")
    own = problem_of(plain)[1]
    model = f"{plain}/vocab.translate_files.model"
    adopted = datagen(corpora, "adopted", ",train2_tag=<BT>",
                      vocabulary=f",vocab_model={model}")
    assert problem_of(adopted)[1].vocab_size == own.vocab_size + 1
    assert problem_of(adopted)[1].encode("the cat") == own.encode("the cat")
    # A token the model holds as a piece of another kind cannot be a tag.
    held = own._token_string(own.encode("cat")[-1])
    assert SubwordTextEncoder.adopt(model, []).vocab_size == own.vocab_size
    with pytest.raises(ValueError, match="as a piece of kind NORMAL, so it cannot be a tag"):
        SubwordTextEncoder.adopt(model, [held])


def test_a_run_trains_and_resumes_on_weighted_corpora(tagged, tmp_path):
    train_and_resume_files_run(tagged, tmp_path / "run")


@pytest.mark.parametrize("options, says", [
    (",train2_weight=0", "'train2_weight' must be > 0, got 0.0"),
    (",train2_weight=-1", "'train2_weight' must be > 0, got -1.0"),
    (",train3_weight=2", "train3_weight: no train3 corpus is given"),
    (",train4_tag=<X>", "train4_tag: no train4 corpus is given"),
    (",train2_tag=<B T>", "train2_tag='<B T>': a tag is one token, without spaces"),
    (",train2_tag=<unk>", "train2_tag=<unk>: a piece every vocabulary reserves"),
])
def test_options_that_cannot_be_are_refused_in_one_line(corpora, capsys, options, says):
    assert says in datagen(corpora, "refused", options, capsys)
    assert not (corpora / "refused").exists()


def test_a_weight_with_one_corpus_is_refused(corpora, capsys):
    error = error_of(capsys, t2t_datagen.main, [
        "--problem=translate_files", f"--data_dir={corpora / 'refused'}",
        f"--data_options=train={corpora}/para,dev={corpora}/dev,source_lang=en,"
        "target_lang=de,train_weight=2"])
    assert "train_weight=2.0: a weight shares the examples between corpora" in error
