"""LangMem (PyPI langmem) with a LangGraph store: a memory manager that extracts, updates and consolidates
memories with tool calls, over a key-value + vector store.

How LangMem keeps a conversation: ``create_memory_store_manager`` reads the conversation, searches the store
for memories close to it, and asks the model to insert new memories (``Memory``) or patch existing ones
(``PatchDoc``), all in one call; the store is any LangGraph BaseStore. Here the store is LangGraph's
SqliteStore (persistent, vector search through sqlite-vec) in the run's data directory, the namespace
("memories", "{langgraph_user_id}") of LangMem's documentation with the scope as the user id, and the
manager runs on each conversation when it ends (what ReflectionExecutor does with no delay). The door is
the tool LangMem gives an agent to read its memories, ``create_search_memory_tool``, at its default size,
its output verbatim. Forget is the agent's own delete tool, ``create_manage_memory_tool`` with action
delete, on the memories found stating the request.

Options (system.yaml ``options``; the defaults are what LangMem's factory and the store do by default):

- ``memory_shape``: ``collection`` (the factory's default: one ``Memory`` per fact, inserted and patched) or
  ``profile`` (LangMem's profile pattern, docs/docs/guides/manage_user_profile.md: the manager built with one
  schema and ``enable_inserts=False``, so it keeps one document per user and patches it; the schema here is a
  ``Profile`` of attributes, one sentence each). A profile's forget removes the attributes stating the request
  and puts the document back: deleting the item would take the rest of the profile with it.
- ``forget_path``: ``delete`` (the manage tool's delete) or ``ttl``: the LangGraph store's expiry. The forget puts
  each memory stating the request back with its own value and a time to live of one second (``PutOp.ttl``, in
  minutes, on the wall clock: the harness clock cannot reach the store) and returns once it has expired; the
  background job is one pass of the store's TTL sweeper (``SqliteStore.sweep_ttl``, what ``start_ttl_sweeper``
  runs every ``sweep_interval_minutes``). The store has no ``TTLConfig``, so no read refreshes an expiry.
"""

from __future__ import annotations

import json
import uuid as _uuid
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

NAMESPACE = ("memories", "{langgraph_user_id}")
FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of the request's content words
FORGET_SEARCH = 20
#: the adapter's options (system.yaml `options`), each with its choices, the vendor's default first
OPTIONS = {"memory_shape": ("collection", "profile"), "forget_path": ("delete", "ttl")}
TTL_SECONDS = 1.0      # the time to live the ttl forget gives a memory (PutOp.ttl takes minutes)
EXPIRY_WAIT = 10.0     # how long the ttl forget waits, at most, for the store to see the memory expired


class _SeededUUID:
    """The ``uuid`` module as LangMem's modules see it, with ``uuid4`` drawn from the run's seed and a counter kept
    in the data directory: memory keys and session tags are the same in every run of the same ops (the model
    gateway's replay finds a request by its hash) and never repeat across restarts."""

    def __init__(self, seed: int, counter_file: Path):
        self._seed, self._file = seed, counter_file
        self._n = int(counter_file.read_text()) if counter_file.exists() else 0

    def __getattr__(self, name):
        return getattr(_uuid, name)

    def uuid4(self) -> _uuid.UUID:
        self._n += 1
        self._file.write_text(str(self._n))
        return _uuid.uuid5(_uuid.NAMESPACE_URL, f"memmatrix:{self._seed}:{self._n}")


def _profile_schema():
    """The profile schema of the ``profile`` shape (built on first use: pydantic lives in the system's environment)."""
    from pydantic import BaseModel, Field

    class Profile(BaseModel):
        """The user's current profile: one entry per attribute of the user (or of someone or something the user
        has), each the user's own statement of it, kept up to date as it changes."""

        attributes: dict[str, str] = Field(default_factory=dict, description=(
            "attribute name -> one sentence stating its current value, e.g. {\"home city\": \"I live in Oslo.\"}"))

    return Profile


def _content(value: dict) -> str:
    """A memory's text: the manager stores {"kind", "content": {"content": ...}}, the manage tool {"content": ...}."""
    inner = value.get("content")
    if isinstance(inner, dict):
        inner = inner.get("content")
    return inner if isinstance(inner, str) else json.dumps(value, ensure_ascii=False)


