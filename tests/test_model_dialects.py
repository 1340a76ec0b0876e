"""The oracle answers the exact requests real systems send (tests/fixtures/requests, recorded offline)."""

import base64
import json
import struct
from pathlib import Path

import pytest

from helpers import ALICE_OPS, G, W, system_oracle

from memmatrix.model.dialects.common import chat_completion, response_object
from memmatrix.model.gold import GoldIndex

FIX = Path(__file__).parent / "fixtures" / "requests"


def fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())["request"]


# the gold of the scenario the fixtures were recorded with (see tests/fixtures/requests/README.md)
GOLD = GoldIndex([{"cases": [{"id": "fixtures", "ops": [
    *ALICE_OPS,
    W("Alice lives in Berlin.", gold=[G("Alice", "lives in", "Berlin", "Alice lives in Berlin")]),
    W("Alice moved from Berlin to Lisbon.",
      gold=[G("Alice", "lives in", "Lisbon", "Alice lives in Lisbon", intent="supersede", replaces="Berlin")]),
]}]}])
ORACLES = {name: system_oracle(name, GOLD) for name in ("mem0", "graphiti")}


def ask(name: str):
    """The answer a run of the fixture's system (its name's first part) gets."""
    return ORACLES[name.partition("-")[0]].chat(fixture(name))


def content(name: str) -> dict:
    reply = ask(name)
    assert reply.matched, name
    return json.loads(reply.content)


def test_mem0_2_extracts_only_the_new_messages():
    assert content("mem0-2.2.1-extract") == {"memory": [
        # mem0 shows the existing memories as 0 loves coffee, 1 lives in Berlin: each new fact links what it replaces
        {"id": "0", "text": "User moved to Lisbon last month", "attributed_to": "user", "linked_memory_ids": ["1"]},
        {"id": "1", "text": "User no longer drinks coffee", "attributed_to": "user", "linked_memory_ids": ["0"]}]}
    first = content("mem0-2.2.1-extract-first")["memory"]
    assert [m["text"] for m in first] == ["User's name is Alice", "User lives in Berlin", "User loves coffee",
                                         "User works as a nurse at the Charite hospital"]


def test_mem0_1_facts_then_decision_update_and_delete():
    assert content("mem0-1.0.11-facts")["facts"][:2] == ["User's name is Alice", "User lives in Berlin"]
    decision = {m["id"]: m for m in content("mem0-1.0.11-decision")["memory"]}
    # old memories: 0 loves coffee, 1 lives in Berlin, 2 nurse, 3 name (remapped ids)
    assert decision["1"] == {"id": "1", "text": "User moved to Lisbon last month", "event": "UPDATE",
                             "old_memory": "User lives in Berlin"}
    assert decision["0"]["event"] == "DELETE"
    assert decision["2"]["event"] == decision["3"]["event"] == "NONE"
    assert [m for m in decision.values() if m["event"] == "ADD"] == [
        {"id": "4", "text": "User no longer drinks coffee", "event": "ADD"}]


def test_mem0_1_decision_with_empty_memory_adds_every_fact():
    reply = ask("mem0-1.0.11-decision-empty")
    out = json.loads(reply.content)["memory"]
    assert out and all(m["event"] == "ADD" for m in out)


def tool_args(name: str) -> list[tuple[str, dict]]:
    reply = ask(name)
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls]


def test_mem0_1_graph_tool_calls_use_json_string_arguments():
    (name, args), = tool_args("mem0-1.0.11-extract_entities")
    assert name == "extract_entities"
    assert {"entity": "alice", "entity_type": "person"} in args["entities"]
    assert {"entity": "berlin", "entity_type": "entity"} in args["entities"]
    (name, args), = tool_args("mem0-1.0.11-establish_relationships")
    assert {"source": "alice", "relationship": "lives_in", "destination": "berlin"} in args["entities"]
    deletes = tool_args("mem0-1.0.11-delete_graph_memory")
    assert ("delete_graph_memory", {"source": "alice", "relationship": "lives_in", "destination": "berlin"}) in deletes
    assert ("delete_graph_memory", {"source": "alice", "relationship": "likes", "destination": "coffee"}) in deletes


