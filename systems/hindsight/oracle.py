"""Hindsight 1.1.0's model calls (the OpenAI-compatible provider; json_object, the schema at the end of the system
prompt, "Return valid json only." before the user message). Calls are told apart by the first line of the prompt.

- Fact extraction (retain; ``engine/retain/fact_extraction.py``): "Extract SIGNIFICANT facts from text." The
  chunk follows ``Content:`` in the user message. A careful extractor states each fact of the conversation once:
  ``what`` is the fact's own statement, ``who`` the user, ``when`` the stated end of a bounded fact ("until
  <day>") and N/A otherwise, ``fact_kind`` conversation, ``fact_type`` world, ``entities`` "user" (the prompt:
  "always include user when the fact is about the user"), the object the subject names, and the value when it
  is a name (people, places, organisations; not a code or a number). Greetings and chatter give no fact. A
  document retained again without some of its lines (option ``forget_path=redact``) is what is left of a known
  write: every user line one of that write's messages; it states the write's facts whose value it still holds.
- Consolidation (``engine/consolidation``): "You are a memory consolidation system." New facts come as
  ``[<uuid>] <text> (...)`` lines, existing observations as a JSON array with their ids. A careful model
  follows the prompt's rules: a fact with no observation of the same facet (subject and attribute) creates one,
  its statement as the text (rule 1); a fact that restates an observation is attached to it as evidence
  (update, text unchanged); a correction or a retraction updates the observation of the facet it changes to the
  current state and keeps the earlier one as history (rules 4, 7: "<new statement> (earlier: <old text>)").
  Ids are copied from the prompt, as the schema's enum requires.
- Duplicate adjudication (``_dedup_adjudicate``): "You reconcile long-term memory observations." Merge when the
  two observations state the same fact, keep both otherwise.

Upstream: hindsight-api-slim 1.1.0 ``engine/retain/fact_extraction.py`` (the prompt, ``ExtractedFact``,
``_extract_facts_from_chunk``), ``engine/consolidation/prompts.py`` and ``consolidator.py``
(``_consolidate_batch_with_llm``, ``_DEDUP_PROMPT``); the recorded requests in ``docs/research/hindsight-1.1.0``.
"""

from __future__ import annotations

import json
import re

from memmatrix.model.dialects.common import Reply, contains, message_text, messages_of, norm

_FACT_LINE = re.compile(r"^\[([0-9a-fA-F-]{36})\] (.*?)(?: \((?:occurred_start|occurred_end|mentioned_at)=.*\))?$", re.M)
_NAME = re.compile(r"^[A-Z][^\W\d_]*(?:[ '-][A-Z][^\W\d_]*)*$")  # a name: capitalised words, no digit


def _first_line(request: dict) -> str:
    msgs = messages_of(request)
    return message_text(msgs[0]).lstrip().splitlines()[0] if msgs and message_text(msgs[0]).strip() else ""


