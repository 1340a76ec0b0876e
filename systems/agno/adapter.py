"""Agno (PyPI agno): user memories kept by agno's MemoryManager over a SqliteDb.

How agno keeps a conversation: ``MemoryManager.create_user_memories`` reads the user's existing memories from
the db, puts them in its system prompt (``<existing_memories>``, "ID: ... / Memory: ..."), and gives the model
three tools, ``add_memory``, ``update_memory`` and ``delete_memory`` (``create_or_update_memories`` always enables
the delete tool and never the clear tool); the tools write the db directly, and the model is called again with
the tools' results until it stops calling tools. That is what an ``Agent`` with ``update_memory_on_run`` (or a
MemoryManager given to it) runs after each turn, and what agno's docs show for the standalone MemoryManager. Each
memory is one row of the SqliteDb's memories table (``agno_memories``): the text, the topics, and ``input``, the
user's messages the manager read when it wrote the row.

The door is what an agent gets: ``Agent.get_system_message`` for an Agent holding this MemoryManager, which puts
every memory of the user in ``<memories_from_previous_interactions>`` (``add_memories_to_context``, on by default
with a memory manager; agno does no retrieval there: every memory, whatever the question). Recall is
``MemoryManager.search_user_memories`` with its default method (``last_n``: the most recently updated). Forget is
``MemoryManager.delete_user_memory`` (agno deletes by id) on the memories stating the request; update is
``replace_user_memory`` on the one stating it.

Nothing here is a background job: agno's ``optimize_memories`` (summarise every memory of a user into one) is a
call an application or the AgentOS API makes on demand, never run by the manager or an agent.
"""

from __future__ import annotations

import json
import os
import re
import sys
import uuid as _uuid
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

os.environ.setdefault("AGNO_TELEMETRY", "false")  # agno's agents report usage to agno.com; nothing leaves loopback

DB_NAME = "agno.db"
MEMORY_TABLE = "agno_memories"  # SqliteDb's default memories table
FORGET_COVERAGE = 0.8  # a memory is what the request names when it holds 80% of the request's content words
EXCERPT = 120          # characters either side of a token found in the raw database bytes
_PRINTABLE = re.compile(r"[^\x00-\x08\x0b-\x1f\x7f]{4,}")


class _SeededUUID4:
    """``uuid.uuid4`` as agno's modules see it: memory ids drawn from the run's seed and a counter kept in the data
    directory, so the ids (and the manager's prompts that list them) are the same in every run of the same ops and
    never repeat across restarts. agno imports ``uuid4`` inside its tool functions (``from uuid import uuid4`` at
    call time), so the ``uuid`` module's attribute is replaced; callers outside agno get the real one."""

    def __init__(self, seed: int, counter_file: Path, real):
        self._seed, self._file, self._real = seed, counter_file, real
        self._n = int(counter_file.read_text()) if counter_file.exists() else 0

    def __call__(self) -> _uuid.UUID:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if not (caller == "agno" or caller.startswith("agno.")):
            return self._real()
        self._n += 1
        self._file.write_text(str(self._n))
        return _uuid.uuid5(_uuid.NAMESPACE_URL, f"memmatrix:agno:{self._seed}:{self._n}")


