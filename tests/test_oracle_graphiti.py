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
