"""Prompt hygiene: is a stale value absent from what reaches the model, or present but qualified?

Scored mechanically from the qualifiers a system puts on each injected item (status
former/superseded/retracted, superseded_by, a validity end already passed). A mention no
qualifier can settle, from a system that exposes none, is left to the pinned judge, and the
cell says it was judged. A bare substring check never decides on its own: absence passes only
when the door served something to judge (the current value, or the original before).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..tokens import found_in
from .base import ERROR, FAIL, PASS, SKIP, OpRecords, describe_error
from .observe import holds

NOT_CURRENT = ("former", "superseded", "retracted")


def qualified(item: dict, at: str) -> bool:
    """Does the item itself say it is no longer current at harness time ``at``?"""
    if item.get("status") in NOT_CURRENT or item.get("superseded_by"):
        return True
    valid_to = item.get("valid_to")
    return bool(valid_to) and valid_to <= at


@dataclass
class Hygiene:
    verdict: str
    reason: str = ""
    checks: list[dict] = field(default_factory=list)
    judged: bool = False


def stale_mentions(answer: dict, stale: dict, current: dict | None, at: str) -> tuple[list[dict], bool]:
    """Items asserting the stale value unqualified, and whether the text mentions it outside every item."""
    items = answer.get("items", [])
    stale_items = [it for it in items if holds(it.get("text", ""), stale)
                   and not (current and holds(it.get("text", ""), current))]
    bare = [it for it in stale_items if not qualified(it, at)]
    text_only = holds(answer.get("text", ""), stale) and not any(holds(it.get("text", ""), stale) for it in items)
    return bare, text_only


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
        bare, text_only = stale_mentions(answer, stale, current, at)
        if not bare and not text_only:
            checks.append({**where, "stale": "qualified", "method": "mechanical"})
            outcomes.append("qualified")
        elif bare and mechanical:
            checks.append({**where, "stale": "unqualified", "method": "mechanical",
                           "item": bare[0].get("text", "")[:200]})
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
    judged = any(c.get("method") == "judged" for c in checks)
    if "judge-error" in outcomes:
        return Hygiene(ERROR, f"the judge failed on {what}", checks, judged)
    if "unqualified" in outcomes:
        first = next(c for c in checks if c["stale"] == "unqualified")
        how = f" ({first.get('why') or first.get('item')})" if first.get("why") or first.get("item") else ""
        return Hygiene(FAIL, f"the stale value is presented as current in {what}{how}", checks, judged)
    if "needs-judge" in outcomes:
        return Hygiene(SKIP, f"{what} mentions the stale value without any qualifier the system exposes; "
                             "scoring it needs the judge (run with a judge)", checks, judged)
    if all(o == "absent" for o in outcomes) and not nonvacuous:
        return Hygiene(SKIP, f"{what} served neither value: absence proves nothing", checks, judged)
    return Hygiene(PASS, "", checks, judged)


def door_answers(op: OpRecords, queries: list[str]) -> tuple[list[tuple[dict, dict]], list[str]]:
    """(where, answer) for every door call asking one of ``queries``, and the errors among them."""
    answers, errors = [], []
    for call in op.last_poll():
        if call.get("call") != "door" or call["args"]["query"] not in queries:
            continue
        if "error" in call:
            errors.append(describe_error(call))
        else:
            answers.append(({"door": call["args"]["door"], "query": call["args"]["query"]}, call["result"]))
    return answers, errors


__all__ = ["Hygiene", "door_answers", "found_in", "hygiene", "qualified"]
