"""Single-defect doubles for the boundaries protocol: each moves exactly one column's checks.

``MEASURE`` is the column, ``EXPECT`` its checks passed / measured. tests/test_doubles.py runs each.
"""

from __future__ import annotations

from base import Double


class SearchesEveryScope(Double):
    """X: the door and the recall rank the facts of every scope, not only the one asked about."""
    NAME = "bd-every-scope"
    MEASURE, EXPECT = "X", (0, 18)

    def _scopes(self) -> list[str]:
        return sorted({f["scope"] for f in self.mem.state["facts"].values()})

    def door_items(self, query, scope, at):
        return [self._item(f, at) for s in self._scopes() for f in self.mem.rank(query, s, 5)]

    def recall(self, query, scope, k, at):
        return {"items": [self._item(f, at) for s in self._scopes() for f in self.mem.rank(query, s, k)]}


class HandsOverRecentFacts(Double):
    """E: when the ranking finds nothing, the door hands over the scope's three newest facts anyway (the "k weak
    matches" a prompt gets for a question that needs no memory)."""
    NAME = "bd-weak-matches"
    MEASURE, EXPECT = "E", (0, 18)

    def door_items(self, query, scope, at):
        found = super().door_items(query, scope, at)
        if found:
            return found
        newest = sorted(self.mem.facts(scope), key=lambda f: -int(f["id"][1:]))[:3]
        return [self._item(f, at) for f in newest]


class QuotesTheSource(Double):
    """P: every fact the door hands over comes with the message it was taken from, word for word, so whatever
    was said beside the fact (a planted instruction) reaches the model with it: with the answers to the planted
    fact's own question (6 of 18), not with its neighbours' (their door does not rank it)."""
    NAME = "bd-quotes-source"
    MEASURE, EXPECT = "P", (12, 18)

    def door_items(self, query, scope, at):
        out = []
        for f in self.mem.rank(query, scope, 5):
            item = self._item(f, at)
            if f.get("source"):
                item["text"] = f"{item['text']} (you said: {f['source']})"
            out.append(item)
        return out


DOUBLES = [SearchesEveryScope, HandsOverRecentFacts, QuotesTheSource]
