"""memmatrix's own dialects: structured fact extraction (used by the reference system) and the
prompt-hygiene judge (used by the contradiction protocol's column B and E)."""

from __future__ import annotations

import json
import re

from ..gold import GoldIndex
from .common import Reply, message_text, messages_of

EXTRACT_MARKER = "memmatrix-extract/v1"
JUDGE_MARKER = "memmatrix-judge/hygiene-v1"

#: Words that, in the same sentence as the stale value, present it as no longer current.
QUALIFIERS = ("formerly", "former", "previously", "used to", "no longer", "not anymore", "anymore", "until",
              "moved from", "moved away", "superseded", "retracted", "was wrong", "not true", "ended", "expired",
              "ex-", "earlier", "before", "stopped", "quit", "left")
_SENT = re.compile(r"(?<=[.!?;\n])\s+|\n")


def _system(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") in ("system", "developer"))


def _user(request: dict) -> str:
    return "\n".join(message_text(m) for m in messages_of(request) if m.get("role") == "user")


class Extract:
    name = "memmatrix-extract"

    @staticmethod
    def match(request: dict) -> bool:
        return EXTRACT_MARKER in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        text = _user(request)
        facts = gold.facts_in(text)
        if not facts:  # a single statement (a forget or share request) rather than a written conversation
            lines = [ln.split(": ", 1)[-1].strip() for ln in text.splitlines() if ln.strip()]
            facts = [f for f in map(gold.fact_for_statement, lines) if f is not None]
        keys = ("subject", "attribute", "value", "statement", "intent", "replaces", "valid_from", "valid_to")
        return Reply.json(Extract.name, bool(facts), {"facts": [{k: f[k] for k in keys if k in f} for f in facts]})


def qualified_sentences(text: str, token_re: re.Pattern) -> list[tuple[str, bool]]:
    """Each sentence holding the stale value, and whether a qualifier word marks it as not current."""
    out = []
    for sentence in _SENT.split(text):
        if token_re.search(sentence):
            low = sentence.casefold()
            out.append((sentence.strip(), any(q in low for q in QUALIFIERS)))
    return out


class Judge:
    """The oracle's judge: lexical qualifier rules, deterministic. A real model judges in proxy mode."""

    name = "memmatrix-judge"

    @staticmethod
    def match(request: dict) -> bool:
        return JUDGE_MARKER in _system(request)

    @staticmethod
    def answer(request: dict, gold: GoldIndex) -> Reply:
        try:
            case = json.loads(_user(request))
            stale, text = case["stale"], case["text"]
        except (ValueError, KeyError, TypeError):
            return Reply.json(Judge.name, False, {"verdict": "unclear", "reason": "the judge input was not understood"})
        words = [re.escape(w) for w in re.findall(r"[^\W_]+", stale)]
        token_re = re.compile(r"(?<![^\W_])" + r"[\W_]+".join(words) + r"(?![^\W_])", re.I)
        found = qualified_sentences(text, token_re)
        if not found:
            verdict, reason = "absent", "the stale value does not appear"
        elif all(q for _, q in found):
            verdict, reason = "qualified", "every mention is marked as no longer current"
        else:
            bare = next(s for s, q in found if not q)
            verdict, reason = "unqualified", f"presented without a qualifier: {bare[:200]!r}"
        return Reply.json(Judge.name, True, {"verdict": verdict, "reason": reason})
