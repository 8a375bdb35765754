"""Word alignments from cross-attention (t2t_lite/decoding/word_alignment.py): tokens
to words by each encoder's own text, the most-attended source word per target word,
Pharaoh text, and the teacher-forced pass batched as one pair at a time."""
import numpy as np
import pytest
import tensorflow as tf

from cli_helpers import USR_DIR, error_of, train_tiny
from decode_stand_ins import ReversingSearch, decoding
from t2t_lite.bin import t2t_decoder
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder, trim_ids
from t2t_lite.data.subword import SubwordTextEncoder
from t2t_lite.decoding.file_decoding import Shard, decode_file, merge_shards
from t2t_lite.decoding.word_alignment import Aligner, pharaoh, word_indices, word_links
from t2t_lite.experiment import resolve
from t2t_lite.training.checkpoints import restore_model

CORPUS = ["the cat sat on the mat", "die Katze saß auf der Matte",
          "le chat était assis sur le tapis"] * 20


@pytest.fixture(scope="module")
def subwords(tmp_path_factory):
    return SubwordTextEncoder.build(CORPUS, 320, path_prefix=str(
        tmp_path_factory.mktemp("alignment_vocab") / "vocab"))


def test_tokens_belong_to_the_words_their_text_splits_into(subwords):
    text = "die Katzen saßen auf Mattentapis"
    ids = subwords.encode(text)
    indices = word_indices(subwords, ids)
    pieces = subwords.token_strings(ids)
    assert len(ids) > len(text.split())  # some words in several pieces
    # Each word's pieces, joined, spell it (a lone "▁" piece is in no word).
    words = ["".join(p.replace("▁", "") for p, i in zip(pieces, indices) if i == w)
             for w in range(len(text.split()))]
    assert words == text.split() and sorted(set(indices) - {-1}) == list(range(5))
    assert word_indices(ByteTextEncoder(), ByteTextEncoder().encode("ab c")) == [0, 0, -1, 1]
    tokens = TokenTextEncoder(["0", "1"])
    assert word_indices(tokens, tokens.encode("1 0 1")) == [0, 1, 2]


def test_each_target_word_links_to_the_source_word_it_attends_to_most():
    # 4 target tokens (words 0, 0, -1, 1) over 3 source tokens (words 0, -1, 1).
    weights = np.array([[0.1, 0.0, 0.9], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.2, 0.7, 0.1]])
    links = word_links(weights, [0, -1, 1], [0, 0, -1, 1])
    assert links == {(1, 0), (0, 0), (0, 1)}  # the space token (0.7) is no candidate
    assert pharaoh(links) == "0-0 0-1 1-0" and pharaoh(set()) == ""
    assert word_links(weights, [-1, -1, -1], [0, 0, -1, 1]) == set()


class DesignedAttention:
    """attention_weights of a model whose cross-attention is given: layer l, head h
    weighs source token (t + l + h) mod S for target token t."""

    def attention_weights(self, features):
        inputs, targets = features["inputs"], features["targets"]
        source, target = tf.shape(inputs)[1], tf.shape(targets)[1]
        layers, heads = tf.range(3)[:, None, None], tf.range(2)[None, :, None]
        position = (tf.range(target)[None, None, :] + layers + 2 * heads) % source
        weights = tf.one_hot(position, source)  # [layers, heads, T, S]
        return {"encoder_decoder": tf.tile(weights[None], [tf.shape(inputs)[0], 1, 1, 1, 1])}


def test_the_aligner_reads_its_layer_with_the_heads_averaged():
    tokens = TokenTextEncoder(["a", "b", "c", "d"])
    inputs = np.array([tokens.encode("a b c d") + [1]], np.int32)
    outputs = [tokens.encode("a b c") + [1, 0]]
    # Penultimate layer (1): heads weigh t+1 and t+3 equally; the first wins the tie.
    assert Aligner(DesignedAttention(), tokens, tokens)(inputs, outputs) == ["0-2 1-0 2-1"]
    assert Aligner(DesignedAttention(), tokens, tokens, layer=0)(inputs, outputs) == [
        "0-0 1-1 2-2"]
    with pytest.raises(ValueError, match="no attention weights to align"):
        Aligner(object(), tokens, tokens)


def test_a_batch_aligns_as_its_pairs_one_at_a_time(tmp_path):
    _, output_dir = train_tiny(tmp_path)
    experiment = resolve(None, None, None, "", None, output_dir, must_exist=True)
    model = experiment.build_model()
    restore_model(model, output_dir)
    encoders = experiment.problem.feature_encoders(experiment.data_dir)
    aligner = Aligner(model, encoders["inputs"], encoders["targets"])
    sources = [encoders["inputs"].encode(text) + [1] for text in ("0 1 1 0", "1 0", "1 1 1")]
    targets = [encoders["targets"].encode(text) + [1] for text in ("1 1 0", "0 0 1 1 0", "1")]
    batch = np.zeros((3, 5), np.int32)
    for row, ids in enumerate(sources):
        batch[row, :len(ids)] = ids
    together = aligner(batch, [ids + [0] * (6 - len(ids)) for ids in targets])
    alone = [aligner(np.array([s], np.int32), [t])[0] for s, t in zip(sources, targets)]
    assert together == alone
    # Every target word is linked once, to a source word that exists.
    for alignment, source, target in zip(together, sources, targets):
        links = [tuple(map(int, link.split("-"))) for link in alignment.split()]
        assert sorted(j for _, j in links) == list(range(len(target) - 1))
        assert all(0 <= i < len(source) - 1 for i, _ in links)