class LangMemAdapter:
    def __init__(self, config: dict):
        import pysqlite3.dbapi2 as sqlite3  # loads extensions (sqlite-vec) whatever Python the environment has
        from langchain_openai import ChatOpenAI, OpenAIEmbeddings
        from langgraph.store.sqlite import SqliteStore
        import langmem
        import langmem.knowledge.extraction as extraction
        import langmem.knowledge.tools as tools
        import langmem.utils as utils

        self.version = installed("langmem")
        options = {k: str(v) for k, v in (config.get("options") or {}).items()}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"option {key!r} is not one of LangMem's adapter options {sorted(OPTIONS)}")
            if value not in OPTIONS[key]:
                raise ValueError(f"option {key}={value!r} is not one of {list(OPTIONS[key])}")
        self.profile = options.get("memory_shape", OPTIONS["memory_shape"][0]) == "profile"
        self.ttl = options.get("forget_path", OPTIONS["forget_path"][0]) == "ttl"
        if self.profile and self.ttl:
            raise ValueError("forget_path=ttl expires whole items, and memory_shape=profile keeps one item per user: "
                             "the expiry would take the whole profile; run one option at a time")
        self.data = Path(config["data_dir"]) / "langmem"
        self.data.mkdir(parents=True, exist_ok=True)
        seeded = _SeededUUID(int(config.get("seed", 0)), self.data / "uuid-counter")
        for module in (extraction, tools, utils):
            module.uuid = seeded
        model = config["model"]
        self.dims = int(model.get("embedding_dims") or 1536)
        self.embeddings = OpenAIEmbeddings(model=model["embedding_model"], base_url=model["base_url"],
                                           api_key=model["api_key"], dimensions=self.dims,
                                           check_embedding_ctx_length=False)
        self.db = self.data / "store.sqlite"
        self.conn = sqlite3.connect(str(self.db), check_same_thread=False, isolation_level=None)
        self.store = SqliteStore(self.conn, index={"dims": self.dims, "embed": self.embeddings})
        self.store.setup()
        llm = ChatOpenAI(model=model["chat_model"], base_url=model["base_url"], api_key=model["api_key"])
        if self.profile:  # LangMem's profile pattern: one schema, no inserts once a document exists
            self.manager = langmem.create_memory_store_manager(llm, schemas=[_profile_schema()], enable_inserts=False,
                                                               namespace=NAMESPACE, store=self.store)
        else:
            self.manager = langmem.create_memory_store_manager(llm, namespace=NAMESPACE, store=self.store)
        self.manage = langmem.create_manage_memory_tool(namespace=NAMESPACE, store=self.store)
        self.search = langmem.create_search_memory_tool(namespace=NAMESPACE, store=self.store)

    @staticmethod
    def _cfg(scope: str) -> dict:
        return {"configurable": {"langgraph_user_id": scope}}

    @staticmethod
    def _ns(scope: str) -> tuple[str, str]:
        return ("memories", scope)

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "langmem", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": self._forget_how()},
                "update": {"support": "emulated", "reason": "search-then-update: the profile attribute stating the "
                           "request rewritten, the document put back" if self.profile else "search-then-update: the "
                           "manage tool's update on the memory stating the request"},
                "run_background_jobs": {"support": "supported"} if self.ttl else no(
                    "LangMem has no job over stored memories: the memory manager is the write path, run on each "
                    "conversation (ReflectionExecutor only delays it)"),
                "probe": {"support": "supported"},
                "audit": no("neither LangMem nor the LangGraph store records mutations"),
                "share": no("no share or copy between namespaces"),
                "import_history": no("one write path for conversations (the manager); the manage tool is the "
                                     "agent's own, called by a model inside a conversation, not an import"),
            },
            "doors": [{"name": "search_memory", "description": "LangMem's search tool for the scope's namespace "
                                                               "at its default size (10), its output verbatim"}],
            "stores": [
                {"name": "store-items", "kind": "sql", "role": "primary",
                 "description": "the LangGraph store's items in the scope's namespace (SqliteStore's store table)"},
                {"name": "store-vectors", "kind": "vector",
                 "description": "SqliteStore's store_vectors rows of the namespace, those of deleted items included "
                                "(nearest neighbour of the needle; a row whose item is gone has no text)"},
            ],
            "background_jobs": [{"name": "ttl-sweep"}] if self.ttl else [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at"],
            "notes": self._notes(),
        }

    def _forget_how(self) -> str:
        if self.ttl:
            return ("search-then-expire: the search tool, then every memory stating the request put back with its own "
                    f"value and ttl={TTL_SECONDS:g} s (PutOp.ttl); the forget returns once the store holds it expired, "
                    "and the TTL sweep (the background job) deletes it")
        if self.profile:
            return ("search-then-edit: the attributes of the profile that state the request removed and the document "
                    "put back (store.put), deleted when nothing is left (deleting it would take the whole profile)")
        return ("search-then-delete: the search tool, then the manage tool's delete on every memory stating the request "
                "(LangMem deletes by id)")

    def _notes(self) -> list[str]:
        shape = (
            f"langmem {self.version}: create_memory_store_manager(schemas=[Profile], enable_inserts=False), LangMem's "
            "profile pattern (docs/docs/guides/manage_user_profile.md): one document per user, created by the first "
            "conversation and patched (PatchDoc) by every later one; Profile is this adapter's schema, a dict of "
            "attributes each holding one sentence (option memory_shape=profile; the factory's default is a collection "
            "of Memory items), deletes off, query_limit 5, max_steps 1"
            if self.profile else
            f"langmem {self.version}: create_memory_store_manager with its defaults (inserts and updates, deletes "
            "off, query_limit 5, max_steps 1)")
        return [
            shape + ", the search and manage tools, namespace ('memories', '{langgraph_user_id}') with the scope as the "
            "user id",
            "the store is LangGraph's SqliteStore (langgraph-checkpoint-sqlite) in the run's data directory, "
            "connected as SqliteStore.from_conn_string does but through pysqlite3 (an sqlite3 that loads sqlite-vec "
            "whatever Python builds the environment); LangMem's examples use the in-memory store, which a restart "
            "would empty",
            "the chat model and the embedder are langchain-openai's ChatOpenAI and OpenAIEmbeddings pointed at the "
            "memmatrix model gateway; OpenAIEmbeddings with check_embedding_ctx_length=False (otherwise it downloads "
            "tiktoken's cl100k_base, which cannot happen offline)",
            "the manager runs on each conversation when it is written (ReflectionExecutor, LangMem's background "
            "runner, would run the same call after a delay)",
            "uuid4 inside langmem's modules is drawn from the run's seed and a counter kept with the store, so "
            "memory keys and the manager's session tags are the same in every run",
        ] + ([
            f"forget_path=ttl (option; the default is the manage tool's delete): the forget re-puts each memory stating "
            f"the request with ttl={TTL_SECONDS / 60:.6g} minutes (one second of wall time: SqliteStore stamps "
            "expires_at from the wall clock, which the harness clock cannot reach) and returns once the store holds it "
            "expired; run_background_jobs is one pass of SqliteStore.sweep_ttl(), the sweeper's iteration; the store "
            "is opened without a TTLConfig, so reads do not refresh an expiry (with refresh_on_read, the default of a "
            "TTLConfig, a read of an expired memory before the sweep would give it another second)",
        ] if self.ttl else [])

    def reset(self) -> None:
        for ns in self.store.list_namespaces(prefix=("memories",)):
            for item in self.store.search(ns, limit=100000):
                self.store.delete(ns, item.key)
        self.conn.execute("DELETE FROM store_vectors")  # and the rows deleted items left behind

    def write(self, scope: str, at: str, messages: list) -> dict:
        puts = self.manager.invoke({"messages": messages}, config=self._cfg(scope))
        return {"ids": [p["key"] for p in puts or []]}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "the manager and the store return after their work is applied"}

    def _found(self, query: str, scope: str, limit: int | None = None) -> tuple[str, list[dict]]:
        out = self.search.invoke({"query": query, **({"limit": limit} if limit else {})}, config=self._cfg(scope))
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        try:
            rows = json.loads(text)
        except ValueError:
            rows = []
        return text, rows if isinstance(rows, list) else []

    @staticmethod
    def _items(rows: list[dict]) -> list[dict]:
        return [{"id": r.get("key"), "text": _content(r.get("value") or {}), "score": r.get("score"),
                 "kind": (r.get("value") or {}).get("kind", "memory"), "created_at": r.get("created_at"),
                 "updated_at": r.get("updated_at")} for r in rows]

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        text, rows = self._found(query, scope)
        return {"text": text, "items": self._items(rows)}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": self._items(self._found(query, scope, k)[1])}

    def _matching(self, scope: str, text: str) -> list[dict]:
        return [r for r in self._found(text, scope, FORGET_SEARCH)[1]
                if coverage(text, _content(r.get("value") or {})) >= FORGET_COVERAGE]

    def _profiles(self, scope: str) -> list:
        """The scope's profile documents (the profile shape keeps one; a search finds it whatever the query)."""
        return [it for it in self.store.search(self._ns(scope), limit=100000)
                if isinstance(it.value.get("content"), dict) and isinstance(it.value["content"].get("attributes"), dict)]

    def _edit_profiles(self, scope: str, text: str, new_text: str | None) -> list[str]:
        """Remove (new_text None) or rewrite the attributes of the scope's profiles that state ``text``; put each
        document back (deleted when no attribute is left). Returns '<key>/<attribute>' of every attribute touched."""
        touched = []
        for item in self._profiles(scope):
            attributes = dict(item.value["content"]["attributes"])
            hits = [k for k, v in attributes.items() if isinstance(v, str) and coverage(text, v) >= FORGET_COVERAGE]
            if new_text is not None:
                hits = hits[:1]
            for k in hits:
                if new_text is None:
                    del attributes[k]
                else:
                    attributes[k] = new_text
                touched.append(f"{item.key}/{k}")
            if not hits:
                continue
            if attributes:
                self.store.put(self._ns(scope), item.key, {**item.value, "content": {**item.value["content"],
                                                                                       "attributes": attributes}})
            else:
                self.store.delete(self._ns(scope), item.key)
            if new_text is not None:
                break
        return touched

    def _expire(self, scope: str, keys: list[str]) -> None:
        """Put each memory back with its own value and a one-second ttl, then wait until the store holds it expired
        (SqliteStore compares expires_at with CURRENT_TIMESTAMP, which has whole seconds)."""
        import time
        ns = self._ns(scope)
        for key in keys:
            item = self.store.get(ns, key)
            if item is not None:
                self.store.put(ns, key, item.value, ttl=TTL_SECONDS / 60)
        prefix, marks = ".".join(ns), ",".join("?" * len(keys))
        deadline = time.monotonic() + EXPIRY_WAIT
        while keys:
            (live,) = self.conn.execute(
                f"SELECT COUNT(*) FROM store WHERE prefix = ? AND key IN ({marks}) AND "
                "(expires_at IS NULL OR expires_at >= CURRENT_TIMESTAMP)", (prefix, *keys)).fetchone()
            if not live:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{live} memories put with ttl={TTL_SECONDS:g} s had not expired after "
                                   f"{EXPIRY_WAIT:g} s of wall time")
            time.sleep(0.2)

    def forget(self, scope: str, at: str, text: str) -> dict:
        if self.profile:
            return {"ids": self._edit_profiles(scope, text, None)}
        ids = [r["key"] for r in self._matching(scope, text)]
        if self.ttl:
            self._expire(scope, ids)
            return {"ids": ids}
        for key in ids:
            self.manage.invoke({"action": "delete", "id": key}, config=self._cfg(scope))
        return {"ids": ids}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        if self.profile:
            return {"ids": self._edit_profiles(scope, text, new_text)}
        hits = self._matching(scope, text)[:1]
        for r in hits:
            self.manage.invoke({"action": "update", "id": r["key"], "content": new_text}, config=self._cfg(scope))
        return {"ids": [r["key"] for r in hits]}

    def run_background_jobs(self, at: str) -> dict:
        if not self.ttl:
            raise RuntimeError("run_background_jobs is unsupported unless forget_path=ttl (LangMem has no job)")
        self.store.sweep_ttl()
        return {"jobs": ["ttl-sweep"]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token, ns = needle["token"], self._ns(scope)
        if store == "store-items":
            items = [{"id": it.key, "text": _content(it.value), "kind": "item"}
                     for it in self.store.search(ns, limit=100000) if contains(json.dumps(it.value), token)]
            return {"state": "present" if items else "absent", "evidence": [i["text"] for i in items], "items": items}
        if store == "store-vectors":
            return self._nearest(ns, needle["text"], token)
        raise KeyError(f"no store {store!r}")

    def _nearest(self, ns: tuple[str, str], text: str, token: str) -> dict:
        """The namespace's stored vector nearest to the needle (cosine), live or left by a deleted item."""
        import struct
        want = self.embeddings.embed_query(text)
        prefix = ".".join(ns)
        rows = self.conn.execute("SELECT v.key, v.embedding, s.value FROM store_vectors v LEFT JOIN store s "
                                 "ON s.prefix = v.prefix AND s.key = v.key WHERE v.prefix = ?", (prefix,)).fetchall()
        best = None
        for key, blob, value in rows:
            vec = struct.unpack(f"{len(blob) // 4}f", blob)
            dot = sum(a * b for a, b in zip(want, vec))
            norms = (sum(a * a for a in want) ** 0.5) * (sum(b * b for b in vec) ** 0.5) or 1.0
            distance = round(1 - dot / norms, 6)
            if best is None or (distance, key) < (best[0], best[1]):
                best = (distance, key, value)
        if best is None:
            return {"state": "absent", "evidence": [], "distance": None}
        distance, key, value = best
        if value is None:  # the item is deleted, its vector is not: no text to show, only how close it is
            return {"state": "absent", "evidence": [], "distance": distance,
                    "detail": f"nearest vector belongs to deleted item {key}"}
        content = _content(json.loads(value))
        held = contains(content, token)
        return {"state": "present" if held else "absent", "evidence": [content], "distance": distance,
                "items": [{"id": key, "text": content, "kind": "item"}] if held else []}

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass
