"""OpenAI Agents SDK (PyPI openai-agents, import agents): a session as the memory of an Agent run.

How the SDK remembers: a ``Session`` keeps the conversation items of one session id; before each run the Runner
reads them (``get_items``) and puts them before the new input, after each run it stores the run's new items
(``add_items``). ``SQLiteSession`` is the session the SDK's documentation starts with, here file-backed in the
run's data directory (its default is ``:memory:``, which a restart would empty), one session id per memmatrix
scope, its default tables and settings (no item limit).

- ``write``: the conversation is the input of a turn, saved as the Runner saves it: the SDK's own
  ``save_result_to_session`` (normalisation, dedupe by stable ids, ``add_items``) with no new run items, since no
  model is asked to answer the turn. The session keeps messages whole, as they were said: it extracts nothing.
- ``door``: what an Agent run is given from the session: the SDK's ``prepare_input_with_session`` for the query
  (history, then the query), the history part rendered as one ``role: text`` line per item.
- ``forget``: the SDK deletes only by ``pop_item`` (the most recent item) and ``clear_session``: the items stating
  the request are popped off the tail, the items after them put back with ``add_items`` (emulated); with the option
  ``forget_path=clear``, the session is cleared and every item not stating the request put back.
- ``probe``: ``session-items`` reads the scope's items back (``get_items``); ``sqlite-file`` reads the bytes of the
  session database and its write-ahead log, where a deleted row's text can outlive the delete.
- ``import_history``: ``session.add_items`` called directly, as the SDK's docs show for adding items by hand
  (the Runner's save is the other path).

The SDK has no background job over a session's items; its model-driven session (``OpenAIResponsesCompactionSession``)
calls the Responses API's ``responses.compact`` endpoint, which the model gateway does not serve (NOTES.md).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
from importlib.metadata import version as installed
from pathlib import Path

from adapterkit import contains, coverage

FORGET_COVERAGE = 0.8   # an item is what the request names when it holds 80% of the request's content words
DB_NAME = "sessions.sqlite"
#: the adapter's options (system.yaml `options`), each with its choices, the default first
OPTIONS = {"forget_path": ("pop", "clear")}
EXCERPT = 100           # characters of the file each side of a raw-bytes hit
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_RECORD = re.compile(r'\{"[^{}\x00-\x08\x0b-\x1f\x7f]*\}')   # one stored item: a flat JSON object
_PRINTABLE = re.compile(r"[^\x00-\x08\x0b-\x1f\x7f]{8,}")


def _text(item) -> str:
    """The text an input item carries: a message's content (a string, or its parts' text), else the item as JSON."""
    if not isinstance(item, dict):
        return str(item)
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    import json
    return json.dumps(item, ensure_ascii=False, sort_keys=True)


def _role(item) -> str:
    if isinstance(item, dict):
        return str(item.get("role") or item.get("type") or "item")
    return "item"


class OpenAIAgentsAdapter:
    def __init__(self, config: dict):
        from agents import SQLiteSession
        from agents.run_internal.session_persistence import prepare_input_with_session, save_result_to_session

        self.version = installed("openai-agents")
        options = {k: str(v) for k, v in (config.get("options") or {}).items()}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"option {key!r} is not one of the openai_agents adapter's options {sorted(OPTIONS)}")
            if value not in OPTIONS[key]:
                raise ValueError(f"option {key}={value!r} is not one of {list(OPTIONS[key])}")
        self.forget_path = options.get("forget_path", OPTIONS["forget_path"][0])
        self._SQLiteSession = SQLiteSession
        self._prepare = prepare_input_with_session
        self._save = save_result_to_session
        self.root = Path(config["data_dir"]) / "openai_agents"
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = self.root / DB_NAME
        self.sessions: dict[str, object] = {}
        self._loop = asyncio.new_event_loop()
        import sqlite3
        probe = sqlite3.connect(":memory:")  # what a deleted row leaves in the file depends on the build's default
        self.sqlite = (sqlite3.sqlite_version, probe.execute("PRAGMA secure_delete").fetchone()[0])
        probe.close()
        self._lock = threading.RLock()   # one coroutine at a time on the adapter's own event loop

    # ------------------------------------------------------------------ plumbing
    def _run(self, coro):
        with self._lock:
            return self._loop.run_until_complete(coro)

    def _session(self, scope: str):
        with self._lock:
            if scope not in self.sessions:
                self.sessions[scope] = self._SQLiteSession(scope, self.db)
            return self.sessions[scope]

    def _items(self, scope: str) -> list:
        return self._run(self._session(scope).get_items())

    def _close_sessions(self) -> None:
        with self._lock:
            for s in self.sessions.values():
                try:
                    s.close()
                except Exception:
                    pass
            self.sessions.clear()

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        no = lambda why: {"support": "unsupported", "reason": why}  # noqa: E731
        return {
            "system": {"name": "openai_agents", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": no("a session has no retriever: get_items returns the whole history in order (or its last "
                             "N items), and the door is that history"),
                "forget": {"support": "emulated", "reason": self._forget_how()},
                "update": no("a session has no update: items are appended, popped or cleared"),
                "run_background_jobs": no("the SDK runs no job over a SQLiteSession's items; its only model-driven "
                                          "session, OpenAIResponsesCompactionSession, needs the Responses API's "
                                          "compact endpoint, which the model gateway does not serve"),
                "probe": {"support": "supported"},
                "audit": no("a session records no mutation: pop_item and clear_session delete rows and leave no "
                            "record"),
                "share": no("no copy between sessions (AdvancedSQLiteSession branches within one session id)"),
                "import_history": {"support": "supported"},
            },
            "doors": [{"name": "session_input", "description": (
                "the session's history as the Runner gives it to the model (prepare_input_with_session, the query "
                "as the new input, SessionSettings default: no limit), one 'role: text' line per item")}],
            "stores": [
                {"name": "session-items", "kind": "sql", "role": "primary",
                 "description": "the scope's items, read back with get_items (agent_messages rows of its session id)"},
                {"name": "sqlite-file", "kind": "other", "role": "primary",
                 "description": "the bytes of the session database file and its write-ahead log, as a copy or "
                                "backup of the data directory holds them (deleted rows live on in free pages "
                                "until SQLite reuses them)"},
            ],
            "background_jobs": [],
            "qualifiers": [],
            "volatile_fields": [],
            "notes": [
                f"openai-agents {self.version}: SQLiteSession(session_id=<scope>, db_path=<data_dir>/openai_agents/"
                f"{DB_NAME}), the SDK's documented default session, file-backed (its default db_path is ':memory:', "
                "which a restart would empty); default tables and SessionSettings (no limit)",
                "write: the conversation saved as the Runner saves a turn's input (agents.run_internal."
                "session_persistence.save_result_to_session with no new run items): no Agent is run and no model "
                "is called, so no assistant reply beyond those in the conversation is added; the SDK keeps items "
                "verbatim and extracts nothing",
                "door: prepare_input_with_session(query, session, None), the Runner's own merge of history and new "
                "input; the history part (without the query) rendered one 'role: text' line per item",
                "the harness clock cannot reach the session: SQLite stamps created_at with the wall clock, and "
                "get_items returns no time",
                ("forget_path=clear (option; the default pops): forget is emulated with clear_session, then "
                 "add_items of every item not holding 80% of the request's content words" if self.forget_path == "clear"
                 else "forget is emulated with the SDK's own deletes (pop_item down to the earliest item holding 80% "
                 "of the request's content words, the later non-matching items re-added with add_items)")
                + ": an item is a whole message, so everything else that message said goes with it",
                "import_history: session.add_items on the messages directly (the docs' manual path) instead of the "
                "Runner's save; same rows, no event time",
                f"the sessions file is written by SQLite {self.sqlite[0]} (the environment's sqlite3) in WAL mode (the "
                f"SDK's setting), secure_delete={'on' if self.sqlite[1] else 'off'} (the build's default): "
                "with it on, a deleted row is zeroed in the database file but its earlier page images stay in the "
                "-wal file until a checkpoint; the sqlite-file store reads both",
                "reset deletes the session database file (and its -wal and -shm), so the raw-bytes store starts "
                "empty for every case",
            ],
        }

    def _forget_how(self) -> str:
        if self.forget_path == "clear":
            return ("the SDK deletes only the most recent item (pop_item) or the whole session (clear_session): the "
                    "session is cleared and every item that does not state the request put back (add_items)")
        return ("the SDK deletes only the most recent item (pop_item) or the whole session (clear_session): the "
                "items stating the request are popped off the tail and the items after them put back (add_items)")

    def reset(self) -> None:
        self._close_sessions()
        for suffix in ("", "-wal", "-shm", "-journal"):
            p = self.db.with_name(self.db.name + suffix)
            if p.exists():
                p.unlink()
        for extra in self.root.iterdir():
            if extra.is_dir():
                shutil.rmtree(extra)

    def write(self, scope: str, at: str, messages: list) -> dict:
        items = [{"role": m["role"], "content": m["content"]} for m in messages]
        before = len(self._items(scope))
        self._run(self._save(self._session(scope), items, []))
        after = len(self._items(scope))
        return {"ids": [f"{scope}/{i}" for i in range(before, after)]}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        items = [{"role": m["role"], "content": m["content"]} for m in messages]
        before = len(self._items(scope))
        self._run(self._session(scope).add_items(items))
        return {"ids": [f"{scope}/{before + i}" for i in range(len(items))], "path": "session.add_items"}

    def settle(self, timeout_s: float) -> dict:
        return {"quiescent": True, "detail": "session writes are committed before add_items returns"}

    def _history(self, query: str, scope: str) -> list:
        session = self._session(scope)
        prepared, appended = self._run(self._prepare(query, session, None))
        prepared = list(prepared) if isinstance(prepared, list) else [{"role": "user", "content": prepared}]
        return prepared[:len(prepared) - len(appended)] if appended else prepared

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        history = self._history(query, scope)
        lines = [f"{_role(it)}: {_text(it)}" for it in history]
        return {"text": "\n".join(lines),
                "items": [{"text": _text(it), "kind": "message"} for it in history]}

    def forget(self, scope: str, at: str, text: str) -> dict:
        session = self._session(scope)
        items = self._items(scope)
        hits = [i for i, it in enumerate(items) if coverage(text, _text(it)) >= FORGET_COVERAGE]
        if not hits:
            return {"ids": []}
        if self.forget_path == "clear":  # the whole session cleared, every other item put back
            self._run(session.clear_session())
            rest = items
        else:                            # popped off the tail down to the earliest item stating the request
            rest = [self._run(session.pop_item()) for _ in range(len(items) - hits[0])]
            rest.reverse()               # back in conversation order
        keep = [it for it in rest if it is not None and coverage(text, _text(it)) < FORGET_COVERAGE]
        if keep:
            self._run(session.add_items(keep))
        return {"ids": [f"{scope}/{i}" for i in hits]}

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        token = needle["token"]
        if store == "session-items":
            hits = [_text(it) for it in self._items(scope) if contains(_text(it), token)]
            return {"state": "present" if hits else "absent", "evidence": hits,
                    "items": [{"text": h, "kind": "message"} for h in hits]}
        if store == "sqlite-file":
            hits = self._raw_hits(token)
            return {"state": "present" if hits else "absent", "evidence": hits}
        raise KeyError(f"no store {store!r}")

    def _raw_hits(self, token: str) -> list[str]:
        """The item records (JSON objects) in the bytes of the database file and its WAL that hold the token, each
        with the file it was found in; text around the token where no whole record is left. The file is shared by
        every scope (one session id per scope)."""
        out = []
        for suffix in ("", "-wal"):
            p = self.db.with_name(self.db.name + suffix)
            if not p.exists():
                continue
            raw = p.read_bytes().decode("latin-1")
            text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), raw)  # json.dumps escapes non-ASCII
            records = [r for r in _RECORD.findall(text) if contains(r, token)]
            if not records:  # a record cut by a page boundary or partly overwritten: the printable run around it
                for run in _PRINTABLE.findall(text):
                    at = run.find(token) if contains(run, token) else -1
                    if at >= 0:
                        records.append(run[max(0, at - EXCERPT):at + len(token) + EXCERPT])
            out += [f"{p.name}: {r}" for r in dict.fromkeys(records)]
        return out

    def close(self) -> None:
        self._close_sessions()
        try:
            self._loop.close()
        except Exception:
            pass
