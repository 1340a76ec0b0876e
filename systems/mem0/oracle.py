"""mem0's prompts: 2.x additive extraction, 1.x fact extraction and the ADD/UPDATE/DELETE/NONE
decision, and the 1.x graph tool calls. The oracle answers each from the gold facts, as a careful
model that follows the prompt would.

Calls are recognised by what they ask for, not by their prose, so a release that rewords a prompt
still matches:

- graph calls by the tool they offer (``extract_entities``, ``establish_relationships`` /
  ``establish_relations``, ``delete_graph_memory``);
- ``json_object`` calls by the output keys their format section shows and the data they carry:
  ``{"facts": ...}`` (1.x call 1), ``{"memory": [... "event" ...]}`` with the old memories and the
  new facts as fenced literals (1.x call 2), ``{"memory": ...}`` with a ``New Messages`` section
  (2.x additive extraction).

Upstream: mem0ai 1.0.11 ``mem0/configs/prompts.py`` (FACT_RETRIEVAL_PROMPT,
DEFAULT_UPDATE_MEMORY_PROMPT, get_update_memory_messages), ``mem0/graphs/tools.py``,
``mem0/graphs/utils.py`` (EXTRACT_RELATIONS_PROMPT, DELETE_RELATIONS_SYSTEM_PROMPT),
``mem0/memory/kuzu_memory.py`` (add / search / delete); mem0ai 2.2.1 ``mem0/configs/prompts.py``
(ADDITIVE_EXTRACTION_PROMPT, generate_additive_extraction_prompt) and ``mem0/memory/main.py``
(``_add_to_vector_store``: only ``text`` and ``attributed_to`` of the reply are read).
"""

from __future__ import annotations

import ast
import json
import re

from memmatrix.model.dialects.common import (GoldIndex, Reply, contains, message_text, messages_of,
                                               norm, tool_names)

# 0.1.9-0.1.69 fence the old memories with two backticks, later releases with three
_FENCE = re.compile(r"(?<!`)(`{2,3})(?!`)(?:json|python)?\s*(.*?)(?<!`)\1(?!`)", re.S)
_OUTPUT_KEY = re.compile(r'\{\s*"(\w+)"\s*:')
_SELF = re.compile(r"(?<![\w'])(i|me|my|mine|myself|i'm|i've|i'd|i'll)(?![\w'])", re.I)
_TRIPLE = re.compile(r"^\s*(?:[^\n]*?:\s*)?(\S+) -- (\S+) -- (\S+)\s*$", re.M)
_HEADER = re.compile(r"^#{1,6}\s*(.+?)\s*:?\s*$", re.M)

ENTITY_TOOLS = {"extract_entities"}
RELATION_TOOLS = {"establish_relationships", "establish_relations"}  # RELATIONS_TOOL / RELATIONS_STRUCT_TOOL
DELETE_TOOLS = {"delete_graph_memory"}


