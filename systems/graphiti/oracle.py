"""Graphiti's structured-output calls (0.31.x), dispatched by response schema name, and its reranker.

Information sits in tags of the user message (`<CURRENT MESSAGE>`, `<ENTITIES>`, `<NEW FACT>` ...);
some blocks are JSON, some Python reprs. The oracle answers from the gold facts of the episode:
an entity per subject and value, an edge per fact (dated at the reference time, so a contradiction
can invalidate), and contradictions exactly where a gold fact supersedes or retracts a value.
"""

from __future__ import annotations

import ast
import json
import math
import re
from datetime import datetime, timezone

from memmatrix.model.dialects.common import (GoldIndex, HashEmbedder, Reply, contains, message_text,
                                               messages_of, norm, schema_name)

_EMBED = HashEmbedder(256)
_APPENDED = "Respond with a JSON object in the following format:"


def _appended_schema(request: dict) -> dict | None:
    """OpenAIGenericClient before 0.24.0: response_format json_object, the model's JSON schema appended to the
    last user message after ``Respond with a JSON object in the following format:``."""
    if (request.get("response_format") or {}).get("type") != "json_object":
        return None
    text = raw_user_text(request)
    if _APPENDED not in text:
        return None
    raw = text.rsplit(_APPENDED, 1)[1].strip()
    try:
        schema, _ = json.JSONDecoder().raw_decode(raw)
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def request_schema(request: dict) -> dict:
    """The JSON schema the request asks for, wherever the client put it."""
    rf = request.get("response_format") or {}
    return ((rf.get("json_schema") or {}).get("schema") or ((request.get("text") or {}).get("format") or {}).get("schema")
            or _appended_schema(request) or {})


def fields(request: dict, model: str | None = None) -> set[str]:
    """Property names of the requested schema (model=None) or of one of its $defs (e.g. NodeDuplicate, Edge)."""
    schema = request_schema(request)
    if model is not None:
        schema = (schema.get("$defs") or schema.get("definitions") or {}).get(model) or {}
    return set(schema.get("properties") or {})


def shaped(obj: dict, keep: set[str]) -> dict:
    """Only the keys this release's model declares (all of them when the schema is not known)."""
    return {k: v for k, v in obj.items() if not keep or k in keep}


def kind_of(request: dict) -> str | None:
    """The response model's name: the json_schema name, or the title of a schema appended to a json_object prompt."""
    name = schema_name(request)
    if name is not None:
        return name
    schema = _appended_schema(request)
    return schema.get("title") if schema else None


def raw_user_text(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


def user_text(request: dict) -> str:
    """What the user message says, without the JSON schema a json_object client appends to it (before 0.24.0)."""
    text = raw_user_text(request)
    return text.rsplit(_APPENDED, 1)[0] if _appended_schema(request) is not None else text


def tag(text: str, name: str) -> str | None:
    """The first ``<NAME>...</NAME>`` block outside <EXAMPLE> sections, stripped."""
    clean = re.sub(r"<EXAMPLE>.*?</EXAMPLE>", "", text, flags=re.S)
    m = re.search(rf"<{re.escape(name)}>\s*(.*?)\s*</{re.escape(name)}>", clean, re.S)
    return m.group(1) if m else None


def literal(block: str | None):
    if block is None:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(block)
        except (ValueError, SyntaxError):
            continue
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]  # "<json>\n<json string>" blocks
    out = []
    for ln in lines:
        try:
            out.append(json.loads(ln))
        except ValueError:
            out.append(ln)
    return out


