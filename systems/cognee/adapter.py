"""Cognee (PyPI cognee) in library mode: documents become a knowledge graph (add + cognify) over SQLite
(relational), LanceDB (vectors) and Ladybug (graph), one dataset per scope.

How Cognee keeps a conversation: ``cognee.add`` stores it as a document of the scope's dataset and
``cognee.cognify`` chunks it, summarises each chunk and extracts a knowledge graph from it (two structured model
calls per chunk), embedding chunks, summaries, entities and edges. The door is what Cognee hands its answering
model for ``cognee.search`` at its defaults (HYBRID_COMPLETION, top_k 15) on the scope's dataset: the context it
builds (``only_context=True``), which is the text that reaches the model. Forget is ``cognee.forget`` of every
document of the dataset that states the request (Cognee deletes documents, with what was derived from them).

Options (system.yaml), each default Cognee's own: ``forget_path=dataset`` keeps each conversation in a dataset of its
own (``<scope>--<n>``; the door and recall search every dataset of the scope) and forgets with
``cognee.forget(dataset=...)`` every dataset whose document states the request; ``write_path=session`` writes with
``cognee.remember(text, dataset_name=, session_id=<scope>)`` (session memory on, as Cognee ships it: the text goes to
the session cache and a background improve bridges the session into the graph; settle awaits it), the door's search
given the scope's session; ``functional_relationships=seen`` and ``contradiction_detection=on`` turn on cognify's
opt-in supersession and contradiction passes (cognee 1.5.0 to 1.6.4; 1.6.5 removed both).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import json
import os
import sqlite3
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

FORGET_COVERAGE = 0.8  # a document is what the request names when it holds 80% of the request's content words
SEP = "--"  # a dataset of its own per conversation (forget_path=dataset): <scope>--<n>
#: relationship names that structure the graph rather than state a fact: never declared functional
STRUCTURAL = {"contains", "is_part_of", "made_from", "exists_in", "is_a", "contradicts", "ends_at"}
OPTIONS = {
    "forget_path": {
        "data": "cognee.forget(data_id=, dataset_id=) of every document of the scope's dataset that states the request",
        "dataset": "cognee.forget(dataset=<name>) of every dataset of the scope whose document states the request "
                   "(each conversation is a dataset of its own, <scope>--<n>)",
    },
    "write_path": {
        "document": "cognee.add + cognee.cognify: the conversation a document of the dataset (session memory off)",
        "session": "cognee.remember(text, dataset_name=, session_id=<scope>): the session cache, bridged into the graph "
                   "by the background improve (session memory on, Cognee's default)",
    },
    "functional_relationships": {
        "off": "cognify at its default (no relationship declared functional)",
        "seen": "cognify(functional_relationships=<every non-structural relationship name already in the scope's "
                "graph>): older targets of those relationships tagged superseded",
    },
    "contradiction_detection": {
        "off": "CONTRADICTION_DETECTION at its default (false)",
        "on": "CONTRADICTION_DETECTION=true: cognify records contradicting facts as contradicts edges",
    },
    "provenance_tracking": {
        "off": "PROVENANCE_TRACKING at its default (false)",
        "on": "PROVENANCE_TRACKING=true: cognify appends document, chunk, entity and relationship lineage to the "
              "provenance_entries ledger; audit reads it",
    },
}


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


def _supersession(obj) -> str:
    """' (superseded: <reason>)' when an edge's properties (dicts, lists, JSON text) carry superseded=True, else ''."""
    todo = [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            if x.get("superseded") in (True, "true", "True", 1):
                return f" (superseded: {x.get('supersession_reason') or 'superseded'})"
            todo += list(x.values())
        elif isinstance(x, (list, tuple)):
            todo += list(x)
        elif isinstance(x, str) and x[:1] == "{":
            try:
                todo.append(json.loads(x))
            except ValueError:
                pass
    return ""


def _iso(value) -> str:
    """A ledger timestamp as ISO 8601 UTC with Z (the wire's time format)."""
    from datetime import datetime, timezone
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return "1970-01-01T00:00:00Z"
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class CogneeAdapter:
    def __init__(self, config: dict):
        self.version = installed("cognee")
        options = config.get("options") or {}
        self.opt = {k: str(options.get(k, next(iter(v)))) for k, v in OPTIONS.items()}
        for k, v in self.opt.items():
            if v not in OPTIONS[k]:
                raise ValueError(f"option {k}={v!r} is not one of {sorted(OPTIONS[k])}; pick one of those")
        self.session = self.opt["write_path"] == "session"
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
            "CACHING": "true" if self.session else "false", "LOG_LEVEL": "CRITICAL",
            "LLM_ARGS": json.dumps({"timeout": 60}),
        })
        if self.opt["contradiction_detection"] == "on":
            os.environ["CONTRADICTION_DETECTION"] = "true"
        if self.opt["provenance_tracking"] == "on":
            os.environ["PROVENANCE_TRACKING"] = "true"
        self.loop = asyncio.new_event_loop()
        import cognee
        self.cognee = cognee
        self._fail_fast()
        self._check_options()

    def _check_options(self) -> None:
        """An opt-in pass this release does not have is refused, never run as a no-op."""
        if self.opt["functional_relationships"] != "off" and \
                "functional_relationships" not in inspect.signature(self.cognee.cognify).parameters:
            raise ValueError(f"option functional_relationships={self.opt['functional_relationships']} needs "
                             f"cognify(functional_relationships=), which cognee {self.version} no longer has (removed "
                             "in 1.6.5); run cognee@1.6.4")
        if self.opt["contradiction_detection"] != "off":
            from cognee.modules.cognify.config import CognifyConfig
            if "contradiction_detection" not in CognifyConfig.model_fields:
                raise ValueError(f"option contradiction_detection=on needs CognifyConfig.contradiction_detection, "
                                 f"which cognee {self.version} no longer has (1.6.5 ignores the variable); run "
                                 "cognee@1.6.4")

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
        if self.session:  # what the last call left running in the background finishes first (see _notes)
            self.loop.run_until_complete(self.cognee.wait_for_background_tasks())
        return self.loop.run_until_complete(coro)

    # ------------------------------------------------------------------ helpers
    async def _datasets(self, scope: str) -> list:
        """The scope's datasets: the one named after it, or (forget_path=dataset) one per conversation."""
        if not self._relational().exists():  # nothing was ever added: Cognee has not created its database
            return []
        return sorted((ds for ds in await self.cognee.datasets.list_datasets()
                       if ds.name == scope or ds.name.startswith(scope + SEP)), key=lambda ds: ds.name)

    async def _documents(self, scope: str) -> list[tuple[object, str, object, str]]:
        """(dataset id, dataset name, data id, the document's text) of every document of the scope's datasets."""
        out = []
        for ds in await self._datasets(scope):
            for data in await self.cognee.datasets.list_data(ds.id):
                path = str(data.raw_data_location).removeprefix("file://")
                text = Path(path).read_text(encoding="utf-8") if Path(path).exists() else ""
                out.append((ds.id, ds.name, data.id, text))
        return out

    def _book(self) -> dict:
        """The adapter's own record: per scope, how many conversations it wrote and every dataset it made."""
        path = self.root / "book.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _new_dataset(self, scope: str) -> str:
        book = self._book()
        entry = book.setdefault(scope, {"n": 0})
        entry["n"] += 1
        (self.root / "book.json").write_text(json.dumps(book))
        return scope if self.opt["forget_path"] == "data" else f"{scope}{SEP}{entry['n']:04d}"

    async def _remember_dataset(self, scope: str, name: str) -> None:
        for ds in await self.cognee.datasets.list_datasets():
            if ds.name == name:
                book = self._book()
                book.setdefault(scope, {"n": 0}).setdefault("ids", {})[name] = str(ds.id)
                (self.root / "book.json").write_text(json.dumps(book))

    def _relational(self) -> Path:
        return self.root / "system" / "databases" / "cognee_db"

    def _cache_db(self) -> Path:
        return self.root / "system" / "databases" / "cache.db"

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        stores = [
            {"name": "graph", "kind": "graph", "description": "the scope's Ladybug graph (every dataset of the scope): "
                                                               "every node's and edge's properties"},
            {"name": "vectors", "kind": "vector", "description": "every LanceDB collection of the scope's datasets "
                                                                  "(chunks, summaries, entities, edge facts), rows "
                                                                  "and payloads"},
            {"name": "relational", "kind": "sql", "description": "Cognee's SQLite database (documents, pipeline "
                                                                  "runs, search history), every table"},
            {"name": "raw-files", "kind": "text", "role": "primary",
             "description": "the documents' files under the data root"},
        ]
        if self.session:
            stores.append({"name": "session-cache", "kind": "sql",
                           "description": "the session cache (cache.db beside the relational database: Q&A entries, "
                                          "traces, session context, key-value state), every row"})
        return {
            "system": {"name": "cognee", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": OPTIONS["forget_path"][self.opt["forget_path"]]},
                "update": no("cognee.update replaces a document's whole text; memmatrix's update names a statement"),
                "run_background_jobs": {"support": "supported"} if self.session else
                no("cognify runs on every write; improve and memify have nothing to do without session memory (off "
                   "here)"),
                "probe": {"support": "supported"},
                "audit": {"support": "supported"} if self.opt["provenance_tracking"] == "on" else
                no("Cognee records pipeline runs and searches, not deletions (the audit ledger, PROVENANCE_TRACKING, "
                   "is off by default: option provenance_tracking=on)"),
                "share": no("no share of documents between datasets here (access control grants whole datasets)"),
                "import_history": no("one write path for conversations: " + OPTIONS["write_path"][self.opt["write_path"]]),
            },
            "doors": [{"name": "search", "description": "the context cognee.search builds for its answering model at "
                                                        "its defaults (HYBRID_COMPLETION, top_k 15) on the scope's "
                                                        "datasets (only_context=True)"
                                                        + (", with the scope's session" if self.session else "")}],
            "stores": stores,
            "background_jobs": [{"name": "improve"}] if self.session else [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at"] + (
                ["at", "timestamp", "first_seen", "last_updated", "checksum", "previous_checksum"]
                if self.opt["provenance_tracking"] == "on" else []),  # the ledger's wall-clock times and hash chain
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        notes = [
            f"cognee {self.version} in library mode (add, cognify, search, forget), its default stores: SQLite, "
            "LanceDB, Ladybug; access control on (one database per dataset), "
            + ("one dataset per scope" if self.opt["forget_path"] == "data" else
               "one dataset per conversation (<scope>--<n>), searched together"),
            "the model and the embedder are litellm's openai provider pointed at the memmatrix model gateway; "
            "LLM_MODEL names gpt-4o-mini, a model litellm knows, so cognify asks for strict json_schema output (its "
            "path for such models); the gateway answers whatever the name",
            "CACHING=false: session memory (on by default) would add a model call to every completion search and "
            "carry earlier answers into later prompts; the door builds the context only" if not self.session else
            "session memory on (CACHING=true, Cognee's default; sqlite cache.db): writes go to the scope's session and "
            "the background improve bridges them into the graph. remember() returns before its bridge has run; the "
            "bridge runs on the adapter's event loop before the next call is served (every call, settle included, "
            "first awaits cognee.wait_for_background_tasks): the harness clock puts a minute or more between "
            "conversations, so each conversation's bridge has finished before the next arrives, and it is one "
            "document of the window it bridged (a loop on a thread would race the harness's next call, in wall time)",
            "TIKTOKEN_CACHE_DIR set to the encodings litellm ships, LITELLM_LOCAL_MODEL_COST_MAP, "
            "COGNEE_SKIP_CONNECTION_TEST and TELEMETRY_DISABLED: offline, nothing is downloaded or reported",
            "HOME and every Cognee directory under the run's data directory; COGNEE_ENV_FILE an empty file",
            "cognee's retry of a failed model or embedding call (two attempts and 240 s at least) is cut to one "
            "attempt, so a failure is recorded at once; LLM_ARGS timeout 60 s",
            "a write is one " + ("document" if not self.session else "remember() of the session")
            + ": the conversation as 'role: text' lines",
            "the door text leaves out the context's first line, 'The question is: `<query>`' (the query echoed back: "
            "asked for a value by name, the echo would count as the value remembered); the rest is as built",
            f"forget path (option forget_path={self.opt['forget_path']}): "
            + OPTIONS["forget_path"][self.opt["forget_path"]],
        ]
        if self.opt["forget_path"] == "dataset":
            notes.append("probes of a forgotten dataset read what is left on disk of its graph and vector databases "
                         "(<dataset id>.lbug*, <dataset id>.lance.db), byte for byte")
        if self.opt["provenance_tracking"] == "on":
            notes.append("audit: every row of the provenance_entries ledger as an event (its revision type, or "
                         "'invalidated' when the row is, else 'recorded'; the entity id; the agent; the row's "
                         "timestamp), the whole row beside it")
        for key in ("functional_relationships", "contradiction_detection", "provenance_tracking"):
            if self.opt[key] not in ("off",):
                notes.append(f"option {key}={self.opt[key]}: {OPTIONS[key][self.opt[key]]}")
        return notes

    def reset(self) -> None:
        if not self._relational().exists():
            return  # nothing was ever added

        async def go():
            await self.cognee.wait_for_background_tasks()
            for ds in await self.cognee.datasets.list_datasets():
                await self.cognee.forget(dataset_id=ds.id)
            if self.session:
                from cognee.infrastructure.databases.cache.get_cache_engine import get_cache_engine
                engine = get_cache_engine()
                if engine is not None:
                    await engine.prune()
        self._run(go())
        db = self._relational()
        if db.exists():  # pipeline runs, search history, session records and the audit ledger keep text forget
            con = sqlite3.connect(db)  # leaves: a new case starts without them
            try:
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                for table in ("pipeline_runs", "queries", "results", "session_records", "session_model_usage",
                              "provenance_entries"):
                    if table in tables:
                        con.execute(f'DELETE FROM "{table}"')
                con.commit()
            except sqlite3.Error:
                pass
            finally:
                con.close()
        (self.root / "book.json").unlink(missing_ok=True)

    def write(self, scope: str, at: str, messages: list) -> dict:
        text = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        name = self._new_dataset(scope)

        async def go():
            if self.session:
                result = await self.cognee.remember(text, dataset_name=name, session_id=scope)
                await self._remember_dataset(scope, name)
                return [f"{scope}:{result.status}"]
            added = await self.cognee.add(text, dataset_name=name)
            kwargs = {}
            if self.opt["functional_relationships"] == "seen":
                kwargs["functional_relationships"] = await self._seen_relationships(scope)
            await self.cognee.cognify(datasets=[name], **kwargs)
            await self._remember_dataset(scope, name)
            return [str(i["data_id"]) for i in (added.data_ingestion_info or [])]
        return {"ids": self._run(go())}

    async def _seen_relationships(self, scope: str) -> list[str]:
        """Every relationship name the scope's graph already holds, but the structural ones."""
        names: set[str] = set()
        for ds in await self._datasets(scope):
            async def edges():
                from cognee.infrastructure.databases.graph import get_graph_engine
                return (await (await get_graph_engine()).get_graph_data())[1]
            for _, _, rel, *_ in await self._in(ds, edges):
                names.add(rel)
        return sorted(names - STRUCTURAL)

    def settle(self, timeout_s: float) -> dict:
        if not self.session:
            return {"quiescent": True, "detail": "add and cognify return after the pipeline has run"}
        done = self.loop.run_until_complete(self.cognee.wait_for_background_tasks(timeout=timeout_s))
        return {"quiescent": bool(done), "detail": "cognee.wait_for_background_tasks: the session bridges "
                + ("finished" if done else f"still running after {timeout_s} s")}

    def _search(self, query: str, scope: str, **kw):
        async def go():  # a dataset left with no data has "no searchable memory" (NoDataError): not searched
            names = [ds.name for ds in await self._datasets(scope) if await self.cognee.datasets.list_data(ds.id)]
            if not names:
                return None
            if self.session:
                kw["session_id"] = scope
            return await self.cognee.search(query_text=query, datasets=names, **kw)
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
            ids, gone = [], set()
            for ds_id, ds_name, data_id, doc in await self._documents(scope):
                if coverage(text, doc) < FORGET_COVERAGE:
                    continue
                if self.opt["forget_path"] == "dataset":
                    if ds_name not in gone:
                        await self.cognee.forget(dataset=ds_name)
                        gone.add(ds_name)
                        ids.append(str(ds_id))
                else:
                    await self.cognee.forget(data_id=data_id, dataset_id=ds_id)
                    ids.append(str(data_id))
            return ids
        return {"ids": self._run(go())}

    def run_background_jobs(self, at: str) -> dict:
        if not self.session:
            raise RuntimeError("run_background_jobs is unsupported without session memory (option write_path=session)")

        async def go():
            for scope in sorted(self._book()):
                for ds in await self._datasets(scope):
                    await self.cognee.improve(dataset=ds.id, session_ids=[scope])
            await self.cognee.wait_for_background_tasks()
        self._run(go())
        return {"jobs": ["improve"]}

    def audit(self, scope: str) -> dict:
        if self.opt["provenance_tracking"] != "on":
            raise RuntimeError("audit is unsupported unless option provenance_tracking=on")
        db = self._relational()
        if not db.exists():
            return {"events": []}
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='provenance_entries'").fetchone():
                return {"events": []}
            rows = [dict(r) for r in con.execute("SELECT * FROM provenance_entries ORDER BY sequence_id, timestamp")]
        finally:
            con.close()
        events = []
        for r in rows:
            kind = "invalidated" if r.get("invalidated") else (r.get("revision_type") or "recorded")
            events.append({"event": f"{r.get('entity_type')}_{kind}", "memory_id": r.get("entity_id"),
                           "actor": r.get("agent_id"), "at": _iso(r.get("timestamp")), "record": r})
        return {"events": events}

    # ------------------------------------------------------------------ probes
    async def _in(self, ds, fn):
        from cognee.context_global_variables import set_database_global_context_variables
        from cognee.modules.users.methods import get_default_user
        user = await get_default_user()
        async with set_database_global_context_variables(ds.id, user.id):
            return await fn()

    async def _in_scope(self, scope: str, fn) -> list[str]:
        hits = []
        for ds in await self._datasets(scope):
            hits += await self._in(ds, fn)
        return hits

    async def _graph_hits(self, token: str) -> list[str]:
        from cognee.infrastructure.databases.graph import get_graph_engine
        nodes, edges = await (await get_graph_engine()).get_graph_data()
        hits = []
        for _, props in nodes:
            hits += [f"node {props.get('type')}: {s}" for s in _leaves(props, token)]
        for _, _, rel, *props in edges:
            tag = _supersession(props)  # functional_relationships: the tag resolve_temporal_contradictions writes
            hits += [f"edge {rel}: {s}{tag}" for s in _leaves(props, token)]
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

    def _left_on_disk(self, scope: str, live: set[str], suffixes: tuple[str, ...], token: str) -> list[str]:
        """What is left on disk of the scope's forgotten datasets' databases (forget_path=dataset), byte for byte."""
        gone = [i for name, i in (self._book().get(scope, {}).get("ids") or {}).items() if name not in live]
        hits = []
        base = self.root / "system" / "databases"
        for ds_id in gone:
            for path in sorted(base.rglob(f"{ds_id}*")):
                if any(path.name.startswith(ds_id + suf) for suf in suffixes):
                    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
                    for f in files:
                        if contains(f.read_bytes().decode("utf-8", "ignore"), token):
                            hits.append(f"left on disk by the forgotten dataset: {f.relative_to(base)}")
        return hits

    def _sqlite_hits(self, db: Path, token: str) -> list[str]:
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
        if store in ("graph", "vectors"):
            fn = self._graph_hits if store == "graph" else self._vector_hits
            hits = self._run(self._in_scope(scope, lambda: fn(token)))
            if self.opt["forget_path"] == "dataset":
                live = {ds.name for ds in self._run(self._datasets(scope))}
                hits += self._left_on_disk(scope, live, (".lbug",) if store == "graph" else (".lance.db",), token)
        elif store == "relational":
            hits = self._sqlite_hits(self._relational(), token)
        elif store == "session-cache" and self.session:
            hits = self._sqlite_hits(self._cache_db(), token)
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
