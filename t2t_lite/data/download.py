"""Verified fetch-if-absent downloads into ``tmp_dir``.

A file already in ``tmp_dir`` is used as is when it has the expected sha256, so
a user without network access can place the file there by hand; one with
another hash is refused and left as it is (it is not ours: what we download is
checked before it takes its name, so it may be a user's other version of the
corpus). An absent file is fetched with ``keras.utils.get_file`` (a progress bar
on a terminal) into a ``NAME.incomplete`` folder, checked against its sha256,
and only then moved to its name: an interrupted or killed download never leaves
a file that looks complete, and a truncated or wrong one is removed and reported
in one line.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil

logger = logging.getLogger(__name__)

_CHUNK_BYTES = 1 << 20


class DownloadError(OSError):
    """A file that could not be downloaded, or not with the content it should have."""


def sha256_of(path: str) -> str:
    """The hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch(url: str, filename: str, folder: str) -> str:
    """``url`` downloaded to ``folder/filename`` by keras; its path."""
    import keras  # the download is the only thing here that needs it

    return keras.utils.get_file(fname=filename, origin=url, cache_dir=folder,
                                cache_subdir=".")


def maybe_download(tmp_dir: str, filename: str, url: str, sha256: str | None = None) -> str:
    """The path of ``filename`` in ``tmp_dir``, downloaded from ``url`` if absent.

    With ``sha256`` (every file the library fetches has one) the file, whether
    found or downloaded, must have that hash: a found file that does not raises
    ``DownloadError`` and is kept; a downloaded one that does not is removed
    and raises ``DownloadError``. Without it (a user's own URL) nothing is checked.
    """
    path = os.path.join(tmp_dir, filename)
    if os.path.exists(path):
        if sha256 is None or (got := sha256_of(path)) == sha256:
            logger.info("using existing %s", path)
            return path
        raise DownloadError(f"{path} is not the expected file: sha256 {got[:12]}..., not "
                            f"{sha256[:12]}... (cut short, or another version); nothing was "
                            f"changed. Move it away to download {url} again, or give "
                            f"another --tmp_dir")
    partial = path + ".incomplete"
    shutil.rmtree(partial, ignore_errors=True)  # what a killed download left
    os.makedirs(partial)
    logger.info("downloading %s to %s", url, path)
    try:
        try:
            fetched = _fetch(url, filename, partial)
        except Exception as error:  # keras wraps URL errors in a bare Exception
            raise DownloadError(f"could not download {filename} from {url} ({error}); "
                                f"download it by hand and place it at {path}") from None
        if sha256 is not None and (got := sha256_of(fetched)) != sha256:
            raise DownloadError(f"{filename} from {url} has sha256 {got[:12]}..., not the "
                                f"expected {sha256[:12]}... (truncated, or changed upstream); "
                                f"removed it. Download it again, or place a good copy at "
                                f"{path}")
        os.replace(fetched, path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return path
