"""The model transcript: every model call of a run, with usage per adapter operation.

Systems call the model concurrently (many gather their calls), so arrival order is not
reproducible. The transcript is therefore ordered by adapter operation (the context the
harness announces before each call) and, within one operation, by the hash of the
request: the same set of calls gives the same bytes. Latency is kept apart, unhashed.
"""

from __future__ import annotations

import threading

from ..common.canon import canonical, sha256_json


class ModelRecorder:
    def __init__(self, mode: str = "oracle") -> None:
        self.mode = mode
        self.lock = threading.Lock()
        self.context: dict = {"case": None, "index": -1, "call": "setup"}
        self.context_seq = 0
        self.records: list[dict] = []
        self.latency_ms: list[float] = []

    def set_context(self, context: dict) -> None:
        with self.lock:
            self.context_seq += 1
            self.context = dict(context)

    def add(self, record: dict, latency_ms: float) -> None:
        with self.lock:
            self.records.append({"ctx": self.context_seq, "context": self.context, **record})
            self.latency_ms.append(latency_ms)

    def ordered(self) -> list[dict]:
        with self.lock:
            rows = list(self.records)
        rows.sort(key=lambda r: (r["ctx"], sha256_json(r["request"]), sha256_json(r.get("response"))))
        return [{**{k: v for k, v in r.items() if k != "ctx"}, "seq": i} for i, r in enumerate(rows)]

    def text(self, rows: list[dict] | None = None) -> str:
        """The transcript's bytes; ``rows`` an ``ordered()`` already made (hashing every request to order them
        is most of what this costs)."""
        return "".join(canonical(r) + "\n" for r in (self.ordered() if rows is None else rows))

    def cost(self, rows: list[dict] | None = None) -> dict:
        """Calls and tokens per adapter operation and in total: the cost column nobody reports."""
        from .cost import model_cost
        return model_cost(self.ordered() if rows is None else rows, self.mode)

    def latency(self) -> dict:
        with self.lock:
            v = sorted(self.latency_ms)
        if not v:
            return {"calls": 0}
        from ..common.stats import percentiles
        return {"calls": len(v), **percentiles(v)}
