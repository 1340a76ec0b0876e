"""Structural rules a contradiction case must follow, checked before anything runs."""

from __future__ import annotations

from ..common.tokens import contains

SHAPES = ("replacement", "polarity", "retraction", "partial", "bounded")
ORDER = ("setup", "contradict", "now", "jobs", "after-jobs", "derived", "reimport", "after-reimport", "undo",
         "after-undo")
OPTIONAL = ("undo", "after-undo")


def validate_contradiction_case(case: dict) -> list[str]:
    cid, t, ops = case["id"], case["targets"], case["ops"]
    problems: list[str] = []

    def bad(msg: str) -> None:
        problems.append(f"case {cid!r}: {msg}")

    def find(step: str, kind: str) -> list[dict]:
        return [op for op in ops if str(op["step"]) == step and op["op"] == kind]

    shape = case["shape"]
    if shape not in SHAPES:
        bad(f"shape {shape!r} is not one of {SHAPES}")
    for name in ("original", "sibling"):
        if name not in t:
            bad(f"needs a target {name!r}")
    if "original" in t and not t["original"].get("history_queries"):
        bad("target 'original' needs history_queries (column D asks about the past)")
    if shape in ("replacement", "polarity", "partial") and "current" not in t:
        bad(f"a {shape} case needs a target 'current' (the new value)")
    if shape in ("retraction", "bounded") and "current" in t:
        bad(f"a {shape} case has no new value: drop target 'current'")
    if shape == "partial" and "kept" not in t:
        bad("a partial case needs a target 'kept' (the unchanged part of the compound fact)")
    unknown = sorted(set(t) - {"original", "current", "sibling", "kept"})
    if unknown:
        bad(f"unknown target(s) {unknown}; a contradiction case has original, current, sibling, kept")

    steps = [str(op["step"]) for op in ops]
    for s in ORDER:
        if s not in steps and s not in OPTIONAL:
            bad(f"has no op for step {s!r}")
    if any(s not in ORDER for s in steps):
        bad(f"steps must be among {ORDER}")
    elif [ORDER.index(s) for s in steps] != sorted(ORDER.index(s) for s in steps):
        bad(f"ops must follow the step order {ORDER}")

    texts = " ".join([m["content"] for op in ops if op["op"] in ("write", "import") for m in op["messages"]]
                     + [op["new_text"] for op in ops if op["op"] == "update"])
    for name, target in t.items():
        if not contains(texts, target["token"]):
            bad(f"target {name!r}: token {target['token']!r} is never written")

    setup_writes = find("setup", "write")
    if not setup_writes or not all(op.get("id") for op in setup_writes[:1]):
        bad("the first setup write needs an 'id' so the re-import can re-use its time (at_of)")
    setup_assess = find("setup", "assess")
    if not setup_assess or not {"original", "sibling"} <= set(setup_assess[0].get("ask", [])):
        bad("the setup assess must ask the original and the sibling (the control)")
    if not find("setup", "probe"):
        bad("setup needs a baseline probe of the original (column E's control)")
    fixes = find("contradict", "write") + find("contradict", "update")  # a correction said, or made by update()
    if find("contradict", "update") and find("contradict", "write"):
        bad("step 'contradict' corrects either by a write or by an update, not both")
    for op in find("contradict", "update"):
        original = t.get("original", {}).get("token", "")
        if not contains(op["text"], original):
            bad("an update correction's text must state the original value (it names what is updated)")
    if shape == "bounded":
        if fixes:
            bad("a bounded case is displaced by its bound passing, not by a write or an update")
        if not find("contradict", "advance"):
            bad("a bounded case must advance the clock past the bound in step 'contradict'")
        if not any(f.get("valid_to") for op in setup_writes for f in op["gold"]):
            bad("a bounded case's original gold fact needs valid_to")
    else:
        intents = [f for op in fixes for f in op.get("gold", []) if f.get("intent") in ("supersede", "retract")]
        if not intents:
            bad("the contradicting write (or update) needs a gold fact with intent supersede or retract")
    now = find("now", "assess")
    if not now or now[0].get("stale") != "original" or "original" not in now[0].get("history", []):
        bad("step 'now' must assess with stale 'original' and history ['original']")
    if not find("jobs", "jobs"):
        bad("step 'jobs' must run the background jobs")
    imports = find("reimport", "import")
    if not imports:
        bad("step 'reimport' must re-feed the day-1 material through import")
    else:
        first = setup_writes[0] if setup_writes else {}
        if imports[0]["messages"] != first.get("messages") or imports[0].get("at_of") != first.get("id"):
            bad("the re-import must re-feed the first setup write's messages at its original time (at_of its id)")
    undo = find("undo", "forget")
    if shape == "bounded" and undo:
        bad("a bounded case has no correction to undo")
    if shape != "bounded" and (not undo or not find("after-undo", "assess")):
        bad("a corrected case must forget the correction (step 'undo') and assess again (step 'after-undo')")
    derived = find("derived", "probe")
    if not derived or derived[0].get("stale") != "original":
        bad("step 'derived' must probe the original with stale 'original' (after the jobs, before the re-import)")
    again = find("after-reimport", "probe")
    if not again or again[0].get("stale") != "original":
        bad("step 'after-reimport' must probe the derived stores again with stale 'original' (part of C')")
    for i, op in enumerate(ops):
        for key in ("scope", "to"):
            if key in op and op[key] not in case["scopes"]:
                bad(f"op {i}: scope {op[key]!r} is not in scopes")
        for name in op.get("ask", []) + op.get("history", []) + op.get("targets", []) + op.get("expect", []):
            if name not in t:
                bad(f"op {i}: target {name!r} is not in targets")
    return problems
