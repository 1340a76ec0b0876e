"""append: a naive append-only memory that never removes derived copies."""

from __future__ import annotations

import json
import os
from pathlib import Path

from adapterkit import content_tokens, contains, coverage, tokens

BUFFER = 8   # recent messages handed to the model with every answer
TOP = 5      # records per answer


class AppendAdapter:
    def __init__(self, config: dict):
        self.root = Path(config["data_dir"]) / "append"
        self.root.mkdir(parents=True, exist_ok=True)
        self.log = self.root / "log.jsonl"

    # ------------------------------------------------------------ the memory
    def _events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]

    def _append(self, event: dict) -> None:
        with open(self.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(event, sort_keys=True) + "\n")

    def _records(self, scope: str) -> list[dict]:
        events = self._events()
        gone = {e["id"] for e in events if e["event"] == "forget"}
        return [e for e in events if e["event"] == "write" and e["scope"] == scope and e["id"] not in gone]

    def _rank(self, query: str, scope: str, k: int) -> list[dict]:
        words = content_tokens(query)
        scored = []
        for rec in self._records(scope):
            have = set(tokens(rec["text"]))
            score = sum(w in have for w in words)
            if score:
                scored.append((score, rec))
        scored.sort(key=lambda s: -s[0])
        return [r for _, r in scored[:k]]

    def _state(self, name: str, scope: str, default):
        f = self.root / f"{name}-{scope}.json"
        return json.loads(f.read_text(encoding="utf-8")) if f.exists() else default

    def _put(self, name: str, scope: str, value) -> None:
        f = self.root / f"{name}-{scope}.json"
        f.with_suffix(".tmp").write_text(json.dumps(value), encoding="utf-8")
        os.replace(f.with_suffix(".tmp"), f)

    def _next_id(self) -> str:
        return f"r{sum(1 for e in self._events() if e['event'] == 'write') + 1}"

    # ------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        return {
            "system": {"name": "append", "version": "1.0"},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": "search-then-delete: the best-matching record is tombstoned by id"},
                "update": {"support": "unsupported", "reason": "append-only: a correction is a new record"},
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": {"support": "supported"},
                "import_history": {"support": "supported"},
            },
            "doors": [{"name": "context", "description": "top records by word overlap, the summary, and the recent conversation"}],
            "stores": [
                {"name": "event-log", "kind": "log", "role": "primary",
                 "description": "append-only log of every write, forget and share"},
                {"name": "recent-buffer", "kind": "buffer", "description": "the last messages of the scope"},
                {"name": "summary", "kind": "text", "description": "nightly summary of the scope"},
            ],
            "background_jobs": [{"name": "summarize", "description": "rebuild each scope's summary from the log"}],
        }

    def reset(self) -> None:
        for f in self.root.iterdir():
            f.unlink()

    def write(self, scope: str, at: str, messages: list) -> dict:
        ids = []
        for m in messages:
            if m["role"] == "user":
                rid = self._next_id()
                self._append({"event": "write", "id": rid, "scope": scope, "at": at, "text": m["content"]})
                ids.append(rid)
        buffer = self._state("buffer", scope, []) + [f"{m['role']}: {m['content']}" for m in messages]
        self._put("buffer", scope, buffer[-BUFFER:])
        return {"ids": ids}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """A transcript import: the same log, appended to like any write."""
        return {**self.write(scope, at, messages), "path": "transcript import"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "writes are synchronous"}

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        recs = self._rank(query, scope, TOP)
        summary = self._state("summary", scope, "")
        buffer = self._state("buffer", scope, [])
        parts = ["Relevant memories:"] + [f"- {r['text']}" for r in recs]
        if summary:
            parts += ["", f"Summary: {summary}"]
        parts += ["", "Recent conversation:"] + buffer
        items = [{"id": r["id"], "text": r["text"], "kind": "record"} for r in recs]
        if summary:
            items.append({"text": summary, "kind": "summary"})
        items += [{"text": line, "kind": "message"} for line in buffer]
        return {"text": "\n".join(parts), "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [{"id": r["id"], "text": r["text"], "kind": "record"} for r in self._rank(query, scope, k)]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        best = max(self._records(scope), key=lambda r: coverage(text, r["text"]), default=None)
        if best is None or coverage(text, best["text"]) == 0:
            return {"ids": []}
        self._append({"event": "forget", "id": best["id"], "scope": scope, "at": at, "text": best["text"]})
        return {"ids": [best["id"]]}

    def run_background_jobs(self, at: str) -> dict:
        scopes = {e["scope"] for e in self._events()}
        for scope in sorted(scopes):  # re-derived from the whole log: forget events are not consulted
            texts = [e["text"] for e in self._events() if e["event"] == "write" and e["scope"] == scope]
            self._put("summary", scope, " ".join(texts))
        return {"jobs": ["summarize"]}

    def share(self, scope: str, to_scope: str, at: str, text: str) -> dict:
        best = max(self._records(scope), key=lambda r: coverage(text, r["text"]), default=None)
        if best is None or coverage(text, best["text"]) == 0:
            return {"ids": []}
        rid = self._next_id()
        self._append({"event": "write", "id": rid, "scope": to_scope, "at": at, "text": best["text"]})
        return {"ids": [rid]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        if store == "event-log":
            lines = [json.dumps(e) for e in self._events() if e["scope"] == scope]
        elif store == "recent-buffer":
            lines = self._state("buffer", scope, [])
        elif store == "summary":
            lines = [self._state("summary", scope, "")]
        else:
            raise KeyError(f"no store {store!r}")
        hits = [ln for ln in lines if ln and contains(ln, needle["token"])]
        return {"state": "present" if hits else "absent", "evidence": hits}

    def audit(self, scope: str) -> dict:
        return {"events": [{"event": e["event"], "memory_id": e["id"], "actor": "user", "at": e["at"], "text": e["text"]}
                           for e in self._events() if e["scope"] == scope]}
