"""Tests for t2t_lite.data.download (offline: a local file:// URL and a closed port)."""
import os

import pytest

from t2t_lite.data.download import DownloadError, maybe_download


def test_existing_file_is_used_without_downloading(tmp_path):
    (tmp_path / "corpus.gz").write_bytes(b"already here")
    path = maybe_download(str(tmp_path), "corpus.gz", "http://127.0.0.1:9/corpus.gz")
    assert path == str(tmp_path / "corpus.gz")
    assert (tmp_path / "corpus.gz").read_bytes() == b"already here"


def test_download_copies_the_file(tmp_path):
    source = tmp_path / "remote.txt"
    source.write_bytes(b"x" * 5000)
    tmp_dir = tmp_path / "tmp"
    path = maybe_download(str(tmp_dir), "local.txt", source.as_uri())
    assert open(path, "rb").read() == b"x" * 5000
    assert os.listdir(tmp_dir) == ["local.txt"]


def test_failed_download_names_file_url_and_where_to_put_it(tmp_path):
    url = "http://127.0.0.1:9/data.tgz"
    with pytest.raises(DownloadError) as info:
        maybe_download(str(tmp_path), "data.tgz", url)
    message = str(info.value)
    assert "data.tgz" in message and url in message
    assert str(tmp_path / "data.tgz") in message and "by hand" in message
    assert os.listdir(tmp_path) == []
