"""The oracle's Graphiti dialect on request bodies recorded from real graphiti-core runs (0.31.2; 0.18.1, 0.21.0
and 0.27.1 for the releases a sweep drives).

Fixtures: tests/fixtures/requests/graphiti-0.31.2-chat-*.json (the "note" of each says which run and call
it was recorded from). Fast: no Graphiti install, the oracle only.
"""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from helpers import system_module, system_oracle

from memmatrix.model.gold import GoldIndex
from memmatrix.model.oracle import Oracle

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "requests"
CASES = [json.loads((ROOT / f"cases/{p}/1.2.0.json").read_text()) for p in ("deletion", "contradiction")]
ORACLE = system_oracle("graphiti", GoldIndex(CASES))
_merge, sentences = system_module("graphiti")._merge, system_module("graphiti").sentences


def fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())["request"]


def answer(name: str, oracle: Oracle = ORACLE):
    reply = oracle.chat(fixture(name))
    return reply, json.loads(reply.content)


def test_batch_timestamps_date_every_fact_in_order_at_its_reference_time():
    # add_episode_bulk: CombinedExtraction gives no dates; this call does. Before, the oracle answered
    # {"timestamps": []} (unmatched), so the imported edges went undated into edge resolution
    reply, body = answer("graphiti-0.31.2-chat-BatchEdgeTimestamps")
    assert reply.dialect == "graphiti-BatchEdgeTimestamps" and reply.matched
    assert body == {"timestamps": [{"valid_at": "2026-03-02T09:00:00Z", "invalid_at": None},
                                   {"valid_at": "2026-03-02T09:00:00Z", "invalid_at": None}]}


def test_batch_timestamps_carry_a_stated_end_date():
    reply, body = answer("graphiti-0.31.2-chat-BatchEdgeTimestamps-bounded")
    assert reply.matched
    assert body == {"timestamps": [{"valid_at": "2026-03-02T09:00:00Z", "invalid_at": "2026-03-14T00:00:00Z"}]}


def test_batch_timestamps_for_a_fact_outside_the_gold_are_dated_but_not_matched():
    req = fixture("graphiti-0.31.2-chat-BatchEdgeTimestamps")
    facts = [{"fact": "I live in Quillmere.", "reference_time": "2026-03-02T09:00:00+00:00"},
             {"fact": "The moon is made of cheese.", "reference_time": "2026-04-01T10:00:00+00:00"},
             {"fact": "I live in Quillmere.", "reference_time": "unknown"}]
    user = req["messages"][1]
    head, rest = user["content"].split("<FACTS>\n", 1)
    user["content"] = head + "<FACTS>\n" + json.dumps(facts) + "\n</FACTS>\n"
    reply = ORACLE.chat(req)
    assert not reply.matched  # one fact is no gold statement: the oracle cannot know it is present tense
    assert json.loads(reply.content)["timestamps"] == [
        {"valid_at": "2026-03-02T09:00:00Z", "invalid_at": None},
        {"valid_at": "2026-04-01T10:00:00Z", "invalid_at": None},
        {"valid_at": None, "invalid_at": None}]  # reference time 'unknown': nothing to resolve against


def test_batch_timestamps_without_facts_is_not_a_match():
    req = fixture("graphiti-0.31.2-chat-BatchEdgeTimestamps")
    user = req["messages"][1]
    user["content"] = user["content"].split("<FACTS>", 1)[0]
    reply = ORACLE.chat(req)
    assert not reply.matched and json.loads(reply.content) == {"timestamps": []}


def test_batch_timestamps_under_the_undated_ablation_are_null_one_per_fact():
    undated = system_oracle("graphiti", GoldIndex(CASES, ablation="undated"))
    reply, body = answer("graphiti-0.31.2-chat-BatchEdgeTimestamps-bounded", undated)
    assert reply.matched  # the ablation's answer, on purpose: an extractor that resolves no dates
    assert body == {"timestamps": [{"valid_at": None, "invalid_at": None}]}


def test_community_summary_states_each_fact_once_and_keeps_both_values():
    reply, body = answer("graphiti-0.31.2-chat-Summary-pair")
    assert reply.matched
    # recorded input repeats "I live in Quillmere." and the two other facts; the merge states each once
    assert body == {"summary": "I live in Quillmere. I work as a cartographer at Brindlemoor Maps. I live in Tarrowick."}


def test_community_summary_drops_a_sentence_another_one_contains():
    reply, body = answer("graphiti-0.31.2-chat-Summary")  # the original fixture, recorded on Kuzu
    assert reply.matched
    assert body == {"summary": "Alice Smith works as a nurse at Charite Hospital in Lisbon. "
                               "Charite Hospital is located in Lisbon."}


