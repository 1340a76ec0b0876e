"""The oracle answers every call mem0 2.2.1 and 1.0.11 make as a careful model would.

Built on request bodies recorded from real runs (tests/fixtures/requests/mem0-*.json: the older ones from
the offline recording stub, the ones naming a case file from `memmatrix run` model transcripts). Each
test checks the answer a careful, instruction-following model gives, that ``matched`` is honest, and
that a call is recognised by what it asks for (tools, output format), not by its prose.
"""

import copy
import json
import re
from pathlib import Path

import pytest

from helpers import ALICE_OPS, system_module, system_oracle

from memmatrix.model.gold import GoldIndex
from memmatrix.model.oracle import Oracle

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "requests"

CASES = GoldIndex([json.loads((ROOT / "cases" / p / "1.2.0.json").read_text()) for p in ("deletion", "contradiction")])
ORACLE = system_oracle("mem0", CASES)
mem0 = system_module("mem0")


# the scenario the stub fixtures were recorded with (tests/fixtures/requests/README.md)
ALICE = system_oracle("mem0", GoldIndex([{"cases": [{"id": "fixtures", "ops": ALICE_OPS}]}]))


def request(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())["request"]


def ask(req: dict, oracle: Oracle = ORACLE):
    return oracle.chat(req)


def calls(reply) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls]


def entities(reply) -> dict[str, str]:
    (name, args), = calls(reply)
    assert name == "extract_entities"
    return {e["entity"]: e["entity_type"] for e in args["entities"]}


def existing(req: dict) -> dict[str, str]:
    user = req["messages"][-1]["content"]
    return {m["id"]: m["text"] for m in json.loads(mem0.section(user, "Existing Memories"))}


# --------------------------------------------------------------------------- 2.2.1 additive extraction

def test_2_links_a_correction_to_the_memory_it_replaces():
    req = request("mem0-2.2.1-extract-links")
    reply = ask(req)
    assert (reply.dialect, reply.matched) == ("mem0-2-additive-extract", True)
    (memory,) = json.loads(reply.content)["memory"]
    assert memory["text"] == "I live in Tarrowick."
    old = existing(req)
    # linked: the home city it replaces; not the job, which shares nothing but the user
    assert [old[i] for i in memory["linked_memory_ids"]] == ["I live in Quillmere."]


def test_2_skips_what_an_existing_memory_says_and_links_the_rest():
    req = request("mem0-2.2.1-extract-duplicate")
    reply = ask(req)
    assert reply.matched
    out = json.loads(reply.content)["memory"]
    # "still in Pellbury" restates an existing memory: the prompt says to skip it
    assert [m["text"] for m in out] == ["My street address in Pellbury is 48 Cindermoss Row."]
    linked = {existing(req)[i] for i in out[0]["linked_memory_ids"]}
    assert "My street address in Pellbury is 12 Harrowgate Lane." in linked  # the contradiction
    assert "I live in Pellbury." in linked                                    # the same town


def test_2_stub_fixture_links_use_the_ids_mem0_hands_the_model():
    reply = ask(request("mem0-2.2.1-extract"), ALICE)
    out = {m["text"]: m["linked_memory_ids"] for m in json.loads(reply.content)["memory"]}
    # Existing Memories: 0 loves coffee, 1 lives in Berlin (ids remapped by mem0's uuid_mapping)
    assert out == {"User moved to Lisbon last month": ["1"], "User no longer drinks coffee": ["0"]}


def test_2_first_write_has_nothing_to_link():
    out = json.loads(ask(request("mem0-2.2.1-extract-first"), ALICE).content)["memory"]
    assert len(out) == 4 and all(m["linked_memory_ids"] == [] for m in out)


# --------------------------------------------------------------------------- 1.0.11 graph (kuzu)

