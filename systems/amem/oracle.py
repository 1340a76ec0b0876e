"""A-MEM 0.2.6's two model calls per note (agentic_memory/memory_system.py), both a strict-less or strict
``json_schema`` named ``response`` behind the system message "You must respond with a JSON object.":

- ``analyze_content`` (every add without keywords, context and tags): the prompt asks for keywords (not the
  speaker's name nor the time), a one-sentence context "summarizing main topic, key points, purpose" and
  broad tags; the note's content follows "Content for analysis:". A careful model names what the note
  states: the facts' values and attributes as keywords, the facts' statements in the context, the
  attributes as tags beside "personal information".
- the evolution decision (``process_memory``, every add once the store holds a note): the new note's
  context, content and keywords, then its nearest neighbours, one per line as
  ``memory_id:<id>\\ttalk start time:...\\tmemory content: ...\\tmemory context: ...\\tmemory keywords:
  [...]\\tmemory tags: [...]``; the reply says whether to evolve, the actions (strengthen, update_neighbor),
  the neighbours to connect, the new note's tags and each neighbour's new context and tags, in order. A
  careful model connects the new note to the neighbours about the same thing (a fact with the same subject
  and attribute: a restatement or a correction of it); where the new note corrects or retracts what a
  neighbour states, it adds that to the neighbour's context ("Since corrected: <the new statement>"), and,
  as the prompt says for memories it does not change, hands every other context and every tag list back as
  it was. A note with nothing related is not evolved.

The two calls are told apart by the schema's properties (both are named ``response``). Upstream: a-mem
0.2.6 ``agentic_memory/memory_system.py`` (analyze_content, _evolution_system_prompt, process_memory,
find_related_memories), ``agentic_memory/llm_controller.py`` (OpenAIController.get_completion).
"""

from __future__ import annotations

import ast
import re

from memmatrix.model.dialects.common import Reply, message_text, messages_of, norm

_NEIGHBOUR = re.compile(r"memory_id:(\S+)\ttalk start time:[^\t]*\tmemory content: (.*?)\tmemory context: (.*?)"
                        r"\tmemory keywords: (.*?)\tmemory tags: (.*?)\n(?=memory_id:|\s*\n|\s*$)", re.S)
_NEW = re.compile(r"The new memory context:\n(.*?)\n\s*content: (.*?)\n\s*keywords: .*?\n\s*The nearest neighbors "
                  r"memories", re.S)
_STOP = frozenset("the a an my our your his her their is are was were of for to in on at and or i we you it "
                  "this that with have has had be been by as from not no".split())


def _prompt(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


def _properties(request: dict) -> set[str]:
    rf = request.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema") or {} if isinstance(rf, dict) else {}
    return set((schema.get("properties") or {}).keys())


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[\w'-]+", text.casefold()) if w not in _STOP and len(w) > 2]


def keywords(facts: list[dict], content: str) -> list[str]:
    """The values the note states, then its attributes; a note with no fact, its first content words."""
    out: list[str] = []
    for f in facts:
        for k in (f["value"], f["attribute"]):
            if k.casefold() not in (o.casefold() for o in out):
                out.append(k)
    if not out:
        out = list(dict.fromkeys(_words(content)))[:3]
    return out


def tags(facts: list[dict]) -> list[str]:
    out = ["personal information", "conversation"] if facts else ["conversation", "small talk"]
    for f in facts:
        if f["attribute"] not in out:
            out.append(f["attribute"])
    return out


def context(facts: list[dict]) -> str:
    if not facts:
        return "A conversational exchange with no lasting personal information."
    return "Stated in this conversation: " + " ".join(f["statement"] for f in facts)


class Analyze:
    name = "amem-analyze"

    @staticmethod
    def match(request: dict) -> bool:
        return _properties(request) == {"keywords", "context", "tags"}

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        prompt = _prompt(request)
        content = prompt.split("Content for analysis:", 1)[-1].strip()
        facts = gold.facts_in(content)
        return Reply.json(Analyze.name, bool(gold.writes_in(content)),
                          {"keywords": keywords(facts, content), "context": context(facts), "tags": tags(facts)})


def _topics(facts: list[dict]) -> set[tuple[str, str]]:
    return {(norm(f["subject"]), norm(f["attribute"])) for f in facts}


def _list(text: str) -> list[str]:
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _evolved(ctx: str, theirs: list[dict], facts: list[dict]) -> str:
    """A neighbour's new context: as it was, and where the new note corrects or retracts what it states, with the
    correction said next to it (the understanding the new note brings to it)."""
    topics = _topics(theirs)
    changes = [f["statement"] for f in facts if f["intent"] in ("supersede", "retract")
               and (norm(f["subject"]), norm(f["attribute"])) in topics]
    return f"{ctx} Since corrected: {' '.join(changes)}" if changes else ctx


class Evolve:
    name = "amem-evolve"

    @staticmethod
    def match(request: dict) -> bool:
        return "should_evolve" in _properties(request)

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        prompt = _prompt(request)
        new = _NEW.search(prompt)
        content = new.group(2) if new else ""
        body = prompt.split("(each line starts with memory_id):", 1)[-1]
        neighbours = _NEIGHBOUR.findall(body + "\n")
        facts = gold.facts_in(content)
        mine = _topics(facts)
        related = [nid for nid, ncontent, *_ in neighbours if mine & _topics(gold.facts_in(ncontent))]
        reply = {
            "should_evolve": bool(related),
            "actions": ["strengthen", "update_neighbor"] if related else [],
            "suggested_connections": related,
            "tags_to_update": tags(facts),
            "new_context_neighborhood": [_evolved(ctx, gold.facts_in(ncontent), facts)
                                         for _, ncontent, ctx, _, _ in neighbours],
            "new_tags_neighborhood": [_list(tg) for _, _, _, _, tg in neighbours],
        }
        return Reply.json(Evolve.name, bool(content) and bool(gold.writes_in(content)), reply)


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (Analyze, Evolve)
