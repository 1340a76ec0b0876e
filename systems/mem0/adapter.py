"""mem0 (PyPI mem0ai) in library mode: 2.2.1 (ADD-only extraction) and 1.0.11 (LLM ADD/UPDATE/DELETE
decisions, embedded kuzu graph). One adapter; the installed version decides the API it speaks.

Setup, as measured offline (see the reference notes): MEM0_TELEMETRY=False and a scratch MEM0_DIR
set before mem0 is imported; qdrant local on disk; the sqlite history DB; the LLM and embedder are
the memmatrix gateway (config["model"]). mem0 OSS takes no event time (`timestamp` is platform-only),
so the harness clock cannot be passed; mem0 stamps wall-clock times, declared volatile.
"""

from __future__ import annotations

import json
import os
import sqlite3
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

DIMS = 384
TOP = 5
FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of its content words
VECTOR_PRESENT = 0.9


def _relation_line(rel: dict) -> str:
    """A kuzu relation as text: search() names its end `destination`, graph.get_all() names it `target`."""
    return f"{rel.get('source')} -- {rel.get('relationship')} -- {rel.get('destination', rel.get('target'))}"


class Mem0Adapter:
    def __init__(self, config: dict):
        self.version = installed("mem0ai")
        self.v1 = self.version.startswith("1.")
        data = Path(config["data_dir"]) / "mem0"
        (data / "mem0dir").mkdir(parents=True, exist_ok=True)
        os.environ["MEM0_TELEMETRY"] = "False"          # read at import: must precede it
        os.environ["MEM0_DIR"] = str(data / "mem0dir")   # otherwise ~/.mem0/config.json is written
        from mem0 import Memory

        model = config["model"]
        llm = {"model": model["chat_model"], "api_key": model["api_key"], "openai_base_url": model["base_url"],
               "temperature": 0}
        cfg = {
            "llm": {"provider": "openai", "config": llm},
            "embedder": {"provider": "openai", "config": {"model": model["embedding_model"], "api_key": model["api_key"],
                                                          "openai_base_url": model["base_url"], "embedding_dims": DIMS}},
            "vector_store": {"provider": "qdrant", "config": {"collection_name": "memmatrix", "path": str(data / "qdrant"),
                                                              "on_disk": True, "embedding_model_dims": DIMS}},
            "history_db_path": str(data / "history.db"),
        }
        if self.v1:
            cfg["graph_store"] = {"provider": "kuzu", "config": {"db": str(data / "kuzu.db")}}
        self.history_db = data / "history.db"
        self.owners_file = data / "owners.json"  # which memory ids each scope's writes produced
        self.m = Memory.from_config(cfg)

    # ------------------------------------------------------------------ helpers
    def _owners(self) -> dict:
        return json.loads(self.owners_file.read_text()) if self.owners_file.exists() else {}

    def _own(self, scope: str, results: list) -> list[str]:
        owners = self._owners()
        ids = [r["id"] for r in results if r.get("id")]
        owners.setdefault(scope, [])
        owners[scope] += [i for i in ids if i not in owners[scope]]
        self.owners_file.write_text(json.dumps(owners))
        return ids

    def _search(self, query: str, scope: str, k: int) -> dict:
        if self.v1:
            return self.m.search(query, user_id=scope, limit=k)
        return self.m.search(query, filters={"user_id": scope}, top_k=k)

    def _all(self, scope: str) -> list[dict]:
        res = self.m.get_all(user_id=scope, limit=1000) if self.v1 else self.m.get_all(filters={"user_id": scope}, top_k=1000)
        return res["results"]

    def _history_rows(self) -> list[dict]:
        if not self.history_db.exists():
            return []
        con = sqlite3.connect(self.history_db)
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute("SELECT * FROM history ORDER BY rowid")]
        finally:
            con.close()

    def _messages(self, scope: str) -> list[str]:
        if self.v1 or not self.history_db.exists():
            return []  # 1.x keeps no raw message table
        con = sqlite3.connect(self.history_db)
        try:
            cols = [r[1] for r in con.execute("PRAGMA table_info(messages)")]
            if not cols:
                return []
            rows = con.execute("SELECT * FROM messages ORDER BY rowid").fetchall()
        finally:
            con.close()
        out = []
        for row in rows:
            rec = dict(zip(cols, row))
            if scope in str(rec.get("session_scope", "")):
                out.append(f"{rec.get('role')}: {rec.get('content')}")
        return out

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        stores = [
            {"name": "vector-store", "kind": "vector", "role": "primary",
             "description": "qdrant local: the memories and their embeddings (nearest neighbour on the needle)"},
            {"name": "history-db", "kind": "sql", "role": "primary",
             "description": "sqlite history log: ADD/UPDATE/DELETE rows with old and new text"},
        ]
        if self.v1:
            stores.append({"name": "graph-store", "kind": "graph", "description": "embedded kuzu: entity relations"})
        else:
            stores.append({"name": "messages-table", "kind": "buffer", "role": "primary",
                           "description": "the raw messages mem0 2.x keeps per scope and shows the next extraction"})
        return {
            "system": {"name": "mem0", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated",
                           "reason": "search-then-delete: mem0 deletes by memory id; hits covering the request are deleted"},
                "update": {"support": "emulated", "reason": "search-then-update by memory id"},
                "run_background_jobs": no("mem0 library mode has no background job: add() extracts, embeds and stores "
                                          "before it returns (no queue, no consolidation, no re-extraction)"),
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": no("mem0 OSS has no share or export to another user"),
                "import_history": {"support": "supported"},
            },
            "doors": [{"name": "search", "description": "search() results formatted as an agent injects them"}],
            "stores": stores,
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at", "recorded_at"],
            "notes": ["oracle mode: extraction by the memmatrix oracle (a perfect extractor)",
                      f"mem0ai {self.version}, qdrant local on disk, sqlite history"
                      + (", kuzu graph store" if self.v1 else ""),
                      "mem0 OSS accepts no event time: wall-clock stamps are masked as volatile"],
        }

    def reset(self) -> None:
        self.m.reset()
        self.owners_file.unlink(missing_ok=True)

    def write(self, scope: str, at: str, messages: list) -> dict:
        out = self.m.add(messages, user_id=scope, infer=True)
        return {"ids": self._own(scope, out.get("results", []))}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """mem0's direct import path: add(infer=False) stores each message verbatim, no extraction."""
        out = self.m.add(messages, user_id=scope, infer=False)
        return {"ids": self._own(scope, out.get("results", [])), "path": "add(infer=False)"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "library mode: every call returns after its work is applied"}

    def _items(self, res: dict) -> list[dict]:
        items = [{"id": r["id"], "text": r["memory"], "score": round(float(r.get("score") or 0), 6), "kind": "memory"}
                 for r in res.get("results", [])]
        items += [{"text": _relation_line(rel), "kind": "relation"} for rel in res.get("relations", []) or []]
        return items

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        items = self._items(self._search(query, scope, TOP))
        memories = [i["text"] for i in items if i["kind"] == "memory"]
        relations = [i["text"] for i in items if i["kind"] == "relation"]
        text = "Relevant memories:\n" + "\n".join(f"- {m}" for m in memories)
        if relations:
            text += "\nRelations:\n" + "\n".join(f"- {r}" for r in relations)
        return {"text": text, "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [i for i in self._items(self._search(query, scope, k)) if i["kind"] == "memory"]}

    def _matching(self, scope: str, text: str) -> list[dict]:
        return [r for r in self._search(text, scope, 20)["results"] if coverage(text, r["memory"]) >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, text: str) -> dict:
        ids = [r["id"] for r in self._matching(scope, text)]
        for mid in ids:
            self.m.delete(mid)
        return {"ids": ids}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        hits = self._matching(scope, text)[:1]
        for r in hits:
            self.m.update(r["id"], new_text) if self.v1 else self.m.update(r["id"], text=new_text)
        return {"ids": [r["id"] for r in hits]}

    def audit(self, scope: str) -> dict:
        mine = set(self._owners().get(scope, []))
        # mem0 stamps wall-clock times, not the harness clock: at is null, the stamp is kept as recorded_at
        return {"events": [{"event": r["event"], "memory_id": r["memory_id"], "actor": r.get("actor_id"), "at": None,
                            "recorded_at": r.get("created_at"), "old_memory": r.get("old_memory"),
                            "new_memory": r.get("new_memory")}
                           for r in self._history_rows() if r["memory_id"] in mine]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "vector-store":
            vec = self.m.embedding_model.embed(needle["text"], "search")
            # positional: 2.x calls the count top_k, 1.x calls it limit
            hits = self.m.vector_store.search(needle["text"], vec, 1, {"user_id": scope})
            if not hits:
                return {"state": "absent", "evidence": [], "distance": None}
            top = hits[0]
            text = (top.payload or {}).get("data", "")
            held = float(top.score) >= VECTOR_PRESENT or contains(text, token)
            return {"state": "present" if held else "absent", "evidence": [text], "distance": round(1 - float(top.score), 6),
                    "items": [{"id": str(top.id), "text": text, "kind": "memory"}] if held else []}
        if store == "history-db":
            mine = set(self._owners().get(scope, []))
            items = []
            for r in self._history_rows():
                if r["memory_id"] not in mine:
                    continue
                for field, status in (("old_memory", "former"), ("new_memory", None)):
                    if r.get(field) and contains(r[field], token):
                        items.append({"text": r[field], "kind": f"history {r['event']} {field}",
                                      **({"status": status} if status else {})})
            return {"state": "present" if items else "absent", "evidence": [i["text"] for i in items], "items": items}
        if store == "messages-table":
            hits = [m for m in self._messages(scope) if contains(m, token)]
            return {"state": "present" if hits else "absent", "evidence": hits}
        if store == "graph-store":
            rels = self.m.graph.get_all({"user_id": scope}, limit=1000) if self.v1 else []
            lines = [_relation_line(r) for r in rels]
            hits = [ln for ln in lines if contains(ln, token)]
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def close(self) -> None:
        try:
            self.m.close()
        except Exception:
            pass