def _decoded(value):
    """A column as agno reads it: SqliteDb keeps memory and topics as JSON (a string as a JSON string)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str) and value[:1] in ('"', "[", "{"):
        try:
            loaded = json.loads(value)
        except ValueError:
            return value
        return loaded if isinstance(loaded, str) else json.dumps(loaded, ensure_ascii=False)
    return value


class AgnoAdapter:
    def __init__(self, config: dict):
        self.version = installed("agno")
        if config.get("options"):
            raise ValueError(f"agno's adapter has no options; got {sorted(config['options'])}")
        self.data = Path(config["data_dir"]) / "agno"
        self.data.mkdir(parents=True, exist_ok=True)
        self.db_file = self.data / DB_NAME
        real = _uuid.uuid4 if not isinstance(_uuid.uuid4, _SeededUUID4) else _uuid.uuid4._real
        _uuid.uuid4 = _SeededUUID4(int(config.get("seed", 0)), self.data / "uuid-counter", real)
        self.model_cfg = config["model"]
        self._open()

    def _open(self) -> None:
        from agno.agent import Agent
        from agno.db.sqlite import SqliteDb
        from agno.memory import MemoryManager
        from agno.models.openai import OpenAIChat

        m = self.model_cfg
        self.db = SqliteDb(db_file=str(self.db_file))
        model = OpenAIChat(id=m["chat_model"], base_url=m["base_url"], api_key=m["api_key"])
        # the MemoryManager's defaults: adds and updates on, the delete tool on in the write path, clear off
        self.manager = MemoryManager(model=model, db=self.db)
        # the agent an application builds around it; only its system message is asked for (no run, no model call)
        self.agent = Agent(model=model, db=self.db, memory_manager=self.manager, update_memory_on_run=True,
                           telemetry=False)
        self.agent.initialize_agent()  # what a run does first: sets add_memories_to_context (on, with a manager)

    def _close_db(self) -> None:
        try:
            self.db.Session.remove()
            self.db.db_engine.dispose()
        except Exception:
            pass

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "agno", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": (
                    "search-then-delete: the user's memories read with MemoryManager.get_user_memories, every one "
                    "stating the request deleted with MemoryManager.delete_user_memory (agno deletes by id)")},
                "update": {"support": "emulated", "reason": (
                    "search-then-replace: the memory stating the request rewritten with "
                    "MemoryManager.replace_user_memory")},
                "run_background_jobs": no(
                    "agno runs no job over stored memories: the MemoryManager is the write path, run on each "
                    "conversation; optimize_memories (summarise a user's memories into one) is a call an "
                    "application or the AgentOS API makes on demand, not a job"),
                "probe": {"support": "supported"},
                "audit": no("the memories table keeps created_at/updated_at on live rows only; a delete removes the "
                            "row and records nothing"),
                "share": no("memories belong to one user_id; agno has no share or copy between users"),
                "import_history": no("one write path for conversations (the MemoryManager); add_user_memory inserts "
                                     "a memory text as given, not material to extract from"),
            },
            "doors": [{"name": "agent_memories", "description": (
                "the system message agno's Agent builds for the user (Agent.get_system_message with this "
                "MemoryManager, add_memories_to_context on by default): every memory of the user in "
                "<memories_from_previous_interactions>, verbatim; agno does no retrieval, so the query plays no part")}],
            "stores": [
                {"name": "memories", "kind": "sql", "role": "primary", "description": (
                    "the user's rows of SqliteDb's memories table (agno_memories), every column: the memory, its "
                    "topics and input (the user's messages the manager read when it wrote the row)")},
                {"name": "sqlite-file", "kind": "other", "role": "primary", "description": (
                    "the bytes of the SQLite database file and its write-ahead log (SqliteDb opens it in WAL mode), "
                    "as a copy or backup of the data directory holds them: a deleted row lives on in free pages "
                    "until SQLite reuses them; shared by every user of the file")},
            ],
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": ["created_at", "updated_at"],
            "notes": [
                f"agno {self.version}: MemoryManager(model=OpenAIChat, db=SqliteDb) with its defaults (add_memories "
                "and update_memories on; create_user_memories offers add_memory, update_memory and delete_memory, "
                "never clear_memory; the default system prompt and memory_capture_instructions), user_id = the scope",
                f"the db is SqliteDb(db_file=<data_dir>/agno/{DB_NAME}) with its default tables; agno's own default is "
                "./agno.db in the working directory",
                "write: MemoryManager.create_user_memories(messages=<the conversation as agno Messages>, user_id=scope), "
                "the standalone MemoryManager call of agno's docs; an Agent with update_memory_on_run makes the same "
                "call with the turn's user message after each run. No Agent run is made, so no session history "
                "(agno_sessions) is stored and no answer model call is made",
                "door: Agent(model, db, memory_manager, update_memory_on_run=True).get_system_message for the scope's "
                "user: agno's own rendering of the memories an agent's model receives; the Agent is never run",
                "recall: MemoryManager.search_user_memories(limit=k, user_id=scope) with its default retrieval "
                "(last_n, most recently updated; the agentic method would call the model)",
                "the chat model is agno's OpenAIChat pointed at the memmatrix model gateway",
                "agno stamps memories with the wall clock (created_at, updated_at: epoch seconds) and takes no event "
                "time, so the harness clock does not reach it",
                "uuid4 called from agno's modules is drawn from the run's seed and a counter kept with the db, so "
                "memory ids are the same in every run",
                "AGNO_TELEMETRY=false in the adapter's process (agents otherwise report runs to agno.com; no agent "
                "runs here and only loopback is reachable)",
            ],
        }

    def reset(self) -> None:
        """Empty the store: the database file and its WAL removed, a fresh SqliteDb opened on the same path."""
        self._close_db()
        for suffix in ("", "-wal", "-shm", "-journal"):
            p = self.db_file.with_name(self.db_file.name + suffix)
            if p.exists():
                p.unlink()
        self._open()

    def _memories(self, scope: str) -> list:
        return self.manager.get_user_memories(user_id=scope) or []

    def write(self, scope: str, at: str, messages: list) -> dict:
        from agno.models.message import Message

        before = {m.memory_id: m.memory for m in self._memories(scope)}
        self.manager.create_user_memories(
            messages=[Message(role=m["role"], content=m["content"]) for m in messages], user_id=scope)
        after = self._memories(scope)
        return {"ids": [m.memory_id for m in after if before.get(m.memory_id) != m.memory]}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "the manager's tools write the db before create_user_memories returns"}

    @staticmethod
    def _item(m) -> dict:
        item = {"id": m.memory_id, "text": m.memory, "kind": "memory",
                "created_at": m.created_at, "updated_at": m.updated_at}
        if m.topics:
            item["topics"] = list(m.topics)
        return item

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        from agno.run import RunContext
        from agno.session import AgentSession

        session = AgentSession(session_id=f"memmatrix-{scope}", user_id=scope)
        msg = self.agent.get_system_message(session, run_context=RunContext(
            run_id="memmatrix-door", session_id=session.session_id, user_id=scope))
        text = msg.get_content_string() if msg is not None else ""
        return {"text": text, "items": [self._item(m) for m in self._memories(scope)]}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        found = self.manager.search_user_memories(limit=k, user_id=scope) or []
        return {"items": [self._item(m) for m in found]}

    def _matching(self, scope: str, text: str) -> list:
        return [m for m in self._memories(scope) if coverage(text, m.memory or "") >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, text: str) -> dict:
        ids = [m.memory_id for m in self._matching(scope, text)]
        for memory_id in ids:
            self.manager.delete_user_memory(memory_id=memory_id, user_id=scope)
        return {"ids": ids}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        from agno.db.schemas import UserMemory

        hits = self._matching(scope, text)[:1]
        for m in hits:
            self.manager.replace_user_memory(memory_id=m.memory_id, user_id=scope, memory=UserMemory(
                memory=new_text, topics=m.topics, input=m.input, created_at=m.created_at))
        return {"ids": [m.memory_id for m in hits]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "memories":
            return self._rows(scope, token)
        if store == "sqlite-file":
            hits = self._raw_hits(token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def _rows(self, scope: str, token: str) -> dict:
        """The scope's rows of the memories table whose any column holds the token, read with SQL (read-only)."""
        import sqlite3
        if not self.db_file.exists():
            return {"state": "absent", "evidence": []}
        con = sqlite3.connect(f"file:{self.db_file}?mode=ro", uri=True)
        try:
            if not con.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (MEMORY_TABLE,)).fetchone():
                return {"state": "absent", "evidence": []}
            cur = con.execute(f'SELECT * FROM "{MEMORY_TABLE}" WHERE user_id = ? ORDER BY rowid', (scope,))
            cols = [d[0] for d in cur.description]
            rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        finally:
            con.close()
        evidence, items = [], []
        for row in rows:
            row = {c: _decoded(v) for c, v in row.items()}
            held = {c: v for c, v in row.items() if isinstance(v, str) and contains(v, token)}
            if not held:
                continue
            evidence.append("; ".join(f"{c}: {v}" for c, v in held.items()))
            items.append({"id": row.get("memory_id"), "text": row.get("memory") or "", "kind": "memory",
                          **({"input": row["input"]} if "input" in held else {})})
        return {"state": "present" if evidence else "absent", "evidence": evidence, "items": items}

    def _raw_hits(self, token: str) -> list[str]:
        """Text around every occurrence of the token in the bytes of the database file and its WAL."""
        out = []
        for suffix in ("", "-wal"):
            p = self.db_file.with_name(self.db_file.name + suffix)
            if not p.exists():
                continue
            text = p.read_bytes().decode("utf-8", "replace")
            for run in _PRINTABLE.findall(text):
                if not contains(run, token):
                    continue
                low = run.lower()
                at = low.find(token.lower())
                if at < 0:  # held in another form (escaped, accented): the run itself, cut
                    out.append(f"{p.name}: {run[:2 * EXCERPT]}")
                while at >= 0:
                    out.append(f"{p.name}: {run[max(0, at - EXCERPT):at + len(token) + EXCERPT]}")
                    at = low.find(token.lower(), at + len(token))
        return list(dict.fromkeys(out))

    def close(self) -> None:
        self._close_db()
