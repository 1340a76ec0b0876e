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
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..common.canon import canonical, read_text, sha256_bytes
from ..adapterkit import holds_run, plain, token_tuple
from ..common.patterns import _DATETIME, _UUID, wall_dates  # noqa: F401  (re-exported: the recorder's)
from ..common.tokens import tokens

ID_KEYS = frozenset({"id", "ids", "memory_id", "memory_ids", "source_ids", "superseded_by", "copy_of"})
#: Fields the scorers read: never masked as volatile (an adapter declaring one is refused at load).
SCORED_FIELDS = frozenset({"text", "items", "evidence", "state", "distance", "status", "valid_from", "valid_to",
                           "as_of", "superseded_by", "quiescent", "jobs", "events", "event", "memory_id", "ids",
                           "kind", "store"})
_TIME_FIELDS = frozenset({"valid_from", "valid_to", "as_of", "at"})
_SECRET_KEY = re.compile(r"(api[_-]?key|secret|password|passwd|token_value|access[_-]?token|auth[_-]?token|"
                         r"authorization|credential|private[_-]?key)", re.I)
#: Values that are credentials whatever their key is called (provider keys, tokens, bearer headers).
_SECRET_VALUE = re.compile(r"^(?:Bearer\s+)?(?:sk|pk|rk|sess)-[A-Za-z0-9_\-]{12,}$|^(?:gh[pousr]|github_pat|xox[abpr]|"
                           r"glpat|hf|AKIA|AIza)[A-Za-z0-9_\-]{12,}$")


@lru_cache(maxsize=4096)
def secret_key(key: str) -> bool:
    """Does a key name a secret? Remembered: an answer's keys are few and asked for every value."""
    return bool(_SECRET_KEY.search(key))


def secret_value(value: str) -> bool:
    return bool(_SECRET_VALUE.match(value.strip()))

#: how long ago by the wall clock, at run time scales (seconds to hours, digits): "3s ago", "12 minutes ago"
_AGO = re.compile(r"\b\d+ ?(?:s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?) ago\b")

NORMALIZATION = {
    "ids": "values under the keys " + ", ".join(sorted(ID_KEYS))
           + " and UUID-shaped strings anywhere are renumbered ~1, ~2 ... in order of first appearance",
    "volatile_fields": "values of the fields the adapter declares volatile are replaced by ~volatile "
                       "(never a field the scorers read)",
    "wall_clock": "date-times inside answer strings that fall on the wall-clock date of the run (within a day) "
                  "are replaced by ~wallclock; durations before now at run time scales (a number of seconds, "
                  "minutes or hours, then 'ago') by ~ago",
    "secrets": "values under keys that name a key, secret, password or authorization are replaced by ~redacted",
    "needles": "a string holding any wording of a case target is never replaced whole (only its UUIDs, "
               "wall-clock times and durations ago are, and only where every wording it held is still there): "
               "normalisation cannot hide a value the scorers look for",
    "scope": "answers are normalised; the harness's own arguments are recorded as sent, secrets redacted",
}


