"""``--jobs N``: independent cases on N instances of the system at once, merged into the transcripts a run of one
instance would have written, byte for byte.

Each instance has its own gateway, runtime, transcript and client, and runs every N-th case in order. The
merge keeps the first instance's start (the others' ``init`` and ``capabilities`` exchanges, and the model
calls they made before their first case, stay out: they repeat the first's), then each case's records in
case order. Two things a single instance would have numbered across the whole run are renumbered:

- ids: every instance labels the ids it meets ``~w<k>n<n>~`` and its transcript remembers, per record, the
  raw ids its normalisation met in order; walking the merged records in order and numbering each raw id at
  its first appearance gives exactly the ``~<n>`` a single instance would have given;
- model calls: ordered by case, then by the order of the adapter operations within the case (as a single
  recorder orders them), then by request hash.

A case's own records are the same whichever instance ran it only if the system's ``reset`` really resets;
``tests/test_parallel.py`` checks that the transcripts agree for the systems that declare ``parallel: true``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Callable

from ..common.canon import sha256_json
from ..common.stats import percentiles
from ..exchange.transcript import Transcript

_LABEL = re.compile(r"~w\d+n\d+~")


def worker_label(worker: int, n: int) -> str:
    return f"~w{worker}n{n}~"


def segments(tr: Transcript, keep_start: bool) -> tuple[list[int], dict[str, list[int]]]:
    """The indices of the records before the first case (kept for the first instance only), and of each case's
    records (a case runs from its header to the next one, as ``transcript.by_case`` reads it)."""
    start: list[int] = []
    cases: dict[str, list[int]] = {}
    current: list[int] | None = None
    for i, rec in enumerate(tr.records):
        if rec.get("kind") == "case":
            current = cases.setdefault(rec["case"], [])
        if current is None:
            if keep_start:
                start.append(i)
        else:
            current.append(i)
    return start, cases


def _relabel(value: Any, sub: Callable[[re.Match], str]) -> Any:
    if isinstance(value, str):
        return _LABEL.sub(sub, value) if "~w" in value else value
    if isinstance(value, dict):
        return {k: _relabel(v, sub) for k, v in value.items()}
    if isinstance(value, list):
        return [_relabel(v, sub) for v in value]
    return value


def merge_transcripts(transcripts: list[Transcript], case_ids: list[str]) -> list[dict]:
    """The records a single instance would have written: the first instance's start, then every case in order."""
    parts = [segments(tr, keep_start=(k == 0)) for k, tr in enumerate(transcripts)]
    order: list[tuple[Transcript, list[int]]] = [(transcripts[0], parts[0][0])]
    for case in case_ids:
        owner = next(k for k, (_, cases) in enumerate(parts) if case in cases)
        order.append((transcripts[owner], parts[owner][1][case]))
    numbers: dict[str, str] = {}

    def number(raw: str) -> str:
        if raw not in numbers:
            numbers[raw] = f"~{len(numbers) + 1}"
        return numbers[raw]

    out = []
    for tr, indices in order:
        back = {label: raw for raw, label in tr.normalize.labels().items()}
        for i in indices:
            for raw in tr.ids_of[i]:
                number(raw)
            out.append(_relabel(tr.records[i], lambda m: number(back[m.group(0)])))
    return out


def merge_models(recorders: list, case_ids: list[str], mode: str) -> dict:
    """The model transcript, cost and latency of all instances, as ``Gateway.state`` gives them for one."""
    from ..result.derive import model_cost
    setup, by_case, latency = [], defaultdict(list), []
    for k, rec in enumerate(recorders):
        with rec.lock:
            rows, ms = list(rec.records), list(rec.latency_ms)
        latency += ms
        for r in rows:
            case = (r.get("context") or {}).get("case")
            if case is None:
                if k == 0:
                    setup.append(r)
            else:
                by_case[case].append(r)

    def key(r: dict) -> tuple:
        return r["ctx"], sha256_json(r["request"]), sha256_json(r.get("response"))

    rows = sorted(setup, key=key) + [r for case in case_ids for r in sorted(by_case[case], key=key)]
    ordered = [{**{k: v for k, v in r.items() if k != "ctx"}, "seq": i} for i, r in enumerate(rows)]
    return {"records": ordered, "cost": model_cost(ordered, mode),
            "latency": {"calls": len(latency), **percentiles(latency)} if latency else {"calls": 0}}
