"""The gold annotations of the case files, indexed for the oracle.

Every write op in a case file carries its gold facts. The oracle finds the write(s) a
prompt is about by their user messages, and a fact by its statement, and answers with
what a perfect extractor would have extracted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ESCAPES = (("\\\"", '"'), ("\\'", "'"), ("\\n", " "), ("\\t", " "))
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    """Case-folded, whitespace-collapsed, JSON/Python escapes undone: how prompts quote messages."""
    for a, b in _ESCAPES:
        text = text.replace(a, b)
    return _SPACE.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class GoldWrite:
    case: str
    index: int
    messages: tuple[str, ...]   # normalised user messages
    facts: tuple[dict, ...]


class GoldIndex:
    def __init__(self, case_files: list[dict], ablation: str = ""):
        self.ablation = ablation  # an oracle imperfect on purpose (settings.ABLATIONS)
        self.writes: list[GoldWrite] = []
        self.by_statement: dict[str, dict] = {}
        for cf in case_files:
            for case in cf["cases"]:
                for i, op in enumerate(case["ops"]):
                    if op["op"] not in ("write", "import"):
                        continue
                    users = tuple(norm(m["content"]) for m in op["messages"] if m["role"] == "user")
                    facts = tuple(self._complete(f) for f in op["gold"])
                    self.writes.append(GoldWrite(case["id"], i, users, facts))
                    for f in facts:
                        self.by_statement.setdefault(norm(f["statement"]), f)

    @staticmethod
    def _complete(fact: dict) -> dict:
        f = dict(fact)
        f.setdefault("intent", "assert")
        f.setdefault("statement", f"{f['subject']} {f['attribute']}: {f['value']}")
        return f

    def writes_in(self, text: str) -> list[GoldWrite]:
        """The writes whose every user message occurs in ``text``, the largest first, no subsumed ones."""
        t = norm(text)
        hits = [w for w in self.writes if w.messages and all(m in t for m in w.messages)]
        hits.sort(key=lambda w: -len(w.messages))
        kept: list[GoldWrite] = []
        for w in hits:
            if not any(set(w.messages) <= set(k.messages) for k in kept):
                kept.append(w)
        return kept

    def facts_in(self, text: str) -> list[dict]:
        """Gold facts of every write found in ``text``, without repeats, in case-file order."""
        seen, out = set(), []
        for w in sorted(self.writes_in(text), key=lambda w: (w.case, w.index)):
            for f in w.facts:
                key = (f["subject"], f["attribute"], f["value"], f["intent"])
                if key not in seen:
                    seen.add(key)
                    out.append(f)
        return out

    def fact_for_statement(self, statement: str) -> dict | None:
        return self.by_statement.get(norm(statement))