def test_1_search_query_gets_the_entities_it_names():
    reply = ask(request("mem0-1.0.11-extract_entities-query"))  # "What is the code of my storage locker?"
    assert (reply.dialect, reply.matched) == ("mem0-1-graph-tools", True)
    # "my" is the user (dana); "my storage locker" names the gold subject; the code is what is asked, not named
    assert entities(reply) == {"dana": "person", "user's_storage_locker": "entity"}


def test_1_search_for_a_value_gets_the_value():
    reply = ask(request("mem0-1.0.11-extract_entities-value"))  # "QX-4471-TRV"
    assert reply.matched and entities(reply) == {"qx-4471-trv": "entity"}


def test_1_stored_statement_gets_its_fact_entities():
    reply = ask(request("mem0-1.0.11-extract_entities-statement"))  # delete(): the memory's own text
    assert reply.matched
    assert entities(reply) == {"dana": "person", "user's_storage_locker": "entity", "qx-4471-trv": "entity"}


def test_1_stored_statement_gets_its_triple_so_delete_can_remove_it():
    req = request("mem0-1.0.11-establish_relationships-statement")
    reply = ask(req)
    assert reply.matched
    assert calls(reply) == [("establish_relationships", {"entities": [
        {"source": "user's_storage_locker", "relationship": "code", "destination": "qx-4471-trv"}]})]
    # the triple is the one add() wrote for the same fact: delete matches relations by exact name
    write = copy.deepcopy(req)
    write["messages"][-1]["content"] = ("List of entities: []. \n\nText: We finally rented a storage locker downtown "
                                        "for the spare furniture.\nYes please. The code for my storage locker is "
                                        "QX-4471-TRV.")
    assert calls(reply)[0][1]["entities"][0] in calls(ask(write))[0][1]["entities"]


def test_1_delete_transitions_remove_exactly_what_is_superseded():
    reply = ask(request("mem0-1.0.11-delete_graph_memory-supersede"))
    assert reply.matched
    assert calls(reply) == [("delete_graph_memory", {"source": "replacementhomecity", "relationship": "home_city",
                                                     "destination": "quillmere"})]


def test_1_delete_transitions_remove_what_is_retracted():
    reply = ask(request("mem0-1.0.11-delete_graph_memory-retract"))
    assert reply.matched
    assert calls(reply) == [("delete_graph_memory", {"source": "polaritymorningdrink",
                                                     "relationship": "drinks_every_morning",
                                                     "destination": "marovian_kelp_coffee"})]


def test_1_an_assertion_deletes_nothing_and_that_is_the_right_answer():
    reply = ask(request("mem0-1.0.11-delete_graph_memory-import"))
    assert (reply.matched, reply.tool_calls) == (True, [])


def test_1_decision_updates_the_memory_the_correction_replaces():
    req = request("mem0-1.0.11-decision-supersede")
    reply = ask(req)
    assert (reply.dialect, reply.matched) == ("mem0-1-update-decision", True)
    old, _ = mem0.parse_decision_prompt(req["messages"][-1]["content"])
    quill = next(m["id"] for m in old if "Quillmere" in m["text"])
    decided = {m["id"]: m for m in json.loads(reply.content)["memory"]}
    assert decided[quill] == {"id": quill, "text": "I live in Tarrowick.", "event": "UPDATE",
                              "old_memory": "I live in Quillmere."}
    assert all(m["event"] == "NONE" for i, m in decided.items() if i != quill)


# --------------------------------------------------------------------------- honest `matched`

def with_user(req: dict, text: str) -> dict:
    out = copy.deepcopy(req)
    out["messages"][-1]["content"] = text
    return out


def test_a_query_naming_nothing_known_is_counted_unmatched():
    reply = ask(with_user(request("mem0-1.0.11-extract_entities-query"), "What is the weather like today?"))
    assert (reply.dialect, reply.matched) == ("mem0-1-graph-tools", False)
    assert entities(reply) == {}


def test_relations_from_a_text_gold_does_not_know_are_unmatched():
    reply = ask(with_user(request("mem0-1.0.11-establish_relationships-statement"),
                          "List of entities: ['x']. \n\nText: Something nobody wrote down."))
    assert (reply.matched, calls(reply)) == (False, [("establish_relationships", {"entities": []})])