@dataclass
class Normalizer:
    volatile_fields: frozenset[str] = frozenset()
    needles: tuple[tuple[str, ...], ...] = ()   # token sequences of every wording of the current case's targets
    worker: int | None = None  # an instance of a --jobs run labels ids its own way (parallel.py renumbers them)
    met: list[str] = field(default_factory=list)  # the raw ids normalisation met since the last record was added
    _ids: dict[str, str] = field(default_factory=dict)
    # remembered from the fields above: the needles' first tokens, and the volatile fields a scorer does not read
    _firsts: tuple[str, ...] = field(default=(), repr=False)
    _firsts_of: tuple | None = field(default=None, repr=False)
    _masked: frozenset[str] = field(default=frozenset(), repr=False)
    _masked_of: frozenset[str] | None = field(default=None, repr=False)

    def set_needles(self, wordings: list[str]) -> None:
        self.needles = tuple(t for t in (tuple(tokens(w)) for w in wordings) if t)

    def held(self, text: str) -> frozenset[int]:
        """Which needles ``text`` holds (their indices)."""
        if not self.needles:
            return frozenset()
        # plain ASCII folds to its lower case, so a needle whose first token is not in it is not held: most of
        # an answer's strings are ruled out without being tokenised
        if plain(text):
            low = text.lower()
            if not any(want[0] in low for want in self.needles):
                return frozenset()
        have = token_tuple(text)
        return frozenset(k for k, want in enumerate(self.needles) if holds_run(have, want))

    def protected(self, text: str) -> bool:
        """Does ``text`` hold a needle? Then it is never replaced whole. (``held``'s answer as a yes or no, asked of
        every string of every answer: the first tokens are looked for once each, and the first needle found ends
        the search.)"""
        needles = self.needles
        if not needles:
            return False
        if plain(text):
            if self._firsts_of is not needles:
                self._firsts, self._firsts_of = tuple(dict.fromkeys(w[0] for w in needles)), needles
            low = text.lower()
            for first in self._firsts:
                if first in low:
                    break
            else:
                return False
        have = token_tuple(text)
        for want in needles:
            if holds_run(have, want):
                return True
        return False

    def _id(self, raw: str) -> str:
        self.met.append(raw)
        if raw not in self._ids:
            n = len(self._ids) + 1
            self._ids[raw] = f"~{n}" if self.worker is None else f"~w{self.worker}n{n}~"
        return self._ids[raw]

    def labels(self) -> dict[str, str]:
        """Every raw id met so far and its label."""
        return dict(self._ids)

    def raw(self, value):
        """The id as the system gave it, for one the transcript renumbered (``~3``); any other value as it is."""
        if isinstance(value, str) and value.startswith("~"):
            return next((raw for raw, n in self._ids.items() if n == value), value)
        return value

    def _text(self, text: str, key: str | None = None) -> str:
        # each pattern is looked for only where a character it cannot match without is there
        if "-" in text:
            text = _UUID.sub(lambda m: self._id(m.group(0).lower()), text)
        if key not in _TIME_FIELDS and "-" in text and ":" in text and _DATETIME.search(text):
            today = wall_dates()
            text = _DATETIME.sub(lambda m: "~wallclock" if m.group(1) in today else m.group(0), text)
        if key not in _TIME_FIELDS and " ago" in text and _AGO.search(text):
            masked = _AGO.sub("~ago", text)
            text = masked if self.held(masked) == self.held(text) else text  # never at a needle's cost
        return text

    def redact(self, value: Any, key: str | None = None) -> Any:
        """Secrets only: what the harness sends is its own deterministic data and stays as sent."""
        if isinstance(value, str) and ((key is not None and secret_key(key)) or secret_value(value)):
            return "~redacted"
        if isinstance(value, dict):
            return {k: self.redact(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v, key) for v in value]
        return value

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if self._masked_of is not self.volatile_fields:
            self._masked, self._masked_of = self.volatile_fields - SCORED_FIELDS, self.volatile_fields
        return self._walk(value, key)

    def _walk(self, value: Any, key: str | None) -> Any:
        # the rules in order: a string holding a needle keeps all but its UUIDs and clock times; a volatile
        # field's scalar is masked; a secret's string redacted; an id renumbered. Dispatched on the exact type
        # (what JSON makes), anything else goes the general way (_rules)
        t = type(value)
        if t is dict:
            walk = self._walk
            return {k: walk(v, k) for k, v in value.items()}
        if t is list:
            walk = self._walk
            return [walk(v, key) for v in value]
        if t is str:
            if self.protected(value):
                return self._text(value, key)
            if key is not None:
                if key in self._masked:
                    return "~volatile"
                if secret_key(key):
                    return "~redacted"
                if key in ID_KEYS:
                    return self._id(value.lower() if _UUID.fullmatch(value) else value)
            return self._text(value, key)
        if t is int or t is float or t is bool:
            return "~volatile" if key is not None and key in self._masked else value
        if value is None:
            return None
        return self._rules(value, key)

    def _rules(self, value: Any, key: str | None) -> Any:
        if isinstance(value, str) and self.protected(value):
            return self._text(value, key)
        if key is not None and key in self._masked and value is not None and not isinstance(value, (dict, list)):
            return "~volatile"
        if key is not None and isinstance(value, str) and secret_key(key):
            return "~redacted"
        if isinstance(value, dict):
            return {k: self._walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, key) for v in value]
        if isinstance(value, str):
            if key in ID_KEYS:
                return self._id(value.lower() if _UUID.fullmatch(value) else value)
            return self._text(value, key)
        return value


class Transcript:
    """An in-memory transcript that renders to canonical JSON lines."""

    def __init__(self, worker: int | None = None) -> None:
        self.records: list[dict] = []
        self.ids_of: list[tuple[str, ...]] = []  # per record, the raw ids its normalisation met, in order
        self.normalize = Normalizer(worker=worker)
        # each record's canonical line, made when it was added, and the list they were made for: text() joins
        # them instead of serialising every record again (a run's stop); records replaced (a --jobs run's merge)
        # are serialised afresh
        self._lines: list[str] = []
        self._lines_of: list[dict] = self.records

    def add(self, record: dict) -> dict:
        line = canonical(record)
        record = json.loads(line)  # a plain-JSON copy, exactly as it will be read back
        self.records.append(record)
        self._lines.append(line)
        self.ids_of.append(tuple(self.normalize.met))
        self.normalize.met.clear()
        return record

    def prepend(self, record: dict) -> dict:
        """The run header goes first, written once the run knows what produced it."""
        line = canonical(record)
        record = json.loads(line)
        self.records.insert(0, record)
        self._lines.insert(0, line)
        self.ids_of.insert(0, ())
        return record

    def add_exchange(self, context: dict, call: str, args: dict, result: Any = None,
                     error: dict | None = None) -> dict:
        args = {k: self.normalize(v, k) if k in ID_KEYS else v for k, v in args.items()}  # an id the system gave
        rec = {**context, "kind": "call", "call": call, "args": self.normalize.redact(args)}
        if error is not None:
            rec["error"] = error
        else:
            rec["result"] = self.normalize(result)
        return self.add(rec)

    def text(self) -> str:
        if self._lines_of is self.records and len(self._lines) == len(self.records):
            return "".join(line + "\n" for line in self._lines)
        return "".join(canonical(r) + "\n" for r in self.records)

    def sha256(self) -> str:
        return sha256_bytes(self.text().encode())


def read_lines(path: Path) -> list[dict]:
    """Read a transcript back (plain, xz or gzip), refusing anything that is not one JSON object per line."""
    try:
        text = read_text(path)
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    return parse_lines(text, path)


def parse_lines(text: str, path: Path | str = "transcript") -> list[dict]:
    """A transcript's canonical text as records, refusing anything that is not one JSON object per line."""
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{n}: not a JSON object")
        records.append(rec)
    return records
