"""Single-defect doubles for the concurrency protocol: each moves exactly one column's checks.

Their defects are races made deterministic: what a race does when it goes wrong, every time, so the column
that should see it is proven to. ``MEASURE`` is the column, ``EXPECT`` its checks passed / measured.
tests/test_doubles.py runs each.
"""

from __future__ import annotations

import copy

from base import Double


class LastWriterLost(Double):
    """W: concurrent writers each apply their facts to the store as it was when they started, and the first
    writer's store is the one kept: the second writer's write is acknowledged and gone (a lost update)."""
    NAME = "cc-lost-write"
    MEASURE, EXPECT = "W", (40, 64)

    def write_concurrent(self, scope, at, writes):
        before = copy.deepcopy(self.mem.state)
        out, kept = [], None
        for messages in writes:
            facts = self._extract(messages)
            self.mem.state = copy.deepcopy(before)
            out.append({"ids": self.mem.remember(scope, at, facts, self._source(messages))})
            kept = kept or copy.deepcopy(self.mem.state)
        self.mem.state = kept
        self.mem.save()
        return {"writes": out}


class CorrectionTorn(Double):
    """T: a correction applied while another writer writes stores its new value, but the old value is never
    closed (the close was overwritten by the other writer's save): both are current."""
    NAME = "cc-torn-correction"
    MEASURE, EXPECT = "T", (0, 16)

    def write_concurrent(self, scope, at, writes):
        out = []
        for messages in writes:
            facts = [{**f, "intent": "assert", "replaces": None} if f.get("intent") == "supersede" else f
                     for f in self._extract(messages)]
            out.append({"ids": self.mem.remember(scope, at, facts, self._source(messages))})
        return {"writes": out}


class RefusesTheSecondWriter(Double):
    """No column moves: the second concurrent writer is refused with an error, and its write, sent again alone,
    is kept. A refusal the writer is told of is not a lost write."""
    NAME = "cc-refuses"
    MEASURE, EXPECT = "W", (64, 64)

    def write_concurrent(self, scope, at, writes):
        first = self.write(scope, at, writes[0])
        return {"writes": [first] + [{"error": "busy: another write is in progress"} for _ in writes[1:]]}


class NoConcurrentWrites(Double):
    """W and T UNSUPPORTED: the adapter cannot send writes together; S still runs."""
    NAME = "cc-unsupported"

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["write_concurrent"] = {"support": "unsupported",
                                                  "reason": "the system takes one write at a time"}
        return caps


DOUBLES = [LastWriterLost, CorrectionTorn]


class AnswersOneWriter(Double):
    """Every column ERROR: the adapter answers one writer of two (a contract violation, never scored)."""
    NAME = "cc-one-answer"

    def write_concurrent(self, scope, at, writes):
        return {"writes": [self.write(scope, at, m) for m in writes][:1]}
