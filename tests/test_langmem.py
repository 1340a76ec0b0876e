"""LangMem for real: langmem 0.0.30 embedded (its own environment from the lock, LangGraph's SqliteStore, the
manager's model calls answered by the oracle through the gateway): one deletion case and one contradiction case at
the vendor's default, the profile pattern (memory_shape=profile) and the TTL forget (forget_path=ttl); and, fast,
the oracle's profile dialect on requests shaped as trustcall 0.0.39 sends them.

The runs are heavy (a 200 MB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import G, W, newest_cases, run_one_case, system_oracle
from memmatrix.common.config import Config
from memmatrix.model.gold import GoldIndex

heavy = pytest.mark.heavy

SYSTEM = "You are a memory subroutine for an AI."
INSTRUCTIONS = "You are a long-term memory manager maintaining a core store of semantic, procedural, and episodic memory."


def _request(tools: list[str], user: str, profile: dict | None = None, doc: str = "85d542b53cec5768942e6a29ffcc5ff0"):
    """The manager's call as trustcall makes it: extract (no instance yet) or extract_updates over one instance."""
    system = SYSTEM
    if profile is not None:
        system += ("\n\nGenerate JSONPatches to update the existing schema instances.\n<existing>\n"
                   f'<instance id={doc} schema_type="Profile">\n{profile!r}\n</instance>\n</existing>\n')
    return {"model": "m", "tools": [{"type": "function", "function": {"name": t, "parameters": {}}} for t in tools],
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": f"{INSTRUCTIONS}\n\n<session_1>\n=== Human Message ===\n\n{user}\n"
                                                     "</session_1>"}]}


def _calls(reply) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls]


GOLD = GoldIndex([{"cases": [{"id": "p", "ops": [
    W("I live in Quillmere, right by the old ferry dock.", gold=[G("user", "home city", "Quillmere", "I live in Quillmere.")]),
    W("My dog is called Zanzibrook.", gold=[G("user's dog", "name", "Zanzibrook", "My dog is called Zanzibrook.")]),
    W("Big news: I moved, and now I live in Tarrowick.",
      gold=[G("user", "home city", "Tarrowick", "I live in Tarrowick.", intent="supersede", replaces="Quillmere")]),
    W("That was wrong, sorry: I do not have a dog at all.",
      gold=[G("user's dog", "name", "Zanzibrook", "I do not have a dog.", intent="retract")])]}]}])


def test_the_first_conversation_creates_the_profile_with_one_attribute_per_fact():
    reply = system_oracle("langmem", GOLD).chat(_request(["Profile"], "I live in Quillmere, right by the old ferry dock."))
    assert reply.dialect == "langmem-profile" and reply.matched
    assert _calls(reply) == [("Profile", {"attributes": {"home city": "I live in Quillmere."}})]


def test_a_later_fact_is_added_and_a_correction_replaces_the_attribute_holding_the_old_value():
    oracle = system_oracle("langmem", GOLD)
    profile = {"attributes": {"home city": "I live in Quillmere."}}
    added = _calls(oracle.chat(_request(["PatchDoc"], "My dog is called Zanzibrook.", profile)))
    assert added == [("PatchDoc", {"json_doc_id": "85d542b53cec5768942e6a29ffcc5ff0",
                                   "planned_edits": "add /attributes/user's dog name",
                                   "patches": [{"op": "add", "path": "/attributes/user's dog name",
                                                "value": "My dog is called Zanzibrook."}]})]
    profile["attributes"]["user's dog name"] = "My dog is called Zanzibrook."
    fixed = _calls(oracle.chat(_request(["PatchDoc"], "Big news: I moved, and now I live in Tarrowick.", profile)))
    assert fixed[0][1]["patches"] == [{"op": "replace", "path": "/attributes/home city", "value": "I live in Tarrowick."}]
    gone = _calls(oracle.chat(_request(["PatchDoc"], "That was wrong, sorry: I do not have a dog at all.", profile)))
    assert gone[0][1]["patches"] == [{"op": "replace", "path": "/attributes/user's dog name",
                                      "value": "I do not have a dog."}]


