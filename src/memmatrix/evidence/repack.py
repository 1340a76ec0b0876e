"""``memmatrix repack``: store a result's transcripts in the current format (xz), nothing else changed.

The hashes in a result are over the canonical uncompressed lines, so re-compressing a transcript changes
no hash: the file's name and ``encoding`` in the result change, and ``verify`` still binds every cell to the
same bytes. Results written as gzip (a 200-case model transcript of 12 MB) take a thirtieth of the space as xz.
"""

from __future__ import annotations

from pathlib import Path

from ..result.artifacts import check_result, render_result
from ..common.canon import COMPRESSED_SUFFIX, ENCODINGS, compress_bytes
from ..common.config import Config
from ..common.errors import ConfigError
from .stream import Artifact
from .verify import load_result


def repack(path: Path, config: Config) -> str:
    """Re-store one result's transcripts as xz; returns what happened, in a few words."""
    path = Path(path)
    result = load_result(path)
    done = []
    for key in ("transcript", "model_transcript"):
        entry = result.get(key)
        if not entry or entry["file"].endswith(COMPRESSED_SUFFIX):
            continue
        stored = Artifact(path.parent, entry, key.replace("_", " "))
        text = b"".join(stored.lines())  # its canonical bytes, hashed and counted as they are read
        if stored.problems:
            raise ConfigError(f"{path}: {stored.problems[0]}; a transcript that does not match its result is not "
                              "repacked")
        name = entry["file"].split(".jsonl")[0] + ".jsonl" + COMPRESSED_SUFFIX
        data = compress_bytes(text)
        (path.parent / name).write_bytes(data)
        old = path.parent / entry["file"]
        entry.update(file=name, encoding=ENCODINGS[COMPRESSED_SUFFIX])
        done.append((old, name))
    if not done:
        return "already xz"
    check_result(result, config.schemas_dir)
    path.write_text(render_result(result), encoding="utf-8")
    for old, name in done:
        if old.name != name:
            old.unlink()
    return ", ".join(name for _, name in done)