@pytest.mark.parametrize("client", ["chat", "responses"])
def test_graphiti_structured_outputs_by_schema_name(client):
    ents = content(f"graphiti-0.31.2-{client}-ExtractedEntities")["extracted_entities"]
    assert {"name": "Alice", "entity_type_id": 0} in ents and {"name": "Lisbon", "entity_type_id": 0} in ents
    edges = content(f"graphiti-0.31.2-{client}-ExtractedEdges")["edges"]
    assert edges == [{"source_entity_name": "Alice", "target_entity_name": "Lisbon", "relation_type": "LIVES_IN",
                      "fact": "Alice lives in Lisbon", "valid_at": "2024-06-01T00:00:00Z", "invalid_at": None}]
    assert content(f"graphiti-0.31.2-{client}-EdgeDuplicate") == {"duplicate_facts": [], "contradicted_facts": [0]}
    res = content(f"graphiti-0.31.2-{client}-NodeResolutions")["entity_resolutions"]
    assert res == [{"id": 0, "name": "Alice Smith", "duplicate_candidate_id": -1}]
    ts = json.loads(ask(f"graphiti-0.31.2-{client}-EdgeTimestamps").content)
    assert ts["valid_at"] and ts["valid_at"].endswith("Z")  # a null valid_at would never invalidate anything
    assert content(f"graphiti-0.31.2-{client}-Summary")["summary"]
    assert content(f"graphiti-0.31.2-{client}-SummaryDescription")["description"]


def test_graphiti_unknown_attribute_models_are_answered_from_their_schema():
    reply = ask("graphiti-0.31.2-chat-Person")
    assert not reply.matched and json.loads(reply.content) == {"occupation": None}


def test_graphiti_rerank_always_has_top_logprobs():
    reply = ask("graphiti-0.31.2-rerank")
    top = reply.logprobs["content"][0]["top_logprobs"]
    assert [t["token"] for t in top] == ["True", "False"]
    body = chat_completion(fixture("graphiti-0.31.2-rerank"), reply, "x")
    assert body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]


def test_responses_envelope_carries_output_text():
    req = fixture("graphiti-0.31.2-responses-EdgeDuplicate")
    body = response_object(req, ORACLES["graphiti"].chat(req), "x")
    msg = body["output"][0]
    assert msg["type"] == "message" and msg["content"][0]["type"] == "output_text"
    assert json.loads(msg["content"][0]["text"]) == {"duplicate_facts": [], "contradicted_facts": [0]}


def test_unmatched_text_gets_a_well_formed_empty_answer():
    req = {"model": "m", "messages": [{"role": "user", "content": "What is the weather like?"}],
           "response_format": {"type": "json_object"}}
    reply = ORACLES["mem0"].chat(req)
    assert reply.dialect == "unmatched" and not reply.matched and json.loads(reply.content) == {}


def test_letta_agent_inserts_one_fact_per_step_then_ends_the_turn():
    gold = GoldIndex([{"cases": [{"id": "l", "ops": [W("My passport number is P-999.",
                                                       gold=[G("user", "passport", "P-999", "My passport number is P-999.")])]}]}])
    tools = [{"type": "function", "function": {"name": n}} for n in ("archival_memory_insert", "conversation_search")]
    req = {"model": "m", "tools": tools, "messages": [{"role": "system", "content": "<human>\nName: Bob\n</human>"},
                                                      {"role": "user", "content": "My passport number is P-999."}]}
    first = system_oracle("letta", gold).chat(req)
    call = first.tool_calls[0]["function"]
    assert call["name"] == "archival_memory_insert" and json.loads(call["arguments"]) == {"content": "My passport number is P-999."}
    req["messages"] += [{"role": "assistant", "content": None, "tool_calls": first.tool_calls},
                        {"role": "tool", "content": "ok", "tool_call_id": "call_0"}]
    assert system_oracle("letta", gold).chat(req).content == "Noted."


def _letta_step(params: dict[str, list[str]], human: str, said: str, gold_fact) -> tuple[str, dict]:
    gold = GoldIndex([{"cases": [{"id": "l", "ops": [W(said, gold=[gold_fact])]}]}])
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {
        p: {"type": "string"} for p in ps}}}} for n, ps in params.items()]
    req = {"model": "m", "tools": tools, "messages": [
        {"role": "system", "content": f"<memory_blocks><human>\n<value>\n{human}\n</value>\n</human>"},
        {"role": "user", "content": said}]}
    call = system_oracle("letta", gold).chat(req).tool_calls[0]["function"]
    return call["name"], json.loads(call["arguments"])


@pytest.mark.parametrize("new, old", [("new_string", "old_string"), ("new_str", "old_str")])
def test_letta_memory_tools_get_the_argument_names_their_schema_offers(new, old):
    """0.16.5 renamed memory_insert/memory_replace's arguments; the oracle reads the names from the request."""
    params = {"memory_insert": ["label", new, "insert_line"], "memory_replace": ["label", old, new]}
    fact = G("user", "home city", "Oslo", "I live in Oslo.")
    assert _letta_step(params, "", "I live in Oslo.", fact) == ("memory_insert", {"label": "human", new: "I live in Oslo."})
    moved = G("user", "home city", "Bergen", "I live in Bergen.", intent="supersede", replaces="Oslo")
    assert _letta_step(params, "I live in Oslo.", "I moved from Oslo to Bergen.", moved) == (
        "memory_replace", {"label": "human", old: "I live in Oslo.", new: "I live in Bergen."})


