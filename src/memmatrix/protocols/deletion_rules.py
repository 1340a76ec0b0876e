"""Structural rules a deletion case must follow, checked before anything runs.

They keep every case discriminating: the re-feed is the original source, every
negative assertion has a present control, the baseline probe precedes the final one.
"""

from __future__ import annotations

from ..cases.rules import inside
from ..common.tokens import contains

STEP_KEYS = [str(n) for n in range(1, 14)]


def _ops(case: dict, step: str, kind: str) -> list[dict]:
    return [op for op in case["ops"] if str(op["step"]) == step and op["op"] == kind]


def validate_deletion_case(case: dict, protocol) -> list[str]:
    cid = case["id"]
    problems: list[str] = []

    def bad(msg: str) -> None:
        problems.append(f"case {cid!r}: {msg}")

    targets, scopes = case["targets"], case["scopes"]
    steps = [str(op["step"]) for op in case["ops"]]
    for key in STEP_KEYS:
        if key not in steps:
            bad(f"has no op for step {key} ({protocol.step(key).name})")
    unknown = sorted(set(steps) - set(STEP_KEYS))
    if unknown:
        bad(f"has ops for unknown step(s) {unknown}; the deletion protocol has steps 1-13")
    order = [int(s) for s in steps if s in STEP_KEYS]
    if order != sorted(order):
        bad("ops must be listed in step order (1 .. 13)")

    for i, op in enumerate(case["ops"]):
        if op["op"] == "forget" and "target" not in op:
            bad(f"op {i} (forget): name the target it forgets (the scorer checks that target's absence)")
    forgotten = {op.get("target") for op in case["ops"] if op["op"] == "forget"}
    writes_text = " ".join(m["content"] for op in case["ops"] if op["op"] == "write" for m in op["messages"])
    gold_values = [f["value"] for op in case["ops"] if op["op"] == "write" for f in op["gold"]]
    for name, t in targets.items():
        if not contains(writes_text, t["token"]):
            bad(f"target {name!r}: token {t['token']!r} is never written, so it can never be reachable")
        if not any(contains(v, t["token"]) for v in gold_values):
            bad(f"target {name!r}: token {t['token']!r} is in no write's gold facts")
        for other, o in targets.items():
            collides = other < name and (inside(t["token"], o["token"]) or inside(o["token"], t["token"]))
            if collides:
                bad(f"targets {other!r} and {name!r}: {collides}, so whole-token matching cannot tell them apart "
                    "(sharing tokens, e.g. a domain or a street, is fine; containing another's whole sequence is not)")

    for i, op in enumerate(case["ops"]):
        where = f"op {i} ({op['op']}, step {op['step']})"
        for key in ("scope", "to"):
            if key in op and op[key] not in scopes:
                bad(f"{where}: scope {op[key]!r} is not in scopes {sorted(scopes)}")
        names = [op.get("target")] if "target" in op else []
        names += op.get("targets", []) + op.get("present", []) + op.get("absent", [])
        for name in names:
            if name not in targets:
                bad(f"{where}: target {name!r} is not in targets {sorted(targets)}")
        if op["op"] == "expect" and op.get("absent"):
            step_ops = [o for o in _ops(case, str(op["step"]), "expect")]  # the control may live in another scope
            controls = [t for o in step_ops for t in o.get("present", []) if t not in forgotten]
            if not controls:
                bad(f"{where}: an absence check needs a never-forgotten control in 'present' (a twin), in the same "
                    "op or in another expect op of the same step (a twin in another scope, for a scope's erasure)")

    sources = [op["messages"] for op in _ops(case, "1", "write")]
    refeeds = _ops(case, "5", "write")
    if not refeeds or not all(op.get("refeed") for op in refeeds):
        bad("step 5 must re-feed with write ops marked \"refeed\": true")
    for op in refeeds:
        if op["messages"] not in sources:
            bad("step 5 must re-feed the ORIGINAL source conversation of step 1, message for message")
    if not _ops(case, "3", "forget"):
        bad("step 3 must forget the canary")
    for key in ("4", "6", "8", "13"):
        if not any(op.get("absent") for op in _ops(case, key, "expect")):
            bad(f"step {key} must check an absence")
    if not _ops(case, "7", "jobs"):
        bad("step 7 must run the background jobs")
    baselines = {(op["scope"], tuple(sorted(op["targets"]))) for op in _ops(case, "2", "probe")}
    for mid in _ops(case, "3", "probe"):
        if baselines and (mid["scope"], tuple(sorted(mid["targets"]))) not in baselines:
            bad("a probe right after the forget (step 3) must name a step 2 baseline probe's scope and targets")
    finals = _ops(case, "9", "probe")
    if not finals or not baselines:
        bad("step 9 probes need a baseline probe of the same targets at step 2")
    elif any((op["scope"], tuple(sorted(op["targets"]))) not in baselines for op in finals):
        bad("each step 9 probe must name the scope and targets of a step 2 baseline probe")
    if not _ops(case, "10", "audit"):
        bad("step 10 must read the audit trail")
    shares = _ops(case, "11", "share")
    if not shares:
        bad("step 11 must share a canary to a second scope")
    else:
        to = shares[0]["to"]
        if not any(op["scope"] == to and op.get("present") for op in _ops(case, "11", "expect")):
            bad("step 11 must check the copy is served in the second scope (control)")
        if not any(op["scope"] == to for op in _ops(case, "13", "expect")):
            bad("step 13 must check the second scope")
    if not _ops(case, "12", "forget"):
        bad("step 12 must forget the shared original")
    return problems
