"""t2t_lite.data.download (offline: local file:// URLs, a closed port, a killed process)."""
import hashlib
import os
import signal
import subprocess
import sys

import pytest

from t2t_lite.data.download import DownloadError, maybe_download, sha256_of


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


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_verified_download_has_the_expected_hash(tmp_path):
    source = tmp_path / "remote.gz"
    source.write_bytes(b"corpus" * 1000)
    path = maybe_download(str(tmp_path / "tmp"), "corpus.gz", source.as_uri(),
                          sha(b"corpus" * 1000))
    assert sha256_of(path) == sha(b"corpus" * 1000)
    assert os.listdir(tmp_path / "tmp") == ["corpus.gz"]


def test_a_truncated_download_is_removed_and_reported_in_one_line(tmp_path):
    source = tmp_path / "remote.gz"
    source.write_bytes(b"corpus" * 10)  # what arrived: less than the real file
    with pytest.raises(DownloadError) as info:
        maybe_download(str(tmp_path / "tmp"), "corpus.gz", source.as_uri(),
                       sha(b"corpus" * 1000))
    message = str(info.value)
    assert "\n" not in message and "corpus.gz" in message and "sha256" in message
    assert "removed it" in message
    assert os.listdir(tmp_path / "tmp") == []  # no file that looks complete


def test_a_wrong_file_in_tmp_dir_is_refused_and_kept(tmp_path):
    """Not ours (ours are checked before they take their name): a user's other version."""
    source = tmp_path / "remote.gz"
    source.write_bytes(b"good")
    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    (tmp_dir / "corpus.gz").write_bytes(b"goo")  # cut short by another tool, or edited
    with pytest.raises(DownloadError) as info:
        maybe_download(str(tmp_dir), "corpus.gz", source.as_uri(), sha(b"good"))
    message = str(info.value)
    assert "\n" not in message and str(tmp_dir / "corpus.gz") in message
    assert sha(b"goo")[:12] in message and "nothing was changed" in message
    assert os.listdir(tmp_dir) == ["corpus.gz"]
    assert (tmp_dir / "corpus.gz").read_bytes() == b"goo"


def test_what_a_killed_download_left_is_cleared_before_downloading(tmp_path):
    source = tmp_path / "remote.gz"
    source.write_bytes(b"good")
    tmp_dir = tmp_path / "tmp"
    (tmp_dir / "corpus.gz.incomplete").mkdir(parents=True)
    (tmp_dir / "corpus.gz.incomplete" / "corpus.gz").write_bytes(b"go")
    path = maybe_download(str(tmp_dir), "corpus.gz", source.as_uri(), sha(b"good"))
    assert open(path, "rb").read() == b"good" and os.listdir(tmp_dir) == ["corpus.gz"]


def test_a_good_file_in_tmp_dir_is_used_without_network(tmp_path):
    (tmp_path / "corpus.gz").write_bytes(b"good")
    assert maybe_download(str(tmp_path), "corpus.gz", "http://127.0.0.1:9/corpus.gz",
                          sha(b"good")) == str(tmp_path / "corpus.gz")


def test_a_killed_download_leaves_no_complete_looking_file(tmp_path):
    """Killed while keras writes: only the NAME.incomplete folder can be left."""
    script = (
        "import sys, time\n"
        "from t2t_lite.data import download\n"
        "def slow(url, filename, folder):\n"
        "    open(f'{folder}/{filename}', 'wb').write(b'half')\n"
        "    print('writing', flush=True); time.sleep(60)\n"
        "download._fetch = slow\n"
        f"download.maybe_download({str(tmp_path)!r}, 'corpus.gz', 'http://x/corpus.gz', 'ab')\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout.readline().strip() == "writing"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert os.listdir(tmp_path) == ["corpus.gz.incomplete"]
