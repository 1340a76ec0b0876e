"""The gold annotations of the case files, indexed for the oracle.

Every write op in a case file carries its gold facts (an update op its new text's). The oracle finds the write(s) a
prompt is about by their user messages, and a fact by its statement, and answers with
what a perfect extractor would have extracted. A statement two cases share with different
facts ("I do not have a sister." retracting a different name in each) is told apart by the
prompt it came in, or not at all: the oracle then leaves it unmatched rather than answer
with another case's fact.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..common.tokens import contains, norm  # noqa: F401  (norm: re-exported for the dialects)
from .imperfect import Imperfection

@dataclass(frozen=True)
class GoldWrite:
    case: str
    index: int
    messages: tuple[str, ...]   # normalised user messages
    facts: tuple[dict, ...]
    withheld: int = 0           # gold facts an imperfect oracle does not extract (imperfect.py)


def _writes(op: dict) -> list[dict]:
    """The writes an op makes, each with its messages and gold: one, or each writer's of a concurrent op, or an
    update's new text (a correction made through the system's update API, stated as the user would say it)."""
    if op["op"] in ("write", "import"):
        return [op]
    if op["op"] == "update" and op.get("gold"):
        return [{"messages": [{"role": "user", "content": op["new_text"]}], "gold": op["gold"]}]
    return list(op.get("writes", [])) if op["op"] == "concurrent" else []


class GoldIndex:
    def __init__(self, case_files: list[dict], ablation: str = ""):
        self.ablation = ablation  # an oracle imperfect on purpose (imperfect.py)
        self.imperfection = Imperfection.parse(ablation)
        self.withheld: set[str] = set()  # statements of the gold facts the imperfect oracle withholds
        self.writes: list[GoldWrite] = []
        self.by_statement: dict[str, list[tuple[str, dict]]] = {}  # statement -> (case, fact), one per distinct fact
        for cf in case_files:
            for case in cf["cases"]:
                for i, op in enumerate(case["ops"]):
                    for w in _writes(op):
                        self._index(case["id"], i, w)

    def _index(self, case: str, index: int, op: dict) -> None:
        users = tuple(norm(m["content"]) for m in op["messages"] if m["role"] == "user")
        facts, withheld, said = tuple(self._complete(f) for f in op["gold"]), [], {}
        if self.imperfection is not None:
            facts, withheld, said = self.imperfection.facts(case, index, facts)
            self.withheld.update(norm(f["statement"]) for f in withheld)
        self.writes.append(GoldWrite(case, index, users, facts, len(withheld)))
        # a paraphrased fact is found by its new words and by the words it was said in
        for statement, f in [*((f["statement"], f) for f in facts), *said.items()]:
            known = self.by_statement.setdefault(norm(statement), [])
            if not any(_ident(g) == _ident(f) for _, g in known):
                known.append((case, f))

    @staticmethod
    def _complete(fact: dict) -> dict:
        f = dict(fact)
        f.setdefault("intent", "assert")
        f.setdefault("statement", f"{f['subject']} {f['attribute']}: {f['value']}")
        return f

    def _lookup(self) -> "_Lookup":
        """The index of the writes and statements (built on first use, again if writes were added since)."""
        look = self.__dict__.get("_look")
        if look is None or look.size != (len(self.writes), len(self.by_statement)):
            look = self._look = _Lookup(self.writes, self.by_statement)
        return look

    def writes_in(self, text: str) -> list[GoldWrite]:
        """The writes whose every user message occurs in ``text``, the largest first, no subsumed ones."""
        return self._writes_in_norm(norm(text))

    def _writes_in_norm(self, t: str) -> list[GoldWrite]:
        look = self._lookup()
        writes = self.writes
        hits = [writes[i] for i in look.writes.candidates(t) if all(m in t for m in writes[i].messages)]
        hits.sort(key=lambda w: -len(w.messages))
        kept: list[GoldWrite] = []
        kept_sets: list[frozenset] = []
        for w in hits:
            mine = frozenset(w.messages)
            if not any(mine <= k for k in kept_sets):
                kept.append(w)
                kept_sets.append(mine)
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

    def withheld_in(self, text: str) -> bool:
        """True when ``text`` holds a write with gold facts the imperfect oracle withholds, or quotes one of those
        facts: an empty answer to it is the mistake made on purpose, not a prompt the oracle did not recognise."""
        t = norm(text)
        return any(s and s in t for s in self.withheld) or any(w.withheld for w in self._writes_in_norm(t))

    def facts_for_statement(self, statement: str) -> list[dict]:
        """Every distinct gold fact stated in these words, in case-file order."""
        return [f for _, f in self.by_statement.get(norm(statement), [])]

    def fact_for_statement(self, statement: str, context: str = "", agree: tuple[str, ...] = ()) -> dict | None:
        """The gold fact stated in these words (the first, in file order, when one case states two facts in them).
        When cases share the words with different facts, the one whose case ``context`` (the prompt the statement
        came in) points to: it names the fact's value or the value it replaces, or holds a write of its case.
        None when the context points to no single one, unless the facts it leaves agree on every field in ``agree``
        (the fields the caller's answer reads): then any of them gives the same answer, and the first is returned."""
        known = self.by_statement.get(norm(statement), [])
        if len({case for case, _ in known}) <= 1:  # one case's words: its first fact in them, in file order
            return known[0][1] if known else None
        cases = {w.case for w in self.writes_in(context)} if context else set()
        pointed = [(case, f) for case, f in known if case in cases or context and any(
            v and contains(context, v) for v in (f.get("value"), f.get("replaces")))]
        if len({case for case, _ in pointed}) == 1:
            return pointed[0][1]
        left = [f for _, f in pointed or known]
        if agree and len({tuple(f.get(k) for k in agree) for f in left}) == 1:
            return left[0]
        return None

    def statements_in(self, text: str) -> list[dict]:
        """The gold facts whose statement ``text`` quotes, each once, told apart by ``text`` where cases share one."""
        t, out, seen = norm(text), [], set()
        look = self._lookup()
        for k in look.statements.candidates(t):
            key = look.statement_keys[k]
            fact = self.fact_for_statement(key, text) if key and key in t else None
            if fact is not None and _ident(fact) not in seen:
                seen.add(_ident(fact))
                out.append(fact)
        return out


class _Anchors:
    """Which of many needles (each a tuple of normalised strings, all to be found in a normalised text) can occur in a
    text, found without testing every needle: a string of three or more words occurs in a text only if each of its
    inner words (the ones between two spaces) is one of the text's space-separated words, whole. Each needle is filed
    under the rarest such word of its strings; one with none is always a candidate. Exact: ``candidates`` only leaves
    out needles that cannot occur, and lists the rest in their order."""

    def __init__(self, needles: list[tuple[str, ...]]):
        inner = [{w for s in strings for w in s.split(" ")[1:-1] if w} for strings in needles]
        count: dict[str, int] = {}
        for words in inner:
            for w in words:
                count[w] = count.get(w, 0) + 1
        self.always: list[int] = []
        self.by_word: dict[str, list[int]] = {}
        for i, words in enumerate(inner):
            if not needles[i]:
                continue  # nothing to find: never a candidate (callers skip an empty needle)
            if not words:
                self.always.append(i)
                continue
            word = min(words, key=lambda w: (count[w], -len(w), w))
            self.by_word.setdefault(word, []).append(i)
        self.words = frozenset(self.by_word)

    def candidates(self, text: str) -> list[int]:
        """Indexes, ascending, of the needles that may occur in ``text`` (normalised)."""
        found = self.words & set(text.split(" "))
        if not found:
            return self.always
        out = list(self.always)
        for w in found:
            out.extend(self.by_word[w])
        out.sort()
        return out


class _Lookup:
    """What ``writes_in`` and ``statements_in`` look through, indexed (``_Anchors``)."""

    def __init__(self, writes: list[GoldWrite], by_statement: dict[str, list]):
        self.size = (len(writes), len(by_statement))
        self.writes = _Anchors([w.messages for w in writes])
        self.statement_keys = list(by_statement)
        self.statements = _Anchors([(k,) if k else () for k in self.statement_keys])


def _ident(fact: dict) -> tuple:
    return tuple(fact.get(k) for k in ("subject", "attribute", "value", "intent", "replaces"))