# --------------------------------------------------------------------------- matched by what is asked, not by prose

def reworded_system(req: dict, text: str) -> dict:
    out = copy.deepcopy(req)
    for m in out["messages"]:
        if m["role"] == "system":
            m["content"] = text
    return out


@pytest.mark.parametrize("name,user", [("mem0-1.0.11-extract_entities-query", "dana"),
                                       ("mem0-1.0.11-extract_entities-statement", "dana"),
                                       ("mem0-1.0.11-establish_relationships-statement", "dana"),
                                       ("mem0-1.0.11-delete_graph_memory-supersede", "replacementhomecity")])
def test_graph_calls_match_by_tool_whatever_the_prompt_says(name, user):
    req = request(name)
    # a release that rewrites the prompt, keeps the tool and names the user as mem0 does ("user_id: <id>")
    new = reworded_system(req, f'List what the text mentions. First-person words mean "user_id: {user}".')
    a, b = ask(req), ask(new)
    assert (b.dialect, b.matched) == ("mem0-1-graph-tools", True)
    assert calls(b) == calls(a) and calls(a)


def test_2_extraction_matches_by_output_format_and_sections():
    req = request("mem0-2.2.1-extract-links")
    new = reworded_system(req, 'Write down new memories from the New Messages only. Reply as JSON: {"memory": '
                               '[{"id": "0", "text": "...", "attributed_to": "user", "linked_memory_ids": []}]}')
    a, b = ask(req), ask(new)
    assert (b.dialect, b.matched, b.content) == ("mem0-2-additive-extract", True, a.content)


def test_1_facts_match_by_output_format():
    req = request("mem0-1.0.11-facts")
    new = reworded_system(req, 'Extract facts about the user. Answer {"facts": ["..."]}.')
    a, b = ask(req, ALICE), ask(new, ALICE)
    assert (b.dialect, b.matched, b.content) == ("mem0-1-fact-extract", True, a.content)


def test_1_decision_matches_by_its_data_and_output_format():
    req = request("mem0-1.0.11-decision-supersede")
    text = req["messages"][-1]["content"]
    head = text.index("```")
    prose = 'Decide per memory. Output {"memory": [{"id": "0", "text": "...", "event": "ADD|UPDATE|DELETE|NONE"}]}\n'
    new = with_user(req, prose + text[head:].replace("The new retrieved facts are mentioned", "New facts follow"))
    a, b = ask(req), ask(new)
    assert (b.dialect, b.matched, b.content) == ("mem0-1-update-decision", True, a.content)


def test_other_json_and_tool_calls_are_not_taken_for_mem0():
    summary = {"model": "m", "response_format": {"type": "json_object"},
               "messages": [{"role": "system", "content": 'Summarise. Reply {"summary": "..."}'},
                            {"role": "user", "content": "I live in Tarrowick."}]}
    assert ask(summary).dialect == "unmatched"
    tool = copy.deepcopy(request("mem0-1.0.11-extract_entities-query"))
    tool["tools"][0]["function"]["name"] = "web_search"
    assert ask(tool).dialect == "unmatched"


def test_0_1_x_decision_reads_old_memories_in_a_two_backtick_fence():
    """0.1.9-0.1.69 fence the old memories with two backticks: the oracle must see them (else it only ever ADDs,
    answering 'matched' with a duplicate), and three-backtick prompts parse as before."""
    text = request("mem0-0.1.27-decision")["messages"][-1]["content"]
    old, new = mem0.parse_decision_prompt(text)
    assert old == [{"id": "0", "text": "User said: My dog is called Rex."}]
    assert new == ["User said: I live in Lisbon."]
    assert mem0.parse_decision_prompt(re.sub(r"(?<!`)``(?!`)", "```", text)) == (old, new)  # 0.1.70 on
