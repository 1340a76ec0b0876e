"""Reading observations out of recorded calls: is a target served as current, is it reachable, where.

One definition is used by every column of every protocol:

- a value is **reachable** in an answer when it appears anywhere in it (whole tokens, case-folded,
  escapes and Unicode forms undone), qualified or not: what an absence check looks for;
- a value is **served as current** when it is reachable and at least one mention presents it as
  current: a mention inside an item that carries a not-current qualifier (``status`` former,
  superseded, retracted or expired; a ``superseded_by``; a ``valid_to`` already passed on the
  harness clock) does not count, and when items hold the value, only items decide. What a
  presence check (and an answer) needs.

A system without a quiescence signal is polled. Presence is read from the final poll (the state
the system settled in); reachability from every poll, so a leak seen once is a leak. Right after a
forget, "every poll" starts once the forget has taken effect: a delete that applies a moment later
is waited out (the first polls may still show the value), and from the first poll where the value is
gone (every door and the recall; for a store, that store), a value seen again is a leak. A forget
that never takes effect within the settle timeout leaves the value reachable in every poll.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..common.tokens import found_any, tokens
from .base import OpRecords

#: ``status`` values that say an item is no longer current.
NOT_CURRENT = frozenset({"former", "superseded", "retracted", "expired"})


def parse_time(text: str | None) -> datetime | None:
    if not text or not isinstance(text, str):
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def not_current(item: dict, at: str) -> bool:
    """Does the item itself say it is no longer current at harness time ``at``?"""
    if item.get("status") in NOT_CURRENT or item.get("superseded_by"):
        return True
    end, now = parse_time(item.get("valid_to")), parse_time(at)
    return end is not None and now is not None and end <= now


def wordings(target: dict) -> list[str]:
    """The target's token and every alternative wording that counts as the same value."""
    return [target["token"], *target.get("alternatives", [])]


def holds(obj, target: dict) -> bool:
    return found_any(obj, wordings(target))


def items_holding(answer: dict, target: dict) -> list[dict]:
    return [it for it in answer.get("items", []) or [] if isinstance(it, dict) and holds(it, target)]


def served_as_current(answer: dict, target: dict, at: str) -> bool:
    """Reachable, and presented as current by at least one mention (see the module docstring)."""
    if not holds(answer, target):
        return False
    items = items_holding(answer, target)
    if items:
        return any(not not_current(it, at) for it in items)
    return True  # a mention outside every item: nothing qualifies it mechanically


@dataclass
class Sighting:
    """What one expect/assess op saw of one target."""

    served: bool = False                                # served as current for its own questions, final poll
    reachable: list[str] = field(default_factory=list)  # every door/recall answer that held it, any poll

    @property
    def where(self) -> str:
        return "; ".join(self.reachable[:4]) + (f" (+{len(self.reachable) - 4} more)" if len(self.reachable) > 4 else "")


def _where(call: dict, polled: bool) -> str:
    args = call["args"]
    at = f" (poll {call.get('poll', 0)})" if polled else ""
    if call["call"] == "door":
        return f"door {args['door']!r} answering {args['query']!r}{at}"
    return f"recall(k={args['k']}) answering {args['query']!r}{at}"


def taken_effect(op: OpRecords, held_at) -> int:
    """The first poll from which an observation counts. ``held_at(poll)`` says whether the value was seen in
    that poll. After a forget on a polled system it is the first poll where the value was not seen (the
    forget had taken effect there); if there is none, poll 0. Otherwise every poll counts (poll 0)."""
    if not (op.after_forget and op.polled()):
        return 0
    return next((p for p in op.polls() if not held_at(p)), 0)


