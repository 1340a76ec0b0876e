"""Prompt hygiene: is a stale value absent from what reaches the model, or present but qualified?

Scored mechanically from the qualifiers a system puts on each injected item (status
former/superseded/retracted, superseded_by, a validity end already passed). A mention no
qualifier can settle, from a system that exposes none, is left to the pinned judge, and the
cell says it was judged. A bare substring check never decides on its own: absence, or a stale value
present only as qualified, passes only when the door served something as current to judge by (the
current value, or the original before the correction).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..common.tokens import found_in
from .base import ERROR, FAIL, PASS, SKIP, OpRecords, describe_error
from .observe import holds, items_holding, not_current as qualified
from .stages import DELIVERED, NOT_RETRIEVED


@dataclass
class Hygiene:
    verdict: str
    reason: str = ""
    checks: list[dict] = field(default_factory=list)
    judged: bool = False


#: Item fields that say whether a memory is current. An item with none of them says nothing either way.
QUALIFIER_FIELDS = ("status", "valid_from", "valid_to", "as_of", "superseded_by")


def stale_mentions(answer: dict, stale: dict, current: dict | None, at: str) -> tuple[list[dict], bool]:
    """Items asserting the stale value unqualified (by their own qualifier fields), and whether some mention
    is left for the judge: text outside every item, or an item that carries no qualifier field at all (a
    summary, an episode) even in a system that qualifies its facts."""
    holding = items_holding(answer, stale)
    # an item holding the current value, or one the system labels a retraction, asserts no stale value
    stale_items = [it for it in holding if not (current and holds(it, current)) and it.get("kind") != "retraction"]
    fielded = [it for it in stale_items if any(k in it for k in QUALIFIER_FIELDS)]
    bare = [it for it in fielded if not qualified(it, at)]
    unknown = (holds(answer.get("text", ""), stale) and not holding) or len(fielded) < len(stale_items)
    return bare, unknown


def compact(checks: list[dict]) -> list[dict]:
    """Checks that differ only in their poll become one, with the polls it held in."""
    out: dict[str, dict] = {}
    for c in checks:
        key = repr(sorted((k, repr(v)) for k, v in c.items() if k != "poll"))
        if key not in out:
            out[key] = {k: v for k, v in c.items() if k != "poll"}
            if "poll" in c:
                out[key].update(first_poll=c["poll"], polls=0)
        if "poll" in c:
            out[key]["polls"] += 1
    return list(out.values())


def judge_for(judges: list[dict], where: dict) -> dict | None:
    for j in judges:
        if all(j.get(k) == v for k, v in where.items()):
            return j
    return None


def hygiene(answers: list[tuple[dict, dict]], stale: dict, current: dict | None, at: str, mechanical: bool,
            judges: list[dict], nonvacuous: bool, what: str) -> Hygiene:
    """``answers``: (where, answer) pairs, where names the door+query or the store of each answer."""
    checks, outcomes = [], []
    for where, answer in answers:
        if not holds(answer, stale):
            checks.append({**where, "stale": "absent"})
            outcomes.append("absent")
            continue
        bare, for_judge = stale_mentions(answer, stale, current, at)
        if not bare and not for_judge:
            checks.append({**where, "stale": "qualified", "method": "mechanical"})
            outcomes.append("qualified")
        elif bare and mechanical:
            checks.append({**where, "stale": "unqualified", "method": "mechanical",
                           "item": str(bare[0].get("text", ""))[:200]})
            outcomes.append("unqualified")
        else:
            j = judge_for(judges, where)
            if j is None:
                checks.append({**where, "stale": "needs-judge"})
                outcomes.append("needs-judge")
            elif "error" in j:
                checks.append({**where, "stale": "judge-error", "method": "judged", "error": j["error"]["message"]})
                outcomes.append("judge-error")
            else:
                checks.append({**where, "stale": j["result"]["verdict"], "method": "judged",
                               "why": j["result"]["reason"]})
                outcomes.append(j["result"]["verdict"])
    checks, outcomes, note = settled_polls(checks, outcomes)
    checks = compact(checks)
    judged = any(c.get("method") == "judged" for c in checks)
    if "judge-error" in outcomes:
        return Hygiene(ERROR, f"the judge failed on {what}", checks, judged)
    if "unqualified" in outcomes:
        for c in checks:
            if c["stale"] == "unqualified":  # survived as current: in a store, or delivered by the door
                c.update(ok=False, stage=NOT_RETRIEVED if "store" in c else DELIVERED)
        first = next(c for c in checks if c["stale"] == "unqualified")
        how = f" ({first.get('why') or first.get('item')})" if first.get("why") or first.get("item") else ""
        return Hygiene(FAIL, f"the stale value is presented as current in {what}{how}{note}", checks, judged)
    if "needs-judge" in outcomes:
        return Hygiene(SKIP, f"{what} mentions the stale value without any qualifier the system exposes; "
                             "scoring it needs the judge (run with a judge)", checks, judged)
    if all(o == "absent" for o in outcomes) and not nonvacuous:
        return Hygiene(SKIP, f"{what} served neither value: absence proves nothing", checks, judged)
    if not nonvacuous:  # the stale value only qualified, and nothing current served: a door that marks everything
        return Hygiene(SKIP, f"{what} served the stale value only as no longer current, and nothing as current (the "
                             "current value, or the original before the correction): a qualifier on everything "
                             "proves no correction", checks, judged)
    return Hygiene(PASS, "", checks, judged)


def settled_polls(checks: list[dict], outcomes: list[str]) -> tuple[list[dict], list[str], str]:
    """A polled system (no quiescence signal) is scored from the first poll where the stale value was no
    longer presented as current: before it, the system may not have caught up with the correction. Once
    clean it must stay clean (a value that comes back, or flickers, fails); never clean fails."""
    polls = sorted({c["poll"] for c in checks if "poll" in c})
    if len(polls) < 2:
        return checks, outcomes, ""
    bad = {c["poll"] for c, o in zip(checks, outcomes) if o == "unqualified"}
    clean = [p for p in polls if p not in bad]
    if not clean:
        return checks, outcomes, " (in every poll, to the settle timeout)"
    kept = [(c, o) for c, o in zip(checks, outcomes) if c.get("poll", clean[0]) >= clean[0]]
    note = f" (it had been clean from poll {clean[0]} and came back)" if any(o == "unqualified" for _, o in kept) else ""
    return [c for c, _ in kept], [o for _, o in kept], note


def door_answers(op: OpRecords, queries: list[str], every_poll: bool = True) -> tuple[list[tuple[dict, dict]], list[str]]:
    """(where, answer) for every door call asking one of ``queries`` (in every poll, or the final one),
    and the errors among them. ``where`` names the door, the query and, for a polled system, the poll."""
    answers, errors = [], []
    for call in (op.calls if every_poll else op.last_poll()):
        if call.get("call") != "door" or call["args"]["query"] not in queries:
            continue
        if "error" in call:
            errors.append(describe_error(call))
        else:
            where = {"door": call["args"]["door"], "query": call["args"]["query"]}
            if "poll" in call:
                where["poll"] = call["poll"]
            answers.append((where, call["result"]))
    return answers, errors


__all__ = ["Hygiene", "door_answers", "found_in", "hygiene", "qualified"]
