"""Tests for t2t_lite.data.encoders: reserved ids, round trips, vocabulary files."""
import pytest

from t2t_lite.contracts.reserved_ids import EOS_ID, NUM_RESERVED_IDS, PAD_ID
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder, trim_ids


def test_reserved_ids():
    assert (PAD_ID, EOS_ID, NUM_RESERVED_IDS) == (0, 1, 2)


def test_trim_ids_stops_at_eos_and_drops_pad():
    assert trim_ids([5, PAD_ID, 6, EOS_ID, 7, EOS_ID]) == [5, 6]


def test_byte_round_trip_of_unicode():
    encoder = ByteTextEncoder()
    text = "héllo wörld ✓"
    ids = encoder.encode(text)
    assert len(ids) == len(text.encode("utf-8"))
    assert min(ids) >= NUM_RESERVED_IDS and max(ids) < encoder.vocab_size == 258
    assert encoder.decode(ids) == text


def test_byte_decode_stops_at_eos_and_drops_pad():
    encoder = ByteTextEncoder()
    ids = encoder.encode("ab") + [PAD_ID] + encoder.encode("c") + [EOS_ID] + encoder.encode("zz")
    assert encoder.decode(ids) == "abc"


def test_byte_decode_rejects_out_of_range_ids():
    with pytest.raises(ValueError, match="outside the byte vocabulary"):
        ByteTextEncoder().decode([300])


def test_byte_store_and_load(tmp_path):
    path = str(tmp_path / "vocab.txt")
    ByteTextEncoder().store_to_file(path)
    assert ByteTextEncoder.load_from_file(path).encode("a") == [ord("a") + 2]


def test_byte_load_rejects_a_token_vocabulary(tmp_path):
    path = str(tmp_path / "vocab.txt")
    TokenTextEncoder(["a"]).store_to_file(path)
    with pytest.raises(ValueError, match="not a byte vocabulary"):
        ByteTextEncoder.load_from_file(path)


def test_token_ids_follow_reserved_ids_and_oov_is_last():
    encoder = TokenTextEncoder(["a", "b", "c"])
    assert encoder.tokens == ["<pad>", "<EOS>", "a", "b", "c", "<UNK>"]
    assert encoder.vocab_size == 6
    assert encoder.encode("a  c\tzz b") == [2, 4, 5, 3]
    assert encoder.decode([2, 4, 3, EOS_ID, 2]) == "a c b"


def test_token_reserved_names_in_text_are_unknown():
    encoder = TokenTextEncoder(["a"])
    assert encoder.encode("<EOS> <pad> a") == [encoder.oov_id, encoder.oov_id, 2]


def test_token_store_writes_one_token_a_line_and_loads_back(tmp_path):
    path = tmp_path / "vocab.txt"
    encoder = TokenTextEncoder(["x", "y", "<UNK>"])
    encoder.store_to_file(str(path))
    assert path.read_text(encoding="utf-8").splitlines() == ["<pad>", "<EOS>", "x", "y", "<UNK>"]
    loaded = TokenTextEncoder.load_from_file(str(path))
    assert loaded.tokens == encoder.tokens
    assert loaded.encode("y x q") == [3, 2, 4]


def test_token_custom_oov(tmp_path):
    encoder = TokenTextEncoder(["a"], oov_token="<unk>")
    assert encoder.decode(encoder.encode("b a")) == "<unk> a"


@pytest.mark.parametrize("tokens", [["a", "a"], ["a b"], [""]])
def test_token_rejects_bad_vocabularies(tokens):
    with pytest.raises(ValueError, match="duplicate|whitespace"):
        TokenTextEncoder(tokens)


def test_token_decode_rejects_out_of_range_ids():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        TokenTextEncoder(["a"]).decode([2, 99])


def test_missing_vocabulary_file_names_it(tmp_path):
    path = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        TokenTextEncoder.load_from_file(path)
