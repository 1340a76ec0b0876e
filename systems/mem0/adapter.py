"""mem0 (PyPI mem0ai) in library mode: 2.x (ADD-only extraction), 0.1.9-1.0.11 (LLM ADD/UPDATE/DELETE
decisions; the embedded kuzu graph from 0.1.117, opt-in). One adapter; what the installed release offers decides
the API it speaks (compat.detect(): from its code, never its version string).

Options (system.yaml ``options``; the defaults are mem0's own):
- ``graph``: ``off`` (mem0's default: graph memory is opt-in) or ``kuzu`` (the embedded kuzu graph store, only in
  0.1.117 to 1.0.11; its db a file under the run's data directory).
- ``forget_path``: ``delete`` (search-then-delete by memory id, the request's hits), ``delete_all``
  (``Memory.delete_all(user_id=scope)``: mem0's erasure of a user, every memory of the scope) or ``reset``
  (``Memory.reset()``: every memory of every user, and the history). delete_all and reset return no ids: the
  forget answers the ids of the DELETE rows delete_all appended to the history table, or the scopes' memories the
  vector store held before the reset.

Setup, as measured offline (see the reference notes): MEM0_TELEMETRY=False and a scratch MEM0_DIR
set before mem0 is imported; qdrant local; the sqlite history DB (mem0's default place under MEM0_DIR);
the LLM and embedder are the memmatrix gateway (config["model"]). Everything else is mem0's default; what
cannot be (storage paths, the 1.x graph store, the 2.x features that download models) is listed in the
capability declaration's notes. mem0 OSS takes no event time (`timestamp` is platform-only), so the
harness clock cannot be passed; mem0 stamps wall-clock times, declared volatile.

The door is what mem0's own tools hand an agent: the search() result, serialised as JSON, with every
field mem0 returns (mem0's MCP servers do exactly this: OpenMemory's ``search_memory`` in
openmemory/api/app/mcp_server.py at v1.0.11 returns ``json.dumps({"results": ...}, indent=2)``, and
mem0ai/mem0-mcp's ``search_memories`` returns ``json.dumps(client.search(...))``), at search()'s own
default size (top_k 20 in 2.x, limit 100 in 1.x).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import concurrently, contains, coverage
import compat

MEM0_DEFAULT_DIMS = 1536  # mem0's OpenAI embedder and qdrant config default (embedding_dims / embedding_model_dims)
FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of its content words
VECTOR_PRESENT = 0.9

GRAPHS = {"off": "no graph store (mem0's default: graph memory is opt-in)",
          "kuzu": "mem0's embedded kuzu graph store (0.1.117 to 1.0.11)"}
FORGET_PATHS = {
    "delete": "search-then-delete: mem0 deletes by memory id; hits covering the request are deleted",
    "delete_all": "Memory.delete_all(user_id=scope): mem0's own erasure of a user, every memory of the scope (the "
                  "request's text is not read); its ids are the DELETE rows it appended to the history table",
    "reset": "Memory.reset(): every memory of every user, and the history table (the request's text and scope are "
             "not read)",
}


def _relation_line(rel: dict) -> str:
    """A kuzu relation as text: search() names its end `destination`, graph.get_all() names it `target`."""
    return f"{rel.get('source')} -- {rel.get('relationship')} -- {rel.get('destination', rel.get('target'))}"


class Mem0Adapter:
    def __init__(self, config: dict):
        self.version = installed("mem0ai")
        options = config.get("options") or {}
        self.graph_store = options.get("graph", "off")
        self.forget_path = options.get("forget_path", "delete")
        if self.graph_store not in GRAPHS:
            raise ValueError(f"option graph={self.graph_store!r} is not one of {sorted(GRAPHS)}")
        if self.forget_path not in FORGET_PATHS:
            raise ValueError(f"option forget_path={self.forget_path!r} is not one of {sorted(FORGET_PATHS)}")
        data = Path(config["data_dir"]) / "mem0"
        mem0_dir = data / "mem0dir"
        mem0_dir.mkdir(parents=True, exist_ok=True)
        preloaded = "mem0.configs.base" in sys.modules  # its defaults were read from an earlier MEM0_DIR
        os.environ["MEM0_TELEMETRY"] = "False"           # read at import: must precede it
        os.environ["MEM0_DIR"] = str(mem0_dir)           # otherwise ~/.mem0/config.json is written
        from mem0 import Memory

        self.f = f = compat.detect()
        compat.silence_telemetry(f)
        if self.graph_store == "kuzu" and not f.kuzu:
            raise ValueError(f"option graph=kuzu: mem0ai {self.version} has no embedded kuzu graph store (0.1.117 to "
                             "1.0.11 have one); run this release without --option graph=kuzu")
        if self.forget_path == "reset" and not f.native_reset:
            raise ValueError(f"option forget_path=reset: Memory.reset breaks a local qdrant in mem0ai {self.version} "
                             "(it works from 0.1.94); run this release with another forget_path")
        model = config["model"]
        if f.env_beats_config:  # before 0.1.12 the openai clients prefer these variables to the config
            os.environ["OPENAI_API_KEY"] = model["api_key"]
            os.environ["OPENAI_API_BASE"] = os.environ["OPENAI_BASE_URL"] = model["base_url"]
        self.dims = int(model.get("embedding_dims") or MEM0_DEFAULT_DIMS)
        embedder = {"model": model["embedding_model"], "api_key": model["api_key"]}
        llm = {"model": model["chat_model"], "api_key": model["api_key"]}
        if f.emb_base_url:
            embedder["openai_base_url"] = model["base_url"]
        if f.llm_base_url:
            llm["openai_base_url"] = model["base_url"]
        vectors = {"path": str(data / "qdrant")}  # mem0's default path is /tmp/qdrant, shared by every run
        if self.dims != MEM0_DEFAULT_DIMS:  # an embedder that cannot give mem0's default size (MiniLM: 384)
            embedder["embedding_dims"] = vectors["embedding_model_dims"] = self.dims
        self.on_disk = f.wipes_path  # before 1.0.8 a local path is deleted at start-up unless on_disk
        if self.on_disk:
            vectors["on_disk"] = True
        cfg = {
            "llm": {"provider": "openai", "config": llm},
            "embedder": {"provider": "openai", "config": embedder},
            "vector_store": {"provider": "qdrant", "config": vectors},
        }
        if preloaded:
            cfg["history_db_path"] = str(mem0_dir / "history.db")
        if f.set_v11:
            cfg["version"] = "v1.1"
        if self.graph_store == "kuzu":  # graph memory is opt-in; kuzu's default db ":memory:" is lost on a restart
            cfg["graph_store"] = {"provider": "kuzu", "config": {"db": str(data / "kuzu.db")}}
        self.owners_file = data / "owners.json"  # which memory ids each scope's writes produced
        self.owners_lock = threading.Lock()  # the adapter's own bookkeeping, never mem0's: concurrent writers share it
        self.m = Memory.from_config(cfg)
        self.graph = bool(getattr(self.m, "enable_graph", False))
        self.history_db = Path(self.m.config.history_db_path)

    # ------------------------------------------------------------------ helpers
    def _owners(self) -> dict:
        return json.loads(self.owners_file.read_text()) if self.owners_file.exists() else {}

    def _own(self, scope: str, results: list) -> list[str]:
        ids = [r["id"] for r in results if r.get("id")]
        with self.owners_lock:
            owners = self._owners()
            owners.setdefault(scope, [])
            owners[scope] += [i for i in ids if i not in owners[scope]]
            self.owners_file.write_text(json.dumps(owners))
        return ids

    def _search(self, query: str, scope: str, k: int | None = None):
        """mem0's search(); k None keeps its own default size (2.x top_k=20, before limit=100)."""
        if self.f.search_v2:
            return self.m.search(query, filters={"user_id": scope}, **({"top_k": k} if k else {}))
        return self.m.search(query, user_id=scope, **({"limit": k} if k else {}))

    def _history_rows(self) -> list[dict]:
        return compat.history_rows(self.history_db) if self.history_db.exists() else []

    def _add(self, scope: str, messages: list, infer: bool) -> list[str]:
        before = len(self._history_rows())
        out = self.m.add(messages, user_id=scope, **({"infer": infer} if self.f.infer else {}))
        got = [r for r in compat.results(out) if isinstance(r, dict) and r.get("id")]
        if not got:  # before 0.1.20 add() returns no ids: the history rows it wrote name them
            got = [{"id": r["memory_id"]} for r in self._history_rows()[before:] if r.get("memory_id")]
        return self._own(scope, got)

    def _session_scope(self, scope: str) -> str:
        """The messages table's key for a scope, built by mem0's own function (2.x main._build_session_scope)."""
        try:
            from mem0.memory.main import _build_session_scope
        except ImportError:
            return f"user_id={scope}"
        return _build_session_scope({"user_id": scope})

    def _messages(self, scope: str) -> list[str]:
        if not self.f.messages_table or not self.history_db.exists():
            return []  # before 2.0 mem0 keeps no raw message table
        con = sqlite3.connect(self.history_db)
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='messages'").fetchone():
                return []
            rows = con.execute("SELECT role, content FROM messages WHERE session_scope = ? ORDER BY rowid",
                               (self._session_scope(scope),)).fetchall()
        finally:
            con.close()
        return [f"{role}: {content}" for role, content in rows]

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        stores = [
            {"name": "vector-store", "kind": "vector", "role": "primary",
             "description": "qdrant local: the memories and their embeddings (nearest neighbour on the needle)"},
            {"name": "history-db", "kind": "sql", "role": "primary",
             "description": "sqlite history log: ADD/UPDATE/DELETE rows with old and new text"},
        ]
        if self.graph:
            stores.append({"name": "graph-store", "kind": "graph", "description": "embedded kuzu: entity relations"})
        if self.f.messages_table:
            stores.append({"name": "messages-table", "kind": "buffer", "role": "primary",
                           "description": "the raw messages mem0 2.x keeps per scope and shows the next extraction"})
        return {
            "system": {"name": "mem0", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated" if self.forget_path == "delete" else "supported",
                           "reason": FORGET_PATHS[self.forget_path]},
                "update": {"support": "emulated", "reason": "search-then-update by memory id"},
                "run_background_jobs": no("mem0 library mode has no background job: add() extracts, embeds and stores "
                                          "before it returns (no queue, no consolidation, no re-extraction)"),
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": no("mem0 OSS has no share or export to another user"),
                "import_history": {"support": "supported"} if self.f.infer else
                no("this release's add() has no infer=False (from 0.1.69): every write is extracted"),
                "write_concurrent": {"support": "supported"},
            },
            "doors": [{"name": "search", "description": "search() at its default size, its result as JSON with every field "
                                                        "mem0 returns, as mem0's MCP servers hand it to an agent"}],
            "stores": stores,
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at", "recorded_at"],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        """Every setting that is not mem0's default, and why it cannot be."""
        notes = [
            f"mem0ai {self.version} in library mode (Memory.from_config), qdrant local, sqlite history DB",
            "the LLM and the embedder are mem0's openai providers pointed at the memmatrix model gateway "
            "(openai_base_url, api_key, model names); in oracle mode the gateway answers from the case files' gold "
            "facts (a perfect extractor)",
            "MEM0_TELEMETRY=False and MEM0_DIR set to the run's data directory before mem0 is imported (offline: "
            "telemetry would call PostHog, and ~/.mem0 would be shared by every run)",
            "qdrant path under the run's data directory (mem0's default /tmp/qdrant is shared by every run)",
            "mem0 OSS accepts no event time: the harness clock cannot be passed, wall-clock stamps are masked as "
            "volatile",
        ]
        if self.dims != MEM0_DEFAULT_DIMS:
            notes.append(f"embedding_dims {self.dims}: the gateway's embedder gives {self.dims} dimensions, "
                         f"not mem0's default {MEM0_DEFAULT_DIMS}")
        if self.graph:
            notes.append("graph memory enabled (option graph=kuzu; mem0's default has none): graph_store kuzu, its db "
                         "a file under the run's data directory (kuzu's default :memory: is lost when the system "
                         "restarts)")
        elif self.f.kuzu:
            notes.append("graph memory off, mem0's default (graph_store unset); option graph=kuzu enables this "
                         "release's embedded kuzu graph store")
        notes.append(f"forget path: {self.forget_path} ({FORGET_PATHS[self.forget_path]})")
        if self.forget_path == "delete_all":
            notes += [why for flag, why in (
                (self.f.delete_all_wipes, "this release's delete_all ends with vector_store.reset(): it deletes "
                                          "every user's memories, not only the scope's (mem0ai/mem0#3746, "
                                          "fixed in 1.0.6 by #4349)"),
                (not self.f.delete_all_pages, "this release's delete_all lists the scope's memories once, at the "
                                              "vector store's default size (100 for qdrant): a scope holding more "
                                              "keeps the rest (mem0ai/mem0#6627, fixed in 2.0.15 by #6636)"),
            ) if flag]
        if self.forget_path == "reset":
            notes.append("forget_path reset erases every scope, the other users' included: a contrast to "
                         "delete_all, never a user's erasure")
        if self.f.messages_table and not self.f.reset_drops_messages:
            notes.append("the harness's reset between cases also empties the messages table (SQLiteManager.reset): "
                         "this release's Memory.reset drops only the history table")
        if self.f.messages_table:
            notes.append("without fastembed and spaCy: mem0 2.x's BM25 keyword scoring (fastembed's Qdrant/bm25 "
                         "model) and its entity linking and lemmatisation (spaCy's en_core_web_sm) download their "
                         "models at run time, which cannot happen offline, so search is semantic only (bm25_score "
                         "and entity_boost 0, as mem0 falls back when they are missing)")
        notes += [why for flag, why in (
            (not self.f.telemetry_switch, "no MEM0_TELEMETRY switch before 0.1.12: PostHog's client is disabled "
                                          "after import"),
            (self.f.env_beats_config, "before 0.1.12 the openai clients prefer OPENAI_API_KEY/OPENAI_API_BASE to the "
                                      "config: both are set to the gateway too"),
            (self.f.set_v11, "version v1.1 (this release defaults to v1.0, whose results are a bare list)"),
            (self.on_disk, "qdrant on_disk: this release deletes a local qdrant path at start-up otherwise, so a "
                           "restart would forget everything"),
            (not self.f.native_reset, "reset emulated (Memory.reset breaks a local qdrant before 0.1.94): the "
                                      "collection and the history table are emptied through mem0's own objects"),
        ) if flag]
        return notes

    def reset(self) -> None:
        if self.f.native_reset:
            self.m.reset()
            if self.graph and not self.f.reset_resets_graph:
                self.m.graph.reset()
            if self.f.messages_table and not self.f.reset_drops_messages:
                self.m.db.reset()  # 2.0.0-2.0.7: Memory.reset keeps the messages table; every store starts empty
        else:
            compat.emulated_reset(self.m, self.dims, self.on_disk)
        self.owners_file.unlink(missing_ok=True)

    def write(self, scope: str, at: str, messages: list) -> dict:
        return {"ids": self._add(scope, messages, infer=True)}

    def write_concurrent(self, scope: str, at: str, writes: list) -> dict:
        """Each write a Memory.add of its own on one Memory, from threads started together: two request handlers
        of one application, as mem0's own server runs them."""
        return {"writes": concurrently([lambda m=m: self.write(scope, at, m) for m in writes])}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """mem0's direct import path: add(infer=False) stores each message verbatim, no extraction."""
        return {"ids": self._add(scope, messages, infer=False), "path": "add(infer=False)"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "library mode: every call returns after its work is applied"}

    def _items(self, res: dict) -> list[dict]:
        """The items behind the door: each memory with the id and score mem0 gives it (mem0 exposes no qualifier:
        no status, no validity), and each graph relation (1.x)."""
        items = [{"id": r["id"], "text": r["memory"], "score": r.get("score"), "kind": "memory",
                  "created_at": r.get("created_at"), "updated_at": r.get("updated_at")}
                 for r in compat.results(res)]
        items += [{"text": _relation_line(rel), "kind": "relation"} for rel in compat.relations(res)]
        return items

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        res = self._search(query, scope)
        # what reaches the model is the search result itself, serialised as mem0's MCP server for the OSS library
        # does it (OpenMemory search_memory, v1.0.11: json.dumps(..., indent=2)); not a rendering of our own
        return {"text": json.dumps(res, indent=2, ensure_ascii=False, default=str), "items": self._items(res)}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [i for i in self._items(self._search(query, scope, k)) if i["kind"] == "memory"]}

    def _matching(self, scope: str, text: str) -> list[dict]:
        return [r for r in compat.results(self._search(text, scope, 20)) if coverage(text, r["memory"]) >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, text: str) -> dict:
        if self.forget_path == "delete_all":
            return {"ids": self._delete_all(scope)}
        if self.forget_path == "reset":
            return {"ids": self._reset_all()}
        ids = [r["id"] for r in self._matching(scope, text)]
        for mid in ids:
            self.m.delete(mid)
        return {"ids": ids}

    def _delete_all(self, scope: str) -> list[str]:
        """mem0's erasure of a user. It returns no ids; _delete_memory appends one DELETE row per memory it
        deletes, so the rows after the call name exactly what it removed."""
        before = len(self._history_rows())
        self.m.delete_all(user_id=scope)
        return [r["memory_id"] for r in self._history_rows()[before:] if r.get("event") == "DELETE" and r.get("memory_id")]

    def _reset_all(self) -> list[str]:
        """Memory.reset() returns nothing and drops the history: the ids are the memories of every scope the
        vector store held before it."""
        ids = [i for ids in self._owners().values() for i in ids]
        held = [i for i in dict.fromkeys(ids) if self.m.vector_store.get(vector_id=i) is not None]
        self.m.reset()
        if self.graph and not self.f.reset_resets_graph:
            self.m.graph.reset()
        return held

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        hits = self._matching(scope, text)[:1]
        for r in hits:
            self.m.update(r["id"], new_text)  # positional: the parameter is `data` before 2.0.12, `text` after
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
            text = needle["text"]
            vec = self.m.embedding_model.embed(text, "search") if self.f.embed_action else self.m.embedding_model.embed(text)
            # positional: 2.x calls the count top_k, before it is limit; before 0.1.74 there is no query text
            hits = (self.m.vector_store.search(text, vec, 1, {"user_id": scope}) if self.f.vs_text_first
                    else self.m.vector_store.search(vec, 1, {"user_id": scope}))
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
            rels = self.m.graph.get_all({"user_id": scope}, limit=1000) if self.graph else []
            lines = [_relation_line(r) for r in rels]
            hits = [ln for ln in lines if contains(ln, token)]
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def close(self) -> None:
        try:
            compat.close(self.m, self.f)
        except Exception:
            pass