def _system(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") in ("system", "developer"))


def _user(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


def _json_object(request: dict) -> bool:
    return (request.get("response_format") or {}).get("type") == "json_object"


def output_keys(text: str) -> set[str]:
    """The keys the prompt's output format (and its examples) show: ``{"facts": ...}``, ``{"memory": ...}``."""
    return set(_OUTPUT_KEY.findall(text))


def section(text: str, header: str) -> str:
    """The body of a markdown section, up to the next header of any level ('New Messages', '## New Messages')."""
    want = header.lstrip("#").strip().casefold()
    for m in _HEADER.finditer(text):
        if m.group(1).casefold() == want:
            body = text[m.end():]
            nxt = _HEADER.search(body)
            return body[: nxt.start()] if nxt else body
    return ""


def has_section(text: str, header: str) -> bool:
    want = header.casefold()
    return any(m.group(1).casefold() == want for m in _HEADER.finditer(text))


# --------------------------------------------------------------------------- what a text is about

def facts_of_memory(text: str, gold: GoldIndex, context: str = "") -> list[dict]:
    """The gold facts a stored memory states: an extracted statement, or a conversation stored verbatim
    (``add(infer=False)``, mem0's import path, stores each message as it was written). ``context``: the prompt
    the memory is listed in, which tells apart a statement two cases share."""
    fact = gold.fact_for_statement(text, context or text)
    return [fact] if fact is not None else gold.facts_in(text)


def facts_named(text: str, gold: GoldIndex) -> list[dict]:
    """The gold facts a text states: every written conversation it holds whole, else every stored
    statement it quotes (a memory's own text, as 1.x graph cleanup sends it on delete)."""
    return gold.facts_in(text) or gold.statements_in(text)


def _possessor(subject: str) -> tuple[str, str]:
    """``"user's dog"`` -> ("user", "dog"); ``"office safe"`` -> ("", "office safe")."""
    head, sep, tail = subject.rpartition("'s ")
    return (head, tail) if sep else ("", subject)


def _named(text: str, phrase: str) -> bool:
    try:
        return contains(text, phrase)
    except ValueError:  # a phrase without letters or digits names nothing
        return False


def subject_named(text: str, subject: str) -> bool:
    """Does ``text`` name the subject of a fact? The user by a self-reference, "user's dog" by "my dog",
    "team's landlord" by "the team's landlord", "office safe" by itself."""
    if subject.casefold() in ("user", "the user", "i", "me"):
        return bool(_SELF.search(text))
    owner, noun = _possessor(subject)
    if _named(text, subject):
        return True
    if not owner or not _named(text, noun):
        return False
    return bool(_SELF.search(text)) if owner.casefold() in ("user", "the user") else _named(text, owner)


# --------------------------------------------------------------------------- mem0 2.x

class AdditiveExtract:
    """mem0 2.x: one call, ADD-only. The new messages are ``role: content`` lines under ``## New Messages``;
    the existing memories (ids remapped to "0".."9" by ``uuid_mapping``) are a JSON list under
    ``## Existing Memories``. The prompt asks the model (its "Memory Linking" and "linked_memory_ids"
    sections) to link a new memory to the existing ones it updates, contradicts or continues, and to skip
    what an existing memory already says."""

    name = "mem0-2-additive-extract"

    @staticmethod
    def match(request: dict) -> bool:
        # the output format it asks for ({"memory": ...}) or, failing that, the role mem0 2.x names ("Memory Extractor")
        asks = "memory" in output_keys(_system(request) + _user(request)) or "Memory Extractor" in _system(request)
        return _json_object(request) and asks and has_section(_user(request), "New Messages")

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        user = _user(request)
        facts = gold.facts_in(section(user, "New Messages"))
        existing = _existing_memories(section(user, "Existing Memories"))
        known = [(str(m["id"]), str(m["text"]), facts_of_memory(str(m["text"]), gold, user)) for m in existing]
        out = []
        for f in facts:
            if any(norm(text) == norm(f["statement"]) or any(_same_fact(f, g) for g in gs) for _, text, gs in known):
                continue  # "If new information ... is semantically equivalent to an Existing Memory ..., skip it"
            links = [mid for mid, text, gs in known if _related(f, text, gs)]
            out.append({"id": str(len(out)), "text": f["statement"], "attributed_to": "user",
                        "linked_memory_ids": links})
        # matched: gold knows the new messages. {"memory": []} is then the right answer when every fact in
        # them is already an existing memory (the prompt says to skip those).
        return Reply.json(AdditiveExtract.name, bool(facts), {"memory": out})


def _existing_memories(body: str) -> list[dict]:
    body = body.strip()
    if not body:
        return []
    try:
        items = json.loads(body)
    except ValueError:
        try:
            items = ast.literal_eval(body)
        except (ValueError, SyntaxError):
            return []
    return [m for m in items if isinstance(m, dict) and "id" in m and "text" in m] if isinstance(items, list) else []


def _same_fact(a: dict, b: dict) -> bool:
    return all(norm(str(a.get(k, ""))) == norm(str(b.get(k, ""))) for k in ("subject", "attribute", "value", "intent"))


def _entities_of(fact: dict) -> list[str]:
    """The specific things a fact is about: its subject (not the user themself) and its value."""
    _, noun = _possessor(fact["subject"])
    out = [] if noun.casefold() in ("user", "the user") else [noun]
    return out + [fact["value"]]


def _related(fact: dict, memory: str, memory_facts: list[dict]) -> bool:
    """Should a new memory link to an existing one? The prompt's "Memory Linking" rules: a contradiction
    (what the fact replaces or retracts), an updated preference (the same subject and attribute), the same
    specific entity. Sharing only the user, or a vague theme, is no link."""
    if fact["intent"] == "supersede" and fact.get("replaces") and _named(memory, fact["replaces"]):
        return True
    if fact["intent"] == "retract" and _named(memory, fact["value"]):
        return True
    for g in memory_facts:
        if _same_fact(fact, g):
            continue
        if norm(g["subject"]) == norm(fact["subject"]) and norm(g["attribute"]) == norm(fact["attribute"]):
            return True
        if any(_named(memory, e) for e in _entities_of(fact)) or any(_named(fact["statement"], e) for e in _entities_of(g)):
            return True
    return False


# --------------------------------------------------------------------------- mem0 1.x, vector side

class FactExtract:
    """mem0 1.x call 1: {"facts": [...]} from the conversation after 'Input:' (user messages only)."""

    name = "mem0-1-fact-extract"

    @staticmethod
    def match(request: dict) -> bool:
        keys = output_keys(_system(request) + "\n" + _user(request))
        asks = ("facts" in keys and "memory" not in keys) or "Personal Information Organizer" in _system(request)
        return _json_object(request) and asks

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        text = _user(request)
        facts = gold.facts_in(text.split("Input:", 1)[-1])
        return Reply.json(FactExtract.name, bool(facts), {"facts": [f["statement"] for f in facts]})


def _literal(block: str):
    try:
        return ast.literal_eval(block.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_decision_prompt(text: str) -> tuple[list[dict], list[str]]:
    """The old memories and the new facts of the 1.x update prompt (Python literals in fences,
    get_update_memory_messages): the last fenced list of strings is the new facts; the fenced block before
    it, a list of {'id', 'text'}, the old memories. Without such a block the memory is empty (mem0 then
    writes "Current memory is empty." instead)."""
    blocks = [_literal(b) for _, b in _FENCE.findall(text)]
    at = next((i for i in range(len(blocks) - 1, -1, -1)
               if isinstance(blocks[i], list) and all(isinstance(x, str) for x in blocks[i])), None)
    if at is None:
        raise ValueError("the decision prompt holds no fenced list of new facts")
    if at == 0:
        return [], blocks[at]
    old = blocks[at - 1]
    if not (isinstance(old, list) and all(isinstance(x, dict) and "id" in x and "text" in x for x in old)):
        raise ValueError("the block before the new facts is not a list of old memories")
    return old, blocks[at]


class UpdateDecision:
    """mem0 1.x call 2: decide ADD / UPDATE / DELETE / NONE per memory, ids are the remapped '0', '1' ..."""

    name = "mem0-1-update-decision"

    @staticmethod
    def match(request: dict) -> bool:
        text = _user(request) + "\n" + _system(request)
        asks = ("memory" in output_keys(text) and '"event"' in text) or "smart memory manager" in text
        if not _json_object(request) or not asks:
            return False
        try:
            parse_decision_prompt(text)
        except ValueError:
            return False
        return True

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        try:
            prompt = _user(request) or _system(request)
            old, new = parse_decision_prompt(prompt)
        except ValueError:
            return Reply.json(UpdateDecision.name, False, {"memory": []})
        decided: dict[str, dict] = {}
        out: list[dict] = []
        matched = True
        next_id = len(old)
        for statement in new:
            fact = gold.fact_for_statement(str(statement), prompt)
            matched &= fact is not None
            intent = fact["intent"] if fact else "assert"
            target = (fact or {}).get("replaces") if intent == "supersede" else (fact or {}).get("value")
            victims = [m for m in old if intent in ("supersede", "retract") and target
                       and str(m["id"]) not in decided and _named(str(m["text"]), target)]
            if victims and intent == "supersede":
                # the first memory holding the replaced value is updated to the new one; any other memory still
                # asserting the replaced value contradicts the new fact and is deleted (guideline 3)
                first, *rest = victims
                decided[str(first["id"])] = {"id": str(first["id"]), "text": statement, "event": "UPDATE",
                                             "old_memory": first["text"]}
                for v in rest:
                    decided[str(v["id"])] = {"id": str(v["id"]), "text": v["text"], "event": "DELETE"}
                continue
            for v in victims:  # a retraction deletes what it contradicts; the retraction itself is new information
                decided[str(v["id"])] = {"id": str(v["id"]), "text": v["text"], "event": "DELETE"}
            if any(norm(str(m["text"])) == norm(str(statement)) for m in old):
                continue
            out.append({"id": str(next_id), "text": statement, "event": "ADD"})
            next_id += 1
        for m in reversed(old):
            out.insert(0, decided.get(str(m["id"]), {"id": str(m["id"]), "text": m["text"], "event": "NONE"}))
        return Reply.json(UpdateDecision.name, matched, {"memory": out})


# --------------------------------------------------------------------------- mem0 1.x, graph side (kuzu)

def _user_node(request: dict) -> str:
    """The node mem0 tells the model to use for self-references: the user_id it puts in the system prompt."""
    sys = _system(request)
    who = re.search(r'"user_id: ([^",]+)', sys) or re.search(r"use (\S+) as the source entity", sys)
    return who.group(1).strip() if who else "user"


def _node(name: str, user: str) -> str:
    """An entity name as mem0 stores it (kuzu_memory: lower case, spaces to underscores)."""
    return user if name.casefold() in ("user", "the user", "i", "me") else re.sub(r"\s+", "_", name.strip().casefold())


def _relationship(attribute: str) -> str:
    return re.sub(r"\W+", "_", attribute.casefold()).strip("_")


def _new_information(text: str) -> str:
    """The text a delete_graph_memory call is about: what follows the existing triples."""
    parts = re.split(r"New Information\s*:", text, maxsplit=1)
    if len(parts) == 2:
        return parts[1]
    return "\n".join(ln for ln in text.splitlines() if not _TRIPLE.match(ln))


class GraphTools:
    """mem0 1.x graph memory (kuzu): extract_entities, establish_relationships, delete_graph_memory.

    kuzu_memory calls extract_entities on three kinds of text: the added conversation (add), the search
    query (search) and a stored memory's text (delete: it re-extracts the memory's triples and deletes
    them). establish_relationships runs on the added conversation and on a deleted memory's text;
    delete_graph_memory on the added conversation, against the existing triples near its entities."""

    name = "mem0-1-graph-tools"

    @staticmethod
    def match(request: dict) -> bool:
        return bool(set(tool_names(request)) & (ENTITY_TOOLS | RELATION_TOOLS | DELETE_TOOLS))

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        names = tool_names(request)
        user = _user_node(request)
        text = _user(request)
        tool = next(n for n in names if n in ENTITY_TOOLS | RELATION_TOOLS | DELETE_TOOLS)
        if tool in ENTITY_TOOLS:
            return GraphTools._entities(tool, text, user, gold)
        if tool in RELATION_TOOLS:
            facts = facts_named(text, gold)
            # A retraction is no relation: mem0's graph represents a negation by deleting the relation it
            # negates (DELETE_RELATIONS_SYSTEM_PROMPT: "conflicts with or negates"), so none is established.
            rels = [{"source": _node(f["subject"], user), "relationship": _relationship(f["attribute"]),
                     "destination": _node(f["value"], user)} for f in facts if f["intent"] != "retract"]
            # matched: the text states known facts; no relation is then right only when all of them are retractions
            return Reply.tools(GraphTools.name, bool(facts), [(tool, {"entities": rels})])
        return GraphTools._deletions(tool, text, user, gold)

    @staticmethod
    def _entities(tool: str, text: str, user: str, gold: GoldIndex) -> Reply:
        ents: dict[str, str] = {}
        if _SELF.search(text):  # "If user message contains self reference ... use <user_id> as the source entity"
            ents[user] = "person"
        facts = facts_named(text, gold)
        if facts:  # a written conversation or a stored statement: every entity its facts are about
            for f in facts:
                for name in (f["subject"], f["value"]):
                    n = _node(name, user)
                    ents.setdefault(n, "person" if n == user else "entity")
            matched = True
        else:  # a question: the entities it names (the user, a known fact's subject or value); never an answer
            for f in _all_facts(gold):
                if subject_named(text, f["subject"]):
                    n = _node(f["subject"], user)
                    ents.setdefault(n, "person" if n == user else "entity")
                if _named(text, f["value"]):
                    ents.setdefault(_node(f["value"], user), "entity")
            # a query naming neither the user nor anything gold knows gets [] and is counted unmatched: the
            # oracle cannot tell which other nouns a model would pick (none of them could be a node it wrote)
            matched = bool(ents)
        return Reply.tools(GraphTools.name, matched, [(tool, {"entities": [
            {"entity": e, "entity_type": t} for e, t in ents.items()]})])

    @staticmethod
    def _deletions(tool: str, text: str, user: str, gold: GoldIndex) -> Reply:
        existing = list(dict.fromkeys(_TRIPLE.findall(text)))
        facts = facts_named(_new_information(text), gold)
        calls = []
        for f in facts:
            gone = f.get("replaces") if f["intent"] == "supersede" else f["value"] if f["intent"] == "retract" else None
            if not gone:
                continue
            src_want, dst_want = _node(f["subject"], user), _node(gone, user)
            for src, rel, dst in existing:
                if src == src_want and (dst == dst_want or _named(dst.replace("_", " "), gone)):
                    calls.append((tool, {"source": src, "relationship": rel, "destination": dst}))
        # matched: the new information states known facts. No call is then the right answer when none of them
        # supersedes or retracts a relation listed (an assertion deletes nothing: "DO NOT DELETE if there is
        # a possibility of same type of relationship but different destination nodes").
        if calls:
            return Reply.tools(GraphTools.name, bool(facts), calls)
        return Reply(GraphTools.name, bool(facts), content="")


def _all_facts(gold: GoldIndex) -> list[dict]:
    seen, out = set(), []
    for w in gold.writes:
        for f in w.facts:
            key = (f["subject"], f["value"])
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


#: What the gateway tries for a run of this system, in order, after memmatrix's own dialects
#: (system.yaml: ``oracle: oracle.py:DIALECTS``).
DIALECTS = (AdditiveExtract, FactExtract, UpdateDecision, GraphTools)
