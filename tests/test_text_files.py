"""Strict reading of a user's text (t2t_lite.data.text_files): what is read, what is
refused, and that each refusal names the file and line."""
import gzip
import io
import re

import pytest

from t2t_lite.data import text_files
from t2t_lite.data.text_files import (check_text, read_utf8_lines, stream_utf8_lines,
                                      write_lines_atomically)


def write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_bom_is_dropped_and_crlf_read_as_lf(tmp_path):
    path = write(tmp_path, "bom.txt", b"\xef\xbb\xbfhello world\r\nsecond\r\n\r\nlast")
    assert read_utf8_lines(path) == ["hello world", "second", "", "last"]


def test_bom_of_a_gz_file_and_of_stdin_is_dropped(tmp_path):
    path = write(tmp_path, "bom.gz", gzip.compress(b"\xef\xbb\xbfa\r\nb\n"))
    assert read_utf8_lines(path) == ["a", "b"]
    assert list(stream_utf8_lines(io.BytesIO(b"\xef\xbb\xbfx\ny\n"), "<stdin>")) == ["x", "y"]


def test_a_bom_inside_the_file_is_text():
    assert list(stream_utf8_lines(io.BytesIO(b"a\n\xef\xbb\xbfb\n"), "s")) == ["a", "\ufeffb"]


@pytest.mark.parametrize("data, message", [
    (b"ok\nab\x00c\n", "in.txt:2: control character U+0000 (NUL) at column 3; is the file UTF-16"),
    (b"a\rb\n", "in.txt:1: control character U+000D (carriage return) at column 2; only CRLF"),
    (b"ok\nx\x1b[31mred\n", "in.txt:2: control character U+001B (ESC) at column 2"),
    (b"form\x0cfeed\n", "in.txt:1: control character U+000C (form feed) at column 5"),
    ("x\u0085y\n".encode(), "in.txt:1: control character U+0085 at column 2"),
    (b"del\x7f\n", "in.txt:1: control character U+007F (DEL) at column 4"),
    (b"source\ttarget\n", "in.txt:1: control character U+0009 (tab) at column 7; this file "
                          "holds one text a line"),
])
def test_control_characters_are_refused_with_file_line_and_code(tmp_path, data, message):
    path = write(tmp_path, "in.txt", data)
    with pytest.raises(ValueError, match=re.escape(message)):
        read_utf8_lines(path)


def test_tabs_pass_where_the_format_uses_them_and_nothing_else_does(tmp_path):
    path = write(tmp_path, "pairs.txt", b"a b\tc d\r\n")
    assert read_utf8_lines(path, allow_tab=True) == ["a b\tc d"]
    with pytest.raises(ValueError, match=r"pairs\.txt:1: control character U\+0000"):
        read_utf8_lines(write(tmp_path, "pairs.txt", b"a\tb\x00\n"), allow_tab=True)


def test_flag_values_are_checked_alike():
    check_text("a plain sentence", "--input")
    with pytest.raises(ValueError, match=r"--input: control character U\+0007 at column 2"):
        check_text("a\x07", "--input")


def test_non_utf8_line_names_the_line(tmp_path):
    path = write(tmp_path, "latin1.txt", b"ok\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin1\.txt: line 2 is not valid UTF-8"):
        read_utf8_lines(path)


def test_gz_is_decompressed_and_must_be_gzip(tmp_path):
    assert read_utf8_lines(write(tmp_path, "ok.gz", gzip.compress(b"a\nb\n"))) == ["a", "b"]
    assert read_utf8_lines(write(tmp_path, "empty.gz", b"")) == []
    with pytest.raises(ValueError, match=r"plain\.gz is named \.gz but is not gzip data"):
        read_utf8_lines(write(tmp_path, "plain.gz", b"plain text\n"))
    with pytest.raises(ValueError, match=r"packed\.txt holds gzip data but is not named \.gz"):
        read_utf8_lines(write(tmp_path, "packed.txt", gzip.compress(b"a\n")))


@pytest.mark.parametrize("cut", [-6, 12])
def test_damaged_gzip_is_one_error(tmp_path, cut):
    data = gzip.compress(b"some text\n" * 100)
    damaged = data[:cut] if cut < 0 else data[:cut] + b"\x00" * 30 + data[cut:]
    with pytest.raises(ValueError, match=r"damaged\.gz is damaged gzip data"):
        read_utf8_lines(write(tmp_path, "damaged.gz", damaged))


def test_folders_missing_and_unreadable_files_are_one_error(tmp_path, monkeypatch):
    with pytest.raises(IsADirectoryError, match="is a folder; expected a text file"):
        read_utf8_lines(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_utf8_lines(str(tmp_path / "absent.txt"))
    path = write(tmp_path, "secret.txt", b"x\n")

    def refuse(*args, **kwargs):  # root ignores file permissions: refuse as the OS would
        raise PermissionError(13, "Permission denied", path)
    monkeypatch.setattr(text_files, "open", refuse, raising=False)
    with pytest.raises(PermissionError, match=r"cannot read .*secret\.txt: permission denied"):
        read_utf8_lines(path)


def test_a_line_over_the_byte_cap_is_refused_as_it_is_read():
    stream = io.BytesIO(b"short\n" + b"x" * 100 + b"\n")
    lines = stream_utf8_lines(stream, "big.txt", max_line_bytes=100)
    assert next(lines) == "short" and next(lines) == "x" * 100
    stream = io.BytesIO(b"short\n" + b"x" * 101 + b"\nnever read\n")
    lines = stream_utf8_lines(stream, "big.txt", max_line_bytes=100)
    assert next(lines) == "short"
    with pytest.raises(ValueError, match=r"big\.txt:2: line is longer than 100 bytes"):
        next(lines)
    assert stream.tell() == 6 + 101  # no further than the cap: the line is never held whole


def test_write_lines_atomically_round_trips(tmp_path):
    path = str(tmp_path / "sub" / "out.txt")
    write_lines_atomically(path, ["a", "", "b\tc"])
    assert read_utf8_lines(path, allow_tab=True) == ["a", "", "b\tc"]


def test_a_gz_name_is_written_as_gzip(tmp_path):
    """``--decode_to_file=out.gz`` wrote plain text under a .gz name, which every
    reader here then refused (and zcat too); equal lines give equal bytes."""
    first, second = str(tmp_path / "out.gz"), str(tmp_path / "again.gz")
    write_lines_atomically(first, ["ein Hund", "", "zwei Katzen"])
    write_lines_atomically(second, ["ein Hund", "", "zwei Katzen"])
    with gzip.open(first, "rt", encoding="utf-8") as f:
        assert f.read() == "ein Hund\n\nzwei Katzen\n"
    assert read_utf8_lines(first) == ["ein Hund", "", "zwei Katzen"]
    assert open(first, "rb").read() == open(second, "rb").read()
