"""Cognee for real: cognee 1.6.5 embedded (its own environment from the lock; SQLite, LanceDB and Ladybug in the
run's data directory; cognify's model calls answered by the oracle through the gateway): one deletion case; and the
oracle's answer to 1.6.4's contradiction pass (option contradiction_detection=on).

Heavy (a 1.6 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import newest_cases, run, system_oracle
from memmatrix.cases import load_cases
from memmatrix.common.config import Config
from memmatrix.model.gold import GoldIndex
from memmatrix.protocols import get_protocol
from memmatrix.run.request import RunRequest
from memmatrix.run.runner import execute
from memmatrix.systems import resolve_system


def _contradictions(facts: str) -> dict:
    """detect_contradictions' request (cognee 1.6.4: the numbered facts in the user message, ContradictionList)."""
    return {"messages": [{"role": "system", "content": "You are a contradiction detection system for a knowledge graph"},
                         {"role": "user", "content": f"Facts:\n{facts}\n\nIdentify the pairs of facts that contradict "
                                                     "each other."}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "ContradictionList", "schema": {}}}}


def test_the_contradiction_pass_pairs_a_correction_with_the_value_it_replaces_and_nothing_else():
    oracle = system_oracle("cognee", GoldIndex([json.loads((ROOT / "cases/contradiction/1.3.0.json").read_text())]))
    # the lines as 1.6.4 renders them (node names as stored, lower case; type edges among them)
    reply = oracle.chat(_contradictions("[F0] user is a person\n[F1] user home city quillmere\n"
                                        "[F2] user employer brindlemoor maps\n[F3] user home city tarrowick\n"
                                        "[F4] tarrowick is a concept"))
    assert reply.matched and reply.dialect == "cognee-contradictions"
    assert json.loads(reply.content)["contradictions"] == [
        {"first_fact_id": "F1", "second_fact_id": "F3", "reason": "I live in Tarrowick.", "confidence": 0.9}]
    retraction = oracle.chat(_contradictions("[F0] user's sister name ondine marchetti\n"
                                             "[F1] user's sister no longer name ondine marchetti"))
    assert [(c["first_fact_id"], c["second_fact_id"]) for c in json.loads(retraction.content)["contradictions"]] == \
        [("F0", "F1")]
    quiet = oracle.chat(_contradictions("[F0] quillmere is a concept\n[F1] user home city quillmere"))
    assert quiet.matched and json.loads(quiet.content) == {"contradictions": []}
    assert not oracle.chat(_contradictions("[F0] user home city nowhere\n[F1] user is a person")).matched


@pytest.mark.heavy
def test_forget_cascades_but_run_info_and_search_history_keep_the_text(tmp_path):
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "identifier-locker-code"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "cognee", tmp_path / "out", runtime="embedded", protocol="deletion", cases=cases)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0 and result["cost"]["total"]["llm_calls"] > 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    assert cells["2"]["verdict"] == "PASS" and cells["4"]["verdict"] == "PASS", (cells["2"], cells["4"])
    # forget takes the document's graph, vectors and file; the relational store keeps the text
    assert "right after the forget by ['relational']" in cells["9"]["reason"], cells["9"]
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # cognify extracts the re-fed document again


@pytest.mark.heavy
def test_with_session_memory_the_forget_leaves_the_session_the_door_still_serves(tmp_path):
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "identifier-locker-code"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    p = get_protocol("deletion")
    out = execute(RunRequest(spec=resolve_system("cognee", config), protocol=p, cases=load_cases(cases, config, p),
                             runtime="embedded", out=tmp_path / "out", options={"write_path": "session"}), config)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    held = {(c["store"], c["moment"]): c["held"] for c in cells["9"]["checks"]
            if c.get("check") == "store" and c["target"] == "canary"}
    # the background bridge reached the graph before the forget; the forget took the document, not the session
    assert held[("graph", "before")] and held[("session-cache", "before")], held
    assert not held[("graph", "after-forget")] and held[("session-cache", "after-forget")], held
    assert cells["4"]["verdict"] == "FAIL", cells["4"]  # the door hands the model the session's history
