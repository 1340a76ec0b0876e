"""The transcript: every harness<->adapter exchange in order, one canonical JSON line each.

Two runs of a deterministic system must give the same transcript hash, so the
transcript holds no wall-clock time, no latency and no machine path, and ids a
system randomises are renumbered (see ``Normalizer``). Secrets are redacted.
Latencies are kept beside it, in the result, outside the hashed content.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from .canon import canonical, sha256_bytes

ID_KEYS = frozenset({"id", "ids", "memory_id", "memory_ids", "source_ids", "superseded_by", "copy_of"})
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_SECRET_KEY = re.compile(r"(api[_-]?key|secret|password|token_value|authorization)", re.I)

NORMALIZATION = {
    "ids": "values under the keys " + ", ".join(sorted(ID_KEYS))
           + " and UUID-shaped strings anywhere are renumbered ~1, ~2 ... in order of first appearance",
    "volatile_fields": "values of the fields the adapter declares volatile are replaced by ~volatile",
    "secrets": "values under keys that name a key, secret, password or authorization are replaced by ~redacted",
    "scope": "answers are normalised; the harness's own arguments are recorded as sent, secrets redacted",
}


@dataclass
class Normalizer:
    volatile_fields: frozenset[str] = frozenset()
    _ids: dict[str, str] = field(default_factory=dict)

    def _id(self, raw: str) -> str:
        if raw not in self._ids:
            self._ids[raw] = f"~{len(self._ids) + 1}"
        return self._ids[raw]

    def _text(self, text: str) -> str:
        return _UUID.sub(lambda m: self._id(m.group(0).lower()), text)

    def redact(self, value: Any, key: str | None = None) -> Any:
        """Secrets only: what the harness sends is its own deterministic data and stays as sent."""
        if key is not None and _SECRET_KEY.search(key) and isinstance(value, str):
            return "~redacted"
        if isinstance(value, dict):
            return {k: self.redact(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v, key) for v in value]
        return value

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key is not None and key in self.volatile_fields and value is not None:
            return "~volatile"
        if key is not None and _SECRET_KEY.search(key) and isinstance(value, str):
            return "~redacted"
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if isinstance(value, str):
            if key in ID_KEYS:
                return self._id(value.lower() if _UUID.fullmatch(value) else value)
            return self._text(value)
        return value


class Transcript:
    """An in-memory transcript that renders to canonical JSON lines."""

    def __init__(self) -> None:
        self.records: list[dict] = []
        self.normalize = Normalizer()

    def add(self, record: dict) -> dict:
        record = json.loads(canonical(record))  # a plain-JSON copy, exactly as it will be read back
        self.records.append(record)
        return record

    def add_exchange(self, context: dict, call: str, args: dict, result: Any = None,
                     error: dict | None = None) -> dict:
        rec = {**context, "kind": "call", "call": call, "args": self.normalize.redact(args)}
        if error is not None:
            rec["error"] = error
        else:
            rec["result"] = self.normalize(result)
        return self.add(rec)

    def text(self) -> str:
        return "".join(canonical(r) + "\n" for r in self.records)

    def sha256(self) -> str:
        return sha256_bytes(self.text().encode())


def read_lines(path: Path) -> list[dict]:
    """Read a transcript back, refusing anything that is not one JSON object per line."""
    records = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{path}:{n}: not a JSON object")
            records.append(rec)
    return records


def by_case(records: Iterable[dict]) -> Iterator[tuple[dict, list[dict]]]:
    """Yield (case header, the records of that case) in transcript order."""
    header: dict | None = None
    body: list[dict] = []
    for rec in records:
        if rec.get("kind") == "case":
            if header is not None:
                yield header, body
            header, body = rec, []
        elif header is not None:
            body.append(rec)
    if header is not None:
        yield header, body
