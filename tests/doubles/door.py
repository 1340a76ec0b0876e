"""Single-defect doubles for the door protocol: each moves exactly one section's points.

``MEASURE`` is the section, ``EXPECT`` its checks passed / measured. tests/test_doubles.py runs each.
"""

from __future__ import annotations

from writepath import RunDouble


class LosesAWriteReadWhileIndexing(RunDouble):
    """door: the first time the door is read between a write and the next settle, that write is lost (a read racing
    the indexer)."""
    NAME = "door-race"
    MEASURE, EXPECT = "door", (7, 8)

    def write(self, scope, at, messages):
        out = super().write(scope, at, messages)
        self.remember(pending=out["ids"])
        return out

    def settle(self, timeout_s):
        self.remember(pending=[])
        return super().settle(timeout_s)

    def door(self, query, scope, door, at):
        pending = self.note.get("pending", [])
        if pending and self.once("race"):
            for fid in pending:
                self.mem.state["facts"].pop(fid, None)
                self.mem.state["vectors"].pop(fid, None)
            self.mem.save()
            self.remember(pending=[])
        return super().door(query, scope, door, at)


class CopiesARestatedValue(RunDouble):
    """updates: restating the current value adds a second copy of it."""
    NAME = "door-copies"
    MEASURE, EXPECT = "updates", (2, 3)

    def write(self, scope, at, messages):
        facts = self._extract(messages)
        source = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        current = {(f["subject"], f["attribute"], f["value"]) for f in self.mem.facts(scope) if f["ended_by"] is None}
        again = [f for f in facts if (f["subject"], f["attribute"], f["value"]) in current]
        ids = self.mem.remember(scope, at, facts, source)
        for f in again:
            ids.append(self.mem._add(scope, at, f, source=source))
        self.mem.save()
        return {"ids": ids}


class ShowsNoDates(RunDouble):
    """time: the door's lines carry no date."""
    NAME = "door-undated"
    MEASURE, EXPECT = "time", (1, 3)

    @staticmethod
    def _line(item):
        return f"- {item['text']}"


class HandsOverNeighbours(RunDouble):
    """abstention: a question about a name it never heard of gets every fact of the scope instead of nothing."""
    NAME = "door-neighbours"
    MEASURE, EXPECT = "abstention", (0, 4)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.mem.unknown_names(query, scope) and not self.mem.day_asked(query):
            items = [self._item(f, at) for f in self.mem.facts(scope)]
            out = {"text": "\n".join(self._line(i) for i in items), "items": items}
        return out


DOUBLES = [LosesAWriteReadWhileIndexing, CopiesARestatedValue, ShowsNoDates, HandsOverNeighbours]
