"""Reading observations out of recorded calls: is a target served, is it reachable, where."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tokens import found_in
from .base import OpRecords


@dataclass
class Sighting:
    """What one expect op saw of one target."""

    served: bool = False                         # a door answered one of the target's own questions with it
    reachable: list[str] = field(default_factory=list)   # every door/recall answer that held it

    @property
    def where(self) -> str:
        return "; ".join(self.reachable[:4]) + (f" (+{len(self.reachable) - 4} more)" if len(self.reachable) > 4 else "")


def wordings(target: dict) -> list[str]:
    """The target's token and every alternative wording that counts as the same value."""
    return [target["token"], *target.get("alternatives", [])]


def holds(obj, target: dict) -> bool:
    return any(found_in(obj, w) for w in wordings(target))


def sight(op: OpRecords, target: dict) -> Sighting:
    """Scan the final poll of an op for ``target``'s token (or alternatives), whole-token and case-folded."""
    seen = Sighting()
    own = set(target["queries"])
    for call in op.last_poll():
        if "result" not in call or call["call"] not in ("door", "recall"):
            continue
        if not holds(call["result"], target):
            continue
        args = call["args"]
        if call["call"] == "door":
            seen.reachable.append(f"door {args['door']!r} answering {args['query']!r}")
            if args["query"] in own:
                seen.served = True
        else:
            seen.reachable.append(f"recall(k={args['k']}) answering {args['query']!r}")
    return seen


def probe_hits(op: OpRecords, token: str) -> dict[str, bool]:
    """Per store: does it still hold ``token``? Present if the adapter says so OR its evidence shows it."""
    hits: dict[str, bool] = {}
    for call in op.last_poll():
        if call.get("call") != "probe" or "result" not in call:
            continue
        if call["args"]["needle"]["token"] != token:
            continue
        res = call["result"]
        hits[call["args"]["store"]] = res["state"] == "present" or found_in(res["evidence"], token)
    return hits