def test_a_fact_the_profile_states_already_and_a_conversation_without_one_change_nothing():
    oracle = system_oracle("langmem", GOLD)
    same = oracle.chat(_request(["PatchDoc"], "I live in Quillmere, right by the old ferry dock.",
                                {"attributes": {"home city": "I live in Quillmere."}}))
    assert same.dialect == "langmem-profile" and not same.tool_calls
    idle = oracle.chat(_request(["PatchDoc"], "What a lovely day.", {"attributes": {}}))
    assert idle.dialect == "langmem-profile" and not idle.tool_calls and not idle.matched


def test_the_collection_calls_stay_with_the_collection_dialect():
    oracle = system_oracle("langmem", GOLD)
    reply = oracle.chat(_request(["Memory"], "I live in Quillmere, right by the old ferry dock."))
    assert reply.dialect == "langmem-manager"
    assert _calls(reply) == [("Memory", {"content": "I live in Quillmere."})]
    req = _request(["PatchDoc", "Memory"], "Big news: I moved, and now I live in Tarrowick.")
    req["messages"][0]["content"] += ('\n\n<existing>\n<instance id=ab schema_type="Memory">\n'
                                      "{'content': 'I live in Quillmere.'}\n</instance>\n</existing>\n")
    assert oracle.chat(req).dialect == "langmem-manager"


# ---------------------------------------------------------------- runs
def _one(tmp_path, protocol: str, case: str):
    cells, cost = run_one_case(tmp_path, "langmem", protocol, case)
    assert cost["total"]["unmatched"] == 0 and cost["total"]["llm_calls"] > 0, cost
    return cells


def _one_with(tmp_path, protocol: str, case: str, options: dict) -> dict:
    from memmatrix.cases import load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.request import RunRequest
    from memmatrix.run.runner import execute
    from memmatrix.systems import resolve_system
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    data = json.loads(newest_cases(protocol).read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == case]
    path = tmp_path / f"{protocol}.json"
    path.write_text(json.dumps(data))
    p = get_protocol(protocol)
    out = execute(RunRequest(spec=resolve_system("langmem", config), protocol=p, cases=load_cases(path, config, p),
                             runtime="embedded", out=tmp_path / "out", options=options), config)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    return {x["step"]: x for x in result["cases"][0]["cells"]}


@heavy
def test_deletion_leaves_the_vector_and_refeed_recreates(tmp_path):
    cells = _one(tmp_path, "deletion", "identifier-locker-code")
    assert cells["4"]["verdict"] == "PASS", cells["4"]  # the manage tool's delete takes the item out of search
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # the manager extracts the re-fed conversation again
    # SqliteStore keeps the deleted item's vector (foreign keys are off on the connection)
    assert "right after the forget by ['store-vectors']" in cells["9"]["reason"], cells["9"]
    assert cells["7"]["verdict"] == "UNSUPPORTED", cells["7"]


@heavy
def test_a_correction_patches_the_memory_and_loses_the_past(tmp_path):
    cells = _one(tmp_path, "contradiction", "replacement-home-city")
    assert cells["A"]["verdict"] == "PASS" and cells["B"]["verdict"] == "PASS", (cells["A"], cells["B"])
    assert cells["D"]["verdict"] == "FAIL", cells["D"]  # PatchDoc replaced the old statement: no history


@heavy
def test_a_profile_is_patched_in_place_and_keeps_its_other_attributes(tmp_path):
    cells = _one_with(tmp_path, "contradiction", "replacement-home-city", {"memory_shape": "profile"})
    assert {cells[s]["verdict"] for s in ("setup", "A", "B", "S")} == {"PASS"}, cells
    assert cells["D"]["verdict"] == "FAIL" and cells["U"]["verdict"] == "FAIL", (cells["D"], cells["U"])


@heavy
def test_an_expired_item_is_served_until_the_sweep_and_its_vector_outlives_it(tmp_path):
    cells = _one_with(tmp_path, "deletion", "identifier-locker-code", {"forget_path": "ttl"})
    # expired is not deleted: the item is still in the store and still served until the sweep
    assert cells["4"]["verdict"] == "FAIL", cells["4"]
    held = {(r["store"], r["moment"]): r["held"] for r in cells["9"]["checks"] if r.get("check") == "store"}
    assert held[("store-items", "after-forget")] and not held[("store-items", "end")], held
    assert cells["7"]["verdict"] == "PASS" and cells["8"]["verdict"] == "PASS", (cells["7"], cells["8"])
    assert held[("store-vectors", "end")], held  # the sweep deletes store rows only (foreign keys off)
