"""Fetch-if-absent downloads into ``tmp_dir``.

A file already in ``tmp_dir`` is used as is, so a user without network access
can place the file there by hand. Downloads go to a temporary name and are
renamed when complete, so an interrupted download is never mistaken for a file.
"""
from __future__ import annotations

import http.client
import logging
import os
import urllib.error
import urllib.request

logger = logging.getLogger(__name__)

_CHUNK_BYTES = 1 << 20
_LOG_EVERY_BYTES = 50 << 20
_TIMEOUT_S = 60


class DownloadError(OSError):
    """A file that could not be downloaded."""


def _copy_with_progress(response, out, url: str) -> None:
    total = int(response.headers.get("Content-Length") or 0)
    done = next_log = 0
    while chunk := response.read(_CHUNK_BYTES):
        out.write(chunk)
        done += len(chunk)
        if done >= next_log:
            of_total = f" of {total / 1e6:.1f}" if total else ""
            logger.info("downloading %s: %.1f%s MB", url, done / 1e6, of_total)
            next_log += _LOG_EVERY_BYTES
    if total and done != total:
        raise DownloadError(f"connection closed after {done} of {total} bytes")


def maybe_download(tmp_dir: str, filename: str, url: str) -> str:
    """Returns the path of ``filename`` in ``tmp_dir``, downloading it from ``url`` if absent."""
    path = os.path.join(tmp_dir, filename)
    if os.path.exists(path):
        logger.info("using existing %s", path)
        return path
    os.makedirs(tmp_dir, exist_ok=True)
    partial = path + ".incomplete"
    logger.info("downloading %s to %s", url, path)
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response, \
                open(partial, "wb") as out:
            _copy_with_progress(response, out, url)
    except (OSError, http.client.HTTPException) as error:  # URLError is an OSError
        if os.path.exists(partial):
            os.remove(partial)
        reason = getattr(error, "reason", None) or error
        raise DownloadError(f"could not download {filename} from {url} ({reason}); "
                            f"download it by hand and place it at {path}") from error
    os.replace(partial, path)
    return path
