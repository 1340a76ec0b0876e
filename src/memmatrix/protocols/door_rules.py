"""Structural rules a door case must follow, checked before anything runs."""

from __future__ import annotations

from ..common.tokens import contains

#: shape -> the (op, step) pairs its scorer reads, each required
NEEDS = {
    "door": [("expect", "door")],
    "updates": [("expect", "setup"), ("assess", "update"), ("assess", "restate")],
    "time": [("assess", "time")],
    "abstention": [("expect", "control"), ("assess", "abstention")],
}


def validate_door_case(case: dict) -> list[str]:
    cid, t, ops, shape = case["id"], case["targets"], case["ops"], case["shape"]
    problems: list[str] = []

    def bad(msg: str) -> None:
        problems.append(f"case {cid!r}: {msg}")

    if shape not in NEEDS:
        return [f"case {cid!r}: shape {shape!r} is not a section of the door protocol ({sorted(NEEDS)})"]
    have = [(o["op"], str(o["step"])) for o in ops]
    for need in NEEDS[shape]:
        if need not in have:
            bad(f"a {shape} case needs an {need[0]} op at step {need[1]!r}")
    named = [n for o in ops for n in [*o.get("present", []), *o.get("ask", []), *o.get("targets", []),
                                      *([o["target"]] if "target" in o else [])]]
    for n in named:
        if n not in t:
            bad(f"an op names target {n!r}, which the case does not have")
    written = " ".join(m["content"] for o in ops if o["op"] in ("write", "import") for m in o["messages"])
    invented = [n for o in ops if o["op"] == "assess" and str(o["step"]) == "abstention" for n in o["ask"]]
    for name, target in t.items():
        if name in invented:
            if contains(written, target["token"]):
                bad(f"target {name!r} is an invented name: {target['token']!r} must never be written")
        elif not contains(written, target["token"]):
            bad(f"target {name!r}: token {target['token']!r} is never written")
        for f in target.get("forbidden", []):
            if not contains(written, f):
                bad(f"target {name!r}: the retired value {f!r} is never written, so forbidding it proves nothing")
    if shape == "updates":
        setup = next((o for o in ops if o["op"] == "expect" and str(o["step"]) == "setup"), {})
        update = next((o for o in ops if o["op"] == "assess" and str(o["step"]) == "update"), {})
        if len(setup.get("present", [])) != 2 or setup.get("present", [None, None])[1] not in update.get("ask", []):
            bad("the setup expect names [the first value, the unrelated fact]; the update assess asks the new value "
                "and the unrelated fact")
    if shape == "time":
        imports = [o for o in ops if o["op"] == "import"]
        asked = [o for o in ops if o["op"] == "assess" and str(o["step"]) == "imported"]
        if imports and (len(asked) != 1 or "date" not in t.get(asked[0]["ask"][0], {})):
            bad("an import (step 'import') is followed by one assess at step 'imported' asking a target with a date")
    return problems
