"""Guided alignment (t2t_lite/training/guided_alignment.py, data/alignment_links.py): word
links of an aligner's Pharaoh file become the links of their tokens at datagen, a tag
shifting them; the loss is least where the supervised head follows them; a run so
trained aligns better with that head than an unguided one, and resumes; refusals in one
line."""
import os

import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import corpus_sentences, error_of, with_flags, write_lines
from t2t_lite import registry
from t2t_lite.bin import t2t_datagen, t2t_trainer
from t2t_lite.data.alignment_links import (ALIGNMENTS, SUPERVISED_HEAD, link_matrix,
                                           token_links, word_indices)
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_lite.decoding.word_alignment import Aligner
from t2t_lite.experiment import resolve
from t2t_lite.training.checkpoints import restore_model
from t2t_lite.training.guided_alignment import alignment_loss

TRAIN = 80


def reversed_links(sentence: str) -> str:
    """Source word i is target word n-1-i: the target is the source reversed."""
    n = len(sentence.split())
    return " ".join(f"{i}-{n - 1 - i}" for i in range(n))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """train.{en,de} (the target the source's words reversed), its alignments, dev."""
    root = tmp_path_factory.mktemp("aligned")
    for name, count in (("train", TRAIN), ("dev", 8)):
        source = corpus_sentences(count, len(name))
        write_lines(root / f"{name}.en", source)
        write_lines(root / f"{name}.de", [" ".join(reversed(s.split())) for s in source])
        write_lines(root / f"{name}.align", [reversed_links(s) for s in source])
    return root


def datagen_argv(corpus, folder, options=""):
    return ["--problem=translate_files", f"--data_dir={corpus / folder}",
            f"--data_options=train={corpus}/train,dev={corpus}/dev,source_lang=en,"
            f"target_lang=de,vocab_size=300{options}"]


@pytest.fixture(scope="module")
def aligned(corpus):
    argv = datagen_argv(corpus, "aligned", f",train_alignments={corpus}/train.align")
    assert t2t_datagen.main(argv) == 0
    return str(corpus / "aligned")


def test_word_links_become_links_of_their_tokens(tmp_path):
    encoder = SubwordTextEncoder.build(["the cat sat", "die Katzen saßen"] * 30, 275,
                                       path_prefix=str(tmp_path / "vocab"))
    source, target = encoder.encode("the cat"), encoder.encode("die Katzen")
    source_words, target_words = word_indices(encoder, source), word_indices(encoder, target)
    links = token_links(source_words, target_words, [(0, 0), (1, 1)])
    matrix = link_matrix(tf.constant([links + [0, 0]]), len(source), len(target)).numpy()[0]
    expected = np.array([[float(s == t >= 0) for s in source_words] for t in target_words])
    assert len(target) > 2 and np.array_equal(matrix, expected)  # each piece of a word
    # Positions past the batch's lengths (a cut sequence) link nothing.
    assert link_matrix(tf.constant([links]), 1, 1).numpy().sum() <= 1


def test_the_loss_is_least_where_the_head_follows_the_links():
    links = tf.constant([token_links([0, 1, 2], [0, 1, 2, 3], [(0, 2), (2, 0), (1, 1), (0, 1)])])
    inputs, targets = tf.constant([[5, 6, 7]]), tf.constant([[5, 6, 7, 0]])  # one PAD target
    gold = np.array([[0, 0, 1], [.5, .5, 0], [1, 0, 0], [1, 0, 0]], np.float32)
    uniform = np.full([4, 3], 1 / 3, np.float32)
    follows = alignment_loss(tf.constant(np.clip(gold, 1e-6, 1)[None]), links, inputs, targets)
    spread = alignment_loss(tf.constant(uniform[None]), links, inputs, targets)
    # Gold rows of 1 cost ~0, the row of two links log 2; the PAD target's row nothing.
    assert float(follows) == pytest.approx(np.log(2), abs=1e-3)
    assert float(spread) == pytest.approx(3 * np.log(3), abs=1e-3)
    assert float(alignment_loss(tf.constant(uniform[None]), tf.zeros([1, 2], tf.int32),
                                inputs, targets)) == 0.0  # a pair without links


def stored_word_links(data_dir, index=0):
    """The word links the ``index``-th training example's token links stand for."""
    problem = registry.problems["translate_files"]()
    encoder = problem.feature_encoders(data_dir)["inputs"]
    example = list(problem.dataset("train", data_dir, with_alignments=True))[index]
    inputs, targets = (example[k].numpy().tolist()[:-1] for k in ("inputs", "targets"))
    matrix = link_matrix(example[ALIGNMENTS][None], len(inputs), len(targets)).numpy()[0]
    source_words, target_words = word_indices(encoder, inputs), word_indices(encoder, targets)
    return {(source_words[s], target_words[t]) for t, s in zip(*np.nonzero(matrix))}


