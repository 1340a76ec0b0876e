"""Structural rules a write-path case must follow, checked before anything runs."""

from __future__ import annotations

from ..common.tokens import contains

#: shape -> (targets it must have, the op steps it must have, in this order)
SHAPES = {
    "stable": ({"fact"}, ("W", "P")),
    "update": ({"old", "new"}, ("W", "S", "P")),
    "contradiction": ({"first", "second"}, ("W",)),
    "deletion": ({"fact", "control"}, ("W", "D")),
    "out-of-scope": ({"neighbour", "absent"}, ("A",)),
}
UNITS = {"stable": ["fact"], "update": ["old"], "contradiction": ["first", "second"], "deletion": ["fact"],
         "out-of-scope": []}


def validate_writepath_case(case: dict) -> list[str]:
    cid, t, ops, shape = case["id"], case["targets"], case["ops"], case["shape"]
    problems: list[str] = []

    def bad(msg: str) -> None:
        problems.append(f"case {cid!r}: {msg}")

    def ops_of(kind: str, step: str | None = None) -> list[dict]:
        return [o for o in ops if o["op"] == kind and (step is None or str(o["step"]) == step)]

    if shape not in SHAPES:
        return [f"case {cid!r}: shape {shape!r} is not one of {sorted(SHAPES)}"]
    wanted, steps = SHAPES[shape]
    if set(t) != wanted:
        bad(f"a {shape} case has exactly the targets {sorted(wanted)}, not {sorted(t)}")
        return problems
    if case.get("units", []) != UNITS[shape]:
        bad(f"a {shape} case's units are {UNITS[shape]}")
    seen = list(dict.fromkeys(str(o["step"]) for o in ops))
    if seen != list(steps):
        bad(f"a {shape} case's ops run the steps {list(steps)} in that order, not {seen}")
    texts = " ".join(m["content"] for o in ops if o["op"] == "write" for m in o["messages"])
    for name, target in t.items():
        written = contains(texts, target["token"])
        if name == "absent" and written:
            bad("target 'absent' names the invented subject: its token must never be written")
        elif name != "absent" and not written:
            bad(f"target {name!r}: token {target['token']!r} is never written")
    for o in ops_of("write"):
        if not o.get("gold"):
            bad("every write carries its gold facts (the oracle answers from them)")
    ids = {o.get("id") for o in ops_of("write")}
    for o in ops_of("trace"):
        if o["of"] not in ids:
            bad(f"trace op names write {o['of']!r}, which is not the id of a write of the case")
        if o["target"] not in t:
            bad(f"trace op names target {o['target']!r}, which the case does not have")
    expects = {"stable": [("W", ["fact"])], "update": [("W", ["old"]), ("S", ["new"])],
               "contradiction": [("W", ["first"]), ("W", ["second"])], "deletion": [("W", ["fact", "control"])],
               "out-of-scope": [("A", ["neighbour"])]}[shape]
    have = [(str(o["step"]), o.get("present", [])) for o in ops_of("expect") if str(o["step"]) != "D"]
    if have != expects:
        bad(f"a {shape} case's presence checks (expect ops) are {expects}, not {have}")
    if shape == "deletion":
        forget = ops_of("forget", "D")
        if len(forget) != 1 or len(ops_of("expect", "D")) != 1 or ops_of("expect", "D")[0].get("absent") != ["fact"] \
                or ops_of("expect", "D")[0].get("present") != ["control"]:
            bad("a deletion case forgets once (step D), then expects 'fact' absent and 'control' present (step D)")
        elif forget[0]["text"] != t["fact"].get("fact"):
            bad("the forget text is the fact's statement (target 'fact'.fact), so the oracle can resolve it")
        if not ops_of("probe", "D") or not ops_of("probe", "W"):
            bad("a deletion case probes the stores before (step W) and after (step D) the forget")
    if shape == "out-of-scope" and [o.get("ask") for o in ops_of("assess", "A")] != [["absent"]]:
        bad("an out-of-scope case asks the invented subject once, with an assess op (step A) asking ['absent']")
    return problems
