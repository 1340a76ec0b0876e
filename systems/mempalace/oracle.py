"""MemPalace 3.11.0 calls no model on its own write path: the only model call of a MemPalace run is the agent turn
the adapter makes in ``memory=kg`` mode, where a model keeps the user's knowledge graph through MemPalace's tools.

The request: a system message giving the current (harness) time ("The current time is <ISO>.") and the facts the
graph holds, as ``mempalace_kg_timeline`` returns them (a JSON list of ``subject``, ``predicate``, ``object``,
``valid_from``, ``valid_to``, ``current``) inside ``<knowledge_graph>``; then the conversation; the tools offered
are MemPalace's ``mempalace_kg_add``, ``mempalace_kg_supersede`` and ``mempalace_kg_invalidate``
(``mcp_server/schemas.py``), and the turn is recognised by them.

The oracle plays a careful agent that follows those instructions: each gold fact of the conversation is one
triple, subject as said, the attribute as the predicate, the value as the object. A fact the graph already holds
open is left alone; a correction ("supersede") of a fact the graph holds open is ``mempalace_kg_supersede`` at the
current time; a retraction of one is ``mempalace_kg_invalidate`` ended at the current time (a correction or a
retraction of something the graph does not hold open: an add, or nothing); any other fact is
``mempalace_kg_add`` from the current time, until the end its statement gives (the gold fact's ``valid_to``).
A conversation with no gold fact gets a short text reply, which writes nothing.

Upstream: mempalace 3.11.0 ``mcp_server/tools_kg.py`` (the tools), ``knowledge_graph.py`` (predicates are stored
lowercased with ``_`` for spaces; entities by their name lowercased, ``_`` for spaces, apostrophes dropped).
"""

from __future__ import annotations

import json
import re

from memmatrix.model.dialects.common import Reply, message_text, messages_of, tool_names

KG_TOOLS = ("mempalace_kg_add", "mempalace_kg_supersede", "mempalace_kg_invalidate")
_NOW = re.compile(r"The current time is (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")
_GRAPH = re.compile(r"<knowledge_graph>\n(.*?)\n</knowledge_graph>", re.S)


def _entity(name: str) -> str:
    """How MemPalace keys an entity (knowledge_graph.KnowledgeGraph._entity_id)."""
    return name.lower().replace(" ", "_").replace("'", "")


def _predicate(name: str) -> str:
    return name.strip().lower().replace(" ", "_")


def open_facts(system: str, now: str) -> set[tuple[str, str, str]]:
    """(subject, predicate, object) of every fact shown that is still open at ``now``, keyed as MemPalace keys them."""
    shown = _GRAPH.search(system)
    try:
        facts = json.loads(shown.group(1)) if shown else []
    except ValueError:
        facts = []
    out = set()
    for f in facts if isinstance(facts, list) else []:
        end = f.get("valid_to")
        if end is None or (now and str(end) > now):
            out.add((_entity(str(f.get("subject", ""))), _predicate(str(f.get("predicate", ""))),
                     _entity(str(f.get("object", "")))))
    return out


class KgAgent:
    name = "mempalace-kg-agent"

    @staticmethod
    def match(request: dict) -> bool:
        return set(KG_TOOLS) <= set(tool_names(request))

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        msgs = messages_of(request)
        system = "\n".join(message_text(m) for m in msgs if m.get("role") == "system")
        conversation = "\n".join(message_text(m) for m in msgs if m.get("role") != "system")
        facts = gold.facts_in(conversation)
        if not facts:
            return Reply(KgAgent.name, bool(gold.writes_in(conversation)), content="Nothing here to remember.")
        found = _NOW.search(system)
        now = found.group(1) if found else ""
        held = open_facts(system, now)
        calls: list[tuple[str, dict]] = []
        for fact in facts:
            subject, attribute, value = fact["subject"], fact["attribute"], fact["value"]
            key = (_entity(subject), _predicate(attribute))
            if fact["intent"] == "supersede" and fact.get("replaces") and (*key, _entity(fact["replaces"])) in held:
                calls.append(("mempalace_kg_supersede", {"subject": subject, "predicate": attribute,
                                                         "old_object": fact["replaces"], "new_object": value,
                                                         **({"at": now} if now else {})}))
            elif fact["intent"] == "retract":
                if (*key, _entity(value)) in held:
                    calls.append(("mempalace_kg_invalidate", {"subject": subject, "predicate": attribute,
                                                              "object": value, **({"ended": now} if now else {})}))
            elif (*key, _entity(value)) not in held:
                calls.append(("mempalace_kg_add", {"subject": subject, "predicate": attribute, "object": value,
                                                   **({"valid_from": now} if now else {}),
                                                   **({"valid_to": fact["valid_to"]} if fact.get("valid_to") else {})}))
        if not calls:
            return Reply(KgAgent.name, True, content="The knowledge graph already says all of this.")
        return Reply.tools(KgAgent.name, True, calls)


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (KgAgent,)
