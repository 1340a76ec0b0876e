"""MemPalace (PyPI mempalace) in library mode: verbatim conversation drawers, no model on the write path.

How MemPalace keeps a conversation: its Claude Code hook (hooks_cli._ingest_transcript) mines the session
transcript, a Claude Code JSONL file, with ``mempalace mine <transcript> --mode convos --wing <wing>``: the
convo miner normalises it and files each exchange (a user turn and the reply) verbatim as a drawer in the
palace (ChromaDB), embedded by the configured embedder. Here every write is one session transcript in that
format (each line stamped with the harness time, which MemPalace takes as the drawer's authored_at) mined by
the same tool (mcp_server.tool_mine, which wraps the CLI's miner); the wing is the scope. The door is the
MCP tool an agent calls, mempalace_search (tool_search) for the scope's wing at its default size, its result
as the MCP server hands it over (json.dumps(result, indent=2, ensure_ascii=False), mcp_server/protocol.py).

Embeddings: MemPalace's default model (ONNX MiniLM) downloads at run time, so the palace uses its own
``openai-compat`` embedder pointed at the memmatrix gateway. Nothing else is changed.

Option ``memory`` (system.yaml ``options``): ``drawers`` (the default above) or ``kg``: MemPalace's knowledge graph,
which nothing on the conversation path writes (only its MCP tools do), so it is agent memory. A write is one agent
turn: the adapter hands the conversation to the model behind the gateway with the facts the graph holds
(``mempalace_kg_timeline``) and the current time, offering the three tools MemPalace publishes for writing it
(``mempalace_kg_add``, ``mempalace_kg_supersede``, ``mempalace_kg_invalidate``: their names, descriptions and input
schemas as ``tools/list`` gives them), and runs the calls it returns through the same handlers. Each scope is a
palace of its own (``--palace``: the graph lives in the palace, and has no wing). The door is
``mempalace_kg_timeline`` for the scope's palace (every fact, with ``valid_from`` and ``valid_to``); forget
invalidates the current facts whose object the request names (the graph has no delete). ``datetime`` inside
``mempalace.knowledge_graph`` is the harness clock: triple ids hash the instant a triple was recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

FORGET_COVERAGE = 0.8  # a drawer is what the request names when it holds 80% of the request's content words
FORGET_SEARCH = 20     # how many drawers the forget bridge looks through
DATA_MARK = "<data>"
AUDIT_DETAIL = ("drawer_id", "deleted_ids", "content_preview", "content_length", "wing", "room")   # the run's data directory, as it appears in paths MemPalace returns
#: the adapter's options (system.yaml `options`), each with its choices, the vendor's default first
OPTIONS = {"memory": ("drawers", "kg")}
#: the tools the agent's turn offers in kg mode: MemPalace's own for writing its knowledge graph
KG_WRITE_TOOLS = ("mempalace_kg_add", "mempalace_kg_supersede", "mempalace_kg_invalidate")
KG_AGENT = (
    "You are an assistant with a long-term memory: MemPalace's knowledge graph, written with its tools. The current "
    "time is {at}. These facts are in the knowledge graph now (mempalace_kg_timeline):\n<knowledge_graph>\n{facts}\n"
    "</knowledge_graph>\nRecord what the user's messages say that is worth remembering: add a new fact with "
    "mempalace_kg_add, replace a fact whose value changed with mempalace_kg_supersede, and mark a fact that is no "
    "longer true with mempalace_kg_invalidate, giving the current time as valid_from, at or ended.")


class _HarnessClock:
    """``datetime`` as ``mempalace.knowledge_graph`` sees it: ``now()`` is the harness time of the operation under way
    (triple ids hash the instant a triple is recorded; supersede without ``at`` closes the old fact at now)."""

    def __init__(self, real):
        self.real, self.at = real, real(2000, 1, 1)

    def now(self, tz=None):
        return self.at if tz is None else self.at.replace(tzinfo=tz)

    def __call__(self, *args, **kwargs):
        return self.real(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _leaves(value: str, token: str) -> list[str]:
    """The strings in ``value`` that hold the token: the value itself, or the string leaves of a JSON value (a
    row's metadata holds run-specific numbers, inodes and mtimes, beside the text)."""
    try:
        obj = json.loads(value)
    except ValueError:
        return [value]
    out, todo = [], [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            todo += list(x.values())
        elif isinstance(x, list):
            todo += x
        elif isinstance(x, str) and contains(x, token):
            out.append(x)
    return out or [value]


class MemPalaceAdapter:
    def __init__(self, config: dict):
        self.version = installed("mempalace")
        self.data = Path(config["data_dir"]).resolve() / "mempalace"
        self.palace, self.cfg, self.home = self.data / "palace", self.data / "config", self.data / "home"
        self.sessions = self.data / "sessions"
        for d in (self.palace, self.cfg, self.home, self.sessions):
            d.mkdir(parents=True, exist_ok=True)
        model = config["model"]
        base = model["base_url"].rstrip("/")
        os.environ.update({  # read when mempalace is imported and at every embedder build
            "HOME": str(self.home), "MEMPALACE_CONFIG_DIR": str(self.cfg), "MEMPALACE_PALACE_PATH": str(self.palace),
            "MEMPALACE_EMBEDDING_MODEL": "openai-compat", "MEMPALACE_EMBEDDING_API_URL": base,
            "MEMPALACE_EMBEDDING_API_MODEL": model["embedding_model"], "MEMPALACE_EMBEDDING_API_KEY": model["api_key"],
        })
        options = {k: str(v) for k, v in (config.get("options") or {}).items()}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"option {key!r} is not one of MemPalace's adapter options {sorted(OPTIONS)}")
            if value not in OPTIONS[key]:
                raise ValueError(f"option {key}={value!r} is not one of {list(OPTIONS[key])}")
        self.kg = options.get("memory", OPTIONS["memory"][0]) == "kg"
        self.model = model
        import mempalace.mcp_server as mcp
        self.mcp = mcp
        if self.kg:
            import mempalace.knowledge_graph as knowledge_graph
            self.clock = _HarnessClock(knowledge_graph.datetime if not isinstance(knowledge_graph.datetime, _HarnessClock)
                                       else knowledge_graph.datetime.real)
            knowledge_graph.datetime = self.clock

    # ------------------------------------------------------------------ helpers
    def _clean(self, text: str) -> str:
        """Paths under the run's data directory, written as <data>: where a run keeps its files is not memory."""
        return text.replace(str(self.data.parent), DATA_MARK)

    def _scope_dir(self, scope: str) -> Path:
        d = self.sessions / scope
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _next(self, scope: str, prefix: str, suffix: str) -> Path:
        d = self._scope_dir(scope)
        n = len(list(d.glob(f"{prefix}-*{suffix}"))) + 1
        return d / f"{prefix}-{n:04d}{suffix}"

    def _col(self):
        col = self.mcp._get_collection(create=True)
        if col is None:
            raise RuntimeError(f"MemPalace cannot open the palace at {self.palace}")
        return col

    def _mine(self, path: Path, scope: str) -> list[str]:
        out = self.mcp.tool_mine(source=str(path), mode="convos", wing=scope)
        if not out.get("success"):
            raise RuntimeError(f"mempalace mine {path.name} failed: {out.get('error')} {out.get('output', '')[-400:]}")
        got = self._col().get(where={"source_file": str(path)}, include=["metadatas"])
        # in the transcript's order: ids hash the file's absolute path, so their own order changes from run to run
        order = sorted(zip(got["ids"], got["metadatas"]), key=lambda p: ((p[1] or {}).get("chunk_index", -1), p[0]))
        return [i for i, _ in order]

    def _search(self, query: str, scope: str, limit: int | None = None) -> dict:
        res = self.mcp.tool_search(query=query, wing=scope, **({"limit": limit} if limit else {}))
        if "error" in res:
            raise RuntimeError(f"mempalace_search failed: {res['error']}")
        return json.loads(self._clean(json.dumps(res, ensure_ascii=False)))

    def _scope_drawers(self, scope: str) -> list[tuple[str, str, dict]]:
        """Every drawer of the scope: filed in its wing, or swept from its session transcripts (the sweeper files
        drawers with no wing)."""
        col, out = self._col(), {}
        for where in ({"wing": scope}, {"ingest_mode": "sweep"}):
            got = col.get(where=where, include=["documents", "metadatas"])
            for i, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                if where.get("wing") or str(meta.get("source_file", "")).startswith(str(self.sessions / scope) + os.sep):
                    out[i] = (i, doc or "", meta or {})
        return sorted(out.values(), key=lambda d: (d[2].get("source_file", ""), d[2].get("chunk_index", -1),
                                                   d[2].get("message_uuid", ""), d[1]))

    # ------------------------------------------------------------------ the knowledge graph (memory=kg)
    def _palace_of(self, scope: str) -> Path:
        return self.data / "kg" / scope

    def _use(self, scope: str, at: str | None = None) -> None:
        """Point the MCP server at the scope's palace (what its --palace flag does), on the harness clock."""
        path = self._palace_of(scope)
        path.mkdir(parents=True, exist_ok=True)
        self.mcp._apply_server_flags(palace=str(path))
        if at is not None:
            from datetime import datetime, timezone
            self.clock.at = datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)

    def _kg_call(self, name: str, args: dict) -> dict:
        """A KG tool as the MCP server dispatches it: its handler, with the arguments its input schema declares."""
        tool = self.mcp.TOOLS[name]
        known = (tool["input_schema"].get("properties") or {}).keys()
        out = tool["handler"](**{k: v for k, v in args.items() if k in known})
        if not isinstance(out, dict) or out.get("success") is False or "error" in out:
            raise RuntimeError(f"{name} {json.dumps(args, ensure_ascii=False)} failed: {out}")
        return out

    def _timeline(self, scope: str, limit: int = 100) -> dict:
        self._use(scope)
        return self._kg_call("mempalace_kg_timeline", {"limit": limit})

    def _agent_turn(self, scope: str, at: str, messages: list) -> list[str]:
        """One turn of an agent keeping the user's knowledge graph: the model is offered MemPalace's KG write tools,
        the facts the graph holds and the time; the calls it makes are run through the tools' handlers."""
        import urllib.request
        facts = self._timeline(scope)["timeline"]
        tools = [{"type": "function", "function": {"name": n, "description": self.mcp.TOOLS[n]["description"],
                                                   "parameters": self.mcp.TOOLS[n]["input_schema"]}}
                 for n in KG_WRITE_TOOLS]
        system = KG_AGENT.format(at=at, facts=json.dumps(facts, indent=2, ensure_ascii=False))
        body = {"model": self.model["chat_model"], "tools": tools, "tool_choice": "auto",
                "messages": [{"role": "system", "content": system},
                             *({"role": m["role"], "content": m["content"]} for m in messages)]}
        request = urllib.request.Request(self.model["base_url"].rstrip("/") + "/chat/completions",
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {self.model['api_key']}"})
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.loads(response.read())
        calls = (reply["choices"][0]["message"].get("tool_calls") or [])
        ids = []
        self._use(scope, at)
        for call in calls:
            name = call["function"]["name"]
            if name not in KG_WRITE_TOOLS:
                raise RuntimeError(f"the model called {name!r}, which the turn did not offer")
            out = self._kg_call(name, json.loads(call["function"]["arguments"] or "{}"))
            ids.append(out.get("triple_id") or out.get("fact"))
        return ids

    @staticmethod
    def _fact_items(facts: list[dict]) -> list[dict]:
        return [{"text": f"{f['subject']} → {f['predicate']} → {f['object']}", "kind": "fact",
                 "valid_from": f.get("valid_from"), "valid_to": f.get("valid_to")} for f in facts]

    def _kg_door(self, scope: str, limit: int = 100) -> dict:
        out = self._timeline(scope, limit)
        return {"text": json.dumps(out, indent=2, ensure_ascii=False), "items": self._fact_items(out["timeline"])}

    def _kg_forget(self, scope: str, at: str, text: str) -> list[str]:
        """Invalidate, at the harness time, every fact still open whose object the request names."""
        ended = []
        for f in self._timeline(scope)["timeline"]:
            if f.get("valid_to") is None and contains(text, f["object"]):
                self._use(scope, at)
                self._kg_call("mempalace_kg_invalidate", {"subject": f["subject"], "predicate": f["predicate"],
                                                          "object": f["object"], "ended": at})
                ended.append(f"{f['subject']} → {f['predicate']} → {f['object']}")
        return ended

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        return self._kg_capabilities() if self.kg else self._drawer_capabilities()

    def _kg_capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "mempalace", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": "search-then-invalidate: mempalace_kg_timeline, then "
                           "mempalace_kg_invalidate (ended: the harness time) of every open fact whose object the "
                           "request names; the knowledge graph has no delete"},
                "update": no("a changed fact is the agent's mempalace_kg_supersede, made in a write; an update of one "
                             "text to another names no triple"),
                "run_background_jobs": no("MemPalace runs no job over the knowledge graph (the sweeper and sync file "
                                          "and prune drawers)"),
                "probe": {"support": "supported"},
                "audit": no("the write-ahead log records KG calls but names no palace, and each scope is one"),
                "share": no("the knowledge graph has no share or copy to another palace"),
                "import_history": no("the knowledge graph is written only by an agent's tool calls; MemPalace imports "
                                     "conversations into drawers, not into the graph"),
            },
            "doors": [{"name": "kg_timeline", "description": "mempalace_kg_timeline for the scope's palace at its "
                                                             "default size (100 facts), the result as the MCP server "
                                                             "hands it to an agent"}],
            "stores": [
                {"name": "kg-sqlite", "kind": "sql", "role": "primary",
                 "description": "every table of the scope's palace's knowledge_graph.sqlite3 (entities and triples), "
                                "read with SQL"},
                {"name": "write-log", "kind": "log",
                 "description": "MemPalace's write-ahead log of operations (config/wal/write_log.jsonl), where every "
                                "KG call is recorded with its parameters"},
            ],
            "background_jobs": [],
            "qualifiers": ["valid_from", "valid_to"],
            "volatile_fields": [],
            "notes": self._kg_notes(),
        }

    def _kg_notes(self) -> list[str]:
        return [
            f"mempalace {self.version} in library mode, option memory=kg (the default is drawers): the knowledge "
            "graph, written by an agent through MemPalace's MCP tools; nothing in MemPalace writes it from a "
            "conversation (the miners file drawers)",
            "write: one agent turn emulated by the adapter: the conversation, after a system message with the current "
            "(harness) time and the facts mempalace_kg_timeline returns, sent to the model behind the memmatrix gateway "
            "with the tools mempalace_kg_add, mempalace_kg_supersede and mempalace_kg_invalidate (names, descriptions "
            "and input schemas as MemPalace publishes them); every call the model returns is run through the tool's "
            "handler, with the arguments its schema declares",
            "each scope is a palace of its own (MemPalace's --palace, applied with _apply_server_flags): the graph "
            "lives in the palace and has no wing",
            "the door: mempalace_kg_timeline of the scope's palace (limit 100, no entity: every fact), its result "
            "verbatim; the items are its facts as 'subject → predicate → object' with valid_from and valid_to "
            "(MemPalace's own 'current' field is valid_to IS NULL, which does not read a valid_to still ahead)",
            "forget: mempalace_kg_invalidate, ended at the harness time, of every open fact whose object the request "
            "names (the graph has no delete; an invalidated fact stays in the timeline)",
            "datetime inside mempalace.knowledge_graph is the harness clock: a triple's id hashes the instant it was "
            "recorded, so ids repeat from run to run",
            "embedder openai-compat pointed at the memmatrix model gateway (not used by the knowledge graph)",
            "MEMPALACE_CONFIG_DIR and HOME under the run's data directory",
        ]

    def _drawer_capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "mempalace", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": "search-then-delete: mempalace_search in the scope's "
                           "wing, then mempalace_delete_drawer on every drawer stating the request (MemPalace deletes "
                           "by drawer id)"},
                "update": {"support": "emulated", "reason": "search-then-update: mempalace_update_drawer on the drawer "
                           "stating the request, its words replaced by the new ones"},
                "run_background_jobs": {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": no("MemPalace has no share or copy of drawers to another wing (tunnels link rooms for "
                            "navigation; search stays in the wing it is given)"),
                "import_history": {"support": "supported"},
            },
            "doors": [{"name": "search", "description": "mempalace_search for the scope's wing at its default size "
                                                        "(5), the result as the MCP server hands it to an agent"}],
            "stores": [
                {"name": "drawers", "kind": "vector", "role": "primary",
                 "description": "the palace's drawer collection (ChromaDB): verbatim exchanges and their embeddings, "
                                "the scope's wing and what the sweeper filed from its transcripts"},
                {"name": "chroma-sqlite", "kind": "sql",
                 "description": "every table of the palace's chroma.sqlite3 (the embeddings queue, metadata, the "
                                "full-text index), read with SQL"},
                {"name": "write-log", "kind": "log",
                 "description": "MemPalace's write-ahead log of operations (config/wal/write_log.jsonl)"},
            ],
            "background_jobs": [{"name": "sweep"}],
            "qualifiers": [],
            "volatile_fields": ["created_at", "filed_at", "last_modified", "source_mtime", "recorded_at"],
            "notes": self._notes(),
        }

    def _notes(self) -> list[str]:
        return [
            f"mempalace {self.version} in library mode: the MCP server's tools called in process "
            "(mempalace.mcp_server), ChromaDB palace (its default backend)",
            "embedder openai-compat pointed at the memmatrix model gateway (MEMPALACE_EMBEDDING_API_URL, _MODEL, "
            "_KEY): MemPalace's default ONNX MiniLM downloads from the Hugging Face hub at run time, which cannot "
            "happen offline",
            "MEMPALACE_CONFIG_DIR, MEMPALACE_PALACE_PATH and HOME under the run's data directory (MemPalace's "
            "default ~/.mempalace would be shared by every run)",
            "write: each conversation is one Claude Code JSONL session transcript, every line stamped with the harness "
            "time, mined with mempalace_mine mode=convos into the scope's wing (what the Claude Code hook does at "
            "the end of a session); the transcript files stay where the hook would find them",
            "import_history: the material as a plain-text transcript (the '> ' format of normalize.py, as chat "
            "exports are converted), mined the same way; it carries no time",
            "run_background_jobs: the sweeper (mempalace sweep, a daemon job kind) over every session transcript; "
            "mempalace sync is not run: it prunes drawers of project files and leaves conversation drawers alone",
            "the run's data directory is written <data> in paths MemPalace returns, so transcripts do not depend on "
            "where a run keeps its files",
            "the door text leaves out the search result's `query` field: the agent's own query echoed back (asked "
            "for a value by name, the echo would count as the value remembered); every other field is as returned",
            "drawer ids hash the transcript file's absolute path (mempalace.ids.make_convo_drawer_id), which holds "
            "the run's data directory: a re-run gets other drawer ids in the door text (the items' ids are renumbered "
            "as always), so its transcript hash differs while every answer and verdict is the same",
            "the knowledge graph, diary and closets are not written by the conversation miner and are not probed",
        ]

    def reset(self) -> None:
        if self.kg:  # back to the run's palace before the scopes' palaces go
            self.mcp._apply_server_flags(palace=str(self.palace))
        self.mcp.tool_reconnect()
        for child in self.data.iterdir():
            if child != self.cfg:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        (self.cfg / "wal" / "write_log.jsonl").unlink(missing_ok=True)  # its folder stays: MemPalace makes it once
        for d in (self.palace, self.home, self.sessions):
            d.mkdir(parents=True, exist_ok=True)
        self.mcp.tool_reconnect()

    def write(self, scope: str, at: str, messages: list) -> dict:
        if self.kg:
            return {"ids": self._agent_turn(scope, at, messages)}
        path = self._next(scope, "session", ".jsonl")
        session = path.stem
        with path.open("w", encoding="utf-8") as f:
            for i, m in enumerate(messages):
                f.write(json.dumps({"type": m["role"], "uuid": f"{session}-{i:03d}", "sessionId": session,
                                    "timestamp": at, "message": {"role": m["role"], "content": m["content"]}},
                                   ensure_ascii=False) + "\n")
        return {"ids": self._mine(path, scope)}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        path = self._next(scope, "import", ".txt")
        lines = []
        for m in messages:
            text = m["content"].strip()
            lines.append("> " + text.replace("\n", "\n> ") if m["role"] == "user" else text)
        path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
        return {"ids": self._mine(path, scope), "path": "mempalace_mine mode=convos (plain-text transcript export)"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "library mode: mining and deletes are applied before the tool returns"}

    def _items(self, res: dict) -> list[dict]:
        return [{"id": r["drawer_id"], "text": r["text"], "score": r.get("similarity"), "kind": "drawer",
                 "authored_at": r.get("authored_at"), "created_at": r.get("created_at"), "filed_at": r.get("filed_at")}
                for r in res.get("results", [])]

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        if self.kg:
            return self._kg_door(scope)
        res = self._search(query, scope)
        shown = {k: v for k, v in res.items() if k != "query"}  # the agent's own query, echoed back: not memory
        return {"text": json.dumps(shown, indent=2, ensure_ascii=False), "items": self._items(res)}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        if self.kg:
            return {"items": self._kg_door(scope, k)["items"]}
        return {"items": self._items(self._search(query, scope, k))}

    def forget(self, scope: str, at: str, text: str) -> dict:
        if self.kg:
            return {"ids": self._kg_forget(scope, at, text)}
        hits = [r for r in self._search(text, scope, FORGET_SEARCH)["results"]
                if coverage(text, r["text"]) >= FORGET_COVERAGE]
        ids = []
        for r in hits:
            out = self.mcp.tool_delete_drawer(r["drawer_id"])
            if not out.get("success"):
                raise RuntimeError(f"mempalace_delete_drawer {r['drawer_id']} failed: {out.get('error')}")
            ids.append(r["drawer_id"])
        return {"ids": ids}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        hits = [r for r in self._search(text, scope, FORGET_SEARCH)["results"]
                if coverage(text, r["text"]) >= FORGET_COVERAGE][:1]
        for r in hits:
            content = r["text"].replace(text, new_text) if text in r["text"] else new_text
            out = self.mcp.tool_update_drawer(r["drawer_id"], content=content)
            if not out.get("success"):
                raise RuntimeError(f"mempalace_update_drawer {r['drawer_id']} failed: {out.get('error')}")
        return {"ids": [r["drawer_id"] for r in hits]}

    def run_background_jobs(self, at: str) -> dict:
        from mempalace.sweeper import sweep
        for path in sorted(self.sessions.glob("*/*.jsonl")):
            sweep(str(path), str(self.palace), source_label=str(path))
        self.mcp.tool_reconnect()  # the sweeper wrote through its own handle
        return {"jobs": ["sweep"]}

    def _wal(self) -> list[dict]:
        path = self.cfg / "wal" / "write_log.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    @staticmethod
    def _wal_wing(entry: dict) -> str | None:
        params = entry.get("params") or {}
        return params.get("wing") or (params.get("deleted_meta") or {}).get("wing")

    def audit(self, scope: str) -> dict:
        # MemPalace stamps wall-clock times, not the harness clock: at is null, the stamp is kept as recorded_at
        return {"events": [{"event": e.get("operation"), "memory_id": (e.get("params") or {}).get("drawer_id"),
                            "actor": (e.get("params") or {}).get("added_by"), "at": None,
                            "recorded_at": e.get("timestamp"),
                            "detail": {k: v for k, v in (e.get("params") or {}).items() if k in AUDIT_DETAIL}}
                           for e in self._wal() if self._wal_wing(e) == scope]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if self.kg and store == "kg-sqlite":
            self._use(scope)
            hits = self._sqlite_hits(self._palace_of(scope) / "knowledge_graph.sqlite3", token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        if store == "drawers":
            drawers = self._scope_drawers(scope)
            items = [{"id": i, "text": doc, "kind": f"drawer ({meta.get('ingest_mode', '?')})"}
                     for i, doc, meta in drawers if contains(doc, token)]
            near = self._col().query(query_texts=[needle["text"]], n_results=1, where={"wing": scope},
                                     include=["documents", "distances"]) if drawers else None
            evidence = [i["text"] for i in items]
            distance = None
            if near and near["ids"] and near["ids"][0]:
                distance = round(float(near["distances"][0][0]), 6)
                evidence.append(near["documents"][0][0] or "")
            return {"state": "present" if items else "absent", "evidence": evidence, "items": items,
                    "distance": distance}
        if store == "chroma-sqlite":
            hits = self._sqlite_hits(self.palace / "chroma.sqlite3", token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        if store == "write-log":
            hits = [self._clean(json.dumps(e, ensure_ascii=False)) for e in self._wal()
                    if contains(json.dumps(e, ensure_ascii=False), token)]
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    @staticmethod
    def _sqlite_hits(db: Path, token: str) -> list[str]:
        """Every text value in any table of the database that holds the token, as 'table: value'."""
        if not db.exists():
            return []
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        hits = []
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            for table in tables:
                try:
                    rows = con.execute(f'SELECT * FROM "{table}"').fetchall()
                except sqlite3.Error:
                    continue  # an FTS shadow table or virtual table this sqlite cannot read
                for row in rows:
                    for value in row:
                        if isinstance(value, bytes):
                            value = value.decode("utf-8", "ignore")
                        if isinstance(value, str) and contains(value, token):
                            hits += [f"{table}: {leaf}" for leaf in _leaves(value, token)]
        finally:
            con.close()
        return sorted(set(hits))

    def close(self) -> None:
        try:
            self.mcp.tool_reconnect()
        except Exception:
            pass
