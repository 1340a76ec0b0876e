"""Where a failure happened (seed 003): a stage for every FAIL, read from what the transcript already holds.

A value travels write -> store -> raw recall -> door. A failure to serve a value is located by the
furthest point the value reached; a failure to remove one (a deletion, a stale value) by the furthest
point it survived. One vocabulary serves both directions:

- ``not-stored``: probes of every declared store ran and none held it, and the raw recall (if any)
  did not return it (extraction or consolidation dropped it);
- ``stored-not-retrieved``: a store held it, the raw recall did not return it (indexing, search);
  for a removal, the value survives in a store only;
- ``stored-not-delivered``: a store held it and the door did not deliver it, but the raw recall was not
  asked (the op does not ask it, or the system has none), so retrieval and delivery cannot be told apart;
- ``retrieved-not-delivered``: the raw recall returned it, the door did not hand it over (ranking,
  budget cut, formatting); for a removal, the value survives in the recall only;
- ``delivered``: the door handed it over (wrongly qualified, beside a retired value, or when it should
  have been gone): what reaches the model is the problem;
- ``before-the-door``: not delivered, and the system exposes neither a recall nor a store probe that
  could say where it was lost;
- ``operation``: the failure is an operation's outcome, not a value's path (a declared background
  job that did not run, a deletion missing from the audit trail).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import OpRecords
from .observe import holds, probe_hits

NOT_STORED, NOT_RETRIEVED, NOT_DELIVERED, DELIVERED = (
    "not-stored", "stored-not-retrieved", "retrieved-not-delivered", "delivered")
STORED_UNDELIVERED, UNLOCATED, OPERATION = "stored-not-delivered", "before-the-door", "operation"
STAGES = (NOT_STORED, NOT_RETRIEVED, STORED_UNDELIVERED, NOT_DELIVERED, DELIVERED, UNLOCATED, OPERATION)


@dataclass
class Trail:
    """What one observation saw of one value: at the door, in the raw recall, in which stores."""

    door: bool
    recall: bool | None          # None: the raw recall was not asked
    stores: list[str] | None     # None: no store was probed for it

    def _furthest(self) -> str | None:
        if self.door:
            return DELIVERED
        if self.recall:
            return NOT_DELIVERED
        if self.stores:
            return NOT_RETRIEVED if self.recall is False else STORED_UNDELIVERED
        return None

    def reached(self) -> str:
        """A value that should have been served: the furthest point it reached."""
        return self._furthest() or (UNLOCATED if self.stores is None else NOT_STORED)

    def survived(self) -> str | None:
        """A value that should be gone: the furthest point it survived (None: it survived nowhere)."""
        return self._furthest()

    def as_dict(self) -> dict:
        return {"door": self.door, "recall": self.recall, "stores": self.stores}


def _probe_for(ops: list[OpRecords], index: int, target: dict) -> OpRecords | None:
    """The probe op of the case that looked for ``target`` nearest to op ``index`` (a later one on a tie)."""
    probes = [o for o in ops if o.spec.get("op") == "probe" and o.calls and
              any(c.get("args", {}).get("needle", {}).get("token") == target["token"] for c in o.calls)]
    if not probes:
        return None
    return min(probes, key=lambda o: (abs(o.index - index), -o.index))


def trail(ops: list[OpRecords], index: int, target: dict, caps: dict, queries: list[str] | None = None) -> Trail:
    """Where ``target`` was seen around op ``index``: its door and recall answers (any poll; only those
    asking ``queries`` when given), and the nearest probe of the case for the stores."""
    op = next(o for o in ops if o.index == index)
    answered = [c for c in op.calls if "result" in c and (queries is None or c["args"].get("query") in queries)]
    door = any(c["call"] == "door" and holds(c["result"], target) for c in answered)
    recalls = [c for c in answered if c["call"] == "recall"]
    recall = any(holds(c["result"], target) for c in recalls) if recalls else None
    probe = _probe_for(ops, index, target)
    stores = None
    if probe is not None:
        kinds = {s["name"]: s.get("kind", "") for s in caps.get("stores", [])}
        stores = sorted(s for s, hit in probe_hits(probe, target, kinds).items() if hit)
    return Trail(door, recall, stores)

