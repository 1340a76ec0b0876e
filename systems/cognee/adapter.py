"""Cognee (PyPI cognee) in library mode: documents become a knowledge graph (add + cognify) over SQLite
(relational), LanceDB (vectors) and Ladybug (graph), one dataset per scope.

How Cognee keeps a conversation: ``cognee.add`` stores it as a document of the scope's dataset and
``cognee.cognify`` chunks it, summarises each chunk and extracts a knowledge graph from it (two structured model
calls per chunk), embedding chunks, summaries, entities and edges. The door is what Cognee hands its answering
model for ``cognee.search`` at its defaults (HYBRID_COMPLETION, top_k 15) on the scope's dataset: the context it
builds (``only_context=True``), which is the text that reaches the model. Forget is ``cognee.forget`` of every
document of the dataset that states the request (Cognee deletes documents, with what was derived from them).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import os
import sqlite3
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

FORGET_COVERAGE = 0.8  # a document is what the request names when it holds 80% of the request's content words


def _leaves(obj, token: str) -> list[str]:
    """The strings inside ``obj`` (dicts, lists, JSON text) that hold the token."""
    out, todo = [], [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            todo += list(x.values())
        elif isinstance(x, (list, tuple)):
            todo += list(x)
        elif isinstance(x, str):
            if x[:1] in "[{":  # JSON, or a Python repr (Cognee keeps search results and run info as reprs)
                try:
                    todo.append(json.loads(x))
                    continue
                except ValueError:
                    try:
                        todo.append(ast.literal_eval(x))
                        continue
                    except (ValueError, SyntaxError, MemoryError, RecursionError):
                        pass
            if contains(x, token):
                out.append(x)
    return out


class CogneeAdapter:
    def __init__(self, config: dict):
        self.version = installed("cognee")
        root = Path(config["data_dir"]).resolve() / "cognee"
        self.root = root
        dirs = {"HOME": root / "home", "DATA_ROOT_DIRECTORY": root / "data", "SYSTEM_ROOT_DIRECTORY": root / "system",
                "CACHE_ROOT_DIRECTORY": root / "cache", "COGNEE_LOGS_DIR": root / "logs"}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        (root / "empty.env").touch()
        litellm = Path(importlib.util.find_spec("litellm").submodule_search_locations[0])
        model = config["model"]
        base = model["base_url"].rstrip("/")
        os.environ.update({k: str(v) for k, v in dirs.items()})
        os.environ.update({
            "COGNEE_ENV_FILE": str(root / "empty.env"),   # a .env in the working directory would override ours
            "TIKTOKEN_CACHE_DIR": str(litellm / "litellm_core_utils" / "tokenizers"),  # litellm ships the encodings
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COGNEE_SKIP_CONNECTION_TEST": "true", "TELEMETRY_DISABLED": "1",
            "LLM_PROVIDER": "openai", "LLM_MODEL": "gpt-4o-mini", "LLM_ENDPOINT": base, "LLM_API_KEY": model["api_key"],
            "EMBEDDING_PROVIDER": "openai", "EMBEDDING_MODEL": "openai/text-embedding-3-small",
            "EMBEDDING_ENDPOINT": base, "EMBEDDING_API_KEY": model["api_key"],
            "EMBEDDING_DIMENSIONS": str(int(model.get("embedding_dims") or 1536)),
            "CACHING": "false", "LOG_LEVEL": "CRITICAL", "LLM_ARGS": json.dumps({"timeout": 60}),
        })
        self.loop = asyncio.new_event_loop()
        import cognee
        self.cognee = cognee
        self._fail_fast()

    @staticmethod
    def _fail_fast() -> None:
        """Cognee retries a failed model call until two attempts and 240 s have both passed (retry_config.py, no
        setting): a failure here is recorded as an ERROR at once instead."""
        from tenacity import stop_after_attempt, wait_none
        from cognee.infrastructure.llm import retry_config as rc
        rc.llm_retry_stop_condition.stops[1].max_delay = 0
        rc.llm_retry_stop_condition.stops[0].max_attempt_number = 1
        from cognee.infrastructure.llm.structured_output_framework.litellm_native.native_adapter import \
            NativeLiteLLMAdapter
        from cognee.infrastructure.databases.vector.embeddings.LiteLLMEmbeddingEngine import LiteLLMEmbeddingEngine
        for fn in (NativeLiteLLMAdapter.acreate_structured_output, LiteLLMEmbeddingEngine.embed_text):
            retry = getattr(fn, "retry", None)
            if retry is not None:
                retry.wait = wait_none()
                if fn is LiteLLMEmbeddingEngine.embed_text:
                    retry.stop = stop_after_attempt(1)

    def _run(self, coro):
        return self.loop.run_until_complete(coro)

    # ------------------------------------------------------------------ helpers
    async def _dataset(self, scope: str):
        if not self._relational().exists():  # nothing was ever added: Cognee has not created its database
            return None
        for ds in await self.cognee.datasets.list_datasets():
            if ds.name == scope:
                return ds
        return None

    async def _documents(self, scope: str) -> list[tuple[object, object, str]]:
        """(dataset id, data id, the document's text) of every document of the scope's dataset."""
        ds = await self._dataset(scope)
        if ds is None:
            return []
        out = []
        for data in await self.cognee.datasets.list_data(ds.id):
            path = str(data.raw_data_location).removeprefix("file://")
            text = Path(path).read_text(encoding="utf-8") if Path(path).exists() else ""
            out.append((ds.id, data.id, text))
        return out

    def _relational(self) -> Path:
        return self.root / "system" / "databases" / "cognee_db"

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "cognee", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": "cognee.forget deletes documents: every document of the "
                           "scope's dataset that states the request is forgotten"},
                "update": no("cognee.update replaces a document's whole text; memmatrix's update names a statement"),
                "run_background_jobs": no("cognify runs on every write; improve and memify have nothing to do "
                                          "without session memory (off here)"),
                "probe": {"support": "supported"},
                "audit": no("Cognee records pipeline runs and searches, not deletions"),
                "share": no("no share of documents between datasets here (access control grants whole datasets)"),
                "import_history": no("one write path for conversations: add + cognify"),
            },
            "doors": [{"name": "search", "description": "the context cognee.search builds for its answering model at "
                                                        "its defaults (HYBRID_COMPLETION, top_k 15) on the scope's "
                                                        "dataset (only_context=True)"}],
            "stores": [
                {"name": "graph", "kind": "graph", "description": "the dataset's Ladybug graph: every node's and "
                                                                   "edge's properties"},
                {"name": "vectors", "kind": "vector", "description": "every LanceDB collection of the dataset "
                                                                      "(chunks, summaries, entities, edge facts), rows "
                                                                      "and payloads"},
                {"name": "relational", "kind": "sql", "description": "Cognee's SQLite database (documents, pipeline "
                                                                      "runs, search history), every table"},
                {"name": "raw-files", "kind": "text", "role": "primary",
                 "description": "the documents' files under the data root"},
            ],
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at"],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        return [
            f"cognee {self.version} in library mode (add, cognify, search, forget), its default stores: SQLite, "
            "LanceDB, Ladybug; access control on (one database per dataset), one dataset per scope",
            "the model and the embedder are litellm's openai provider pointed at the memmatrix model gateway; "
            "LLM_MODEL names gpt-4o-mini, a model litellm knows, so cognify asks for strict json_schema output (its "
            "path for such models); the gateway answers whatever the name",
            "CACHING=false: session memory (on by default) would add a model call to every completion search and "
            "carry earlier answers into later prompts; the door builds the context only",
            "TIKTOKEN_CACHE_DIR set to the encodings litellm ships, LITELLM_LOCAL_MODEL_COST_MAP, "
            "COGNEE_SKIP_CONNECTION_TEST and TELEMETRY_DISABLED: offline, nothing is downloaded or reported",
            "HOME and every Cognee directory under the run's data directory; COGNEE_ENV_FILE an empty file",
            "cognee's retry of a failed model or embedding call (two attempts and 240 s at least) is cut to one "
            "attempt, so a failure is recorded at once; LLM_ARGS timeout 60 s",
            "a write is one document: the conversation as 'role: text' lines",
            "the door text leaves out the context's first line, 'The question is: `<query>`' (the query echoed back: "
            "asked for a value by name, the echo would count as the value remembered); the rest is as built",
        ]

    def reset(self) -> None:
        if not self._relational().exists():
            return  # nothing was ever added

        async def go():
            for ds in await self.cognee.datasets.list_datasets():
                await self.cognee.forget(dataset_id=ds.id)
        self._run(go())
        db = self._relational()
        if db.exists():  # pipeline runs and search history keep text forget leaves: a new case starts without them
            con = sqlite3.connect(db)
            try:
                for table in ("pipeline_runs", "queries", "results"):
                    con.execute(f'DELETE FROM "{table}"')
                con.commit()
            except sqlite3.Error:
                pass
            finally:
                con.close()

    def write(self, scope: str, at: str, messages: list) -> dict:
        text = "\n".join(f"{m['role']}: {m['content']}" for m in messages)

        async def go():
            added = await self.cognee.add(text, dataset_name=scope)
            await self.cognee.cognify(datasets=[scope])
            return [str(i["data_id"]) for i in (added.data_ingestion_info or [])]
        return {"ids": self._run(go())}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "add and cognify return after the pipeline has run"}

    def _search(self, query: str, scope: str, **kw):
        async def go():
            if await self._dataset(scope) is None:
                return None
            return await self.cognee.search(query_text=query, datasets=[scope], **kw)
        return self._run(go())

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        res = self._search(query, scope, only_context=True)
        contexts = [r.get("search_result") if isinstance(r, dict) else getattr(r, "search_result", r)
                    for r in res or []]
        text = "\n\n".join(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False, default=str)
                           for c in contexts)
        echo = f"The question is: `{query}`\n"  # the prompt's first line: the agent's own query, not memory
        return {"text": text.removeprefix(echo), "items": []}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        from cognee import SearchType
        res = self._search(query, scope, query_type=SearchType.CHUNKS, top_k=k)
        items = []
        for r in res or []:
            rows = r.get("search_result") if isinstance(r, dict) else getattr(r, "search_result", [])
            for row in rows or []:
                items.append({"id": str(row.get("id")), "text": row.get("text", ""), "score": row.get("score"),
                              "kind": "chunk"})
        return {"items": items}

    def forget(self, scope: str, at: str, text: str) -> dict:
        async def go():
            ids = []
            for ds_id, data_id, doc in await self._documents(scope):
                if coverage(text, doc) >= FORGET_COVERAGE:
                    await self.cognee.forget(data_id=data_id, dataset_id=ds_id)
                    ids.append(str(data_id))
            return ids
        return {"ids": self._run(go())}

    # ------------------------------------------------------------------ probes
    async def _in_dataset(self, scope: str, fn):
        ds = await self._dataset(scope)
        if ds is None:
            return []
        from cognee.context_global_variables import set_database_global_context_variables
        from cognee.modules.users.methods import get_default_user
        user = await get_default_user()
        async with set_database_global_context_variables(ds.id, user.id):
            return await fn()

    async def _graph_hits(self, token: str) -> list[str]:
        from cognee.infrastructure.databases.graph import get_graph_engine
        nodes, edges = await (await get_graph_engine()).get_graph_data()
        hits = []
        for _, props in nodes:
            hits += [f"node {props.get('type')}: {s}" for s in _leaves(props, token)]
        for _, _, rel, *props in edges:
            hits += [f"edge {rel}: {s}" for s in _leaves(props, token)]
        return sorted(set(hits))

    async def _vector_hits(self, token: str) -> list[str]:
        from cognee.infrastructure.databases.vector import get_vector_engine
        engine = get_vector_engine()
        hits = []
        for name in sorted(await (await engine.get_connection()).table_names()):
            rows = await (await engine.get_collection(name)).query().to_list()
            for row in rows:
                hits += [f"{name}: {s}" for s in _leaves(row.get("payload"), token)]
        return sorted(set(hits))

    def _relational_hits(self, token: str) -> list[str]:
        db = self._relational()
        if not db.exists():
            return []
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        hits = []
        try:
            for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").fetchall():
                for row in con.execute(f'SELECT * FROM "{table}"').fetchall():
                    for value in row:
                        if isinstance(value, bytes):
                            value = value.decode("utf-8", "ignore")
                        if isinstance(value, str):
                            hits += [f"{table}: {s}" for s in _leaves(value, token)]
        finally:
            con.close()
        return sorted(set(hits))

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "graph":
            hits = self._run(self._in_dataset(scope, lambda: self._graph_hits(token)))
        elif store == "vectors":
            hits = self._run(self._in_dataset(scope, lambda: self._vector_hits(token)))
        elif store == "relational":
            hits = self._relational_hits(token)
        elif store == "raw-files":
            root = self.root / "data"
            hits = sorted(f"{p.name}: {t}" for p in root.rglob("*") if p.is_file()
                          for t in [p.read_text(encoding="utf-8", errors="ignore")] if contains(t, token))
        else:
            raise KeyError(f"no store {store!r}")
        return {"state": "present" if hits else "absent", "evidence": hits}

    def close(self) -> None:
        try:
            self.loop.close()
        except Exception:
            pass
