"""Letta 0.15.1 to 0.16.8 (ex-MemGPT): an agent that edits its own memory through tool calls.

Embedded: Postgres 16 + pgvector from the pgserver wheel (postgres.py), the schema by alembic from
the letta sdist and ``letta server`` on loopback (server.py), all in the run's state folder; they
start when the adapter starts and stop in close(), so the protocol's restart restarts them on the
same cluster. The LLM and the embedder are the memmatrix gateway (``openai-proxy/<chat model>``;
``openai/text-embedding-3-small``, Letta's hard-coded embedding handle for its OpenAI provider). What differs
between releases is detected from the installed source (compat.py).

One ``letta_v1_agent`` per scope, named by the scope, with the archival tools attached. A write is the
conversation sent to the agent as its input messages: the agent (the oracle playing a careful model,
systems/letta/oracle.py) stores what it wants with its own tools. The door is what Letta puts in the
agent's context: its compiled core memory, plus what ``archival_memory_search`` and ``conversation_search``
return for the query (run through Letta's tool-run route). Forget uses Letta's delete paths; share attaches
one block to both agents; stores are probed with SQL on Letta's Postgres.

Options (system.yaml): ``forget_path``; ``provider_trace`` (on, Letta's default, or off); ``sleeptime`` (off,
Letta's default, or on: each agent is created with ``enable_sleeptime``, Letta's sleep-time architecture, and
the jobs op runs one sleep-time pass).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from adapterkit import concurrently, contains, coverage

from compat import detect

from postgres import Postgres, wait_ready
from probes import STORES, audit_rows, probe_store, reset_all, server_versions
from server import NON_DEFAULT_ENV, TRACE_OFF, LettaClient, LettaError, LettaServer
from sleeptime import SLEEPTIME_REMINDER, stringify

FORGET_COVERAGE = 0.8
EMBEDDING = "openai/text-embedding-3-small"
TOOLS = ["archival_memory_insert", "archival_memory_search"]
SEARCH_TOOLS = ("archival_memory_search", "conversation_search")  # what the agent can pull into its context


def tool_texts(ret: str) -> list[str]:
    """One item per result a search tool returned (its JSON as the agent reads it), else the return whole."""
    try:
        data = json.loads(ret)
    except ValueError:
        return [ret] if ret.strip() else []
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), [data])
    if not isinstance(data, list):
        return [ret]
    return [json.dumps(r, ensure_ascii=False) if not isinstance(r, str) else r for r in data]
SUMMARIZE = {"mode": "all"}
#: the adapter's options (system.yaml `options`), each with its choices, the vendor's default first
OPTIONS = {"forget_path": ("passages_and_blocks", "agent_delete"), "provider_trace": ("on", "off"),
           "sleeptime": ("off", "on")}
#: the label of the block share creates (labels are unique per agent: a second one takes a number)
SHARED = "shared"
SLEEPTIME = "sleeptime_agent"  # the agent_type of a sleep-time agent
RUNNING = ("created", "running")
#: what Letta's handle path clips a model's context window to before 0.16.6 (global_max_context_window_limit),
#: applied where the model is passed as its LLMConfig (before 0.16.2)
CONTEXT_LIMIT = 32000
LAST = " (the last release with the Python API server)"
MODEL_AS_CONFIG = (", passed as the LLMConfig GET /v1/models/ lists for that handle, its context window clipped to "
                   f"{CONTEXT_LIMIT} as the handle path does: this release does not resolve the handle")
EMBEDDING_AS_CONFIG = (", passed as an embedding_config (dim 1536) with the gateway as endpoint: this release lists "
                       "no OpenAI embedding for another base URL")
FORGET_PATHS = {
    "passages_and_blocks": (
        "search-then-delete: archival passages covering the request are deleted by id (DELETE "
        "/agents/{id}/archival-memory/{passage_id}), core-memory lines covering it are removed by a block "
        "PATCH; Letta has no per-message delete, so recall messages stay"),
    "agent_delete": (
        "the scope's whole agent is deleted (DELETE /agents/{id}): Letta's way to forget everything of one "
        "user, one agent per scope; the twin goes with it, and a later write creates a new agent"),
}
SHARE_HOW = (
    "the core-memory lines covering the request are moved out of the source agent's blocks into a block labelled "
    f"'{SHARED}' (POST /blocks/, or PATCH /blocks/{{id}} when the source already has one) attached to both agents "
    "(PATCH /agents/{id}/core-memory/blocks/attach/{block_id}), Letta's own way to share memory between agents; "
    "when no block line covers it, the covering archival passages' text goes into that block. Block edits go "
    "through PATCH /blocks/{id} where that route rebuilds the prompt of every agent the block is attached to "
    "(before, the agent's label route, which rebuilds the editing agent's), so a line removed through one agent "
    "is gone for every agent the block is attached to")
SLEEPTIME_HOW = (
    "each agent is created with enable_sleeptime (Letta's sleep-time architecture: the main agent keeps "
    "conversation_search and the archival tools the adapter attaches, and gets send_message; a sleep-time agent "
    "'<scope>-sleeptime' shares its blocks and edits them, run by Letta after every 5th turn, from the first); "
    "settle waits for the sleep-time runs a write started (GET /runs/{id})")
SLEEPTIME_PASS = (
    "one sleep-time pass per main agent, run to its end: Letta starts one only after a main-agent turn (every 5th); "
    "no route starts one, so the adapter sends the sleep-time agent the message Letta's SleeptimeMultiAgentV4 "
    "sends it (its system reminder, then the main agent's messages since the group's last processed message, "
    "rendered as Letta's stringify_message renders them) through POST /agents/{id}/messages; the group's "
    "last processed message is not moved (no route sets it)")


class LettaAdapter:
    def __init__(self, config: dict):
        from importlib.metadata import version
        self.version = version("letta")
        self.f = detect()
        if not self.f.tool_run:
            raise LettaError(f"letta {self.version} has no POST /agents/{{id}}/tools/{{name}}/run (new in 0.15.1), "
                             "which the context door needs; system.yaml declares it not drivable")
        model = self.model = config["model"]
        self.llm = f"openai-proxy/{model['chat_model']}"
        options = {k: str(v) for k, v in (config.get("options") or {}).items()}
        for key, value in options.items():
            if key not in OPTIONS:
                raise ValueError(f"option {key!r} is not one of Letta's adapter options {sorted(OPTIONS)}")
            if value not in OPTIONS[key]:
                raise ValueError(f"option {key}={value!r} is not one of {list(OPTIONS[key])}")
        self.forget_path = options.get("forget_path", OPTIONS["forget_path"][0])
        self.provider_trace = options.get("provider_trace", OPTIONS["provider_trace"][0])
        self.sleeptime = options.get("sleeptime", OPTIONS["sleeptime"][0]) == "on"
        self.runs: list[str] = []  # sleep-time runs the writes started that settle has not yet seen end
        state = Path(config["data_dir"]) / "letta"
        state.mkdir(parents=True, exist_ok=True)
        self.log = open(state / "letta.log", "a", encoding="utf-8")
        self.pg = None
        self.server = None
        self.timings: dict = {}
        remote = os.environ.get("LETTA_BASE_URL")
        try:
            if remote:  # a running server and its Postgres (the compose runtime's services): used, never stopped
                if self.provider_trace == "off":
                    raise LettaError("option provider_trace=off sets the Letta server's environment, which the compose "
                                     "runtime's letta service fixes in systems/letta/compose.yaml: run it embedded")
                self.pg_uri = os.environ.get("LETTA_PG_URI") or ""
                if not self.pg_uri:
                    raise LettaError("LETTA_BASE_URL is set but LETTA_PG_URI is not; the probes read Letta's "
                                     "Postgres: set LETTA_PG_URI to the URI the server uses")
                self.server = LettaClient(remote)
                t = time.monotonic()
                wait_ready(self.server.healthy, None, f"the Letta server at {remote}", state / "letta.log", 240,
                           LettaError, 0.5)
                self.timings["server_s"] = round(time.monotonic() - t, 1)
            else:
                self.pg = Postgres(state / "postgres", open(state / "postgres.log", "a", encoding="utf-8"))
                t = time.monotonic()
                self.pg_uri = self.pg.start()
                self.timings["postgres_s"] = round(time.monotonic() - t, 1)
                self.server = LettaServer(state, self.pg_uri, model, self.log,
                                          TRACE_OFF if self.provider_trace == "off" else None)
                t = time.monotonic()
                self.server.migrate(self.version)
                self.timings["migrate_s"] = round(time.monotonic() - t, 1)
                t = time.monotonic()
                self.server.start()
                self.timings["server_s"] = round(time.monotonic() - t, 1)
        except Exception:
            self.close()
            raise
        self.runtime = f"the Letta server at {remote}" if remote else "`letta server` on loopback, started here"
        self.log.write(f"memmatrix: started {json.dumps(self.timings)}\n")
        self.log.flush()

    # ------------------------------------------------------------------ plumbing
    def _api(self, method: str, path: str, body=None, **query):
        return self.server.call(method, f"/v1{path}", body, query or None)

    def _agent(self, scope: str, create: bool = True) -> str | None:
        found = self._api("GET", "/agents/", name=scope, limit=5)
        if found:
            return found[0]["id"]
        if not create:
            return None
        body = {"name": scope, "agent_type": "letta_v1_agent",
                "memory_blocks": [{"label": "human", "value": ""},
                                  {"label": "persona", "value": "I am a helpful assistant."}],
                "tools": TOOLS}
        if self.sleeptime:  # Letta's sleep-time architecture, as its guide enables it: at creation
            body["enable_sleeptime"] = True
        body.update(self._model_fields())
        return self._api("POST", "/agents/", body)["id"]

    def _model_fields(self) -> dict:
        """The model and embedder as this release takes them: handles where it resolves them, else the configs
        its handle path would have built (before 0.16.2 ``openai-proxy/<m>`` is "not supported" as a handle,
        before 0.16.0 the openai provider lists no embedding for a base URL other than OpenAI's)."""
        out: dict = {}
        if self.f.model_handle:
            out["model"] = self.llm
        else:
            models = self._api("GET", "/models/") or []
            cfg = next((m for m in models if m.get("handle") == self.llm), None)
            if cfg is None:
                raise LettaError(f"Letta lists no model {self.llm!r} (GET /v1/models/ has "
                                 f"{sorted(str(m.get('handle')) for m in models)[:8]}); is the gateway up?")
            out["llm_config"] = {**cfg, "context_window": min(cfg.get("context_window") or CONTEXT_LIMIT, CONTEXT_LIMIT)}
        if self.f.embedding_handle:
            out["embedding"] = EMBEDDING
        else:
            out["embedding_config"] = {"embedding_endpoint_type": "openai", "embedding_endpoint": self.model["base_url"],
                                       "embedding_model": EMBEDDING.split("/", 1)[1], "embedding_dim": 1536,
                                       "embedding_chunk_size": 300, "handle": EMBEDDING}
        return out

    def _agents(self) -> list[dict]:
        """The scopes' agents (a sleep-time agent, ``<scope>-sleeptime``, belongs to its main agent)."""
        return [a for a in self._api("GET", "/agents/", limit=1000) or [] if a.get("agent_type") != SLEEPTIME]

    def _blocks(self, agent: str) -> list[dict]:
        return self._api("GET", f"/agents/{agent}/core-memory/blocks") or []

    def _search(self, agent: str, query: str, k: int | None = None) -> list[dict]:
        res = self._api("GET", f"/agents/{agent}/archival-memory/search", query=query, top_k=k)
        return res.get("results", []) if isinstance(res, dict) else []

    def _passages(self, agent: str) -> list[dict]:
        return self._api("GET", f"/agents/{agent}/archival-memory", limit=1000) or []

    # ------------------------------------------------------------------ contract
    def capabilities(self) -> dict:
        return {
            "system": {"name": "letta", "version": self.version},
            "operations": {
                "settle": {"support": "supported"},
                "recall": {"support": "supported"},
                "forget": {"support": "emulated", "reason": FORGET_PATHS[self.forget_path]},
                "update": {"support": "emulated", "reason": (
                    "core-memory lines covering the request are rewritten by a block PATCH; archival passages covering "
                    "it are deleted and the new text inserted (Letta has no passage update)")},
                "run_background_jobs": {"support": "emulated", "reason": SLEEPTIME_PASS} if self.sleeptime
                else {"support": "supported"},
                "probe": {"support": "supported"},
                "audit": {"support": "supported"},
                "share": {"support": "emulated", "reason": SHARE_HOW},
                "import_history": {"support": "supported"},
                "write_concurrent": {"support": "supported"},
            },
            "doors": [{"name": "context", "description": (
                "what Letta puts in the agent's context for the query: its compiled core memory (GET "
                "/agents/{id}/context, core_memory) and what its search tools return for the query, "
                "archival_memory_search and conversation_search (recall of the message history), each run "
                "through POST /agents/{id}/tools/{name}/run at its defaults")}],
            "stores": [{"name": name, **meta} for name, meta in STORES.items()],
            "background_jobs": [*([{"name": "sleeptime", "description": SLEEPTIME_PASS}] if self.sleeptime else []),
                                {"name": "summarize", "description": "POST /agents/{id}/summarize for every agent "
                                                                    "(main agents; not their sleep-time agents)"}],
            "qualifiers": [],
            "volatile_fields": ["timestamp", "created_at", "updated_at", "date"],
            "notes": [
                f"letta {self.version}{LAST if self.version == '0.16.8' else ''}, {self.runtime}, on "
                f"{server_versions(self.pg_uri)}" + ("" if self.pg is None else " from the pgserver 0.1.4 wheel") +
                f" (Letta {self.version} supports only Postgres), schema by `alembic upgrade head` from the letta "
                "sdist's migrations (the official image's own copy under compose)",
                *[f"{k}={v} (not Letta's default): Letta's NullPool opens a new asyncpg connection per session and "
                  "some of those connects to a loopback Postgres hang for asyncpg's 60 s timeout inside a step (every "
                  "step, through the provider-trace write that follows each LLM call); a pool reuses its connections"
                  for k, v in NON_DEFAULT_ENV.items()],
                "provider tracing " + ("on (Letta's default): provider_traces holds every LLM request and response, "
                                       "probed as a store" if self.provider_trace == "on" else
                                       "off (option provider_trace=off, not Letta's default): "
                                       + ", ".join(f"{k}={v}" for k, v in TRACE_OFF.items())
                                       + ", so provider_traces stays empty"),
                f"agent: letta_v1_agent (the default type), model {self.llm} (the gateway's chat model through "
                f"Letta's openai provider{'' if self.f.model_handle else MODEL_AS_CONFIG}), embedding {EMBEDDING} "
                f"(served by the gateway{'' if self.f.embedding_handle else EMBEDDING_AS_CONFIG}), blocks human (empty) and "
                "persona; the archival tools are attached explicitly (letta_v1_agent's defaults are only "
                "conversation_search, memory_insert, memory_replace)",
                "write: the conversation as the agent's input messages (POST /agents/{id}/messages); what is stored "
                "is the agent's choice through its tools; import: POST /agents/{id}/archival-memory of the "
                "transcript (the passage API, no LLM), with the material's time as created_at",
                self._job_note() + ("; sleep-time agents stay off (Letta's default)" if not self.sleeptime else
                                    "; sleep-time agents on (option sleeptime=on, not Letta's default): " + SLEEPTIME_HOW),
                "the harness clock cannot be passed to Letta (it stamps wall-clock times), except import's created_at",
                f"forget path: {self.forget_path}",
                "no LETTA_ENCRYPTION_KEY (Letta's default: secrets stored in plaintext; none are used here)",
                *(["TIKTOKEN_CACHE_DIR: the cl100k_base file the environment's llama-index ships (the same bytes "
                   "tiktoken would download; it checks their sha256)"] if "TIKTOKEN_CACHE_DIR" in
                  getattr(self.server, "env", {}) else []),
            ],
        }

    def _job_note(self) -> str:
        mode = f"compaction_settings {json.dumps(SUMMARIZE)} and the agent's model"
        if self.f.compaction_request:
            return (f"background job: POST /agents/{{id}}/summarize with {mode} (the default mode needs a fuller "
                    "context to compact anything)")
        if self.f.compaction_agent:
            return (f"background job: POST /agents/{{id}}/summarize, which takes no settings in this release and "
                    f"compacts with the agent's: {mode} set on the agent by PATCH first (it stays there)")
        return ("background job: POST /agents/{id}/summarize, which in this release takes no settings and runs "
                "the partial-evict summarizer of LettaAgentV2 (no compaction modes yet)")

    def reset(self) -> None:
        reset_all(self.pg_uri)

    def write(self, scope: str, at: str, messages: list) -> dict:
        agent = self._agent(scope)
        msgs = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] in ("user", "assistant")]
        res = self._api("POST", f"/agents/{agent}/messages", {"messages": msgs})
        out = {"ids": [m["id"] for m in res.get("messages", []) if m.get("id")],
               "stop_reason": (res.get("stop_reason") or {}).get("stop_reason")}
        if self.sleeptime:  # the sleep-time runs this turn started (Letta answers before they end)
            started = list((res.get("usage") or {}).get("run_ids") or [])
            self.runs += started
            out["sleeptime_runs"] = started
        return out

    def write_concurrent(self, scope: str, at: str, writes: list) -> dict:
        """Each write a POST /agents/{id}/messages of its own to the one agent, sent together from threads, as
        two clients of one agent send them; the agent exists before they start."""
        self._agent(scope)
        return {"writes": concurrently([lambda m=m: self.write(scope, at, m) for m in writes])}

    def import_history(self, scope: str, at: str, messages: list) -> dict:
        agent = self._agent(scope)
        text = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        res = self._api("POST", f"/agents/{agent}/archival-memory", {"text": text, "created_at": at})
        return {"ids": [p["id"] for p in res or []], "path": "POST /agents/{id}/archival-memory"}

    def settle(self, timeout_s: float) -> dict:
        if not self.sleeptime:
            return {"quiescent": True, "detail": "a message turn returns after the agent's tool calls are applied"}
        left = self._wait_runs(timeout_s)
        if left:
            return {"quiescent": False, "detail": f"sleep-time runs still {left} after {timeout_s:g} s"}
        return {"quiescent": True, "detail": "a message turn returns after the agent's tool calls are applied, and "
                                             "every sleep-time run it started has ended (GET /runs/{id})"}

    def _wait_runs(self, timeout_s: float) -> dict:
        """Polls the sleep-time runs the writes started (``usage.run_ids``) until each has ended; what is left."""
        end = time.monotonic() + timeout_s
        while True:
            status = {r: (self._api("GET", f"/runs/{r}") or {}).get("status") for r in self.runs}
            self.runs = [r for r, st in status.items() if st in RUNNING]
            if not self.runs or time.monotonic() >= end:
                return {r: status[r] for r in self.runs}
            time.sleep(0.25)

    def _core(self, agent: str) -> tuple[str, list[dict]]:
        ctx = self._api("GET", f"/agents/{agent}/context")
        core = (ctx or {}).get("core_memory") or ""
        # one item per block line, blocks in the order the compiled memory shows them (the API lists them in
        # the database's order, which differs between runs)
        blocks = sorted(self._blocks(agent), key=lambda b: (core.find(f"<{b['label']}>") % (len(core) + 1), b["label"]))
        items = [{"text": line, "kind": f"core-memory:{b['label']}"}
                 for b in blocks for line in (b.get("value") or "").splitlines() if line.strip()]
        return core, items

    def _run_tool(self, agent: str, name: str, args: dict):
        """A tool's return exactly as the agent gets it (POST /agents/{id}/tools/{name}/run, Letta's own API)."""
        res = self._api("POST", f"/agents/{agent}/tools/{name}/run", {"args": args}) or {}
        if res.get("status") != "success":
            raise LettaError(f"{name} failed: {json.dumps(res.get('stderr') or res)[:300]}")
        ret = res.get("func_return")
        return ret if isinstance(ret, str) else json.dumps(ret, ensure_ascii=False)

    def door(self, query: str, scope: str, door: str, at: str) -> dict:
        agent = self._agent(scope, create=False)
        if agent is None:
            return {"text": "", "items": []}
        core, items = self._core(agent)
        parts = [core]
        for tool in SEARCH_TOOLS:
            ret = self._run_tool(agent, tool, {"query": query})
            parts.append(f"{tool}:\n{ret}")  # what the tool returned, never the query (it may quote the needle)
            items += [{"text": t, "kind": tool} for t in tool_texts(ret)]
        return {"text": "\n\n".join(parts), "items": items}

    def recall(self, query: str, scope: str, k: int, at: str) -> dict:
        agent = self._agent(scope, create=False)
        if agent is None:
            return {"items": []}
        return {"items": [{"text": r.get("content", ""), "kind": "archival", "timestamp": r.get("timestamp")}
                          for r in self._search(agent, query, k)]}

    def _edit_blocks(self, agent: str, text: str, new_text: str | None) -> list[str]:
        ids = []
        for b in self._blocks(agent):
            lines = (b.get("value") or "").split("\n")
            hit = [ln for ln in lines if ln.strip() and coverage(text, ln) >= FORGET_COVERAGE]
            if not hit:
                continue
            kept = [ln for ln in lines if ln not in hit] + ([new_text] if new_text else [])
            self._set_block(agent, b, "\n".join(kept))
            ids.append(b["id"])
        return ids

    def _set_block(self, agent: str, block: dict, value: str) -> dict:
        """A block's new value, edited through ``agent``. Where Letta's block route rebuilds the system message of
        every agent the block is attached to (compat ``block_rebuild``), PATCH /blocks/{id}; before, that route
        rebuilds none, so the label route, which rebuilds the editing agent's (the others' stay stale until their
        next step, as in that release)."""
        if self.f.block_rebuild:
            return self._api("PATCH", f"/blocks/{block['id']}", {"value": value})
        return self._api("PATCH", f"/agents/{agent}/core-memory/blocks/{block['label']}", {"value": value})

    def _matching_passages(self, agent: str, text: str) -> list[dict]:
        return [p for p in self._passages(agent) if coverage(text, p.get("text") or "") >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, text: str) -> dict:
        agent = self._agent(scope, create=False)
        if agent is None:
            return {"ids": []}
        if self.forget_path == "agent_delete":
            self._api("DELETE", f"/agents/{agent}")
            return {"ids": [agent]}
        ids = []
        for p in self._matching_passages(agent, text):
            self._api("DELETE", f"/agents/{agent}/archival-memory/{p['id']}")
            ids.append(p["id"])
        return {"ids": ids + self._edit_blocks(agent, text, None)}

    def update(self, scope: str, at: str, text: str, new_text: str) -> dict:
        agent = self._agent(scope, create=False)
        if agent is None:
            return {"ids": []}
        ids = []
        hits = self._matching_passages(agent, text)
        for p in hits:
            self._api("DELETE", f"/agents/{agent}/archival-memory/{p['id']}")
            ids.append(p["id"])
        if hits:
            ids += [p["id"] for p in self._api("POST", f"/agents/{agent}/archival-memory", {"text": new_text}) or []]
        return {"ids": ids + self._edit_blocks(agent, text, new_text)}

    def share(self, scope: str, to_scope: str, at: str, text: str) -> dict:
        src = self._agent(scope, create=False)
        if src is None:
            return {"ids": []}
        dst = self._agent(to_scope)
        blocks = self._blocks(src)
        lines = []
        for b in blocks:
            if b["label"].startswith(SHARED):
                continue
            value = (b.get("value") or "").split("\n")
            hit = [ln for ln in value if ln.strip() and coverage(text, ln) >= FORGET_COVERAGE]
            if hit:
                lines += hit
                self._set_block(src, b, "\n".join(ln for ln in value if ln not in hit))
        if not lines:
            lines = [p["text"] for p in self._matching_passages(src, text)]
        if not lines:
            return {"ids": []}
        taken = {b["label"]: b["id"] for a in (src, dst) for b in (blocks if a == src else self._blocks(a))}
        # the source's own shared block, if the destination can take it (a label is unique per agent)
        shared = next((b for b in blocks if b["label"].startswith(SHARED) and taken.get(b["label"]) == b["id"]), None)
        if shared is None:
            label = next(lb for lb in (SHARED, *(f"{SHARED}-{n}" for n in range(2, 1000))) if lb not in taken)
            shared = self._api("POST", "/blocks/", {"label": label, "value": "\n".join(lines),
                                                    "description": "memory shared between agents"})
        else:
            shared = self._set_block(src, shared, "\n".join([*(shared.get("value") or "").split("\n"), *lines]).strip("\n"))
        for agent in (src, dst):
            if not any(b["id"] == shared["id"] for b in (blocks if agent == src else self._blocks(agent))):
                self._api("PATCH", f"/agents/{agent}/core-memory/blocks/attach/{shared['id']}")
        return {"ids": [shared["id"]], "label": shared["label"]}

    def _sleeptime_pass(self, main: dict) -> dict:
        """One sleep-time pass for ``main`` (see SLEEPTIME_PASS), run to its end."""
        group = (self._api("GET", f"/agents/{main['id']}") or {}).get("multi_agent_group") or {}
        sleepers = [a for a in group.get("agent_ids") or [] if a != main["id"]]
        if not sleepers:
            return {"agent": main["name"], "sleeptime": "no sleep-time agent"}
        msgs = self._api("GET", f"/agents/{main['id']}/messages", after=group.get("last_processed_message_id"),
                         order="asc", limit=1000) or []
        lines = [t for t in (stringify(m) for m in msgs) if t]
        if not lines:
            return {"agent": main["name"], "sleeptime": "nothing since the last processed message"}
        out = []
        for sleeper in sleepers:
            res = self._api("POST", f"/agents/{sleeper}/messages",
                            {"messages": [{"role": "user", "content": SLEEPTIME_REMINDER + "\n".join(lines)}]})
            out.append({"messages": len(lines), "stop_reason": (res.get("stop_reason") or {}).get("stop_reason")})
        return {"agent": main["name"], "sleeptime": out}

    def run_background_jobs(self, at: str) -> dict:
        outcomes = []
        settings = {**SUMMARIZE, "model": self.llm}
        if self.sleeptime:
            left = self._wait_runs(120)
            if left:
                outcomes.append({"sleeptime_runs_still": left})
            for a in self._agents():  # a pass that fails fails the op: it did not run
                outcomes.append(self._sleeptime_pass(a))
        for a in self._agents():
            try:
                if self.f.compaction_request:
                    res = self._api("POST", f"/agents/{a['id']}/summarize", {"compaction_settings": settings})
                    outcomes.append({"agent": a["name"], "messages_before": res.get("num_messages_before"),
                                     "messages_after": res.get("num_messages_after")})
                    continue
                if self.f.compaction_agent:  # summarize takes no settings: it compacts with the agent's
                    self._api("PATCH", f"/agents/{a['id']}", {"compaction_settings": settings})
                before = len(self._api("GET", f"/agents/{a['id']}").get("message_ids") or [])
                self._api("POST", f"/agents/{a['id']}/summarize")  # 204
                after = len(self._api("GET", f"/agents/{a['id']}").get("message_ids") or [])
                outcomes.append({"agent": a["name"], "messages_before": before, "messages_after": after})
            except LettaError as exc:
                outcomes.append({"agent": a["name"], "error": str(exc)[:300]})
        return {"jobs": ["sleeptime", "summarize"] if self.sleeptime else ["summarize"], "detail": outcomes}

    def _embed(self, text: str) -> list[float]:
        """The needle's vector as Letta gets one: the gateway's embeddings, for Letta's embedding model."""
        import urllib.request
        req = urllib.request.Request(f"{self.model['base_url'].rstrip('/')}/embeddings", method="POST",
                                     data=json.dumps({"model": EMBEDDING.split("/", 1)[1], "input": [text]}).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.model['api_key']}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read())["data"][0]["embedding"]

    def probe(self, store: str, scope: str, needle: dict) -> dict:
        return probe_store(self.pg_uri, store, scope, needle, contains, self._embed)

    def audit(self, scope: str) -> dict:
        return {"events": audit_rows(self.pg_uri, scope)}

    def close(self) -> None:
        try:
            if self.server is not None:
                self.server.stop()
        finally:
            if self.pg is not None:
                self.pg.stop()
            self.log.close()
