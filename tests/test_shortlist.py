"""Vocabulary shortlists (t2t_lite/decoding/shortlist.py, vocabulary_map.py): the map
file, its making, each batch's shortlist, and searches that rank only its ids."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.bin import t2t_decoder
from t2t_lite.contracts.reserved_ids import EOS_ID, NUM_RESERVED_IDS
from t2t_lite.data.encoders import TokenTextEncoder
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.ensemble import Ensemble
from t2t_lite.decoding.sampling import SamplingOptions
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.shortlist import Shortlist
from t2t_lite.decoding.vocabulary_map import (VocabularyMap, VocabularyMapError,
                                              build_vocabulary_map)

from cli_helpers import USR_DIR, error_of, train_tiny
from toys import tiny_transformer
from transformer_cases import INPUTS, VOCAB, tiny_model

ENCODER = TokenTextEncoder([f"w{i}" for i in range(VOCAB - NUM_RESERVED_IDS - 1)])
# The searches' models: one layer a side, as what a shortlist changes does not depend on
# depth, and each search traces every layer (the ensemble's searches: 2.6-3.7 s CPU with two a
# side, 1.8-1.9 s with one).
ONE_LAYER = {"num_encoder_layers": 1, "num_decoder_layers": 1}


def test_each_source_maps_to_its_most_associated_targets_and_frequent_ones_to_all():
    # 5 always translates as 7, 6 as 8; 9 occurs with 7 once and with 10 once.
    pairs = [([5, 6, 1], [7, 8, 1]), ([5, 9, 1], [7, 10, 1]), ([6, 1], [8, 1]),
             ([9, 1], [10, 1])]
    vocabulary_map = build_vocabulary_map(pairs, 12, 12, per_source=1, frequent=1)
    assert {source: ids.tolist() for source, ids in vocabulary_map.candidates.items()} == {
        5: [7], 6: [8], 9: [10]}
    assert vocabulary_map.always.tolist() == [7]  # in 2 target sentences, as 8 and 10; lowest id
    wider = build_vocabulary_map(pairs, 12, 12, per_source=2, frequent=0)
    assert wider.candidates[9].tolist() == [7, 10] and wider.always.tolist() == []


def test_a_map_file_round_trips_in_the_vocabularys_tokens(tmp_path):
    vocabulary_map = VocabularyMap({3: np.array([4, 6], np.int32), 5: np.array([3], np.int32)},
                                   np.array([2, 7], np.int32))
    path = str(tmp_path / "vmap.txt")
    vocabulary_map.write(path, ENCODER, ENCODER)
    assert open(path).read() == "\tw0 w5\nw1\tw2 w4\nw3\tw1\n"  # CTranslate2's format
    read = VocabularyMap.read(path, ENCODER, ENCODER)
    assert {k: v.tolist() for k, v in read.candidates.items()} == {3: [4, 6], 5: [3]}
    assert read.always.tolist() == [2, 7]


@pytest.mark.parametrize("line, says", [
    ("w1 w2\n", "line 2: no tab"),
    ("w1 w2\tw3\n", "line 2: the source 'w1 w2' is several tokens"),
    ("w1\tw3 nope\n", "line 2: the target token 'nope' is not in the model's vocabulary"),
    ("nope\tw3\n", "line 2: the source token 'nope' is not in the model's vocabulary"),
])
def test_a_map_this_vocabulary_cannot_read_is_refused_naming_the_line(tmp_path, line, says):
    path = tmp_path / "vmap.txt"
    path.write_text("\tw0\n" + line)
    with pytest.raises(VocabularyMapError, match=f"--vocabulary_map={path} {says}"):
        VocabularyMap.read(str(path), ENCODER, ENCODER)


def _shortlist(candidates, always=(), bucket=4):
    vocabulary_map = VocabularyMap({k: np.array(v, np.int32) for k, v in candidates.items()},
                                   np.array(always, np.int32))
    return Shortlist(vocabulary_map, VOCAB, VOCAB, bucket=bucket)


def test_a_batchs_shortlist_is_its_sources_targets_filled_up_in_ascending_order():
    shortlist = _shortlist({3: [12], 4: [15, 9], 6: [17]}, always=[10])
    # Reserved 0, 1; 12, 9, 15 of sources 3 and 4 (6 is not in the batch); 10 for all:
    # 6 ids, filled up to 8 with the lowest others (2, 3).
    ids = shortlist.batch_ids(tf.constant([[3, 4, 1, 0]])).numpy()
    assert ids.tolist() == [0, 1, 2, 3, 9, 10, 12, 15]
    assert len(_shortlist({}, bucket=256).batch_ids(INPUTS)) == VOCAB  # never beyond it


def test_a_shortlist_of_every_id_searches_as_no_shortlist():
    model = tiny_model(**ONE_LAYER)
    everything = _shortlist({token: list(range(VOCAB)) for token in range(VOCAB)})
    for beam_size in (1, 3):
        plain = beam_search(model, INPUTS, tf.constant(6), SearchOptions(beam_size=beam_size))
        listed = beam_search(model, INPUTS, tf.constant(6),
                             SearchOptions(beam_size=beam_size, shortlist=everything))
        np.testing.assert_array_equal(plain[0], listed[0])
        np.testing.assert_allclose(plain[1], listed[1], rtol=1e-5)


@pytest.mark.parametrize("ensemble", [False, True])
def test_a_search_writes_only_shortlisted_ids(ensemble):
    model = tiny_transformer(VOCAB, seed=3, max_length=16, **ONE_LAYER)
    decoder = (Ensemble([model, tiny_transformer(VOCAB, seed=7, max_length=16, **ONE_LAYER)])
               if ensemble else model)
    shortlist = _shortlist({3: [5, 9], 6: [11]}, always=[14])
    allowed = set(shortlist.batch_ids(INPUTS).numpy().tolist())
    assert len(allowed) == 8  # 0, 1, 5, 9, 11, 14 and 2, 3
    for beam_size in (1, 3):
        ids, scores = beam_search(decoder, INPUTS, tf.constant(6),
                                  SearchOptions(beam_size=beam_size, alpha=0.0,
                                                shortlist=shortlist))
        assert set(ids.numpy().ravel().tolist()) <= allowed
        assert np.all(np.isfinite(scores.numpy()[:, 0])) and np.all(scores.numpy() <= 0)


def test_a_shortlist_with_sampling_or_a_constraint_is_refused_in_one_line():
    shortlist = _shortlist({})
    with pytest.raises(ValueError, match="cannot be combined with sampling"):
        SearchOptions(beam_size=1, sampling=SamplingOptions(), shortlist=shortlist)
    with pytest.raises(ValueError, match="cannot be combined with a decoding constraint"):
        SearchOptions(constraint=object(), shortlist=shortlist)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("shortlist"))


def test_the_decoder_reads_a_map_and_keeps_it_in_its_windows_identity(trained, tmp_path,
                                                                      capsys):
    _, output_dir = trained
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{'0 1 ' * (i % 4)}1\n" for i in range(6)))
    vmap = tmp_path / "vmap.txt"
    vmap.write_text("\t1\n0\t0 1\n")
    run = [f"--output_dir={output_dir}", f"--t2t_usr_dir={USR_DIR}",
           f"--decode_from_file={source}", "--decode_hparams=beam_size=2"]
    assert t2t_decoder.main(run + [f"--decode_to_file={tmp_path}/plain.txt"]) == 0
    assert t2t_decoder.main(run + [f"--decode_to_file={tmp_path}/listed.txt",
                                   f"--vocabulary_map={vmap}"]) == 0
    # Its vocabulary is smaller than a shortlist's bucket: the same outputs.
    assert (tmp_path / "listed.txt").read_text() == (tmp_path / "plain.txt").read_text()
    vmap.write_text("\t1\n0\tnope\n")
    error = error_of(capsys, t2t_decoder.main, run + [
        f"--decode_to_file={tmp_path}/bad.txt", f"--vocabulary_map={vmap}"])
    assert f"--vocabulary_map={vmap} line 2: the target token 'nope'" in error
    prefixes = tmp_path / "prefixes.txt"
    prefixes.write_text("1\n" * 6)
    error = error_of(capsys, t2t_decoder.main, run + [
        f"--decode_to_file={tmp_path}/p.txt", f"--vocabulary_map={vmap}",
        f"--decode_prefixes={prefixes}"])
    assert "--vocabulary_map shortlists the target ids, and --decode_prefixes" in error
    assert not (tmp_path / "bad.txt").exists() and not (tmp_path / "p.txt").exists()
