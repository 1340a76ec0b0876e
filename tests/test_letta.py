"""Letta for real: letta 0.16.8 embedded (Postgres from the pgserver wheel, letta server), one deletion case,
and the same case under compose (the Letta server and Postgres + pgvector as services).

Heavy (a 1.1 GB environment built once from the lock, cached by its hash; Postgres and the Letta server
start per run): enable with MEMMATRIX_TEST_ENABLE=heavy. The compose test needs Docker (docker) and, without
a registry, MEMMATRIX_LETTA_IMAGE=memmatrix/letta-server:0.16.8 MEMMATRIX_PGVECTOR_IMAGE=memmatrix/pgvector-lite:16
(built from the base image on first use).
"""

import json
import os
import subprocess
import tempfile

import pytest

from conftest import ROOT
from helpers import newest_cases, processes_under, run
from memmatrix.common.config import Config

pytestmark = pytest.mark.heavy


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
    assert "right after the forget by ['recall-messages']" in cells["9"]["reason"], cells["9"]
    assert cells["2"]["verdict"] == "PASS" and cells["5"]["verdict"] == "PASS", (cells["2"], cells["5"])
    return result


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
