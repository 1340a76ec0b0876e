"""Cognee 1.6.5's model calls during cognify: two structured outputs per chunk (litellm, strict json_schema).

- ``KnowledgeGraph`` (prompt ``generate_graph_prompt.txt``; the chunk's text is the user message): nodes
  ``{id, name, type, description}`` and edges ``{source_node_id, target_node_id, relationship_name,
  description}``. A careful extractor makes, for each fact the chunk states, a node for its subject and one for
  its value, and an edge between them named after the attribute, the fact's own sentence as its description.
  A retraction ("I do not have a sister", "I no longer drink it") is an edge ``no_longer_<attribute>`` whose
  description is the retracting sentence: the chunk states the value only to deny it. A fact with a stated
  end gets a ``Timestamp`` node (the day) and an ``ends_at`` edge, as the prompt's rules on time ask; node
  descriptions name the entity only.
- ``SummarizedContent`` (prompt ``summarize_content.txt``): ``{summary, description}``: "This chunk is about:"
  with the subjects, then the facts as bullets, in the chunk's own words (the gold statements).

- ``ContradictionList`` (cognee 1.5.0 to 1.6.4, option ``contradiction_detection=on``; prompts
  ``detect_contradictions_system.txt`` / ``_user.txt``): the facts one hop from what a cognify touched, each
  ``[F<n>] <subject> <relationship, underscores as spaces> <object>``. A careful model pairs the facts that cannot
  both hold: a correction with the value it replaces (same subject and attribute), a retraction (``no longer
  <attribute>``) with what it retracts; its reason is the correcting statement. Bounded facts' ``ends at`` lines
  and the nodes' type edges (``<name> is a concept``) are facts too and contradict nothing.

Calls are recognised by their schema name. A chunk with no fact gets an empty graph and a summary that says
so. Upstream: cognee 1.6.5 ``cognee/shared/data_models.py`` (KnowledgeGraph, Node, Edge),
``cognee/modules/chunking/models`` and ``cognee/tasks/summarization/models.py`` (SummarizedContent),
``cognee/infrastructure/llm/prompts/`` (the two prompts).
"""

from __future__ import annotations

import re

from memmatrix.model.dialects.common import Reply, message_text, messages_of, norm, schema_name

_SLUG = re.compile(r"[^0-9a-z]+")


def _slug(text: str) -> str:
    return _SLUG.sub("_", text.casefold()).strip("_") or "item"


def _chunk(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


class KnowledgeGraph:
    name = "cognee-knowledge-graph"

    @staticmethod
    def match(request: dict) -> bool:
        return schema_name(request) == "KnowledgeGraph"

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        text = _chunk(request)
        nodes: dict[str, dict] = {}
        edges: list[dict] = []
        for fact in gold.facts_in(text):
            subject, value = fact["subject"], fact["value"]
            sid, vid = _slug(subject), _slug(value)
            # node descriptions name the entity only: the fact is the edge's (the prompt asks for dry descriptions)
            nodes.setdefault(sid, {"id": sid, "name": subject, "type": "Person" if subject.startswith("user")
                                   else "Concept", "description": subject})
            nodes.setdefault(vid, {"id": vid, "name": value, "type": "Concept", "description": value})
            relation = _slug(fact["attribute"])
            if fact["intent"] == "retract":
                relation = f"no_longer_{relation}"
            edges.append({"source_node_id": sid, "target_node_id": vid, "relationship_name": relation,
                          "description": fact["statement"]})
            if fact.get("valid_to"):  # a stated end: a Timestamp leaf and an ends_at edge, as the prompt asks
                day = fact["valid_to"][:10]
                nodes.setdefault(day, {"id": day, "name": day, "type": "Timestamp", "description": day})
                edges.append({"source_node_id": vid, "target_node_id": day, "relationship_name": "ends_at",
                              "description": fact["statement"]})
        return Reply.json(KnowledgeGraph.name, bool(gold.writes_in(text)),
                          {"nodes": list(nodes.values()), "edges": edges})


class Summary:
    name = "cognee-summary"

    @staticmethod
    def match(request: dict) -> bool:
        return schema_name(request) == "SummarizedContent"

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        text = _chunk(request)
        facts = gold.facts_in(text)
        if not facts:
            summary = "This chunk is about:\n- Conversation: small talk\n\n- No facts are stated."
        else:
            subjects = ", ".join(dict.fromkeys(f["subject"] for f in facts))
            bullets = "\n".join(f"- {f['statement']}" for f in facts)
            summary = f"This chunk is about:\n- People: {subjects}\n\n{bullets}"
        return Reply.json(Summary.name, bool(gold.writes_in(text)), {"summary": summary, "description": ""})


_FACT_LINE = re.compile(r"^\[(F\d+)\] (.+)$", re.M)


_TYPE_FACT = re.compile(r"^(.+) is a [a-z]+$")


def _rendered(gold) -> dict[str, tuple[str, dict]]:
    """Each gold fact as detect_contradictions renders the edge KnowledgeGraph made of it: text -> (kind, fact); and
    each node's type edge ("<name> is a concept"), kind "type"."""
    out: dict[str, tuple[str, dict]] = {}
    for w in gold.writes:
        for f in w.facts:
            for name in (f["subject"], f["value"], (f.get("valid_to") or "")[:10]):
                if name:
                    out.setdefault(f"{name} is a", ("type", f))
            rel = _slug(f["attribute"]).replace("_", " ")
            if f["intent"] == "retract":
                out.setdefault(f"{f['subject']} no longer {rel} {f['value']}", ("retract", f))
            else:
                out.setdefault(f"{f['subject']} {rel} {f['value']}", ("state", f))
            if f.get("valid_to"):
                out.setdefault(f"{f['value']} ends at {f['valid_to'][:10]}", ("bound", f))
    return out


class Contradictions:
    name = "cognee-contradictions"

    @staticmethod
    def match(request: dict) -> bool:
        return schema_name(request) == "ContradictionList"

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        known = {norm(k): v for k, v in _rendered(gold).items()}

        def lookup(text: str):
            typed = _TYPE_FACT.match(norm(text))
            return known.get(f"{typed.group(1)} is a") if typed else known.get(norm(text))
        lines = [(fid, lookup(text)) for fid, text in _FACT_LINE.findall(_chunk(request))]
        found = []
        for fid, hit in lines:
            if hit is None or hit[0] in ("bound", "type"):
                continue
            kind, f = hit
            for other_id, other in lines:
                if other is None or other_id == fid or other[0] != "state":
                    continue
                g = other[1]
                if (g["subject"], g["attribute"]) != (f["subject"], f["attribute"]) or g["intent"] != "assert":
                    continue
                if (kind == "retract" and g["value"] == f["value"]) or \
                        (kind == "state" and f["intent"] == "supersede" and g["value"] == f.get("replaces")):
                    found.append({"first_fact_id": other_id, "second_fact_id": fid, "reason": f["statement"],
                                  "confidence": 0.9})
        matched = bool(lines) and all(hit is not None for _, hit in lines)
        return Reply.json(Contradictions.name, matched, {"contradictions": found})


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (KnowledgeGraph, Summary, Contradictions)