def test_datagen_stores_the_links_and_a_tag_shifts_them(corpus, aligned):
    first = corpus_sentences(1, len("train"))[0].split()
    n = len(first)
    assert stored_word_links(aligned) == {(i, n - 1 - i) for i in range(n)}
    assert registry.problems["translate_files"]().has_alignments(aligned)
    argv = datagen_argv(corpus, "tagged", f",train_alignments={corpus}/train.align,"
                                          "train_tag=<BT>")
    assert t2t_datagen.main(argv) == 0
    assert stored_word_links(str(corpus / "tagged")) == {(i + 1, n - 1 - i) for i in range(n)}


def head_accuracy(data_dir, output_dir, head):
    """The share of target words whose most-attended source word is their gold one."""
    experiment = resolve(None, None, None, "", None, str(output_dir), must_exist=True)
    model = experiment.build_model()
    restore_model(model, str(output_dir))
    problem = registry.problems["translate_files"]()
    encoder = problem.feature_encoders(data_dir)["inputs"]
    aligner = Aligner(model, encoder, encoder, head=head)
    hits = total = 0
    for example in problem.dataset("train", data_dir).take(24):
        inputs = example["inputs"].numpy()[None]
        target = example["targets"].numpy().tolist()[:-1]
        found = {tuple(map(int, link.split("-"))) for link in aligner(inputs, [target])[0].split()}
        n = len(encoder.decode(target).split())
        hits += sum((n - 1 - j, j) in found for j in range(n))
        total += n
    return hits / total


def test_the_supervised_head_learns_the_links_and_a_guided_run_resumes(aligned, tmp_path):
    """The guided run stops at step 30 and is resumed to 60 (its input state, links and
    all, saved and restored): the resume is tested on the run that must learn, instead
    of on a run of its own (cli_helpers.train_and_resume_files_run, 9 s CPU more).
    T2T_TEST_SEED (unset: 1234, the trainer's default) re-runs it on other seeds."""
    seed = os.environ.get("T2T_TEST_SEED", "1234")
    flags = ["--problem=translate_files", "--model=transformer",
             "--hparams_set=transformer_tiny", f"--data_dir={aligned}", "--train_steps=60",
             "--save_checkpoints_steps=30", "--eval_batches=1", "--log_every_steps=30",
             f"--seed={seed}"]
    tiny = ("num_hidden_layers=2,hidden_size=32,filter_size=32,num_heads=2,batch_size=512,"
            "learning_rate_warmup_steps=10")
    accuracy = {}
    for weight in (0.0, 1.0):
        output_dir = tmp_path / f"weight{weight}"
        run = flags + [f"--output_dir={output_dir}",
                       f"--hparams={tiny},guided_alignment_weight={weight}"]
        if weight:
            assert t2t_trainer.main(with_flags(run, "--train_steps=30")) == 0
        assert t2t_trainer.main(run) == 0
        assert tf.train.latest_checkpoint(str(output_dir)).endswith("-60")
        accuracy[weight] = head_accuracy(aligned, output_dir, SUPERVISED_HEAD)
    assert accuracy[1.0] > max(0.6, accuracy[0.0] + 0.2), accuracy


@pytest.mark.parametrize("lines, message", [
    (lambda lines: lines[:-1], f"train.align:{TRAIN}: the file ends at line {TRAIN - 1}"),
    (lambda lines: lines + ["0-0"], f"train.align:{TRAIN + 1}: train's corpus has {TRAIN} pairs"),
    (lambda lines: ["0-9"] + lines[1:], "train.align:1: link 0-9 is outside the pair"),
    (lambda lines: ["0:1"] + lines[1:], "train.align:1: '0:1' is not a link SOURCE-TARGET"),
])
def test_a_bad_alignment_file_is_refused_by_line(corpus, tmp_path, capsys, lines, message):
    good = (corpus / "train.align").read_text().splitlines()
    write_lines(tmp_path / "train.align", lines(good))
    argv = datagen_argv(corpus, tmp_path.name, f",train_alignments={tmp_path}/train.align")
    assert message in error_of(capsys, t2t_datagen.main, argv)
    assert not (corpus / tmp_path.name).exists()  # nothing left behind


def test_guided_alignment_without_what_it_needs_is_refused(corpus, aligned, tmp_path, capsys):
    argv = datagen_argv(corpus, "orphan", f",train2_alignments={corpus}/train.align")
    assert "train2_alignments: no train2 corpus is given" in error_of(
        capsys, t2t_datagen.main, argv)
    plain = str(corpus / "plain")
    assert t2t_datagen.main(datagen_argv(corpus, "plain")) == 0
    base = ["--problem=translate_files", "--train_steps=1", f"--output_dir={tmp_path / 'run'}"]
    for model, data_dir, hparams, message in (
            ("transformer", plain, "guided_alignment_weight=1", "holds no word alignments"),
            ("lstm_seq2seq_attention_bahdanau", aligned, "guided_alignment_weight=1",
             "does not expose"),
            ("transformer", aligned, "guided_alignment_weight=1,sentencepiece_alpha=0.1",
             "set one of them to 0")):
        hparams_set = "lstm_bahdanau" if model.startswith("lstm") else "transformer_tiny"
        error = error_of(capsys, t2t_trainer.main, base + [
            f"--model={model}", f"--hparams_set={hparams_set}", f"--data_dir={data_dir}",
            f"--hparams={hparams}"])
        assert message in error, error
