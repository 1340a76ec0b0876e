"""MemPalace for real: mempalace 3.11.0 embedded (its own environment from the lock, ChromaDB palace, embeddings
through the gateway), the whole deletion protocol and one contradiction case, and one contradiction case on its
knowledge graph (memory=kg, each write an agent's turn answered by the oracle); and, fast, the oracle's KG agent.

The runs are heavy (a 400 MB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import G, W, newest_cases, run, system_oracle
from memmatrix.common.config import Config
from memmatrix.model.gold import GoldIndex

heavy = pytest.mark.heavy

KG_TOOLS = ("mempalace_kg_add", "mempalace_kg_supersede", "mempalace_kg_invalidate")


def _turn(user: str, facts: list[dict], now: str = "2026-05-31T09:02:00Z") -> dict:
    """The agent's turn as the adapter sends it (systems/mempalace/adapter.py KG_AGENT)."""
    system = (f"You are an assistant with a long-term memory. The current time is {now}. These facts are in the "
              f"knowledge graph now:\n<knowledge_graph>\n{json.dumps(facts, indent=2)}\n</knowledge_graph>\nRecord ...")
    return {"model": "m", "tools": [{"type": "function", "function": {"name": t, "parameters": {}}} for t in KG_TOOLS],
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def _calls(reply) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls]


def _fact(s, p, o, start="2026-03-02T09:00:00Z", end=None):
    return {"subject": s, "predicate": p, "object": o, "valid_from": start, "valid_to": end, "current": end is None}


KG_GOLD = GoldIndex([{"cases": [{"id": "k", "ops": [
    W("I live in Quillmere.", gold=[G("user", "home city", "Quillmere", "I live in Quillmere.")]),
    W("Big news: I moved, and now I live in Tarrowick.",
      gold=[G("user", "home city", "Tarrowick", "I live in Tarrowick.", intent="supersede", replaces="Quillmere")]),
    W("I quit Marovian kelp coffee.", gold=[G("user", "drinks every morning", "Marovian kelp coffee",
                                              "I quit Marovian kelp coffee.", intent="retract")]),
    W("I am staying in Kvalvika until 14 March.", gold=[G("user", "staying in", "Kvalvika",
                                                          "I am staying in Kvalvika until 14 March.",
                                                          valid_to="2026-03-14T00:00:00Z")])]}]}])


def test_the_agent_adds_a_new_fact_from_now_until_the_end_its_statement_gives():
    oracle = system_oracle("mempalace", KG_GOLD)
    reply = oracle.chat(_turn("I live in Quillmere.", [], now="2026-03-02T09:00:00Z"))
    assert reply.dialect == "mempalace-kg-agent" and reply.matched
    assert _calls(reply) == [("mempalace_kg_add", {"subject": "user", "predicate": "home city", "object": "Quillmere",
                                                   "valid_from": "2026-03-02T09:00:00Z"})]
    bounded = _calls(oracle.chat(_turn("I am staying in Kvalvika until 14 March.", [], now="2026-03-02T09:00:00Z")))
    assert bounded[0][1]["valid_to"] == "2026-03-14T00:00:00Z", bounded


def test_the_agent_supersedes_or_invalidates_only_a_fact_the_graph_holds_open():
    oracle = system_oracle("mempalace", KG_GOLD)
    held = [_fact("user", "home_city", "Quillmere"), _fact("user", "drinks_every_morning", "Marovian kelp coffee")]
    moved = _calls(oracle.chat(_turn("Big news: I moved, and now I live in Tarrowick.", held)))
    assert moved == [("mempalace_kg_supersede", {"subject": "user", "predicate": "home city", "old_object": "Quillmere",
                                                 "new_object": "Tarrowick", "at": "2026-05-31T09:02:00Z"})]
    quit = _calls(oracle.chat(_turn("I quit Marovian kelp coffee.", held)))
    assert quit == [("mempalace_kg_invalidate", {"subject": "user", "predicate": "drinks every morning",
                                                 "object": "Marovian kelp coffee", "ended": "2026-05-31T09:02:00Z"})]
    closed = [_fact("user", "home_city", "Quillmere", end="2026-04-01T00:00:00Z")]  # no longer open: nothing to replace
    assert _calls(oracle.chat(_turn("Big news: I moved, and now I live in Tarrowick.", closed)))[0][0] == "mempalace_kg_add"
    assert not oracle.chat(_turn("I quit Marovian kelp coffee.", closed)).tool_calls


def test_a_fact_the_graph_holds_open_is_not_added_again():
    reply = system_oracle("mempalace", KG_GOLD).chat(_turn("I live in Quillmere.", [_fact("user", "home_city", "Quillmere")]))
    assert reply.dialect == "mempalace-kg-agent" and not reply.tool_calls


def _cells(result: dict) -> dict:
    return {(c["id"], x["step"]): x for c in result["cases"] for x in c["cells"]}


@heavy
def test_deletion_findings(tmp_path):
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "mempalace", tmp_path / "out", runtime="embedded", protocol="deletion")
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0 and result["cost"]["total"]["llm_calls"] == 0, result["cost"]
    cells = _cells(result)
    ids = [c["id"] for c in result["cases"]]
    assert len(ids) == 4, ids
    for case in ids:
        # the drawer is gone from search, and mining the same conversation again does not file it again
        assert {cells[(case, s)]["verdict"] for s in ("2", "4", "6", "8", "10")} == {"PASS"}, case
        # chroma's own tables keep the text right after the delete; the sweeper files it again, with no wing
        reason = cells[(case, "9")]["reason"]
        assert cells[(case, "9")]["verdict"] == "FAIL", cells[(case, "9")]
        assert "right after the forget by ['chroma-sqlite']" in reason and "'drawers'" in reason, reason
        assert cells[(case, "11")]["verdict"] == "UNSUPPORTED", cells[(case, "11")]


@heavy
def test_a_verbatim_store_keeps_both_values(tmp_path):
    data = json.loads(newest_cases("contradiction").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "replacement-home-city"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "mempalace", tmp_path / "out", runtime="embedded", protocol="contradiction", cases=cases)
    result = json.loads((out / "result.json").read_text())
    cells = _cells(result)
    case = "replacement-home-city"
    assert cells[(case, "A")]["verdict"] == "PASS" and cells[(case, "S")]["verdict"] == "PASS", cells
    # both drawers reach the model with nothing saying which is current
    assert cells[(case, "B")]["verdict"] == "FAIL", cells[(case, "B")]
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]


@heavy
def test_the_knowledge_graph_closes_the_old_fact_keeps_it_in_history_and_never_reopens_it(tmp_path):
    from memmatrix.cases import load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.request import RunRequest
    from memmatrix.run.runner import execute
    from memmatrix.systems import resolve_system
    data = json.loads(newest_cases("contradiction").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "replacement-home-city"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    p = get_protocol("contradiction")
    out = execute(RunRequest(spec=resolve_system("mempalace", config), protocol=p, cases=load_cases(cases, config, p),
                             runtime="embedded", out=tmp_path / "out", options={"memory": "kg"}), config)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0 and result["cost"]["total"]["llm_calls"] > 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    # kg_supersede closed the old fact at the correction's time: not current, still in the timeline
    assert {cells[s]["verdict"] for s in ("setup", "A", "B", "D", "S")} == {"PASS"}, cells
    # nothing sets valid_to back to NULL: invalidating the correction leaves the original closed
    assert cells["U"]["verdict"] == "FAIL" and "outlived the correction" in cells["U"]["reason"], cells["U"]
