"""Letta for real: letta 0.16.8 embedded (Postgres from the pgserver wheel, letta server), one deletion case
at the vendor's default and with the sleep-time option, and the same case under compose (the Letta server and
Postgres + pgvector as services); and, fast, the oracle's sleep-time dialect and the adapter's rendering of the
messages a sleep-time pass quotes.

The runs are heavy (a 1.1 GB environment built once from the lock, cached by its hash; Postgres and the Letta
server start per run): enable with MEMMATRIX_TEST_ENABLE=heavy. The compose test needs Docker (docker) and,
without a registry, MEMMATRIX_LETTA_IMAGE=memmatrix/letta-server:0.16.8
MEMMATRIX_PGVECTOR_IMAGE=memmatrix/pgvector-lite:16 (built from the base image on first use).
"""

import importlib.util
import json
import os
import subprocess
import tempfile

import pytest

from conftest import ROOT
from helpers import G, W, newest_cases, processes_under, run, system_oracle
from memmatrix.common.config import Config
from memmatrix.model.gold import GoldIndex

heavy = pytest.mark.heavy

SLEEP_TOOLS = {"memory_insert": ["label", "new_string", "insert_line"], "memory_replace": ["label", "old_string", "new_string"],
               "memory_rethink": ["label", "new_memory"], "memory_finish_edits": []}
REMINDER = ("<system-reminder>\nYou are a sleeptime agent - a background agent that asynchronously processes "
            "conversations after they occur.\n</system-reminder>\n\nMessages:\n")


def _sleep_request(human: list[str], quoted: list[str], done: list[tuple[str, dict]] = ()) -> dict:
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {
        p: {"type": "string"} for p in ps}}}} for n, ps in SLEEP_TOOLS.items()]
    msgs = [{"role": "system", "content": "<memory_blocks><human>\n<value>\n"
                                          + "\n".join(f"{i + 1}→ {ln}" for i, ln in enumerate(human))
                                          + "\n</value>\n</human>"},
            {"role": "user", "content": REMINDER + "\n".join(quoted)}]
    for i, (name, args) in enumerate(done):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]},
                 {"role": "tool", "content": "ok", "tool_call_id": f"call_{i}"}]
    return {"model": "m", "tools": tools, "messages": msgs}


def _call(reply) -> tuple[str, dict]:
    fn = reply.tool_calls[0]["function"]
    return fn["name"], json.loads(fn["arguments"])


def test_sleeptime_pass_writes_each_quoted_fact_missing_from_the_block_then_finishes():
    gold = GoldIndex([{"cases": [{"id": "s", "ops": [
        W("My locker code is QX-1.", gold=[G("user", "locker code", "QX-1", "My locker code is QX-1.")]),
        W("My bike lock code is MB-2.", gold=[G("user", "bike code", "MB-2", "My bike lock code is MB-2.")])]}]}])
    oracle = system_oracle("letta", gold)
    quoted = ["user: My locker code is QX-1.", "assistant: Calling tool archival_memory_insert",
              "user: My bike lock code is MB-2.", "assistant: Noted."]
    first = oracle.chat(_sleep_request(["My locker code is QX-1."], quoted))  # the first is in the block already
    assert first.dialect == "letta-sleeptime" and first.matched
    insert = ("memory_insert", {"label": "human", "new_string": "My bike lock code is MB-2."})
    assert _call(first) == insert
    # the block in the prompt not yet rebuilt: the call made since the reminder counts, and the pass ends
    assert _call(oracle.chat(_sleep_request(["My locker code is QX-1."], quoted, [insert]))) == ("memory_finish_edits", {})
    # nothing quoted that the block lacks: the pass ends at once
    assert _call(oracle.chat(_sleep_request(["My locker code is QX-1.", "My bike lock code is MB-2."], quoted))) \
        == ("memory_finish_edits", {})


def test_sleeptime_pass_replaces_the_line_a_correction_retires():
    gold = GoldIndex([{"cases": [{"id": "s", "ops": [
        W("I live in Oslo.", gold=[G("user", "home city", "Oslo", "I live in Oslo.")]),
        W("I moved from Oslo to Bergen.",
          gold=[G("user", "home city", "Bergen", "I live in Bergen.", intent="supersede", replaces="Oslo")])]}]}])
    reply = system_oracle("letta", gold).chat(_sleep_request(["I live in Oslo."], ["user: I moved from Oslo to Bergen."]))
    assert _call(reply) == ("memory_replace", {"label": "human", "old_string": "I live in Oslo.",
                                               "new_string": "I live in Bergen."})


def test_a_main_agent_step_is_not_taken_for_a_sleeptime_pass():
    gold = GoldIndex([{"cases": [{"id": "s", "ops": [
        W("My locker code is QX-1.", gold=[G("user", "locker code", "QX-1", "My locker code is QX-1.")])]}]}])
    req = _sleep_request([], ["user: My locker code is QX-1."])
    req["messages"][1]["content"] = "My locker code is QX-1."  # no reminder: the main agent's own turn
    reply = system_oracle("letta", gold).chat(req)
    assert reply.dialect == "letta-agent-step" and _call(reply)[0] == "memory_insert"


