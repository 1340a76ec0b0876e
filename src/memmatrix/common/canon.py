"""Canonical JSON, hashing and atomic writes: the ground every artifact stands on."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson  # parses a transcript line several times faster than json (verify reads 1.2 million of them)


def canonical(obj: Any) -> str:
    """One canonical JSON text per value: sorted keys, no insignificant whitespace, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


#: orjson reads an integer past 64 bits as a float (json as an int): every such float is at least this large
_PAST_64_BITS = float(2**63)


def _past_64_bits(value: Any) -> bool:
    """Whether a value orjson read holds a float as large as an integer past 64 bits (and so maybe was one)."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        x = pop()
        kind = type(x)
        if kind is dict:
            push(x.values())
        elif kind is list:
            push(x)
        elif kind is float and (x >= _PAST_64_BITS or x <= -_PAST_64_BITS):
            return True
    return False


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is past the largest float")
    return value


#: orjson holds 13 to 23 times a line's size while it parses it (48 MB for a 3.7 MB request), json 2 to 12 times (2
#: for one long string): a longer line is parsed by json, so one long request does not set a result's peak memory
ORJSON_AT_MOST = 1 << 20


def loads_line(line: bytes | str) -> Any:
    """One transcript line's JSON value, the value ``json.loads`` reads, parsed by orjson (several times quicker)
    where orjson reads the same value. Where it may not, json parses the line: orjson refuses it (a lone surrogate
    escape, which json reads) or the value holds a float at least 2**63 in size (orjson reads an integer past 64 bits
    as a float; a float that large is rare). json also parses a line longer than ``ORJSON_AT_MOST``. ``NaN``,
    ``Infinity`` and a number past the largest float, which no canonical line holds (``canonical`` refuses them), are
    a ValueError here, so every value read is one ``canonical`` (and orjson) can write again.
    """
    if len(line) <= ORJSON_AT_MOST:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
        else:
            if not _past_64_bits(value):
                return value
    return json.loads(line, parse_constant=_refuse_constant, parse_float=_finite)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


#: what a system folder holds that is not its code: locks are hashed on their own (lock_sha256), the rest is
#: generated or cached
NOT_CODE = ("locks", "requirements", "__pycache__", ".pytest_cache")


def sha256_tree(folder: str | os.PathLike) -> str:
    """One hash over every file of a folder but ``NOT_CODE``: each file's path relative to the folder (POSIX),
    a NUL, its sha256, a newline, in path order. Sibling modules, the oracle dialects and system.yaml all count."""
    root = Path(folder)
    lines = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not set(rel.parts) & set(NOT_CODE) and path.suffix != ".pyc":
            lines.append(f"{rel.as_posix()}\0{sha256_file(path)}\n")
    return sha256_bytes("".join(lines).encode())


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


#: Transcripts are stored compressed, deterministically, and every hash is taken over the canonical uncompressed
#: bytes, so the storage format never changes what a hash means. New runs write xz (LZMA2, preset 2): its
#: dictionary spans the repeats between records (a system's prompts carry the same memories again and again),
#: so one system's 42 MB model transcript of the 200-case breadth set is 0.4 MB where gzip -9 gave 12 MB, in a fifth
#: of gzip's time; small transcripts take the same few milliseconds. Results written as .gz stay readable.
COMPRESSED_SUFFIX = ".xz"
ENCODINGS = {".xz": "xz", ".gz": "gzip"}


def compress_bytes(data: bytes) -> bytes:
    import lzma
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=2)


def gzip_bytes(data: bytes) -> bytes:
    import gzip
    import io
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def _codec(head: bytes):
    """The module that decompresses a transcript beginning with ``head`` (xz or gzip, told by its magic bytes), or
    None for a plain one."""
    if head[:6] == b"\xfd7zXZ\x00":
        import lzma
        return lzma
    if head[:2] == b"\x1f\x8b":
        import gzip
        return gzip
    return None


def _unreadable(path, exc: Exception) -> ValueError:
    return ValueError(f"{Path(path).name} is not a readable transcript ({type(exc).__name__}: {exc})")


def read_text(path: str | os.PathLike) -> str:
    """A transcript's canonical text, whether stored plain, xz- or gzip-compressed (told by its first bytes)."""
    raw = Path(path).read_bytes()
    codec = _codec(raw)
    try:
        return (codec.decompress(raw) if codec else raw).decode("utf-8")
    except Exception as exc:  # lzma.LZMAError, zlib.error, EOFError, UnicodeDecodeError: one kind of answer
        raise _unreadable(path, exc) from None


def iter_raw_lines(path: str | os.PathLike, block: int = 1 << 20):
    """A transcript's lines as bytes, one at a time, each with its newline (the last one without, when the text does
    not end in one), read from the stream a block at a time, so a long transcript is never held whole: hashing the
    lines as they pass hashes the canonical text."""
    with open(path, "rb") as fh:
        codec = _codec(fh.read(6))
    try:
        with (codec.open(path, "rb") if codec else open(path, "rb")) as fh:
            rest = b""
            while chunk := fh.read(block):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    yield line + b"\n"
            if rest:
                yield rest
    except Exception as exc:  # OSError, EOFError, lzma.LZMAError: one kind of answer
        raise _unreadable(path, exc) from None


def iter_lines(path: str | os.PathLike, block: int = 1 << 20):
    """A transcript's lines one at a time (numbered as in its canonical text, split at each newline only), decoded."""
    for line in iter_raw_lines(path, block):
        try:
            yield line.rstrip(b"\n").decode("utf-8") if line.endswith(b"\n") else line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _unreadable(path, exc) from None


def stored_transcript(folder: Path, name: str) -> Path:
    """The file holding transcript ``name`` (``transcript``, ``model-transcript``) in a result folder: xz, gz or plain."""
    for suffix in (COMPRESSED_SUFFIX, *ENCODINGS, ""):
        path = Path(folder) / f"{name}.jsonl{suffix}"
        if path.is_file():
            return path
    return Path(folder) / f"{name}.jsonl{COMPRESSED_SUFFIX}"