@pytest.mark.parametrize("ask", [
    "Your task is to create a detailed summary of the conversation so far.",  # 0.16.5+ ALL_PROMPT
    "You have been interacting with a human user. Write a summary that will allow you to resume.",  # 0.16.0-0.16.2
    "Your job is to summarize a history of previous messages in a conversation. Keep your summary short.",  # <0.16
])
def test_letta_summary_requests_of_every_release_get_the_gold_summary(ask):
    gold = GoldIndex([{"cases": [{"id": "l", "ops": [
        W("My passport number is P-999.", gold=[G("user", "passport", "P-999", "My passport number is P-999.")])]}]}])
    req = {"model": "m", "messages": [{"role": "system", "content": ask},
                                      {"role": "user", "content": "user: My passport number is P-999."}]}
    reply = system_oracle("letta", gold).chat(req)
    assert reply.dialect == "letta-summary" and "P-999" in reply.content
    req["messages"][0]["content"] = "You are a helpful assistant. Summarize nothing."
    assert system_oracle("letta", gold).chat(req).dialect != "letta-summary"


def test_base64_embeddings_decode_to_the_float_vector():
    from memmatrix.model.embed import HashEmbedder, encode_base64
    vec = HashEmbedder(64)("Alice lives in Berlin")
    raw = base64.b64decode(encode_base64(vec))
    assert list(struct.unpack("<64f", raw)) == pytest.approx(vec, abs=1e-6)


def test_graphiti_bulk_combined_extraction_answers_the_current_messages_only():
    root = Path(__file__).resolve().parents[1]
    gold = GoldIndex([json.loads((root / "cases/contradiction/1.2.0.json").read_text())])
    reply = system_oracle("graphiti", gold).chat(fixture("graphiti-0.31.2-chat-CombinedExtraction"))
    body = json.loads(reply.content)
    assert reply.matched
    assert {"name": "Quillmere", "entity_type_id": 0} in body["extracted_entities"]
    assert [e["fact"] for e in body["edges"]] == ["I live in Quillmere."]  # not Tarrowick: previous messages are context
    assert body["edges"][0]["episode_indices"] == [0]


LANGMEM_GOLD = GoldIndex([{"cases": [{"id": "langmem", "ops": [
    W("I live in Paris", gold=[G("user", "home city", "Paris", "I live in Paris.")]),
    W("I moved from Paris to Berlin",
      gold=[G("user", "home city", "Berlin", "I live in Berlin.", intent="supersede", replaces="Paris")]),
    W("Forget where I live, Berlin", gold=[G("user", "home city", "Berlin", "I do not want my city kept.",
                                             intent="retract")]),
]}]}])


def _langmem(name: str):
    reply = system_oracle("langmem", LANGMEM_GOLD).chat(fixture(name))
    return reply, [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls]


def test_langmem_manager_inserts_each_fact_on_an_empty_store():
    reply, calls = _langmem("langmem-0.0.30-manager-empty")
    assert reply.matched and calls == [("Memory", {"content": "I live in Paris."})]


def test_langmem_manager_patches_the_memory_a_correction_replaces():
    reply, calls = _langmem("langmem-0.0.30-manager-existing")
    assert reply.matched and len(calls) == 1, calls
    name, args = calls[0]
    # the instance whose content holds the old value, by the id the manager showed
    assert name == "PatchDoc" and args["json_doc_id"] == "9dd0b0acd0f257268ef433b18e748a16", args
    assert args["patches"] == [{"op": "replace", "path": "/content", "value": "I live in Berlin."}]


def test_langmem_manager_removes_a_retracted_memory_when_deletes_are_offered():
    reply, calls = _langmem("langmem-0.0.30-manager-deletes")
    assert reply.matched and calls == [("RemoveDoc", {"json_doc_id": "9dd0b0acd0f257268ef433b18e748a16"})], calls


COGNEE_GOLD = GoldIndex([{"cases": [{"id": "cognee", "ops": [
    W("User u-481 (Dana Whitfield) has locker code 7731.",
      gold=[G("user u-481", "locker code", "7731", "User u-481 has locker code 7731."),
            G("user u-481", "shift", "morning", "Dana prefers the morning shift.", valid_to="2026-03-14T00:00:00Z")]),
]}]}])


