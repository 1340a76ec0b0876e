"""What a memory costs per operation, derived from a run's transcripts (so ``verify`` re-derives it).

``costs`` in a result holds, from the adapter transcript and the model transcript alone:

- ``door``: what each door call hands the model: characters and estimated tokens (words and punctuation,
  the oracle's estimate) per call, p50/p95/max and the mean;
- ``model``: model calls and tokens per adapter call of each operation, and for the write path (write,
  update, forget, import_history, run_background_jobs, share) and the read path (door, recall) together.

Wall-clock costs (latency p50/p95/p99 per operation, write-to-readable lag, bytes on disk against the bytes
written) are not reproducible, so they live in ``timings`` beside the harness's own cost.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..common.stats import nearest_rank
from ..common.tokens import word_count

WRITE_PATH = ("write", "write_concurrent", "update", "forget", "import_history", "run_background_jobs", "share")
READ_PATH = ("door", "recall")


def _spread(values: list[int]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "max": None, "mean": None}
    v = sorted(values)
    return {"p50": nearest_rank(v, 0.5), "p95": nearest_rank(v, 0.95), "max": v[-1],
            "mean": round(sum(v) / len(v), 1)}


def _per_call(model: dict, calls: int) -> dict:
    keys = ("llm_calls", "tokens_in", "tokens_out", "embedding_calls")
    return {"calls": calls, **{f"{k}_per_call": (round(model.get(k, 0) / calls, 3) if calls else None) for k in keys}}


def door_sizes(records: list[dict]) -> list[tuple[int, int]]:
    """(characters, estimated tokens) of each door call's text, in transcript order."""
    return [(len(t), word_count(t)) for t in (r["result"]["text"] for r in records
            if r.get("kind") == "call" and r.get("call") == "door" and isinstance(r.get("result"), dict)
            and isinstance(r["result"].get("text"), str))]


def derive_costs(records: list[dict], model_cost: dict, door: list[tuple[int, int]] | None = None) -> dict:
    """The ``costs`` block of a result: door size and model use per operation (see the module's docstring).
    ``door``: the door sizes when the records were read a case at a time (``verify``), else taken from them."""
    calls = Counter(r["call"] for r in records if r.get("kind") == "call" and ("result" in r or "error" in r))
    sizes = door_sizes(records) if door is None else door
    per_op = model_cost.get("per_operation", {})
    model = {op: _per_call(per_op.get(op, {}), n) for op, n in sorted(calls.items()) if op in WRITE_PATH + READ_PATH}
    for path, ops in (("write path", WRITE_PATH), ("read path", READ_PATH)):
        total = Counter()
        for op in ops:
            total.update({k: v for k, v in per_op.get(op, {}).items() if isinstance(v, int)})
        model[path] = _per_call(total, sum(calls[op] for op in ops))
    return {"door": {"calls": len(sizes), "chars": _spread([c for c, _ in sizes]),
                     "tokens": _spread([t for _, t in sizes])},
            "model": model}


def disk_bytes(folder: Path) -> int | None:
    """Bytes of every file under ``folder`` (what the system's stores take on disk), or None if it is gone."""
    if not folder.is_dir():
        return None
    total = 0
    for p in folder.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def source_bytes(records: list[dict], case: str) -> int:
    """Bytes of the messages a case wrote through the system's write path (the source its stores hold)."""
    n = 0
    for r in records:
        if r.get("kind") != "call" or r.get("case") != case or r.get("retry") is not None:
            continue  # a refused writer's second write sends the same source again
        args = r.get("args") or {}
        if r.get("call") in ("write", "import_history"):
            batches = [args.get("messages") or []]
        elif r.get("call") == "write_concurrent":
            batches = args.get("writes") or []
        else:
            continue
        for messages in batches:
            for m in messages:
                n += len(str(m.get("content", "")).encode())
    return n


def disk_use(per_case: list[dict], records: list[dict]) -> dict:
    """What the system's stores took on disk per case: growth from the reset to the case's end, against the
    bytes of the messages the case wrote (the stores' size as a multiple of their source)."""
    rows = []
    for x in per_case:
        src = source_bytes(records, x["case"])
        grew = x["at_end"] - x["after_reset"] if x["after_reset"] is not None else None
        rows.append({**x, "source_bytes": src, "growth_bytes": grew,
                     "multiple": round(grew / src, 2) if grew is not None and src else None})
    multiples = sorted(r["multiple"] for r in rows if r["multiple"] is not None)
    return {"multiple_p50": multiples[len(multiples) // 2] if multiples else None,
            "at_end_p50": sorted(r["at_end"] for r in rows)[len(rows) // 2], "per_case": rows}


def lag_distribution(lags: list[dict]) -> dict:
    """Write-to-recall lag over every lag op: how long after a write returned its value first reached the door."""
    seen = sorted(x["ms"] for x in lags if x["seen"])
    def pct(q: float) -> float | None:
        return nearest_rank(seen, q) if seen else None
    return {"writes": len(lags), "never": sum(not x["seen"] for x in lags), "p50": pct(0.5), "p95": pct(0.95),
            "max": seen[-1] if seen else None, "samples": [{k: x[k] for k in ("case", "target", "ms", "seen")}
                                                           for x in lags]}