def test_merge_keeps_distinct_sentences_that_share_words():
    assert _merge(["I live in Pellbury.\nMy street address in Pellbury is 12 Harrowgate Lane.",
                   "I live in Pellbury. My street address in Pellbury is 48 Cindermoss Row."]) == (
        "I live in Pellbury. My street address in Pellbury is 12 Harrowgate Lane. "
        "My street address in Pellbury is 48 Cindermoss Row.")
    assert _merge(["", ""]) == ""
    assert sentences('My wifi passphrase is "amber kettles whistle backwards". I reset it.') == [
        'My wifi passphrase is "amber kettles whistle backwards".', "I reset it."]


def test_community_description_says_what_kind_of_information_it_holds():
    reply, body = answer("graphiti-0.31.2-chat-SummaryDescription-community")
    assert reply.matched
    # recorded before: the summary's first 12 words ("I live in Quillmere. I live in Quillmere. I work as a")
    assert body == {"description": "Facts about user (home city, employer)."}


def test_community_description_outside_the_gold_names_what_the_summary_mentions():
    reply, body = answer("graphiti-0.31.2-chat-SummaryDescription")  # Kuzu recording, no gold statement in it
    assert reply.matched
    assert body == {"description": "Facts about Alice Smith; Charite Hospital; Lisbon."}


def test_entity_summary_of_an_owner_carries_what_it_owns():
    # remove_episode of the canary episode: 'user' is rebuilt from the twin's episode only
    reply, body = answer("graphiti-0.31.2-chat-SummarizedEntities-owner")
    assert reply.matched
    assert body == {"summaries": [{"name": "user", "summary":
                                   "The user bought a bike lock. The code for my bike lock is MB-9025-KLO."}]}
    assert "QX-4471-TRV" not in reply.content  # the forgotten canary's episode is not in EPISODES


@pytest.mark.parametrize("version", ["0.18.1", "0.21.0", "0.27.1"])
def test_every_kind_of_an_older_release_is_answered_in_its_own_schema(version):
    """Before 0.24.0 the client sends json_object with the schema pasted into the prompt; the response models
    change field names across releases (duplicate_idx, duplicate_name, entity ids). Each recorded request gets
    an answer that validates against the schema that very request declares, and the pasted schema never
    leaks into the answer as if it were content."""
    graphiti = system_module("graphiti")
    recorded = json.loads((FIX / f"graphiti-{version}-kinds.json").read_text())["requests"]
    assert len(recorded) >= 6
    for r in recorded:
        reply = ORACLE.chat(r["request"])
        body = json.loads(reply.content)
        schema = graphiti.request_schema(r["request"])
        assert schema, f"{r['dialect']}: no schema found in the request"
        problems = sorted(e.message for e in Draft202012Validator(schema).iter_errors(body))
        assert not problems, f"{version} {r['dialect']}: {problems}"
        assert reply.matched, f"{version} {r['dialect']} unmatched: {reply.content[:200]}"
        assert "Respond with a JSON object" not in reply.content and "SummaryDescription" not in reply.content


def test_a_scope_becomes_a_group_id_redisearch_can_filter_on(monkeypatch):
    """Hyphens break FalkorDB's full-text group filter in every release (getzep/graphiti#1269): the adapter's
    group_id keeps only ASCII letters and digits, and maps back to the scope exactly."""
    import importlib.util
    import sys

    import memmatrix.adapterkit
    monkeypatch.setitem(sys.modules, "adapterkit", memmatrix.adapterkit)
    spec = importlib.util.spec_from_file_location("graphiti_adapter_under_test", ROOT / "systems/graphiti/adapter.py")
    adapter = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(adapter)
    for scope in ("dana", "dana-team", "ines_team", "Zoe-Z2D", "main"):
        gid = adapter.group_id_of(scope)
        assert gid.isascii() and gid.isalnum() and adapter.scope_of(gid) == scope
    assert adapter.group_id_of("dana") == "dana" and adapter.group_id_of("dana-team") != adapter.group_id_of("danateam")


def test_entity_summaries_of_the_bulk_path_read_the_messages():
    # add_episode_bulk (0.31.2) puts the episode and its context in <MESSAGES>; before, the oracle looked only in
    # <EPISODES> and answered empty (the door protocol's imported memory, case time-dates)
    door = system_oracle("graphiti", GoldIndex([json.loads((ROOT / "cases/door/1.0.0.json").read_text())]))
    reply, body = answer("graphiti-0.31.2-chat-SummarizedEntities-messages", door)
    assert reply.matched
    summaries = {s["name"]: s["summary"] for s in body["summaries"]}
    assert summaries["Marzipan"] == "I adopted a tabby cat called Marzipan."


