"""Concurrency cases generated from a spec (``cases/specs/concurrency-<version>.yaml``).

Every case writes its conversations twice: in scope ``seq`` one after the other (the control), and in scope
``con`` with its last two writes sent together, each by a writer of its own. Then both scopes are asked every
fact's questions. The shapes rotate:

- ``disjoint``: a first fact, then two writers with unrelated facts (the spec's ``siblings``);
- ``correction``: a fact of a ``replacement`` topic, then one writer corrects it while the other writes a
  sibling;
- ``entangled``: a fact of a ``partial`` topic (a value beside a kept one: "I work at K in R"), then one
  writer changes the value while the other writes the topic's companion (the spec's ``companions``), a fact about the same kept
  entity ("my manager at K is M"): two writes that touch one entity at once.

The values come from the spec's pools (a spec may take them, and the topics, from another through ``base:``).
"""

from __future__ import annotations

import random

from .generate_contradiction import _msgs

SHAPES = ("disjoint", "correction", "entangled")


def _sibling(spec: dict, rng: random.Random, values, taken: set[int]) -> tuple[dict, dict, dict]:
    """A sibling fact not yet used in the case: its target, its write's message and gold."""
    k = rng.choice([i for i in range(len(spec["siblings"])) if i not in taken])
    taken.add(k)
    sib = spec["siblings"][k]
    value = values.make(sib["pool"])
    gold = {"subject": sib["subject"], "attribute": sib["attribute"], "value": value,
            "statement": sib["fact"].format(value=value)}
    return {"token": value, "queries": [sib["query"]]}, {"messages": _msgs(sib["say"].format(value=value))}, gold


def _write(scope: str, step: str, msgs: dict, gold: list[dict], note: str = "") -> dict:
    return {"step": step, "op": "write", "scope": scope, **msgs, "gold": gold, **({"note": note} if note else {})}


def make_case(spec: dict, n: int, rng: random.Random, values) -> dict:
    shape = SHAPES[n % len(SHAPES)]
    values.new_case()
    taken: set[int] = set()
    targets: dict[str, dict] = {}
    if shape == "disjoint":
        targets["base"], first_msgs, first_gold = _sibling(spec, rng, values, taken)
        first = (first_msgs, [first_gold])
        targets["one"], a_msgs, a_gold = _sibling(spec, rng, values, taken)
        targets["two"], b_msgs, b_gold = _sibling(spec, rng, values, taken)
        a, b, topic_name = (a_msgs, [a_gold]), (b_msgs, [b_gold]), "facts"
    else:
        kind = "replacement" if shape == "correction" else "partial"
        topics = spec["topics"][kind]
        topic = topics[(n // len(SHAPES)) % len(topics)]
        old, new = values.make(topic["pool"]), values.make(topic["pool"])
        kept = values.make(topic["kept_pool"]) if kind == "partial" else ""
        v = {"old": old, "new": new, "kept": kept}
        attribute = topic["attribute"].format(**v)
        query = topic["query"].format(**v)
        targets["stale"] = {"token": old, "queries": [query], "fact": topic["fact"].format(**v)}
        targets["current"] = {"token": new, "queries": [query]}
        day1 = [{"subject": topic["subject"], "attribute": attribute, "value": old, "statement": topic["fact"].format(**v)}]
        change = [{"subject": topic["subject"], "attribute": attribute, "value": new,
                   "statement": topic["change_fact"].format(**v), "intent": "supersede", "replaces": old}]
        if kind == "partial":
            kept_fact = {"subject": topic["subject"], "attribute": topic["kept_attribute"], "value": kept,
                         "statement": topic["kept_fact"].format(**v)}
            day1.insert(0, kept_fact)
            change.insert(0, dict(kept_fact))
            targets["kept"] = {"token": kept, "queries": [topic["kept_query"]]}
            comp = spec["companions"][topic["name"]]
            value = values.make(comp["pool"])
            w = {**v, "value": value}
            targets["other"] = {"token": value, "queries": [comp["query"].format(**w)]}
            b = ({"messages": _msgs(comp["say"].format(**w))},
                 [{"subject": comp["subject"].format(**w), "attribute": comp["attribute"].format(**w), "value": value,
                   "statement": comp["fact"].format(**w)}])
        else:
            targets["other"], b_msgs, b_gold = _sibling(spec, rng, values, taken)
            b = (b_msgs, [b_gold])
        first = ({"messages": _msgs(topic["say"].format(**v), topic["reply"])}, day1)
        a, topic_name = ({"messages": _msgs(topic["change"].format(**v))}, change), topic["name"]
    present = [t for t in targets if t != "stale"]
    ops = [_write("seq", "setup", *first), _write("con", "setup", *first), {"step": "setup", "op": "settle"},
           _write("seq", "seq", *a, note="writer 1, alone"), _write("seq", "seq", *b, note="writer 2, after writer 1"),
           {"step": "con", "op": "concurrent", "scope": "con",
            "writes": [{**a[0], "gold": a[1]}, {**b[0], "gold": b[1]}], "note": "writers 1 and 2 at once"},
           {"step": "con", "op": "settle"}]
    for scope in ("seq", "con"):
        ops.append({"step": "check", "op": "expect", "scope": scope, "present": present,
                    **({"absent": ["stale"]} if "stale" in targets else {})})
    what = {"disjoint": "two writers with unrelated facts",
            "correction": f"a {topic_name} fact corrected by one writer while another writes an unrelated fact",
            "entangled": f"a {topic_name} fact changed by one writer while another writes a fact of the same entity"}
    return {"id": f"{shape}-{topic_name}-{n:03d}", "shape": shape, "description": what[shape],
            "scopes": {"seq": f"seq-{n:03d}", "con": f"con-{n:03d}"}, "targets": targets, "ops": ops}


def cases(spec: dict, rng: random.Random, values) -> list[dict]:
    return [make_case(spec, n, rng, values) for n in range(spec["count"])]
