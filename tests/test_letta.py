"""Letta for real: letta 0.16.8 embedded (Postgres from the pgserver wheel, letta server), one deletion case.

Heavy (a 1.1 GB environment built once from the lock, cached by its hash; Postgres and the Letta server
start per run): enable with MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os
import tempfile

import pytest

from conftest import ROOT
from helpers import newest_cases, processes_under, run
from memmatrix.config import Config

pytestmark = pytest.mark.heavy


def test_one_case_leaves_no_postgres_or_letta_server(tmp_path, monkeypatch):
    # the environment is reused from the user cache (keyed by the lock's hash): building it costs minutes
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    private = tmp_path / "tmp"  # this run's Postgres (-D in its command line) and server (cwd) live under it
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "identifier-locker-code"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    seen = []  # the control: while the adapter is up, its Postgres and server are visible to the check
    import memmatrix.runtimes.embedded as embedded
    for name in ("restart", "stop"):
        original = getattr(embedded.EmbeddedRuntime, name)

        def spy(self, _original=original, _name=name):
            seen.append((_name, processes_under(private)))
            return _original(self)
        monkeypatch.setattr(embedded.EmbeddedRuntime, name, spy)
    out = run(config, "letta", tmp_path / "out", runtime="embedded", protocol="deletion", cases=cases)
    result = json.loads((out / "result.json").read_text())
    assert [c["id"] for c in result["cases"]] == ["identifier-locker-code"]
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    # the message history survives the forget and conversation_search, in the agent's reach, still finds it
    assert cells["4"]["verdict"] == "FAIL" and "'QX-4471-TRV'" in cells["4"]["reason"], cells["4"]
    assert "right after the forget by ['recall-messages']" in cells["9"]["reason"], cells["9"]
    assert cells["2"]["verdict"] == "PASS" and cells["5"]["verdict"] == "PASS", (cells["2"], cells["5"])
    assert [n for n, _ in seen] == ["restart", "stop"], seen
    for _, procs in seen:
        assert any("postgres -D" in p for p in procs) and any("letta server" in p for p in procs), procs
    left = processes_under(private)
    assert left == [], "left running after the run:\n" + "\n".join(left)