def _edge_duplicate(existing: list, candidates: list, continuous: bool) -> dict:
    """An EdgeDuplicate request as a release builds it: the lists are Python reprs of its context dicts; the
    0.28.0+ prompt says the numbering is continuous, 0.21.0-0.27.1 that the two ranges are independent."""
    rule = ("You will receive TWO lists of facts with CONTINUOUS idx numbering across both lists." if continuous
            else "These are two separate lists with independent idx ranges starting from 0")
    user = (f"<EXISTING FACTS>\n{existing!r}\n</EXISTING FACTS>\n<FACT INVALIDATION CANDIDATES>\n{candidates!r}\n"
            f"</FACT INVALIDATION CANDIDATES>\n<NEW FACT>\nI live in Tarrowick.\n</NEW FACT>\n{rule}")
    schema = {"title": "EdgeDuplicate", "type": "object", "properties": {
        "duplicate_facts": {"type": "array", "items": {"type": "integer"}},
        "contradicted_facts": {"type": "array", "items": {"type": "integer"}}, "fact_type": {"type": "string"}}}
    return {"model": "m", "messages": [{"role": "system", "content": "dedupe"}, {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "EdgeDuplicate", "schema": schema}}}


@pytest.mark.parametrize("existing,candidates,continuous,dup,contradicted", [
    # 0.18.1-0.20.4: existing facts carry the edge's uuid as id (Graphiti reads the answer as a place in the
    # list), candidates their place as id; contradictions index the candidates only
    ([{"id": "5b1c-uuid", "fact": "I work as a cartographer at Brindlemoor Maps."},
      {"id": "77aa-uuid", "fact": "I live in Tarrowick."}],
     [{"id": 0, "fact": "I work as a cartographer at Brindlemoor Maps."}, {"id": 1, "fact": "I live in Quillmere."}],
     False, [1], [1]),
    # 0.21.0-0.27.1: idx, two independent ranges: a same-endpoint stale fact listed in both is contradicted
    # through its candidate number only (answering its EXISTING FACTS idx too would invalidate candidate 0)
    ([{"idx": 0, "fact": "I live in Quillmere."}],
     [{"idx": 0, "fact": "I work as a cartographer at Brindlemoor Maps."}, {"idx": 1, "fact": "I live in Quillmere."}],
     False, [], [1]),
    # 0.28.0 on: one continuous range; the stale fact is contradicted wherever it is listed
    ([{"idx": 0, "fact": "I live in Quillmere."}],
     [{"idx": 1, "fact": "I work as a cartographer at Brindlemoor Maps."}], True, [], [0]),
])
def test_edge_dedupe_answers_in_the_numbering_each_release_reads(existing, candidates, continuous, dup,
                                                                  contradicted):
    reply = ORACLE.chat(_edge_duplicate(existing, candidates, continuous))
    body = json.loads(reply.content)
    assert reply.matched
    assert body["duplicate_facts"] == dup and body["contradicted_facts"] == contradicted


def test_entities_are_resolved_from_the_nested_candidate_list_of_releases_before_0_21():
    """Up to 0.20.4 EXISTING ENTITIES is a list holding the candidate list (existing_nodes_context is a 1-tuple):
    an entity named like a candidate is that candidate, so a second conversation about it adds no twin node."""
    recorded = json.loads((FIX / "graphiti-0.18.1-kinds.json").read_text())["requests"]
    req = next(r["request"] for r in recorded if r["dialect"] == "graphiti-NodeResolutions")
    user = next(m for m in reversed(req["messages"]) if m["role"] == "user")
    nested = json.dumps([[{"idx": 0, "name": "user's storage locker", "entity_types": ["Entity"]},
                          {"idx": 1, "name": "user", "entity_types": ["Entity"]}]], indent=2)
    head, rest = user["content"].split("<EXISTING ENTITIES>", 1)
    user["content"] = head + "<EXISTING ENTITIES>\n" + nested + "\n</EXISTING ENTITIES>" + rest.split("</EXISTING ENTITIES>", 1)[1]
    reply = ORACLE.chat(req)
    found = {r["name"]: r["duplicate_idx"] for r in json.loads(reply.content)["entity_resolutions"]}
    assert found == {"user": 1, "a storage locker downtown": -1, "user's storage locker": 0, "QX-4471-TRV": -1}
