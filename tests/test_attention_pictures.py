"""t2t-attention's pieces: token labels, attention maps, PNG heatmaps, the HTML page
(rendered by headless Chromium where one is installed)."""
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.contracts.reserved_ids import EOS_ID
from t2t_lite.data.encoders import ByteTextEncoder, TokenTextEncoder
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.hparams.lstm import lstm_attention_base
from t2t_lite.models.luong import LSTMSeq2seqAttentionLuong
from t2t_lite.visualization.attention_maps import attention_maps, best_decode
from t2t_lite.visualization.attention_page import write_page
from t2t_lite.visualization.heatmaps import write_heatmaps
from toys import tiny_transformer

ENCODER = TokenTextEncoder(["a", "man", "rides", "</script>", "ein", "Mann", "fährt"])
SOURCE = ENCODER.encode("a man rides </script>") + [EOS_ID]
TARGET = ENCODER.encode("ein Mann fährt") + [EOS_ID]


def test_token_strings_name_every_id():
    assert ENCODER.token_strings([0, 1] + SOURCE[:2]) == ["<pad>", "<EOS>", "a", "man"]
    assert ByteTextEncoder().token_strings(ByteTextEncoder().encode("a é") + [1]) == [
        "a", "\\x20", "\\xc3", "\\xa9", "<EOS>"]


def transformer():
    return tiny_transformer(ENCODER.vocab_size, seed=1, num_encoder_layers=2,
                            num_decoder_layers=1)


def luong():
    tf.keras.utils.set_random_seed(1)
    hparams = lstm_attention_base().parse("hidden_size=8,embedding_size=8,num_encoder_layers=1,"
                                          "num_decoder_layers=1")
    return LSTMSeq2seqAttentionLuong(hparams, ENCODER.vocab_size)


@pytest.mark.parametrize("make_model, shapes", [
    (transformer, {"encoder_self": (2, 2, 5, 5), "decoder_self": (1, 2, 4, 4),
                   "encoder_decoder": (1, 2, 4, 5)}),
    (luong, {"encoder_decoder": (1, 1, 4, 5)}),
], ids=["transformer", "lstm_luong"])
def test_maps_label_queries_and_keys_of_every_kind(make_model, shapes):
    maps = attention_maps(make_model(), SOURCE, TARGET, ENCODER, ENCODER)
    assert {kind: w.shape for kind, w in maps.weights.items()} == shapes
    for kind, weights in maps.weights.items():
        queries, keys = maps.axes(kind)
        assert weights.shape[2:] == (len(queries), len(keys))
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert maps.axes("encoder_decoder") == (["ein", "Mann", "fährt", "<EOS>"],
                                            ["a", "man", "rides", "</script>", "<EOS>"])
    assert maps.decoder_input_tokens == ["<s>", "ein", "Mann", "fährt"]


def test_best_decode_ends_in_eos():
    ids = best_decode(BeamSearchDecoder(transformer(), SearchOptions(beam_size=2, alpha=0.6)),
                      SOURCE, extra_length=3)
    assert ids[-1] == EOS_ID and EOS_ID not in ids[:-1] and len(ids) <= len(SOURCE) + 3


@pytest.fixture(scope="session")
def pictures(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("attention"))
    maps = attention_maps(transformer(), SOURCE, TARGET, ENCODER, ENCODER)
    return maps, write_heatmaps(maps, out), write_page(maps, os.path.join(out, "index.html"),
                                                       "a man rides -> ein Mann fährt")


def test_one_png_per_kind_and_layer(pictures):
    _, paths, _ = pictures
    assert sorted(os.path.basename(p) for p in paths) == [
        "decoder_self_layer0.png", "encoder_decoder_layer0.png", "encoder_self_layer0.png",
        "encoder_self_layer1.png"]
    for path in paths:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_page_carries_the_weights_and_tokens_as_data(pictures):
    maps, _, page = pictures
    text = open(page, encoding="utf-8").read()
    assert text.count("</script>") == 2  # the token "</script>" is escaped inside the JSON
    data = json.loads(re.search(r'id="attention-data">(.*?)</script>', text, re.S).group(1))
    assert data["kinds"]["encoder_decoder"]["keys"][3] == "</script>"
    np.testing.assert_allclose(data["kinds"]["encoder_self"]["weights"],
                               maps.weights["encoder_self"], atol=1e-4)
    assert "https://" not in text and "src=" not in text  # self-contained


def chromium():
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                "google-chrome"))), None)


@pytest.mark.skipif(chromium() is None, reason="no Chromium installed (Debian: apt-get install "
                                               "chromium) to render the page")
def test_page_renders_in_a_headless_browser(pictures, tmp_path):
    _, _, page = pictures
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--window-size=1000,800", f"--user-data-dir={tmp_path / 'profile'}"]
    def dom(view=""):
        return subprocess.run(flags + ["--dump-dom", f"file://{page}{view}"],
                              capture_output=True, text=True, timeout=120).stdout
    # The script built the token spans and the heatmap from the JSON: encoder
    # self-attention first (5 source queries), the view named in the address next.
    first = dom()
    for token in ("a", "man", "rides", "&lt;/script&gt;", "&lt;EOS&gt;"):
        assert f">{token}</span>" in first, token
    assert first.count('<tr class="row') == 5
    chosen = dom("#kind=encoder_decoder&layer=0&head=1")
    for token in ("ein", "Mann", "fährt", "rides"):
        assert f">{token}</span>" in chosen, token
    assert chosen.count('<tr class="row') == 4  # 4 target queries
    shot = tmp_path / "page.png"
    subprocess.run(flags + [f"--screenshot={shot}", f"file://{page}"], capture_output=True,
                   timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
