"""Canonical JSON, hashing and atomic writes: the ground every artifact stands on."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def canonical(obj: Any) -> str:
    """One canonical JSON text per value: sorted keys, no insignificant whitespace, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_json(obj: Any) -> str:
    return sha256_bytes(canonical(obj).encode())


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` so that ``path`` holds either the old content or the new, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: Transcripts are stored gzip-compressed, deterministically (no name, mtime 0); every hash is taken
#: over the canonical uncompressed bytes, so the storage format never changes what a hash means.
COMPRESSED_SUFFIX = ".gz"


def gzip_bytes(data: bytes) -> bytes:
    import gzip
    import io
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def read_text(path: str | os.PathLike) -> str:
    """A transcript's canonical text, whether stored plain or gzip-compressed."""
    import gzip
    raw = Path(path).read_bytes()
    if str(path).endswith(COMPRESSED_SUFFIX) or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")
