"""Read a result's transcripts once, as streams: one record at a time for the model transcript, one case at a time for
the transcript, so what ``verify`` holds is bounded by the largest case, not the largest result.

Each record passes the checks that need all of it (the oracle asked again, the case scored and compared with the
case file) while it is read; what the whole-run checks need (which calls were answered, errors, settle answers,
the run header, the capabilities, usage and dialects of model calls) is kept as a *slim* record: the record
without its payloads (call ``args`` and ``result``, model ``request`` and ``response``), where the presence of a
payload stays visible (``"result": None``). The payloads the whole-run checks do read are kept: the results of
``capabilities``, ``init`` and ``settle`` (small, fixed shapes) and the judge suite's model calls whole. A record
no whole-run check reads beyond its kind and call is one shared dict (``slim_call``). The hash of the canonical
lines and their count are taken as the bytes pass.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterator

from ..common.canon import iter_raw_lines, loads_line
from ..protocols import EvalProtocol
from ..protocols.judging import SUITE_CALL
from ..protocols.scoring import score_one
from ..result.costs import door_sizes

#: call results kept whole in a slim record: what findings, identity and scoring read of them
KEPT_RESULTS = ("capabilities", "init", "settle")


class Artifact:
    """One transcript a result names, read once: iterate it for its records; ``problems`` after that holds what
    disagrees with the result's entry (sha256 of the canonical lines, record count) or why it could not be read."""

    def __init__(self, folder: Path, entry: dict, what: str) -> None:
        self.file, self.entry, self.what = folder / entry["file"], entry, what
        self.problems: list[str] = []
        self.unreadable = False  # missing, or not a transcript: nothing further can be checked from it

    def lines(self) -> Iterator[bytes]:
        if not self.file.is_file():
            self.unreadable = True
            self.problems.append(f"the {self.what} {self.entry['file']} named by the result is missing")
            return
        digest, count = hashlib.sha256(), 0
        try:
            for line in iter_raw_lines(self.file):
                digest.update(line)
                count += line.endswith(b"\n")
                yield line
        except ValueError as exc:
            self.unreadable = True
            self.problems.append(f"the {self.what} {self.entry['file']} cannot be read: {exc}")
            return
        if digest.hexdigest() != self.entry["sha256"]:
            self.problems.append(f"{self.entry['file']}: sha256 of its canonical lines is {digest.hexdigest()}, the "
                                 f"result records {self.entry['sha256']}")
        if count != self.entry["records"]:
            self.problems.append(f"{self.entry['file']} has {count} records, the result records {self.entry['records']}")

    def __iter__(self) -> Iterator[dict]:
        for n, line in enumerate(self.lines(), 1):
            try:
                rec = loads_line(line)
            except ValueError as exc:  # json's JSONDecodeError, UnicodeDecodeError, NaN or Infinity
                raise ValueError(f"{self.entry['file']}:{n}: not JSON ({getattr(exc, 'msg', exc)})") from None
            if not isinstance(rec, dict):
                raise ValueError(f"{self.entry['file']}:{n}: not a JSON object")
            yield rec

    def drain(self) -> list[str]:
        """Only the hash and the count (a result this memmatrix cannot score still has its bytes checked)."""
        for _ in self.lines():
            pass
        return self.problems


#: the kinds of record whose own fields the whole-run checks read (findings name their messages)
KEPT_KINDS = ("run", "unavailable", "recovered")
_SHARED: dict[tuple, dict] = {}


def slim_call(rec: dict) -> dict:
    """What the whole-run checks read of a transcript record. Most records are told apart only by their kind, their
    call and whether they hold a result or an error: those become one shared dict per such combination, so a run's
    hundred thousand calls cost a pointer each (never change a slim record). A record with an error, a kind in
    ``KEPT_KINDS`` or a call in ``KEPT_RESULTS`` keeps every field but the payloads."""
    kind, call = rec.get("kind"), rec.get("call")
    if "error" not in rec and kind not in KEPT_KINDS and call not in KEPT_RESULTS:
        key = (kind, call, "result" in rec)
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = {"kind": kind, **({"call": call} if "call" in rec else {}),
                                     **({"result": None} if "result" in rec else {})}
        return shared
    out = {k: v for k, v in rec.items() if k not in ("args", "result")}
    if "result" in rec:
        out["result"] = rec["result"] if call in KEPT_RESULTS else None
    return out


#: what the whole-run checks read of a model call (cost, findings, who answered it, the judge's traffic)
MODEL_FIELDS = ("kind", "context", "seq", "usage", "matched", "dialect", "error", "error_kind", "upstream_model",
                "replayed")


def slim_model(rec: dict) -> dict:
    if (rec.get("context") or {}).get("call") == SUITE_CALL:
        return rec
    out = {k: rec[k] for k in MODEL_FIELDS if k in rec}
    if "response" in rec:
        out["response"] = None
    return out


def read_model(artifact: Artifact, ask: Callable[[dict], None]) -> list[dict]:
    """The model transcript's slim records; ``ask`` sees every whole record first (the oracle re-asked)."""
    out = []
    for rec in artifact:
        ask(rec)
        out.append(slim_model(rec))
    return out


class RunRead:
    """The transcript read a case at a time: each case scored and checked against the case file's case as it ends.

    ``preamble`` holds the records before the first case whole (the run header, capabilities, init), ``slim`` every
    record slim, ``cases`` the re-scored cases, ``seen`` the case ids in order, ``door`` each door call's size,
    ``case_check`` is told each case as it ends (what disagrees with the case file is kept there)."""

    def __init__(self, protocol: EvalProtocol, case_check: Callable[[int, dict, list[dict]], None],
                 stored: list[dict] = ()) -> None:
        self.protocol, self.case_check, self.stored = protocol, case_check, stored
        self.preamble: list[dict] = []
        self.slim: list[dict] = []
        self.cases: list[dict] = []
        self.seen: list[str] = []
        self.door: list[tuple[int, int]] = []
        self.caps: dict | None = None

    def read(self, records: Iterator[dict], later_caps: Callable[[], dict]) -> "RunRead":
        header: dict | None = None
        body: list[dict] = []
        for rec in records:
            self.slim.append(slim_call(rec))
            if rec.get("kind") == "case":
                if header is not None:
                    self._case(header, body, later_caps)
                else:
                    self.door += door_sizes(self.preamble)
                header, body = rec, []
            elif header is not None:
                body.append(unread(rec))
            else:
                self.preamble.append(rec)
        if header is not None:
            self._case(header, body, later_caps)
        else:
            self.door += door_sizes(self.preamble)
        return self

    def _case(self, header: dict, body: list[dict], later_caps: Callable[[], dict]) -> None:
        if self.caps is None:
            self.caps = next((r["result"] for r in self.preamble if r.get("kind") == "call"
                              and r.get("call") == "capabilities" and "result" in r), None) or later_caps()
        self.case_check(len(self.seen), header, body)
        self.seen.append(header.get("case"))
        self.door += door_sizes(body)
        fresh = score_one(self.protocol, header, body, self.caps)
        i = len(self.cases)  # a case scored as the result stores it is kept as the result's own object, not twice
        self.cases.append(self.stored[i] if i < len(self.stored) and self.stored[i] == fresh else fresh)


def unread(rec: dict) -> dict:
    """A case's record as the scorers read it: a judge record without its request (the scorers read the judge's
    verdict; the request, which can hold a whole store's text, is in the model transcript, where it is re-asked)."""
    if rec.get("kind") == "judge" and "request" in rec:
        return {k: v for k, v in rec.items() if k != "request"}
    return rec