def iso(text: str | None) -> str | None:
    """Graphiti's reference time ('2024-06-01 00:00:00+00:00  # comment') as ISO 8601 with Z."""
    if not text:
        return None
    raw = text.split("#", 1)[0].strip().replace(" ", "T", 1)
    try:
        t = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    t = t if t.tzinfo else t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def relation(attribute: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", attribute.upper()).strip("_") or "RELATES_TO"


def episode_text(text: str) -> str:
    """The episode being ingested (never the previous ones, which are context)."""
    names = ("CURRENT MESSAGE", "CURRENT_MESSAGE", "CURRENT MESSAGES", "TEXT", "JSON")
    return " ".join(str(x) for x in (tag(text, n) for n in names) if x)


def _entities(text: str, gold: GoldIndex) -> tuple[list[dict], bool]:
    facts = gold.facts_in(episode_text(text))
    names: list[str] = []
    for f in facts:
        for n in (f["subject"], f["value"]):
            if n not in names:
                names.append(n)
    return [{"name": n, "entity_type_id": 0} for n in names], bool(facts)


def _edges(text: str, gold: GoldIndex) -> tuple[list[dict], bool]:
    facts = gold.facts_in(episode_text(text))
    when = iso(tag(text, "REFERENCE_TIME") or tag(text, "REFERENCE TIME"))
    edges = []
    for f in facts:
        rel = relation(f["attribute"])
        edges.append({"source_entity_name": f["subject"], "target_entity_name": f["value"],
                      "relation_type": f"NO_LONGER_{rel}" if f["intent"] == "retract" else rel,
                      "fact": f["statement"], "valid_at": None if gold.ablation == "undated" else f.get("valid_from") or when,
                      "invalid_at": None if gold.ablation == "undated" else f.get("valid_to")})
    return edges, bool(facts)


#: The EdgeDuplicate prompt of 0.28.0 on numbers both lists continuously and lets a contradiction point into
#: EXISTING FACTS; 0.21.0-0.27.1 say "two separate lists with independent idx ranges starting from 0".
_CONTINUOUS = "CONTINUOUS idx numbering"


def _number(entry: dict, place: int) -> int:
    """The number the release reads back for a listed fact: its ``idx`` (0.21.0 on), its ``id`` where that is
    a number (the invalidation candidates before 0.21.0), else its place in the list (the existing facts before
    0.21.0 carry the edge's uuid as ``id``, and Graphiti reads ``duplicate_facts`` as positions in that list)."""
    for key in ("idx", "id"):
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return place


def _dedupe(text: str, gold: GoldIndex) -> tuple[dict, bool]:
    """EdgeDuplicate: the existing facts the new fact restates, and the facts it contradicts, in the numbering
    the release asks for. Before 0.28.0 ``contradicted_facts`` indexes FACT INVALIDATION CANDIDATES only (its own
    range from 0); from 0.28.0 one continuous range covers both lists, and a same-endpoint existing fact can be
    contradicted too."""
    new = (tag(text, "NEW FACT") or "").strip()
    existing = [(_number(e, i), e) for i, e in enumerate(literal(tag(text, "EXISTING FACTS")) or [])
                if isinstance(e, dict)]
    candidates = [(_number(e, i), e) for i, e in enumerate(literal(tag(text, "FACT INVALIDATION CANDIDATES")) or [])
                  if isinstance(e, dict)]
    fact = gold.fact_for_statement(new, text)
    dup = [n for n, e in existing if norm(str(e.get("fact", ""))) == norm(new)]
    gone = None
    if fact and fact["intent"] == "supersede":
        gone = fact.get("replaces")
    elif fact and fact["intent"] == "retract":
        gone = fact["value"]
    offered = [*existing, *candidates] if _CONTINUOUS in text else candidates
    contradicted = list(dict.fromkeys(n for n, e in offered if gone and contains(str(e.get("fact", "")), gone)
                                      and norm(str(e.get("fact", ""))) != norm(new)))
    return {"duplicate_facts": dup, "contradicted_facts": contradicted, "fact_type": "DEFAULT",
            "duplicate_fact_id": dup[0] if dup else -1}, fact is not None


def _dates(statement: str, reference: str | None, gold: GoldIndex, context: str = "") -> tuple[dict, bool]:
    """valid_at / invalid_at of one fact: its gold bounds, else the reference time (the prompts' rule for a
    fact stated in the present tense). Matched only when the fact is a gold statement."""
    fact = gold.fact_for_statement(statement.strip(), context)
    if gold.ablation == "undated":  # an extractor that resolves no dates: nothing can be invalidated
        return {"valid_at": None, "invalid_at": None}, bool(fact)
    return {"valid_at": (fact or {}).get("valid_from") or iso(reference),
            "invalid_at": (fact or {}).get("valid_to")}, bool(fact)


def _timestamps(text: str, gold: GoldIndex) -> tuple[dict, bool]:
    return _dates(tag(text, "FACT") or "", tag(text, "REFERENCE TIME") or tag(text, "REFERENCE_TIME"), gold, text)


def _batch_timestamps(text: str, gold: GoldIndex) -> tuple[dict, bool]:
    """BatchEdgeTimestamps (add_episode_bulk, after CombinedExtraction, whose facts carry no dates):
    ``<FACTS>`` is a JSON list of {fact, reference_time}; one entry per fact, in order. A reference
    time of 'unknown' (an episode without valid_at) resolves to no date."""
    facts = literal(tag(text, "FACTS"))
    if not isinstance(facts, list) or not facts:
        return {"timestamps": []}, False
    out, ok = [], True
    for f in facts:
        f = f if isinstance(f, dict) else {}
        dates, hit = _dates(str(f.get("fact") or ""), str(f.get("reference_time") or ""), gold, text)
        out.append(dates)
        ok = ok and hit
    return {"timestamps": out}, ok


def _about(fact: dict, name: str) -> bool:
    """Whether an entity summary of ``name`` carries ``fact``: the entity is its subject or value, is
    named in it, or owns its subject ("user" for a fact about "user's bike lock": the prompt asks for
    every object linked to the entity)."""
    subject = fact["subject"].casefold()
    return (contains(fact["statement"], name) or name in (fact["subject"], fact["value"])
            or subject.startswith(f"{name.casefold()}'s "))


def _summaries(text: str, gold: GoldIndex) -> tuple[dict, bool]:
    """Summaries of the entities from what the episodes say of them: <EPISODES> (add_episode), or <MESSAGES>
    (0.31's add_episode_bulk: the episode and its context, each a JSON record with the message text)."""
    episodes = " ".join(str(x) for x in (literal(tag(text, "EPISODES")) or [])) or tag(text, "MESSAGES") or ""
    facts = gold.facts_in(episodes)
    out = []
    for ent in literal(tag(text, "ENTITIES")) or []:
        name = ent.get("name", "") if isinstance(ent, dict) else str(ent)
        said = [f["statement"] for f in facts if _about(f, name)]
        out.append({"name": name, "summary": " ".join(dict.fromkeys(said))})
    return {"summaries": out}, bool(facts)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def _key(sentence: str) -> str:
    return norm(sentence).rstrip(".!?").strip()


def _merge(parts: list[str]) -> str:
    """summarize_pair: one summary holding every statement of both, each once. A sentence another one
    contains whole ("X works at Y." beside "X works at Y in Z.") adds nothing and goes. Nothing is
    qualified or dropped for being old: the two summaries carry no dates to tell which value is current."""
    found = list(dict.fromkeys(s for p in parts for s in sentences(p)))
    keys = [_key(s) for s in found]
    keep = []
    for i, (s, k) in enumerate(zip(found, keys)):
        if any(j != i and k != o and re.search(rf"(?<!\w){re.escape(k)}(?!\w)", o) for j, o in enumerate(keys)):
            continue
        if k in (_key(x) for x in keep):
            continue
        keep.append(s)
    return " ".join(s if s[-1] in ".!?\"'" else f"{s}." for s in keep)  # newline-separated facts get their stop


_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'-]*)*")


def _describe(summary: str, gold: GoldIndex) -> tuple[str, bool]:
    """summary_description: one sentence on what kind of information the summary holds. For a sentence
    that is a gold statement: its subject and attribute; otherwise the proper names it mentions."""
    topics: dict[str, list[str]] = {}
    if not sentences(summary):  # an empty summary has one careful description, gold or not
        return "No information is summarized.", True
    ok = True
    for s in sentences(summary):
        said = gold.facts_for_statement(s)  # what it is about is the same in every case that says it
        fact = said[0] if len({(f["subject"], f["attribute"]) for f in said}) == 1 else None
        if fact:
            topics.setdefault(fact["subject"], [])
            if fact["attribute"] not in topics[fact["subject"]]:
                topics[fact["subject"]].append(fact["attribute"])
            continue
        names = [n for n in _NAME.findall(s) if n not in ("I", "The", "A", "An", "My")]
        for n in names:
            topics.setdefault(n, [])
        ok = ok and bool(names)
    if not topics:
        return "", ok
    about = "; ".join(f"{who} ({', '.join(what)})" if what else who for who, what in topics.items())
    return f"Facts about {about}.", ok


def _entity_summary(text: str, gold: GoldIndex) -> tuple[dict, bool]:
    ent = literal(tag(text, "ENTITY"))
    ent = ent if isinstance(ent, dict) else {}
    name = str(ent.get("name") or "")
    facts = gold.facts_in(tag(text, "MESSAGES") or "")
    said = [f["statement"] for f in facts if name and _about(f, name)]
    return {"summary": _merge([str(ent.get("summary") or ""), " ".join(dict.fromkeys(said))])}, bool(facts)


#: schemas answered whole from the user text and the gold: (answer, whether gold matched)
_ANSWER_BY_SCHEMA = {"EdgeDuplicate": _dedupe, "EdgeTimestamps": _timestamps, "BatchEdgeTimestamps": _batch_timestamps,
                     "SummarizedEntities": _summaries, "EntitySummary": _entity_summary}


def _from_schema(request: dict) -> dict:
    """A custom attribute model the oracle knows nothing about: every field null (or empty)."""
    schema = request_schema(request)
    empty = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    out = {}
    for name, prop in (schema.get("properties") or {}).items():
        kinds = [p.get("type") for p in prop.get("anyOf", [prop])]
        out[name] = None if "null" in kinds or name not in schema.get("required", []) else empty.get(kinds[0], None)
    return out


class Structured:
    name = "graphiti-structured"
    KNOWN = ("ExtractedEntities", "NodeResolutions", "ExtractedEdges", "EdgeDuplicate", "EdgeTimestamps",
             "BatchEdgeTimestamps", "SummarizedEntities", "Summary", "SummaryDescription", "CombinedExtraction")

    @staticmethod
    def match(request: dict) -> bool:
        return kind_of(request) is not None

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        kind, text = kind_of(request), user_text(request)
        if kind and kind.startswith("EntityAttributes_"):  # <= 0.18.1: summary + custom attributes, one dynamic model
            kind = "EntitySummary"
        name = f"graphiti-{kind}"
        if kind == "ExtractedEntities":
            ents, ok = _entities(text, gold)
            return Reply.json(name, ok, {"extracted_entities": ents})
        if kind == "CombinedExtraction":  # add_episode_bulk: entities and facts in one call, no dates
            ents, ok = _entities(text, gold)
            edges, _ = _edges(text, gold)
            facts = [{k: e[k] for k in ("source_entity_name", "target_entity_name", "relation_type", "fact")}
                     | {"episode_indices": [0]} for e in edges]
            return Reply.json(name, ok, {"extracted_entities": ents, "edges": facts})
        if kind == "NodeResolutions":
            # up to 0.20.4 the candidates come wrapped in one more list (existing_nodes_context is a 1-tuple there)
            listed = literal(tag(text, "EXISTING ENTITIES")) or []
            flat = [c for x in listed for c in (x if isinstance(x, list) else [x])]
            existing = [c for c in flat if isinstance(c, dict)]
            res = []
            for ent in literal(tag(text, "ENTITIES")) or []:
                pos = next((i for i, c in enumerate(existing) if norm(c.get("name", "")) == norm(ent["name"])), None)
                cand = existing[pos] if pos is not None else {}
                match = cand.get("candidate_id", cand.get("idx", pos)) if pos is not None else -1
                res.append({"id": ent["id"], "name": ent["name"], "duplicate_candidate_id": match,  # >= 0.29
                            "duplicate_name": cand.get("name", ""),                                  # 0.27-0.28
                            "duplicate_idx": match, "duplicates": [] if match == -1 else [match],    # 0.12-0.26
                            "additional_duplicates": []})
            keep = fields(request, "NodeDuplicate")
            return Reply.json(name, True, {"entity_resolutions": [shaped(r, keep) for r in res]})
        if kind == "ExtractedEdges":
            edges, ok = _edges(text, gold)
            ids = {norm(str(n.get("name", ""))): n.get("id") for n in literal(tag(text, "ENTITIES")) or []
                   if isinstance(n, dict)}
            for e in edges:  # 0.12-0.26 point at the ENTITIES list by id
                e["source_entity_id"] = ids.get(norm(e["source_entity_name"]), -1)
                e["target_entity_id"] = ids.get(norm(e["target_entity_name"]), -1)
            keep = fields(request, "Edge")
            edges = [shaped(e, keep) for e in edges]
            return Reply.json(name, ok, {"edges": edges})
        if kind in _ANSWER_BY_SCHEMA:
            obj, ok = _ANSWER_BY_SCHEMA[kind](text, gold)
            obj = shaped(obj, fields(request))
            return Reply.json(name, ok, obj)
        if kind == "Summary":
            # a text task on the two summaries in the prompt, gold or not: the merge is the careful answer,
            # and two empty summaries merge into an empty one (nothing to state is the correct answer)
            parts = literal(text.rsplit("Summaries:", 1)[-1].strip()) if "Summaries:" in text else None
            if not isinstance(parts, list):
                return Reply.json(name, False, {"summary": ""})
            merged = _merge([str(p.get("summary") or "") for p in parts if isinstance(p, dict)])
            return Reply.json(name, True, {"summary": merged})
        if kind == "SummaryDescription":
            raw = text.rsplit("Summary:", 1)[-1].strip() if "Summary:" in text else ""
            try:
                summary = json.loads(raw)
            except ValueError:
                summary = raw
            description, ok = _describe(str(summary), gold)
            return Reply.json(name, ok, {"description": description})
        return Reply.json(f"graphiti-attributes-{kind}", False, _from_schema(request))


class Rerank:
    """OpenAIRerankerClient: one call per passage, scored from logprobs of 'True'."""

    name = "graphiti-rerank"

    @staticmethod
    def match(request: dict) -> bool:
        return bool(request.get("logprobs")) and request.get("max_tokens") == 1

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        text = user_text(request)
        passage, query = (tag(text, "PASSAGE") or "").strip(), (tag(text, "QUERY") or "").strip()
        p = sum(a * b for a, b in zip(_EMBED(passage), _EMBED(query)))
        p = min(0.99, max(0.01, (p + 1) / 2))
        reply = Reply(Rerank.name, True, content="True" if p >= 0.5 else "False")
        reply.logprobs = {"content": [{"token": reply.content, "logprob": math.log(max(p, 1 - p)), "bytes": None,
                                       "top_logprobs": [{"token": "True", "logprob": math.log(p), "bytes": None},
                                                        {"token": "False", "logprob": math.log(1 - p), "bytes": None}]}]}
        return reply


#: What the gateway tries for a run of this system, in order, after memmatrix's own dialects
#: (system.yaml: ``oracle: oracle.py:DIALECTS``).
DIALECTS = (Rerank, Structured)
