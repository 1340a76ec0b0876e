"""Letta's stores, read with SQL on its Postgres (the REST API shows only live, linked records), reset and audit.

A scope is an agent (agents.name) and, with the sleep-time option on, its sleep-time agent (``<scope>-sleeptime``,
which shares its blocks and keeps messages and runs of its own). Stores that outlive their agent (orphaned blocks and
archives, provider traces) are read across the whole database: the harness's needles are unique per case.
"""

from __future__ import annotations

import json

import psycopg2

MAX_DIM = 4096  # Letta pads every stored vector to MAX_EMBEDDING_DIM
EVIDENCE_CHARS = 4000

STORES = {
    "core-memory": {"kind": "text", "role": "primary",
                    "description": "the agent's core memory blocks (table block via blocks_agents), always in context"},
    "block-history": {"kind": "log", "description": "block_history rows of the agent's blocks (checkpoints/undo)"},
    "orphaned-blocks": {"kind": "text", "description": "blocks linked to no agent (left by a block detach or an "
                                                       "agent deletion)"},
    "archival-passages": {"kind": "text", "role": "primary",
                          "description": "archival_passages text of the agent's archives"},
    "passage-embeddings": {"kind": "vector", "description": "archival_passages.embedding (pgvector, padded to 4096): "
                                                            "nearest neighbour of the needle by cosine distance"},
    "orphaned-archives": {"kind": "text", "description": "passages of archives linked to no agent"},
    "recall-messages": {"kind": "buffer", "role": "primary", "description": (
        "messages rows of the agent (and of its sleep-time agent, with sleeptime=on): text, content, tool calls and "
        "tool returns (what GET /messages lists and conversation_search searches; reset-messages keeps them)")},
    "summaries": {"kind": "text", "description": "summary messages written by compaction (messages.role summary; "
                                                 "before 0.16.5 a user-role system_alert quoting the summary)"},
    "provider-traces": {"kind": "log", "description": (
        "provider_traces: every LLM request and response, as Letta's default (LETTA_TRACK_PROVIDER_TRACE on) writes "
        "them after each call; read across the whole table (an agent's deletion leaves its traces; agent_id exists "
        "only from 0.16.4); empty with the option provider_trace=off")},
    "steps-and-runs": {"kind": "log", "description": "steps and runs rows: errors, request configs and metadata"},
}

_AGENT = "SELECT id FROM agents WHERE name = %(scope)s OR name = %(scope)s || '-sleeptime'"
_ARCHIVES = f"SELECT archive_id FROM archives_agents WHERE agent_id IN ({_AGENT})"
QUERIES = {
    "core-memory": "SELECT b.label, b.value FROM block b JOIN blocks_agents ba ON ba.block_id = b.id "
                   f"WHERE ba.agent_id IN ({_AGENT})",
    "block-history": "SELECT h.label, h.value FROM block_history h JOIN blocks_agents ba ON ba.block_id = h.block_id "
                     f"WHERE ba.agent_id IN ({_AGENT})",
    "orphaned-blocks": "SELECT b.label, b.value FROM block b WHERE NOT EXISTS "
                       "(SELECT 1 FROM blocks_agents ba WHERE ba.block_id = b.id)",
    "archival-passages": f"SELECT 'passage', text FROM archival_passages WHERE archive_id IN ({_ARCHIVES})",
    "orphaned-archives": "SELECT p.archive_id, p.text FROM archival_passages p WHERE NOT EXISTS "
                         "(SELECT 1 FROM archives_agents aa WHERE aa.archive_id = p.archive_id)",
    "recall-messages": "SELECT role, concat_ws(' ', text, content::text, tool_calls::text, tool_returns::text) "
                       f"FROM messages WHERE agent_id IN ({_AGENT}) ORDER BY sequence_id",
    # role 'summary' from 0.16.5; before, and on compaction's other paths, a user-role system_alert
    "summaries": "SELECT role, concat_ws(' ', text, content::text) FROM messages "
                 f"WHERE agent_id IN ({_AGENT}) AND (role = 'summary' OR (content::text LIKE '%%system_alert%%' "
                 "AND content::text LIKE '%%is a summary of the previous%%'))",
    "provider-traces": "SELECT call_type, concat_ws(' ', request_json::text, response_json::text) FROM provider_traces",
    "steps-and-runs": f"SELECT 'step', concat_ws(' ', error_data::text, tags::text) FROM steps WHERE agent_id IN ({_AGENT}) "
                      "UNION ALL SELECT 'run', concat_ws(' ', metadata_::text, request_config::text) FROM runs "
                      f"WHERE agent_id IN ({_AGENT})",
}

