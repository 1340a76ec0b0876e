"""LlamaIndex 0.14.25's model calls: FactExtractionMemoryBlock's fact extraction and fact condensation.

Both calls send the messages flushed from the short-term queue (user and assistant messages, as they were put),
then one more user message holding the block's prompt (llama_index/core/memory/memory_blocks/fact.py,
DEFAULT_FACT_EXTRACT_PROMPT and DEFAULT_FACT_CONDENSE_PROMPT): the facts already held inside ``<existing_facts>``,
each as ``<fact>...</fact>``, and the answer asked for as ``<facts><fact>...</fact></facts>``. The condense prompt
(sent only once the list holds more than ``max_facts``) also asks for "fewer than N" facts, and its answer replaces
the whole list.

The oracle plays a careful model that follows those prompts:

- extraction: every gold fact stated in the flushed messages that is not already an existing fact, its statement as
  the fact; nothing else. A correction ("supersede") or a retraction is a new fact like any other: the extraction
  prompt can only add to the list (the block appends what comes back), so the fact it replaces stays.
- condensation: the existing facts, minus every fact holding a value a later fact in the list supersedes
  (``replaces``) or retracts (a retraction's ``replaces``, else its ``value``), the retraction statement itself kept;
  duplicates dropped; the newest ``N - 1`` kept when more are left.

The short-term queue flushes by tokens and conversation turns, not by write: a flushed batch can hold the end of one
write and the start of the next (the queue keeps the latest user message back). ``GoldIndex.writes_in`` finds a
write only when all its user messages are there, so a batch holding part of a write is read message by message: each
gold fact of a write belongs to the user message that states it (the one holding its value, else the one sharing
most words with its statement), and a batch states the facts whose message it holds. Where a batch's messages belong
to writes of several cases, the case with most of them is the one the batch is from.
"""

from __future__ import annotations

import re

from memmatrix.model.dialects.common import Reply, contains, message_text, messages_of, norm

_FACT = re.compile(r"<fact>(.*?)</fact>", re.S)
_EXISTING = re.compile(r"<existing_facts>(.*?)</existing_facts>", re.S)
_FEWER = re.compile(r"fewer than (\d+)")
_WORD = re.compile(r"\w+")


def _prompt(request: dict) -> tuple[str, list[dict]]:
    """The block's prompt (the last message) and the flushed messages before it."""
    msgs = messages_of(request)
    if not msgs:
        return "", []
    return message_text(msgs[-1]), msgs[:-1]


def _is_fact_prompt(prompt: str) -> bool:
    return "<existing_facts>" in prompt and "</existing_facts>" in prompt and "<facts>" in prompt


def _existing(prompt: str) -> list[str]:
    m = _EXISTING.search(prompt)
    return [f.strip() for f in _FACT.findall(m.group(1))] if m else []


def _render(facts: list[str]) -> str:
    if not facts:
        return "<facts></facts>"
    return "<facts>\n" + "\n".join(f"  <fact>{f}</fact>" for f in facts) + "\n</facts>"


def _words(text: str) -> set[str]:
    return set(_WORD.findall(norm(text)))


def _home(fact: dict, messages: tuple[str, ...]) -> str | None:
    """The user message of its write that states the fact: the one holding its value (the most words of the
    statement among several), else the one sharing most words with the statement."""
    if not messages:
        return None
    holding = [m for m in messages if fact.get("value") and contains(m, fact["value"])]
    pool = holding or list(messages)
    said = _words(fact["statement"])
    return max(pool, key=lambda m: (len(said & _words(m)), -pool.index(m)))


def stated(conversation: list[dict], gold) -> tuple[list[dict], bool]:
    """The gold facts the flushed messages state, in case-file order, and whether they are about writes of the run."""
    users = [message_text(m) for m in conversation if m.get("role") == "user"]
    seen = {norm(u) for u in users if u.strip()}
    if not seen:
        return [], False
    writes = [w for w in gold.writes if any(m in seen for m in w.messages)]
    if not writes:
        return [], False
    by_case: dict[str, set[str]] = {}
    for w in writes:
        by_case.setdefault(w.case, set()).update(m for m in w.messages if m in seen)
    best = max(len(v) for v in by_case.values())
    cases = [c for c, v in by_case.items() if len(v) == best]
    answers = []
    for case in cases:
        out, keys = [], set()
        for w in sorted((w for w in writes if w.case == case), key=lambda w: w.index):
            whole = all(m in seen for m in w.messages)
            for f in w.facts:
                if not whole and _home(f, w.messages) not in seen:
                    continue
                key = norm(f["statement"])
                if key not in keys:
                    keys.add(key)
                    out.append(f)
        answers.append(out)
    if len({tuple(norm(f["statement"]) for f in a) for a in answers}) > 1:
        return [], False  # the messages belong to several cases equally, and they state different facts
    return answers[0], True


class FactExtract:
    """FactExtractionMemoryBlock._aput's extraction call."""

    name = "llamaindex-fact-extract"

    @staticmethod
    def match(request: dict) -> bool:
        prompt, _ = _prompt(request)
        return _is_fact_prompt(prompt) and not _FEWER.search(prompt)

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        prompt, conversation = _prompt(request)
        facts, matched = stated(conversation, gold)
        held = {norm(f) for f in _existing(prompt)}
        new = [f["statement"] for f in facts if norm(f["statement"]) not in held]
        return Reply(FactExtract.name, matched, content=_render(new))


class FactCondense:
    """FactExtractionMemoryBlock._aput's condensation call, once the list holds more than max_facts."""

    name = "llamaindex-fact-condense"

    @staticmethod
    def match(request: dict) -> bool:
        prompt, _ = _prompt(request)
        return _is_fact_prompt(prompt) and bool(_FEWER.search(prompt))

    @staticmethod
    def answer(request: dict, gold) -> Reply:
        prompt, conversation = _prompt(request)
        limit = int(_FEWER.search(prompt).group(1))
        existing = _existing(prompt)
        context = "\n".join([prompt, *(message_text(m) for m in conversation)])
        known = [gold.fact_for_statement(f, context) for f in existing]
        keep = [True] * len(existing)
        for i, f in enumerate(known):
            if f is None or f["intent"] not in ("supersede", "retract"):
                continue
            gone = f.get("replaces") or (f["value"] if f["intent"] == "retract" else None)
            for j, text in enumerate(existing):
                if j != i and gone and contains(text, gone):
                    keep[j] = False
        out, keys = [], set()
        for text, kept in zip(existing, keep):
            if kept and norm(text) not in keys:
                keys.add(norm(text))
                out.append(text)
        out = out[-(limit - 1):] if limit > 1 and len(out) >= limit else out
        return Reply(FactCondense.name, any(f is not None for f in known), content=_render(out))


#: What the gateway tries for a run of this system, after memmatrix's own dialects.
DIALECTS = (FactExtract, FactCondense)
