"""reference: the adapter of refmemory, the positive control (see refmemory.py).

It extracts facts through the model gateway (config["model"]), speaking the
``memmatrix-extract/v1`` dialect: in oracle mode that is a perfect extractor, in proxy
mode a real model.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

from adapterkit import concurrently, contains
from refmemory import RefMemory

TOP = 8
VECTOR_PRESENT = 0.9   # cosine similarity at which the vector index still holds the needle
EXTRACT = """memmatrix-extract/v1
Extract every fact the user states in the conversation. Answer with JSON only:
{"facts": [{"subject": str, "attribute": str, "value": str, "statement": "the fact as one sentence",
  "intent": "assert" | "supersede" | "retract", "replaces": "the value it supersedes, if any",
  "valid_from": "ISO time or omitted", "valid_to": "ISO time the fact stops holding, or omitted"}]}"""


class ReferenceAdapter:
    #: "past": what is no longer current reaches the door only for a question about the past (seed 004's ban on
    #: a retired value beside the current one); "always": every fact found, marked (test doubles about qualifiers)
    HISTORY_AT_DOOR = "past"
    def __init__(self, config: dict):
        model = config.get("model")
        if not model:
            raise RuntimeError("the reference system extracts through the model gateway: config['model'] is missing; "
                               "run it with memmatrix, which starts the gateway")
        self.model = model
        root = Path(config["data_dir"]) / "reference"
        root.mkdir(parents=True, exist_ok=True)
        self.mem = RefMemory(root, int(config.get("seed", 0)))
        self.lock = threading.Lock()  # concurrent writers extract at once; each applies its facts alone

    def _extract(self, messages: list) -> list[dict]:
        convo = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        body = {"model": self.model["chat_model"], "temperature": 0, "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": EXTRACT}, {"role": "user", "content": convo}]}
        req = urllib.request.Request(f"{self.model['base_url']}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.model['api_key']}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            content = json.loads(resp.read())["choices"][0]["message"]["content"]
        facts = json.loads(content or "{}").get("facts", [])
        return [f for f in facts if isinstance(f, dict) and all(f.get(k) for k in ("subject", "attribute", "value"))]

    def capabilities(self) -> dict:
        return {
            "system": {"name": "reference", "version": "1.0"},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "supported"},
                "update": {"support": "supported"},
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": {"support": "supported"},
                "import_history": {"support": "supported"},
                "trace": {"support": "supported"},
                "write_concurrent": {"support": "supported"},
            },
            "doors": [{"name": "prompt", "description": "the memory block injected into the model's prompt"}],
            "stores": [
                {"name": "facts", "kind": "text", "role": "primary", "description": "facts with validity"},
                {"name": "vectors", "kind": "vector", "description": "feature-hashed vectors, nearest neighbour on the needle"},
                {"name": "summaries", "kind": "text", "description": "per-scope profile with its source ids"},
                {"name": "audit-log", "kind": "log", "description": "mutation events, digests only"},
                {"name": "tombstones", "kind": "other", "description": "salted digests of forgotten values"},
            ],
            "background_jobs": [
                {"name": "summarize", "description": "rebuild each scope's profile from its facts"},
                {"name": "reindex", "description": "rebuild the vector index from the facts"},
            ],
            "qualifiers": ["valid_from", "valid_to", "status", "superseded_by"],
        }

    def reset(self) -> None:
        self.mem.reset()

    @staticmethod
    def _source(messages: list) -> str:
        return "\n".join(f"{m['role']}: {m['content']}" for m in messages)

    def write(self, scope: str, at: str, messages: list) -> dict:
        facts = self._extract(messages)
        with self.lock:
            return {"ids": self.mem.remember(scope, at, facts, self._source(messages))}

    def write_concurrent(self, scope: str, at: str, writes: list) -> dict:
        """Each write on a thread of its own: the extractions run at once, the store applies one write at a time."""
        return {"writes": concurrently([lambda m=m: self.write(scope, at, m) for m in writes])}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """Bulk import of an old transcript, at the time it was written (not the time of import)."""
        return {"ids": self.mem.remember(scope, at, self._extract(messages), self._source(messages)),
                "path": "transcript import"}

    def trace(self, scope: str, id) -> dict:
        """The conversation a fact was extracted from, as stored with it."""
        fact = self.mem.state["facts"].get(str(id))
        if fact is None or fact["scope"] != scope or not fact.get("source"):
            return {"sources": []}
        return {"sources": [{"id": f"source-of-{fact['id']}", "text": fact["source"], "at": fact["recorded_at"]}]}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "every write is applied before it returns"}

    def _item(self, f: dict, at: str) -> dict:
        return {"id": f["id"], "text": f["text"], "valid_from": f["valid_from"], "valid_to": f["valid_to"],
                "status": self.mem.status(f, at), "superseded_by": f["superseded_by"], "kind": f["kind"]}

    @staticmethod
    def _line(item: dict) -> str:
        if item["status"] == "current":
            until = f", until {item['valid_to']}" if item["valid_to"] else ""
            return f"- {item['text']} [since {item['valid_from']}{until}]"
        return f"- [{item['status']}, no longer true since {item['valid_to']}] {item['text']}"

    def door_items(self, query: str, scope: str, at: str) -> list[dict]:
        """Every fact the ranking finds for the door, with what the memory says of its currency."""
        return [self._item(f, at) for f in self.mem.rank(query, scope, TOP)]

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        """What reaches the model: current facts, and what is no longer current only when the question asks
        about the past (a retired value next to the current one would make the model guess)."""
        past = self.HISTORY_AT_DOOR == "always" or self.mem.asks_about_past(query)
        items = [i for i in self.door_items(query, scope, at) if past or i["status"] == "current"]
        lines = [f"Memory (as of {at}):"] + [self._line(i) for i in items]
        summary = self.mem.state["summaries"].get(scope)
        if summary and items:
            lines.append(f"Profile built {summary['at']} from {len(summary['sources'])} facts.")
        if not items:
            lines.append("(nothing relevant)")
        return {"text": "\n".join(lines), "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [self._item(f, at) for f in self.mem.rank(query, scope, k)]}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        """A correction through the API: the new statement is extracted like any write and closes what ``text``
        names (validity closes, nothing is overwritten, so history stays knowable and an undo can reopen it)."""
        new = self._extract([{"role": "user", "content": new_text}])
        old = self._extract([{"role": "user", "content": text}])
        with self.lock:
            named = {(f["subject"], f["attribute"]) for f in self.mem.matching(scope, text, old)}
            facts = [{**f, "intent": "supersede", "replaces": f.get("replaces") or next(
                (g["value"] for g in self.mem.matching(scope, text, old)), None)}
                if f.get("intent", "assert") == "assert" and (f["subject"], f["attribute"]) in named else f for f in new]
            return {"ids": self.mem.remember(scope, at, facts, new_text)}

    def forget(self, scope: str, at: str, text: str) -> dict:
        """Forget what the request states: extracted like any write, then matched by key, value and kind."""
        return {"ids": self.mem.forget(scope, at, text, self._extract([{"role": "user", "content": text}]))}

    def share(self, scope: str, to_scope: str, at: str, text: str) -> dict:
        return {"ids": self.mem.share(scope, to_scope, at, text, self._extract([{"role": "user", "content": text}]))}

    def run_background_jobs(self, at: str) -> dict:
        return {"jobs": self.mem.run_jobs(at)}

    def audit(self, scope: str) -> dict:
        return {"events": [e for e in self.mem.state["audit"] if e["scope"] == scope]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "vectors":
            fact, sim = self.mem.nearest(needle["text"], scope)
            held = fact is not None and sim >= VECTOR_PRESENT
            at = max([f["recorded_at"] for f in self.mem.facts(scope)], default="")
            return {"state": "present" if held else "absent", "evidence": [fact["text"]] if fact else [],
                    "items": [self._item(fact, at)] if held and "scope" in fact else [],
                    "distance": round(1 - sim, 6) if fact else None}
        if store in ("facts", "summaries"):
            summary = self.mem.state["summaries"].get(scope)
            facts = self.mem.facts(scope) if store == "facts" else \
                [self.mem.state["facts"][i] for i in (summary or {}).get("sources", []) if i in self.mem.state["facts"]]
            at = summary["at"] if store == "summaries" and summary else max(
                [f["recorded_at"] for f in facts], default="")
            hits = [self._item(f, at) for f in facts if contains(f["text"], token)]
            return {"state": "present" if hits else "absent", "evidence": [h["text"] for h in hits], "items": hits}
        if store == "audit-log":
            texts = [json.dumps(e) for e in self.mem.state["audit"] if e["scope"] == scope]
        elif store == "tombstones":
            texts = list(self.mem.state["tombstones"].get(scope, []))
        else:
            raise KeyError(f"no store {store!r}")
        hits = [t for t in texts if contains(t, token)]
        return {"state": "present" if hits else "absent", "evidence": hits}