def _user(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


def _what(text: str) -> str:
    """The statement part of a stored fact ('what | When: ... | Involving: ... | why')."""
    return text.split(" | ")[0].strip()


def _entities(fact: dict) -> list[str]:
    out = ["user"]
    subject = fact["subject"]
    if subject.casefold().startswith("user's "):
        out.append(subject[len("user's "):])
    elif not subject.casefold().startswith("user"):
        out.append(subject)
    if _NAME.match(fact["value"]):
        out.append(fact["value"])
    return list(dict.fromkeys(out))


def _remnant(chunk: str, gold) -> list[dict] | None:
    """The facts a redacted document still states: None unless it holds user lines and every one is a message of
    a write whose other messages were taken out (a write found whole is ``writes_in``'s); its facts whose value
    the remnant still holds."""
    users = {norm(line.split(":", 1)[1]) for line in chunk.splitlines() if line.startswith("user:")}
    writes = [w for w in gold.writes if users and users < set(w.messages)]
    if not users or not writes:
        return None
    return [f for w in writes for f in w.facts if contains(chunk, f["value"])]


class Extract:
    name = "hindsight-extract"

    @staticmethod
    def match(request: dict) -> bool:
        return _first_line(request).startswith("Extract SIGNIFICANT facts from text")

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        chunk = _user(request).split("\nContent:\n", 1)[-1]
        stated, matched = gold.facts_in(chunk), bool(gold.writes_in(chunk))
        if not matched and (left := _remnant(chunk, gold)) is not None:
            stated, matched = list({(f["subject"], f["attribute"], f["value"]): f for f in left}.values()), True
        facts = []
        for f in stated:
            facts.append({"what": f["statement"], "when": f"until {f['valid_to'][:10]}" if f.get("valid_to") else "N/A",
                          "where": "N/A", "who": "user", "why": "N/A", "fact_kind": "conversation",
                          "fact_type": "world", "entities": _entities(f), "causal_relations": []})
        return Reply.json(Extract.name, matched, {"facts": facts})


def _topic(fact: dict | None) -> tuple[str, str] | None:
    return (norm(fact["subject"]), norm(fact["attribute"])) if fact else None


def _observations(user: str) -> list[dict]:
    block = user.split("### Existing observations", 1)[-1].strip()
    start = block.find("[")
    if start < 0:
        return []
    try:
        value, _ = json.JSONDecoder().raw_decode(block[start:])
    except ValueError:
        return []
    return value if isinstance(value, list) else []


class Consolidate:
    name = "hindsight-consolidate"

    @staticmethod
    def match(request: dict) -> bool:
        return _first_line(request).startswith("You are a memory consolidation system")

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        user = _user(request)
        new_block = user.split("### New facts", 1)[-1].split("### Existing observations", 1)[0]
        # the answer reads a fact's statement, subject, attribute and intent, never its value: a statement cases share
        # (a retraction: "I have no nickname.") is answered alike whichever case it is
        reads, topic = ("statement", "subject", "attribute", "intent"), ("subject", "attribute")
        new = [(fid, text, gold.fact_for_statement(_what(text), user, reads))
               for fid, text in _FACT_LINE.findall(new_block)]
        observations = []
        for o in _observations(user):
            sources = [gold.fact_for_statement(_what(s.get("text", "")), user, topic)
                       for s in o.get("source_memories") or []]
            sources.append(gold.fact_for_statement(o.get("text", "").split(" (earlier: ")[0], user, topic))
            observations.append((o, {_topic(s) for s in sources if s}))
        creates, updates = [], {}
        for fid, _, fact in new:
            if fact is None:
                continue
            same = [o for o, topics in observations if _topic(fact) in topics]
            if not same:
                mine = [c for c in creates if c["_topic"] == _topic(fact)]
                if mine:
                    mine[0]["source_fact_ids"].append(fid)
                else:
                    creates.append({"text": fact["statement"], "source_fact_ids": [fid], "_topic": _topic(fact),
                                    "reason": "new facet: no existing observation covers it"})
                continue
            o = same[0]
            entry = updates.setdefault(o["id"], {"observation_id": o["id"], "text": o["text"], "source_fact_ids": [],
                                                 "reason": "the same facet"})
            entry["source_fact_ids"].append(fid)
            if fact["intent"] in ("supersede", "retract") and norm(fact["statement"]) not in norm(entry["text"]):
                entry["text"] = f"{fact['statement']} (earlier: {o['text']})"
                entry["reason"] = "state change: the current state, the earlier one kept as history"
        for c in creates:
            del c["_topic"]
        matched = bool(new) and all(f is not None for _, _, f in new)
        return Reply.json(Consolidate.name, matched,
                          {"creates": creates, "updates": list(updates.values()), "deletes": []})


class Dedup:
    name = "hindsight-dedup"

    @staticmethod
    def match(request: dict) -> bool:
        return "You reconcile long-term memory observations" in _user(request)

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        user = _user(request)
        new = re.search(r"\[NEW\] (.*)", user)
        old = re.search(r"\[EXISTING\] (.*)", user)
        a, b = (new.group(1).strip() if new else ""), (old.group(1).strip() if old else "")
        same = bool(a) and norm(a) == norm(b)
        return Reply.json(Dedup.name, bool(a and b), {"action": "merge" if same else "keep", "text": b if same else "",
                                                      "reason": "the same statement" if same else "different facts"})


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (Extract, Consolidate, Dedup)