def test_cognee_knowledge_graph_has_an_edge_per_fact_and_a_timestamp_for_a_stated_end():
    reply = system_oracle("cognee", COGNEE_GOLD).chat(fixture("cognee-1.6.5-KnowledgeGraph"))
    graph = json.loads(reply.content)
    assert reply.matched and reply.dialect == "cognee-knowledge-graph"
    edges = {(e["source_node_id"], e["relationship_name"], e["target_node_id"]): e["description"] for e in graph["edges"]}
    assert edges[("user_u_481", "locker_code", "7731")] == "User u-481 has locker code 7731."
    assert ("morning", "ends_at", "2026-03-14") in edges, edges
    ids = {n["id"] for n in graph["nodes"]}
    assert all(s in ids and t in ids for s, _, t in edges), (ids, edges)


def test_cognee_summary_lists_the_chunk_facts():
    reply = system_oracle("cognee", COGNEE_GOLD).chat(fixture("cognee-1.6.5-SummarizedContent"))
    summary = json.loads(reply.content)["summary"]
    assert reply.dialect == "cognee-summary" and "- User u-481 has locker code 7731." in summary, summary


AMEM_GOLD = GoldIndex([json.loads((Path(__file__).resolve().parents[1] / "cases/contradiction/1.3.0.json").read_text())])


def test_amem_analysis_names_the_facts_of_the_note():
    reply = system_oracle("amem", AMEM_GOLD).chat(fixture("amem-0.2.6-analyze"))
    body = json.loads(reply.content)
    assert reply.matched and reply.dialect == "amem-analyze"
    assert body["keywords"][0] == "Quillmere" and "home city" in body["tags"], body
    assert body["context"] == "Stated in this conversation: I live in Quillmere.", body


def test_amem_evolution_links_the_corrected_note_and_notes_the_correction_in_its_context():
    reply = system_oracle("amem", AMEM_GOLD).chat(fixture("amem-0.2.6-evolve"))
    body = json.loads(reply.content)
    assert reply.matched and reply.dialect == "amem-evolve"
    # the neighbour stating Quillmere, by the id the prompt listed; the cartographer note is left alone
    assert body["should_evolve"] and body["suggested_connections"] == ["7d3e35e4-4ab1-55b4-b9f1-d6c49a8a04e6"], body
    assert body["new_context_neighborhood"][0] == ("Stated in this conversation: I live in Quillmere. "
                                                   "Since corrected: I live in Tarrowick."), body
    assert body["new_context_neighborhood"][1].startswith("Stated in this conversation: I work as a cartographer")
    assert "Since corrected" not in body["new_context_neighborhood"][1]
    assert len(body["new_tags_neighborhood"]) == len(body["new_context_neighborhood"]) == 2, body


def test_hindsight_extraction_states_each_fact_with_the_user_and_named_values_as_entities():
    reply = system_oracle("hindsight", AMEM_GOLD).chat(fixture("hindsight-1.1.0-extract"))
    facts = json.loads(reply.content)["facts"]
    assert reply.matched and reply.dialect == "hindsight-extract"
    assert [f["what"] for f in facts] == ["I live in Tarrowick."], facts
    assert facts[0]["entities"] == ["user", "Tarrowick"] and facts[0]["fact_type"] == "world", facts


def test_hindsight_consolidation_updates_the_observation_a_correction_changes_and_keeps_its_history():
    reply = system_oracle("hindsight", AMEM_GOLD).chat(fixture("hindsight-1.1.0-consolidate-update"))
    body = json.loads(reply.content)
    assert reply.matched and reply.dialect == "hindsight-consolidate"
    assert body["creates"] == [] and body["deletes"] == [], body
    # the ids copied from the prompt: the observation of the old home city, the batch's fact
    assert [(u["observation_id"], u["source_fact_ids"]) for u in body["updates"]] == [
        ("fb405ace-ad8b-4b22-a2f8-0eac077524de", ["a707be3a-79ad-4c7e-9636-4cbf91b6cbe9"])], body
    assert body["updates"][0]["text"] == "I live in Tarrowick. (earlier: I live in Quillmere.)", body


# ---------------------------------------------------------------- a statement two cases share
def _two_sisters() -> GoldIndex:
    """Two cases retract a sister in the same words; each names its own sister when it is first said."""
    def case(cid, name):
        return {"id": cid, "ops": [
            W(f"My sister is called {name}.", gold=[G("user's sister", "name", name, f"My sister is called {name}.")]),
            W(f"There is no {name}, I do not have a sister.",
              gold=[G("user's sister", "name", name, "I do not have a sister.", intent="retract")])]}
    return GoldIndex([{"cases": [case("a", "Orla Pennick"), case("b", "Sela Marquill")]}])


