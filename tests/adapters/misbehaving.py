"""Adapters that each misbehave in one way, built on the reference adapter so all else works.

Used by the tests to prove that a failure is recorded as ERROR (never PASS) and that the
deletion protocol cannot be passed vacuously or by deleting everything.
"""

from __future__ import annotations

import time
from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_tests_reference")


class _AfterForget(Reference):
    """Behaves until the first forget, then misbehaves in door(), also after a restart."""

    @property
    def _flag(self):
        return self.mem.path.parent / "forgot"

    @property
    def forgot(self):
        return self._flag.exists()

    def forget(self, scope, at, text):
        self._flag.touch()
        return super().forget(scope, at, text)

    def reset(self):
        self._flag.unlink(missing_ok=True)
        super().reset()


class RaisesAfterForget(_AfterForget):
    def door(self, query, scope, door, at):
        if self.forgot:
            raise RuntimeError("door exploded")
        return super().door(query, scope, door, at)


class HangsAfterForget(_AfterForget):
    def door(self, query, scope, door, at):
        if self.forgot:
            time.sleep(3600)
        return super().door(query, scope, door, at)


class MalformedAfterForget(_AfterForget):
    def door(self, query, scope, door, at):
        if self.forgot:
            return {"text": 42, "items": "none"}
        return super().door(query, scope, door, at)


class NotJsonAfterForget(_AfterForget):
    def door(self, query, scope, door, at):
        if self.forgot:
            return {"text": {"a", "set"}, "items": []}
        return super().door(query, scope, door, at)


class Amnesiac(Reference):
    """Stores nothing: every absence it shows is vacuous."""

    def write(self, scope, at, messages):
        return {"ids": []}


class WipesScope(Reference):
    """Forget deletes every fact of the scope: passes 'gone' only by deleting the twin too."""

    def forget(self, scope, at, text):
        ids = []
        for fact in list(self.mem.facts(scope)):
            ids += self.mem.forget(scope, at, fact["text"], [])  # by statement: every fact of the scope
        return {"ids": ids}


class EventuallyConsistent(Reference):
    """Writes become visible only after three later door calls, and there is no settle signal."""

    def __init__(self, config):
        super().__init__(config)
        self.pending = []

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["settle"] = {"support": "unsupported", "reason": "no quiescence signal"}
        return caps

    def write(self, scope, at, messages):
        self.pending.append([3, scope, at, messages])
        return {"ids": []}

    def door(self, query, scope, door, at):
        for p in self.pending:
            p[0] -= 1
            if p[0] == 0:
                super().write(p[1], p[2], p[3])
        self.pending = [p for p in self.pending if p[0] > 0]
        return super().door(query, scope, door, at)


class NoName(Reference):
    def capabilities(self):
        caps = super().capabilities()
        del caps["operations"]["share"]
        return caps


class HardDeletesOnCorrection(Reference):
    """Overwrites instead of invalidating: a correction erases the old fact. Passes A-C, fails D."""

    def write(self, scope, at, messages):
        out = super().write(scope, at, messages)
        for fid, fact in list(self.mem.state["facts"].items()):
            if fact["ended_by"] in ("superseded", "retracted"):
                del self.mem.state["facts"][fid]
                self.mem.state["vectors"].pop(fid, None)
        self.mem.save()
        return out


class HidesQualifiers(Reference):
    """Declares qualifiers but hands every item over as current: hygiene must fail mechanically."""

    def door(self, query, scope, door, at):
        items = [self._item(f, at) for f in self.mem.rank(query, scope, 8)]  # every fact it finds, retired ones too
        for item in items:
            item.update(status="current", valid_to=None, superseded_by=None)
        return {"text": "\n".join("- " + i["text"] for i in items), "items": items}