def _sleeptime_module():
    spec = importlib.util.spec_from_file_location("letta_sleeptime", ROOT / "systems" / "letta" / "sleeptime.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pass_quotes_messages_as_letta_renders_them_for_a_sleeptime_agent():
    stringify = _sleeptime_module().stringify
    assert stringify({"message_type": "user_message", "content": "My code is QX-1."}) == "user: My code is QX-1."
    assert stringify({"message_type": "user_message", "content": [{"type": "text", "text": "Hi"}]}) == "user: Hi"
    assert stringify({"message_type": "assistant_message", "content": "Noted."}) == "assistant: Noted."
    assert stringify({"message_type": "tool_call_message", "tool_call": {"name": "archival_memory_insert"}}) \
        == "assistant: Calling tool archival_memory_insert"
    assert stringify({"message_type": "tool_return_message", "tool_return": "None"}) is None
    assert stringify({"message_type": "system_message", "content": "You are Letta."}) is None


@pytest.fixture
def one_case(tmp_path):
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "identifier-locker-code"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    return cases


def assert_findings(out):
    result = json.loads((out / "result.json").read_text())
    assert [c["id"] for c in result["cases"]] == ["identifier-locker-code"]
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    # the message history survives the forget and conversation_search, in the agent's reach, still finds it
    assert cells["4"]["verdict"] == "FAIL" and "'QX-4471-TRV'" in cells["4"]["reason"], cells["4"]
    # provider tracing on (Letta's default): every LLM exchange is kept in provider_traces too
    assert "right after the forget by ['provider-traces', 'recall-messages']" in cells["9"]["reason"], cells["9"]
    assert cells["2"]["verdict"] == "PASS" and cells["5"]["verdict"] == "PASS", (cells["2"], cells["5"])
    # share: one block attached to both agents; the line removed through the first is gone for the second
    assert cells["11"]["verdict"] == "PASS" and cells["13"]["verdict"] == "PASS", (cells["11"], cells["13"])
    assert cells["12"]["verdict"] == "FAIL" and "'ZR-3318-WEP'" in cells["12"]["reason"], cells["12"]
    return result


@heavy
def test_one_case_leaves_no_postgres_or_letta_server(tmp_path, monkeypatch, one_case):
    # the environment is reused from the user cache (keyed by the lock's hash): building it costs minutes
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    private = tmp_path / "tmp"  # this run's Postgres (-D in its command line) and server (cwd) live under it
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    seen = []  # the control: while the adapter is up, its Postgres and server are visible to the check
    import memmatrix.runtimes.embedded as embedded
    for name in ("restart", "stop"):
        original = getattr(embedded.EmbeddedRuntime, name)

        def spy(self, _original=original, _name=name):
            seen.append((_name, processes_under(private)))
            return _original(self)
        monkeypatch.setattr(embedded.EmbeddedRuntime, name, spy)
    out = run(config, "letta", tmp_path / "out", runtime="embedded", protocol="deletion", cases=one_case)
    assert_findings(out)
    assert [n for n, _ in seen] == ["restart", "stop"], seen
    for _, procs in seen:
        assert any("postgres -D" in p for p in procs) and any("letta server" in p for p in procs), procs
    left = processes_under(private)
    assert left == [], "left running after the run:\n" + "\n".join(left)


def _docker(*args: str) -> list[str]:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if ln.strip()]


@heavy
def test_sleeptime_agent_writes_the_shared_block_in_the_background(tmp_path, one_case):
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    from memmatrix.cases import load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.request import RunRequest
    from memmatrix.run.runner import execute
    from memmatrix.systems import resolve_system
    p = get_protocol("deletion")
    out = execute(RunRequest(spec=resolve_system("letta", config), protocol=p, cases=load_cases(one_case, config, p),
                             runtime="embedded", out=tmp_path / "out", options={"sleeptime": "on"}, judge=False), config)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    assert cells["7"]["verdict"] == "PASS" and "'sleeptime'" in cells["7"]["reason"], cells["7"]
    core = {r["moment"]: r["held"] for r in cells["9"]["checks"] if r.get("store") == "core-memory"}
    # the main agent has no core-memory tool: the run Letta started after the first turn wrote the canary there,
    # the forget removed it, and the jobs op's pass wrote it back from the re-fed conversation
    assert core == {"before": True, "after-forget": False, "end": True}, core


@heavy
@pytest.mark.docker
def test_compose_restarts_the_server_on_its_stores_and_leaves_nothing(tmp_path, monkeypatch, one_case):
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    import memmatrix.runtimes.compose as compose
    started = {}  # service -> StartedAt before and after the protocol's restart
    projects = []
    original = compose.ComposeRuntime.restart

    def spy(self):
        projects.append(self.compose.project)
        ids = {c.Service: c.ID for c in self.compose.get_containers()}
        before = {s: _docker("inspect", "-f", "{{.State.StartedAt}}", i)[0] for s, i in ids.items()}
        original(self)
        for s, i in ids.items():
            started[s] = (before[s], _docker("inspect", "-f", "{{.State.StartedAt}}", i)[0])
    monkeypatch.setattr(compose.ComposeRuntime, "restart", spy)
    out = run(config, "letta", tmp_path / "out", runtime="compose", protocol="deletion", cases=one_case)
    result = assert_findings(out)
    assert set(result["stamp"]["system"]["image_digests"]) == {"adapter", "gateway", "letta", "postgres"}
    # the restart restarted the Letta server and the adapter, and only them (Postgres kept its data running)
    moved = {s for s, (a, b) in started.items() if a != b}
    assert moved == {"adapter", "letta"}, started
    project = projects[0]
    assert _docker("ps", "-a", "--filter", f"label=com.docker.compose.project={project}", "--format", "{{.Names}}") == []
    assert _docker("volume", "ls", "-q", "--filter", f"label=com.docker.compose.project={project}") == []
