"""A complete memmatrix adapter for a toy memory, to copy when you wrap your own system.

Run it (no install beyond memmatrix):

    memmatrix run --system examples/minimal_adapter.py:MinimalAdapter --out /tmp/minimal
    memmatrix report /tmp/minimal

The class needs no base class and no import from memmatrix. ``adapterkit`` (the
adapter server that runs it) offers two helpers: ``contains`` for whole-token
matching and ``coverage`` for deciding which memories a forget request names.
"""

from __future__ import annotations

import json
from pathlib import Path

from adapterkit import contains, coverage


class MinimalAdapter:
    def __init__(self, config: dict):
        # config["data_dir"]: a private folder for your stores; config["seed"], config["version"]
        self.file = Path(config["data_dir"]) / "minimal.json"
        self.memories: list[dict] = json.loads(self.file.read_text()) if self.file.exists() else []

    def _save(self) -> None:
        self.file.write_text(json.dumps(self.memories))

    def capabilities(self) -> dict:
        """Say what you support. Every optional operation gets a level, and a reason unless supported."""
        unsupported = {"support": "unsupported", "reason": "the toy memory has none"}
        return {
            "system": {"name": "minimal", "version": "0.1"},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "supported"},
                "update": unsupported, "run_background_jobs": unsupported, "audit": unsupported,
                "share": unsupported, "import_history": unsupported,
                "probe": {"support": "supported"},
            },
            "doors": [{"name": "prompt", "description": "the text put in front of the model"}],
            "stores": [{"name": "json-file", "kind": "text"}],
            "background_jobs": [],
        }

    def reset(self) -> None:
        self.memories = []
        self._save()

    def write(self, scope: str, at: str, messages: list) -> dict:
        for m in messages:
            if m["role"] == "user":
                self.memories.append({"scope": scope, "at": at, "text": m["content"]})
        self._save()
        return {"ids": []}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True}

    def _matches(self, query: str, scope: str) -> list[dict]:
        return [m for m in self.memories if m["scope"] == scope and coverage(query, m["text"]) > 0]

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        hits = self._matches(query, scope)
        return {"text": "\n".join(f"- {m['text']}" for m in hits),
                "items": [{"text": m["text"], "valid_from": m["at"]} for m in hits]}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [{"text": m["text"]} for m in self._matches(query, scope)[:k]]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        self.memories = [m for m in self.memories if m["scope"] != scope or coverage(text, m["text"]) < 0.8]
        self._save()
        return {"ids": []}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        hits = [m["text"] for m in self.memories if m["scope"] == scope and contains(m["text"], needle["token"])]
        return {"state": "present" if hits else "absent", "evidence": hits}
