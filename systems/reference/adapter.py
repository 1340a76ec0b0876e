"""reference: the adapter of refmemory, the positive control (see refmemory.py)."""

from __future__ import annotations

import json
from pathlib import Path

from adapterkit import contains
from refmemory import RefMemory

TOP = 5
VECTOR_PRESENT = 0.9   # cosine similarity at which the vector index still holds the needle


class ReferenceAdapter:
    def __init__(self, config: dict):
        root = Path(config["data_dir"]) / "reference"
        root.mkdir(parents=True, exist_ok=True)
        self.mem = RefMemory(root, int(config.get("seed", 0)))

    def capabilities(self) -> dict:
        return {
            "system": {"name": "reference", "version": "1.0"},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "supported"},
                "update": {"support": "unsupported", "reason": "corrections are new writes"},
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": {"support": "supported"},
            },
            "doors": [{"name": "prompt", "description": "the memory block injected into the model's prompt"}],
            "stores": [
                {"name": "facts", "kind": "text", "description": "fact sentences"},
                {"name": "vectors", "kind": "vector", "description": "feature-hashed vectors, nearest neighbour on the needle"},
                {"name": "summaries", "kind": "text", "description": "per-scope summaries with their source ids"},
                {"name": "audit-log", "kind": "log", "description": "mutation events"},
                {"name": "tombstones", "kind": "other", "description": "salted digests of forgotten values"},
            ],
            "background_jobs": [
                {"name": "summarize", "description": "rebuild each scope's summary from live facts"},
                {"name": "reindex", "description": "rebuild the vector index from live facts"},
            ],
        }

    def reset(self) -> None:
        self.mem.reset()

    def write(self, scope: str, at: str, messages: list) -> dict:
        ids = []
        for m in messages:
            if m["role"] == "user":
                ids += self.mem.write(scope, at, m["content"])
        return {"ids": ids}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "every write is applied before it returns"}

    def _items(self, facts: list[dict]) -> list[dict]:
        return [{"id": f["id"], "text": f["text"], "valid_from": f["at"], "valid_to": None, "status": "current",
                 "kind": "fact"} for f in facts]

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        facts = self.mem.rank(query, scope, TOP)
        items = self._items(facts)
        lines = [f"Memory (as of {at}):"] + [f"- {f['text']} [since {f['at']}]" for f in facts]
        summary = self.mem.state["summaries"].get(scope)
        if summary and facts:
            lines.append(f"Summary: {summary['text']}")
            items.append({"text": summary["text"], "kind": "summary", "source_ids": summary["sources"],
                          "as_of": summary["at"], "status": "current"})
        if not facts:
            lines.append("(nothing relevant)")
        return {"text": "\n".join(lines), "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": self._items(self.mem.rank(query, scope, k))}

    def forget(self, scope: str, at: str, text: str) -> dict:
        return {"ids": self.mem.forget(scope, at, text)}

    def share(self, scope: str, to_scope: str, at: str, text: str) -> dict:
        return {"ids": self.mem.share(scope, to_scope, at, text)}

    def run_background_jobs(self, at: str) -> dict:
        return {"jobs": self.mem.run_jobs(at)}

    def audit(self, scope: str) -> dict:
        return {"events": [e for e in self.mem.state["audit"] if e["scope"] == scope]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "vectors":
            fact, sim = self.mem.nearest(needle["text"], scope)
            return {"state": "present" if fact is not None and sim >= VECTOR_PRESENT else "absent",
                    "evidence": [fact["text"]] if fact else [], "distance": round(1 - sim, 6) if fact else None}
        if store == "facts":
            texts = [f["text"] for f in self.mem.facts(scope)]
        elif store == "summaries":
            s = self.mem.state["summaries"].get(scope)
            texts = [s["text"]] if s else []
        elif store == "audit-log":
            texts = [json.dumps(e) for e in self.mem.state["audit"] if e["scope"] == scope]
        elif store == "tombstones":
            texts = list(self.mem.state["tombstones"].get(scope, []))
        else:
            raise KeyError(f"no store {store!r}")
        hits = [t for t in texts if contains(t, token)]
        return {"state": "present" if hits else "absent", "evidence": hits}