class LengthAligner:
    """A stand-in Aligner: each hypothesis's "alignment" names its input's length and
    its own (ids before EOS)."""
    layer = -2

    def __call__(self, inputs, outputs):
        return [f"{len(trim_ids(source))}-{len(trim_ids(output))}"
                for source, output in zip(np.asarray(inputs).tolist(), outputs)]


def test_alignments_are_kept_with_their_windows_and_merged_with_their_shards(tmp_path):
    lines = [f"line {'x' * (i % 7)} {i}" if i % 5 else "" for i in range(23)]
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines))
    out, aligned = str(tmp_path / "out.txt"), str(tmp_path / "out.align")
    identity = {"checkpoints": ["abc"]}
    every = decoding(ReversingSearch(), "batch_size=2,read_window_lines=5,return_beams=true")
    decode_file(str(source), out, every, identity, aligner=LengthAligner(),
                alignment_path=aligned)
    expected = [f"{len(line)}-{len(line)}\t{len(line)}-{len(line)}" if line else ""
                for line in lines]  # two beams written (the third slot is empty)
    assert open(aligned).read().splitlines() == expected
    assert len(open(out).read().splitlines()) == len(lines)

    whole = decoding(ReversingSearch(), "batch_size=2,read_window_lines=5")
    with pytest.raises(KeyboardInterrupt):
        decode_file(str(source), out, decoding(Interrupting(3), "batch_size=2,read_window_lines=5"),
                    identity, aligner=LengthAligner(), alignment_path=aligned)
    with pytest.raises(ValueError, match="another alignment_layer"):
        decode_file(str(source), out, whole, identity)  # kept windows of an aligned decode
    decode_file(str(source), out, whole, identity, aligner=LengthAligner(),
                alignment_path=aligned)
    one_process = open(aligned).read()
    assert one_process.splitlines() == [e.split("\t")[0] for e in expected]

    merged, merged_alignments = str(tmp_path / "m.txt"), str(tmp_path / "m.align")
    for index in range(2):
        shard = Shard(index, 2)
        decode_file(str(source), shard.part_path(merged), whole, identity, shard,
                    aligner=LengthAligner(), alignment_path=shard.part_path(merged_alignments))
    with open(Shard(1, 2).part_path(merged_alignments), "a") as f:
        f.write("an edit\n")
    with pytest.raises(ValueError, match=r"m.align.shard-1-of-2 was changed since"):
        merge_shards(str(source), merged, identity, whole.settings, 2,
                     alignment_layer=-2, alignment_path=merged_alignments)
    decode_file(str(source), Shard(1, 2).part_path(merged), whole, identity, Shard(1, 2),
                aligner=LengthAligner(), alignment_path=Shard(1, 2).part_path(merged_alignments))
    merge_shards(str(source), merged, identity, whole.settings, 2, alignment_layer=-2,
                 alignment_path=merged_alignments)
    assert open(merged_alignments).read() == one_process


class Interrupting(ReversingSearch):
    def __init__(self, stop_on_call):
        super().__init__()
        self.stop_on_call = stop_on_call

    def __call__(self, inputs, max_decode_length, line_numbers=None):
        if len(self.calls) == self.stop_on_call:
            raise KeyboardInterrupt
        return super().__call__(inputs, max_decode_length, line_numbers)


def test_the_decoder_writes_an_alignment_a_line(tmp_path, capsys):
    _, output_dir = train_tiny(tmp_path)
    source = tmp_path / "in.txt"
    texts = ["0 1 1 0", "", "1 0 1 1 1 0", "1"]
    source.write_text("".join(text + "\n" for text in texts))
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
           f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out.txt'}",
           "--decode_hparams=beam_size=2,read_window_lines=2"]
    assert t2t_decoder.main(run + [f"--decode_alignments={tmp_path / 'out.align'}"]) == 0
    outputs = (tmp_path / "out.txt").read_text().splitlines()
    alignments = (tmp_path / "out.align").read_text().split("\n")[:-1]
    assert len(alignments) == len(texts) and alignments[1] == ""
    for text, output, alignment in zip(texts, outputs, alignments):
        links = [tuple(map(int, link.split("-"))) for link in alignment.split()]
        assert sorted(j for _, j in links) == list(range(len(output.split())))
        assert all(0 <= i < len(text.split()) for i, _ in links)
    # The given pairs (each input with its output) align as the decode aligned them.
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{t}\t{o}\n" for t, o in zip(texts, outputs) if t))
    assert t2t_decoder.main([*run[:2], f"--score_file={pairs}",
                             f"--decode_alignments={tmp_path / 'pairs.align'}"]) == 0
    assert (tmp_path / "pairs.align").read_text().splitlines() == [
        a for t, a in zip(texts, alignments) if t]
    error = error_of(capsys, t2t_decoder.main, run + [f"--decode_alignments={source}"])
    assert "--decode_alignments" in error and "in.txt" in error
    assert (tmp_path / "in.txt").read_text() == "".join(text + "\n" for text in texts)
