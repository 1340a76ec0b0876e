"""Single-defect doubles for the write-path protocol (seed 002's fixture self-check).

Each breaks one behaviour the first time it is exercised in a run (never-supersede: every time), so its
measure drops (to 39/40, 0/8, 5/6, 7/8, 19/20 or 5/6) and no other measure's rate moves.
``MEASURE`` names the measure, ``EXPECT`` its facts passed / measured. tests/test_doubles.py runs each.
"""

from __future__ import annotations

import json
from pathlib import Path

from base import Double
from refmemory import cosine, embed, key


class RunDouble(Double):
    """A double whose defect fires once per run: its counters live beside the store and survive each case's reset."""

    @property
    def _run_file(self) -> Path:
        return self.mem.path.parent / "run.json"

    def once(self, what: str) -> bool:
        """True the first time ``what`` is asked in the run, never again."""
        seen = json.loads(self._run_file.read_text()) if self._run_file.exists() else {}
        if seen.get(what):
            return False
        self._run_file.write_text(json.dumps({**seen, what: True}))
        return True


class DropsAWrite(RunDouble):
    """W: the run's first write is acknowledged but never stored."""
    NAME = "wp-dropped-write"
    MEASURE, EXPECT = "W", (39, 40)

    def write(self, scope, at, messages):
        if self.once("drop"):
            return {"ids": []}
        return super().write(scope, at, messages)


class NeverSupersedes(RunDouble):
    """S: an update is stored as one more current fact; the old value is never closed."""
    NAME = "wp-never-supersede"
    MEASURE, EXPECT = "S", (0, 8)

    def _extract(self, messages):
        return [{**f, "intent": "assert", "replaces": None} if f.get("intent") == "supersede" else f
                for f in super()._extract(messages)]


class SilentCollapse(RunDouble):
    """C: the first time two values of one fact meet, the older is dropped without a trace."""
    NAME = "wp-silent-collapse"
    MEASURE, EXPECT = "C", (5, 6)

    def write(self, scope, at, messages):
        facts = self._extract(messages)
        for f in facts:
            clash = [g for g in self.mem.facts(scope) if key(g) == key(f) and g["value"] != f["value"]
                     and f.get("intent", "assert") == "assert"]
            if clash and self.once("collapse"):
                for g in clash:
                    self.mem.state["facts"].pop(g["id"])
                    self.mem.state["vectors"].pop(g["id"], None)
                self.mem.save()
        source = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        return {"ids": self.mem.remember(scope, at, facts, source)}


class LeavesResidue(RunDouble):
    """D: the run's first forget leaves the fact's vector, with its payload, in the vector index."""
    NAME = "wp-residue"
    MEASURE, EXPECT = "D", (7, 8)

    def forget(self, scope, at, text):
        facts = {fid: dict(f) for fid, f in self.mem.state["facts"].items()}
        out = super().forget(scope, at, text)
        if out["ids"] and self.once("residue"):
            self.remember(residue=[facts[fid] for fid in out["ids"]])
        return out

    def probe(self, store, scope, needle):
        out = super().probe(store, scope, needle)
        residue = [f for f in self.note.get("residue", []) if f["scope"] == scope]
        if store == "vectors" and residue:
            sim, fact = max((cosine(embed(needle["text"]), embed(f["text"])), f) for f in residue)
            if out.get("distance") is None or 1 - sim < out["distance"]:
                out.update(evidence=[fact["text"]], items=[], distance=round(1 - sim, 6))
        return out


class NoLineage(RunDouble):
    """P: the run's first lineage question gets no source."""
    NAME = "wp-no-lineage"
    MEASURE, EXPECT = "P", (19, 20)

    def trace(self, scope, id):
        if self.once("lineage"):
            return {"sources": []}
        return super().trace(scope, id)


class Fabricates(RunDouble):
    """A: the first question about a name the memory never heard of gets an invented memory about it."""
    NAME = "wp-fabrication"
    MEASURE, EXPECT = "A", (5, 6)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        unknown = self.mem.unknown_names(query, scope)
        if unknown and self.once("fabricate"):
            item = {"id": "invented", "text": f"{unknown[-1]} was mentioned on Tuesday.", "status": "current"}
            out["items"].append(item)
            out["text"] += f"\n- {item['text']}"
        return out


class InventsAValue(RunDouble):
    """A: the first question about a name the memory never heard of gets an invented value that does not repeat the
    name (a fabrication nothing written said: 'Marrowby Quince')."""
    NAME = "wp-invented-value"
    MEASURE, EXPECT = "A", (5, 6)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.mem.unknown_names(query, scope) and self.once("invent"):
            item = {"id": "invented", "text": "Professor: Marrowby Quince", "status": "current"}
            out["items"].append(item)
            out["text"] += f"\n- {item['text']}"
        return out


class LosesTheFactBeside(RunDouble):
    """D's control: the first write that states something unrelated to what its scope already holds (the fact written
    beside the one to be forgotten) is acknowledged and never stored. The loss is a write failure: D cannot tell
    whether the forget would have spared it, so that case is not measured (7 of 7), never called over-deletion."""
    NAME = "wp-lost-control"
    MEASURE, EXPECT = "D", (7, 7)

    def write(self, scope, at, messages):
        held = {f["attribute"] for f in self.mem.facts(scope)}
        new = {f["attribute"] for f in self._extract(messages)}
        if held and not held & new and self.once("lose"):
            return {"ids": []}
        return super().write(scope, at, messages)


class ResetFailsOnce(RunDouble):
    """Not a measure's defect: the first case of the run cannot start (its reset raises)."""
    NAME = "wp-reset"

    def reset(self):
        if self.once("reset"):
            raise RuntimeError("the store could not be emptied")
        return super().reset()


DOUBLES = [DropsAWrite, NeverSupersedes, SilentCollapse, LeavesResidue, NoLineage, Fabricates, InventsAValue,
           LosesTheFactBeside]