def test_a_shared_statement_is_told_apart_by_the_prompt_it_came_in():
    gold = _two_sisters()
    assert gold.fact_for_statement("I do not have a sister.", "Existing: My sister is called Sela Marquill.")["value"] \
        == "Sela Marquill"
    assert gold.fact_for_statement("I do not have a sister.", "There is no Orla Pennick, I do not have a sister.")[
        "value"] == "Orla Pennick"


def test_a_shared_statement_the_prompt_does_not_place_is_left_unmatched():
    gold = _two_sisters()
    assert gold.fact_for_statement("I do not have a sister.") is None
    assert gold.fact_for_statement("I do not have a sister.", "Orla Pennick and Sela Marquill") is None
    assert [f["value"] for f in gold.facts_for_statement("I do not have a sister.")] == ["Orla Pennick", "Sela Marquill"]
    assert gold.fact_for_statement("My sister is called Orla Pennick.")["value"] == "Orla Pennick"


def test_graphiti_invalidates_the_edge_of_the_case_the_prompt_holds():
    """The edge-dedupe prompt holds edges only: the new retraction edge and the edge it contradicts."""
    oracle = system_oracle("graphiti", _two_sisters())
    text = ("<EXISTING FACTS>\n[]\n</EXISTING FACTS>\n<FACT INVALIDATION CANDIDATES>\n"
            "[{'idx': 0, 'fact': 'My sister is called Sela Marquill.'}]\n</FACT INVALIDATION CANDIDATES>\n"
            "<NEW FACT>\nI do not have a sister.\n</NEW FACT>")
    req = {"model": "m", "messages": [{"role": "user", "content": text}],
           "response_format": {"type": "json_schema", "json_schema": {"name": "EdgeDuplicate", "schema": {}}}}
    reply = oracle.chat(req)
    assert reply.matched and json.loads(reply.content)["contradicted_facts"] == [0]
    alone = {**req, "messages": [{"role": "user", "content": text.replace("Sela Marquill", "someone")}]}
    assert not oracle.chat(alone).matched


def test_a_shared_statement_nothing_places_is_answered_when_the_answer_reads_only_what_the_cases_share():
    gold = _two_sisters()
    alike = ("statement", "subject", "attribute", "intent")
    assert gold.fact_for_statement("I do not have a sister.", "nothing here", alike)["statement"] == \
        "I do not have a sister."
    assert gold.fact_for_statement("I do not have a sister.", "nothing here", alike + ("value",)) is None


def test_letta_turn_whose_message_was_compacted_away_goes_on_from_its_stored_calls():
    """At 100x the store Letta compacts a full context between two steps of a turn, and the turn's own message
    goes into the summary: the write is placed by the statements the turn already stored."""
    said = ["About my music room: I keep forgetting its code.", "It is XT-3335-MDR."]
    facts = [G("user", "room", "music room", "The user set up a music room."),
             G("user's music room", "code", "XT-3335-MDR", "The code for my music room is XT-3335-MDR.")]
    gold = GoldIndex([{"cases": [{"id": "l", "ops": [W(*said, gold=facts), W(*said, gold=facts)]}]}])
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {
        p: {"type": "string"} for p in ("label", "new_string")}}}} for n in ("memory_insert", "archival_memory_insert")]

    def stored(name, text):
        args = {"label": "human", "new_string": text} if name == "memory_insert" else {"content": text}
        return [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{len(text)}{name}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args)}}]},
                {"role": "tool", "content": "OK", "tool_call_id": f"c{len(text)}{name}"}]
    hidden = {"role": "user", "content": "Note: 24 messages have been hidden from view. Summary: ..."}
    req = {"model": "m", "tools": tools, "messages": [{"role": "system", "content": "<human>\n<value>\n</value>\n</human>"},
                                                      hidden, *stored("archival_memory_insert", facts[0]["statement"])]}
    call = system_oracle("letta", gold).chat(req)
    assert call.matched and json.loads(call.tool_calls[0]["function"]["arguments"]) == {
        "label": "human", "new_string": "The code for my music room is XT-3335-MDR."}  # not the hidden first steps again
    req["messages"] += stored("memory_insert", facts[1]["statement"]) + stored("archival_memory_insert", facts[1]["statement"])
    end = system_oracle("letta", gold).chat(req)
    assert (end.matched, end.content) == (True, "Noted.")
    req["messages"] = req["messages"][:2]  # nothing stored yet that places the turn: unmatched, as before
    assert not system_oracle("letta", gold).chat(req).matched
