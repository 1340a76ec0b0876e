"""mem0's prompts: 2.x additive extraction, 1.x fact extraction and the ADD/UPDATE/DELETE/NONE
decision, and the 1.x graph tool calls. The oracle answers each from the gold facts."""

from __future__ import annotations

import ast
import re

from ...tokens import contains
from ..gold import GoldIndex, norm
from .common import Reply, message_text, messages_of, tool_names

_FENCE = re.compile(r"```(?:json|python)?\s*(.*?)```", re.S)


def _system(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "system")


def _user(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


def section(text: str, header: str) -> str:
    """The body of a markdown section, up to the next '## ' header."""
    start = text.find(header)
    if start < 0:
        return ""
    body = text[start + len(header):]
    nxt = re.search(r"\n##? ", body)
    return body[: nxt.start()] if nxt else body


class AdditiveExtract:
    """mem0 2.x: one call, ADD-only. The new messages are ``role: content`` lines under ## New Messages."""

    name = "mem0-2-additive-extract"

    @staticmethod
    def match(request: dict) -> bool:
        return "Memory Extractor" in _system(request) and "## New Messages" in _user(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        facts = gold.facts_in(section(_user(request), "## New Messages"))
        return Reply.json(AdditiveExtract.name, bool(facts), {"memory": [
            {"id": str(i), "text": f["statement"], "attributed_to": "user", "linked_memory_ids": []}
            for i, f in enumerate(facts)]})


class FactExtract:
    """mem0 1.x call 1: {"facts": [...]} from the conversation after 'Input:'."""

    name = "mem0-1-fact-extract"

    @staticmethod
    def match(request: dict) -> bool:
        return "Personal Information Organizer" in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        text = _user(request)
        facts = gold.facts_in(text.split("Input:", 1)[-1])
        return Reply.json(FactExtract.name, bool(facts), {"facts": [f["statement"] for f in facts]})


def parse_decision_prompt(text: str) -> tuple[list[dict], list[str]]:
    """The old memories and the new facts of the 1.x update prompt (Python literals in fences)."""
    blocks = [b.strip() for b in _FENCE.findall(text)]
    literals = []
    for b in blocks:
        try:
            literals.append(ast.literal_eval(b))
        except (ValueError, SyntaxError):
            continue
    lists = [x for x in literals if isinstance(x, list)]
    if "Current memory is empty" in text:
        return [], (lists[-1] if lists else [])
    if len(lists) < 2:
        raise ValueError("the decision prompt does not hold two literal lists")
    return lists[-2], lists[-1]


class UpdateDecision:
    """mem0 1.x call 2: decide ADD / UPDATE / DELETE / NONE per memory, ids are the remapped '0', '1' ..."""

    name = "mem0-1-update-decision"

    @staticmethod
    def match(request: dict) -> bool:
        return "smart memory manager" in _user(request) or "smart memory manager" in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        try:
            old, new = parse_decision_prompt(_user(request) or _system(request))
        except ValueError:
            return Reply.json(UpdateDecision.name, False, {"memory": []})
        decided: dict[str, dict] = {}
        out: list[dict] = []
        matched = True
        next_id = len(old)
        for statement in new:
            fact = gold.fact_for_statement(str(statement))
            matched &= fact is not None
            intent = fact["intent"] if fact else "assert"
            target = (fact or {}).get("replaces") if intent == "supersede" else (fact or {}).get("value")
            victim = next((m for m in old if intent in ("supersede", "retract") and target
                           and str(m["id"]) not in decided and contains(m["text"], target)), None)
            if victim is not None and intent == "supersede":
                decided[str(victim["id"])] = {"id": str(victim["id"]), "text": statement, "event": "UPDATE",
                                              "old_memory": victim["text"]}
                continue
            if victim is not None and intent == "retract":
                decided[str(victim["id"])] = {"id": str(victim["id"]), "text": victim["text"], "event": "DELETE"}
            if any(norm(m["text"]) == norm(str(statement)) for m in old):
                continue
            out.append({"id": str(next_id), "text": statement, "event": "ADD"})
            next_id += 1
        for m in old:
            out.insert(0, decided.get(str(m["id"]), {"id": str(m["id"]), "text": m["text"], "event": "NONE"}))
        return Reply.json(UpdateDecision.name, matched, {"memory": out})


def _graph_user(request: dict) -> str:
    return _user(request)


class GraphTools:
    """mem0 1.x graph memory (kuzu): extract_entities, establish_relationships, delete_graph_memory."""

    name = "mem0-1-graph-tools"

    @staticmethod
    def match(request: dict) -> bool:
        names = set(tool_names(request))
        return bool(names & {"extract_entities", "establish_relationships", "relations", "delete_graph_memory"})

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        names = set(tool_names(request))
        text = _graph_user(request)
        facts = gold.facts_in(text)
        who = re.search(r'use (\S+) as the source entity|"user_id: ([^"]+)"', _system(request))
        user = (who.group(1) or who.group(2)) if who else "user"

        def node(name: str) -> str:
            return user if name.casefold() in ("user", "i", "me") else re.sub(r"\s+", "_", name.strip().casefold())

        if "extract_entities" in names:
            ents = {}
            for f in facts:
                ents[node(f["subject"])] = "person" if node(f["subject"]) == user else "entity"
                if f["intent"] != "retract":
                    ents[node(f["value"])] = "entity"
            return Reply.tools(GraphTools.name, bool(facts), [("extract_entities", {"entities": [
                {"entity": e, "entity_type": t} for e, t in ents.items()]})])
        if "establish_relationships" in names or "relations" in names:
            rels = [{"source": node(f["subject"]), "relationship": re.sub(r"\W+", "_", f["attribute"].casefold()),
                     "destination": node(f["value"])} for f in facts if f["intent"] != "retract"]
            return Reply.tools(GraphTools.name, bool(facts), [("establish_relationships", {"entities": rels})])
        # delete_graph_memory: remove the existing relations whose destination a fact supersedes or retracts
        existing = re.findall(r"^\s*(?:Here are the existing memories:\s*)?(\S+) -- (\S+) -- (\S+)\s*$", text, re.M)
        calls = []
        for f in facts:
            gone = f.get("replaces") if f["intent"] == "supersede" else f["value"] if f["intent"] == "retract" else None
            for src, rel, dst in dict.fromkeys(existing):
                if gone and dst == node(gone) and src == node(f["subject"]):
                    calls.append(("delete_graph_memory", {"source": src, "relationship": rel, "destination": dst}))
        return Reply.tools(GraphTools.name, bool(facts), calls) if calls else Reply(GraphTools.name, bool(facts), content="")