#: kept by reset: the server's organisation, user, providers, tools and settings
KEEP = {"alembic_version", "organizations", "users", "providers", "provider_models", "tools", "sandbox_configs",
        "sandbox_environment_variables", "mcp_server", "mcp_tools", "mcp_oauth", "prompts"}


def _connect(uri: str):
    con = psycopg2.connect(uri)
    con.autocommit = True
    return con


def _rows(uri: str, sql: str, params: dict) -> list[tuple]:
    con = _connect(uri)
    try:
        with con.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()
    finally:
        con.close()


def _columns(uri: str, table: str) -> set[str]:
    """What the database says the table has (the schema of the release that migrated it)."""
    return {c for (c,) in _rows(uri, "SELECT column_name FROM information_schema.columns "
                                     "WHERE table_schema = 'public' AND table_name = %(t)s", {"t": table})}


def _clip(text: str, token: str) -> str:
    """The part of a long row around the needle's first mention (the whole row when it is short)."""
    if len(text) <= EVIDENCE_CHARS:
        return text
    at = max(0, text.casefold().find(token.casefold().split()[0]) - EVIDENCE_CHARS // 2)
    return text[at:at + EVIDENCE_CHARS]


def probe_store(uri: str, store: str, scope: str, needle: dict, contains, embed=None) -> dict:
    token = needle["token"]
    if store == "passage-embeddings":
        return _nearest(uri, scope, needle, contains, embed)
    if store not in QUERIES:
        raise KeyError(f"no store {store!r}; Letta's stores here: {sorted(STORES)}")
    sql = QUERIES[store]
    if store == "provider-traces" and "call_type" not in _columns(uri, "provider_traces"):
        sql = sql.replace("SELECT call_type,", "SELECT 'trace',")  # call_type is new in 0.16.4
    items = []
    for kind, text in _rows(uri, sql, {"scope": scope}):
        text = text or ""
        if contains(text, token):
            items.append({"text": _clip(text, token), "kind": f"{store}:{kind}"})
    return {"state": "present" if items else "absent", "evidence": [i["text"] for i in items], "items": items}


def _nearest(uri: str, scope: str, needle: dict, contains, embed) -> dict:
    vec = list(embed(needle["text"]))[:MAX_DIM]
    literal = "[" + ",".join(repr(float(x)) for x in vec + [0.0] * (MAX_DIM - len(vec))) + "]"
    rows = _rows(uri, f"SELECT text, embedding <=> %(v)s::vector AS d FROM archival_passages "
                      f"WHERE archive_id IN ({_ARCHIVES}) AND embedding IS NOT NULL ORDER BY d LIMIT 1",
                 {"scope": scope, "v": literal})
    if not rows:
        return {"state": "absent", "evidence": [], "distance": None}
    text, dist = rows[0]
    held = contains(text, needle["token"])
    return {"state": "present" if held else "absent", "evidence": [text], "distance": round(float(dist), 6),
            "items": [{"text": text, "kind": "passage-embedding"}] if held else []}


def server_versions(uri: str) -> str:
    """'Postgres <version> + pgvector <version>', as the database reports them."""
    (pg,), = _rows(uri, "SHOW server_version", {})
    vec = _rows(uri, "SELECT extversion FROM pg_extension WHERE extname = 'vector'", {})
    return f"Postgres {pg.split()[0]} + pgvector {vec[0][0] if vec else '(not installed)'}"


def reset_all(uri: str) -> None:
    """Every store emptied: every table of agent data truncated (Letta's own deletes leave orphans behind)."""
    tables = [t for (t,) in _rows(uri, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'", {})
              if t not in KEEP]
    con = _connect(uri)
    try:
        with con.cursor() as cur:
            cur.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables) + " CASCADE")
    finally:
        con.close()


def audit_rows(uri: str, scope: str) -> list[dict]:
    """What Letta records of memory mutations: the agent's tool calls (messages with tool_calls), in order.

    Letta keeps no mutation log of its own beyond these and block_history (empty unless checkpoints are used);
    REST deletes and PATCHes leave no record at all.
    """
    out = []
    for calls, step in _rows(uri, "SELECT tool_calls::text, step_id FROM messages WHERE agent_id IN "
                                  f"({_AGENT}) AND tool_calls IS NOT NULL ORDER BY sequence_id", {"scope": scope}):
        for call in json.loads(calls) or []:
            fn = (call.get("function") or {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            out.append({"event": fn.get("name"), "memory_id": args.get("label") or "archival", "actor": "agent",
                        "at": None, "step_id": step, "arguments": args})
    return out