def sight(op: OpRecords, target: dict) -> Sighting:
    seen = Sighting()
    own = set(target["queries"])
    polled = op.polled()
    hits = [call for call in op.calls
            if "result" in call and call["call"] in ("door", "recall") and holds(call["result"], target)]
    start = taken_effect(op, lambda p: any(c.get("poll", 0) == p for c in hits))
    for call in hits:
        if call.get("poll", 0) >= start:
            seen.reachable.append(_where(call, polled))
    for call in op.last_poll():
        if "result" in call and call["call"] == "door" and call["args"]["query"] in own \
                and served_as_current(call["result"], target, call["args"]["at"]):
            seen.served = True
    return seen


def _shows(result: dict, target: dict) -> bool:
    return holds({"evidence": result.get("evidence", []), "items": result.get("items", [])}, target)


def probe_hits(op: OpRecords, target: dict, kinds: dict[str, str], controls: list[dict] = ()) -> dict[str, bool]:
    """Per store: does it hold ``target`` in any poll? Decided by the harness from the evidence.

    The evidence decides: a store holds the value when a record or nearest neighbour it returns holds
    the token. For a vector store the adapter's own ``present`` (its similarity threshold) is not
    taken: a neighbour that merely resembles the value is not the value. Where a vector store returns
    no payload at all, its nearest neighbour counts as the value when it is as close as the vector of a
    never-forgotten control (``controls``: the twin) is found in the same poll. Other stores: the
    adapter's ``present`` counts too.
    """
    return {store: bool(polls) for store, polls in probe_polls(op, target, kinds, controls).items()}


def probe_polls(op: OpRecords, target: dict, kinds: dict[str, str], controls: list[dict] = ()) -> dict[str, list[dict]]:
    """Per store: the probe answers that held ``target``, in the polls that count (``taken_effect``, per store)."""
    probes = [c for c in op.calls if c.get("call") == "probe" and "result" in c]
    held: dict[str, list[dict]] = {}
    for call in probes:
        if call["args"]["needle"]["token"] == target["token"]:
            store = call["args"]["store"]
            held.setdefault(store, [])
            if store_holds(call, target, kinds, probes, controls):
                held[store].append(call)
    for store, calls in held.items():
        start = taken_effect(op, lambda p: any(c.get("poll", 0) == p for c in calls))
        held[store] = [c for c in calls if c.get("poll", 0) >= start]
    return held


def evidence(call: dict, target: dict, width: int = 60) -> str:
    """A short excerpt of one probe answer around the held value (or what else decided that the store holds it)."""
    res = call["result"]
    texts = [*res.get("evidence", []), *(i.get("text", "") for i in res.get("items", []) if isinstance(i, dict))]
    for text in texts:
        if isinstance(text, str) and holds(text, target):
            flat = " ".join(text.split())
            at = max(0, flat.lower().find(tokens(target["token"])[0])) if tokens(target["token"]) else 0
            lo, hi = max(0, at - width), at + len(target["token"]) + width
            return ("…" if lo else "") + flat[lo:hi] + ("…" if hi < len(flat) else "")
    if res.get("distance") is not None:
        return f"nearest neighbour at distance {res['distance']}, as close as a never-forgotten control's"
    return f"the adapter reports the store {res.get('state')}"


def store_holds(call: dict, target: dict, kinds: dict[str, str], probes: list[dict] = (), controls=()) -> bool:
    """One probe answer: does the store hold ``target``? (see ``probe_hits``)"""
    store, res = call["args"]["store"], call["result"]
    if _shows(res, target):
        return True
    if kinds.get(store) == "vector":
        return not res.get("evidence") and not res.get("items") and res.get("distance") is not None and \
            _as_close_as_a_control(res["distance"], store, call.get("poll", 0), probes, controls)
    return res["state"] == "present"


def _as_close_as_a_control(distance: float, store: str, poll: int, probes: list[dict], controls) -> bool:
    refs = [c["result"]["distance"] for c in probes for t in controls
            if c["args"]["store"] == store and c.get("poll", 0) == poll and c["args"]["needle"]["token"] == t["token"]
            and c["result"].get("distance") is not None]
    return bool(refs) and distance <= min(refs) + 1e-4
