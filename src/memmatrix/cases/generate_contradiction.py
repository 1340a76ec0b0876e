"""Contradiction cases generated from a spec (``cases/specs/contradiction-<version>.yaml``).

Every case follows the op script of ``cases/contradiction/1.3.0.json``: the original fact and a sibling, the
control, a gap, the displacement (a replacement, a polarity flip, a retraction, a partial change, or a validity
bound passing on the harness clock), the columns' assessments, the background jobs and a restart, the derived
stores, the day-1 material re-imported at its original time, and the undo of the correction. The spec gives, per
shape, topics with their sentence templates and value pools; the axes (gap, how the correction is wrapped) rotate
in balance. A ``stream`` (``facts``, ``corrections``) writes other facts of the same user around the case's own,
and corrects some of them beside the case's correction: the contradiction density of one conversation stream.
"""

from __future__ import annotations

import itertools
import random
from datetime import timedelta

from ..common.clock import parse_duration, parse_time

SHAPES = ("replacement", "polarity", "retraction", "partial", "bounded")
WITH_CURRENT = ("replacement", "partial")


def _fill(text: str, **values: str) -> str:
    return text.format(**values)


def _until(start, gap: timedelta) -> tuple[str, str]:
    """The validity bound said in the day-1 message, and the ISO time it ends: half the gap after the first write
    (never within the control's first minutes), said as a time of day under two days and as a date beyond."""
    if gap < timedelta(days=2):
        bound = start + max(gap / 2, timedelta(minutes=4))
        bound = bound.replace(second=0, microsecond=0)
        day = "today" if bound.date() == start.date() else "tomorrow"
        return f"{bound:%H:%M} {day}", f"{bound:%Y-%m-%dT%H:%M:%SZ}"
    day = (start + gap / 2).date()
    end = day + timedelta(days=1)  # valid to the end of the named day
    return f"{day.day} {day:%B %Y}", f"{end:%Y-%m-%d}T00:00:00Z"


def _msgs(user: str, reply: str | None = None) -> list[dict]:
    out = [{"role": "user", "content": user}]
    return out + [{"role": "assistant", "content": reply}] if reply else out


def _things(things) -> list[str]:
    """The stream's subjects: a list, or ``{product: [[...], [...]]}`` for every combination (the store at scale)."""
    if isinstance(things, dict):
        return [" ".join(parts) for parts in itertools.product(*things["product"])]
    return list(things)


def _stream(spec: dict, rng: random.Random, values) -> tuple[list[dict], list[dict]]:
    """``spec['stream']``: other facts of the same user, each about a subject of its own (so none contradicts
    another, or the case's sibling), and corrections of some of them, said beside the case's own."""
    conf = spec.get("stream")
    if not conf:
        return [], []
    facts, fixes, chosen = [], [], []
    for k, thing in enumerate(rng.sample(_things(conf["things"]), conf["facts"]), start=1):
        value = values.make(conf["pool"], claim=False)
        chosen.append((k, thing, value))
        fact = conf["fact"].format(thing=thing, value=value)
        facts.append({"step": "setup", "op": "write", "scope": "main",
                      "messages": _msgs(f"For the record, note {k}: {fact[0].lower()}{fact[1:]}"),
                      "gold": [{"subject": conf["subject"].format(thing=thing), "attribute": conf["attribute"],
                                "value": value, "statement": fact}], "note": "the stream: another fact of the user"})
    for k, thing, old in rng.sample(chosen, conf["corrections"]):
        new = values.make(conf["pool"], claim=False)
        fact = conf["fact"].format(thing=thing, value=new)
        fixes.append({"step": "contradict", "op": "write", "scope": "main",
                      "messages": _msgs(f"Correction to note {k}: {fact[0].lower()}{fact[1:]}"),
                      "gold": [{"subject": conf["subject"].format(thing=thing), "attribute": conf["attribute"],
                                "value": new, "statement": fact, "intent": "supersede", "replaces": old}],
                      "note": "the stream: a correction of another fact"})
    return facts, fixes


def make_case(spec: dict, n: int, axes: dict, rng: random.Random, values) -> dict:
    shape = SHAPES[n % len(SHAPES)]
    topics = spec["topics"][shape]
    topic = topics[(n // len(SHAPES) // 3) % len(topics)]  # three axis settings per topic in turn
    values.new_case()
    start = parse_time(spec["clock"]["start"])
    gap = parse_duration(axes["gap"])
    old = values.make(topic["pool"])
    new = values.make(topic["pool"]) if shape in WITH_CURRENT else ""
    kept = values.make(topic["kept_pool"]) if shape == "partial" else ""
    until, valid_to = _until(start, gap) if shape == "bounded" else ("", "")
    v = {"old": old, "new": new, "kept": kept, "until": until}
    sib = spec["siblings"][rng.randrange(len(spec["siblings"]))]
    sib_value = values.make(sib["pool"])

    fact = _fill(topic["fact"], **v)
    attribute = _fill(topic["attribute"], **v)
    original = {"token": old, "queries": [_fill(topic["query"], **v)], "history_queries": [_fill(topic["history"], **v)],
                "fact": fact}
    targets = {"original": original, "sibling": {"token": sib_value, "queries": [sib["query"]]}}
    day1_gold = [{"subject": topic["subject"], "attribute": attribute, "value": old, "statement": fact,
                  **({"valid_to": valid_to} if valid_to else {})}]
    if shape == "partial":
        kept_fact = _fill(topic["kept_fact"], **v)
        day1_gold.insert(0, {"subject": topic["subject"], "attribute": topic["kept_attribute"], "value": kept,
                             "statement": kept_fact})
        targets["kept"] = {"token": kept, "queries": [topic["kept_query"]]}
    change_gold: list[dict] = []
    if shape in WITH_CURRENT:
        targets["current"] = {"token": new, "queries": list(original["queries"])}
        change_gold = [{"subject": topic["subject"], "attribute": attribute, "value": new,
                        "statement": _fill(topic["change_fact"], **v), "intent": "supersede", "replaces": old}]
        if shape == "partial":
            change_gold.insert(0, dict(day1_gold[0]))
    elif shape in ("polarity", "retraction"):
        if shape == "polarity":
            targets["current"] = {"token": topic["current"], "queries": list(original["queries"]),
                                  **({"alternatives": topic["alternatives"]} if topic.get("alternatives") else {})}
        change_gold = [{"subject": topic["subject"], "attribute": attribute, "value": old,
                        "statement": _fill(topic["change_fact"], **v), "intent": "retract"}]

    day1 = {"step": "setup", "op": "write", "id": "day1", "scope": "main",
            "messages": _msgs(_fill(topic["say"], **v), topic["reply"]), "gold": day1_gold}
    sib_write = {"step": "setup", "op": "write", "scope": "main", "messages": _msgs(_fill(sib["say"], value=sib_value)),
                 "gold": [{"subject": sib["subject"], "attribute": sib["attribute"], "value": sib_value,
                           "statement": _fill(sib["fact"], value=sib_value)}],
                 "note": "the sibling: same entity, never contradicted"}
    stream, fixes = _stream(spec, rng, values)
    if shape == "bounded":  # displaced by the clock, not by a write: the stream's corrections come before
        stream, fixes = stream + [{**f, "step": "setup"} for f in fixes], []
    ask = ["original", "sibling", *(["kept"] if shape == "partial" else [])]
    expect = [*(["current"] if "current" in targets else []), "sibling"]
    assess = {"op": "assess", "scope": "main", "ask": ask, "stale": "original", "expect": expect}
    half = len(fixes) // 2
    contradict: list[dict] = [{"step": "contradict", "op": "advance", "by": axes["gap"],
                               **({"note": "the validity bound passes"} if shape == "bounded" else {})}, *fixes[:half]]
    said = ""
    if change_gold:
        said = spec["wraps"][axes["wrap"]].format(text=_fill(topic["change"], **v))
        contradict.append({"step": "contradict", "op": "write", "scope": "main", "messages": _msgs(said),
                           "gold": change_gold})
    contradict += fixes[half:]
    ops = [day1, sib_write, *stream,
           {"step": "setup", "op": "settle"},
           {"step": "setup", "op": "assess", "scope": "main", "ask": ask},
           {"step": "setup", "op": "probe", "scope": "main", "targets": ["original"], "note": "baseline of derived stores"},
           *contradict,
           {"step": "contradict", "op": "settle"},
           {"step": "now", **assess, "history": ["original"]},
           {"step": "jobs", "op": "advance", "by": "P1D"},
           {"step": "jobs", "op": "jobs"},
           {"step": "jobs", "op": "restart", "note": "stop and start the system on the same stores"},
           {"step": "after-jobs", **assess},
           {"step": "derived", "op": "probe", "scope": "main", "targets": ["original"], "stale": "original",
            "note": "after the background jobs, before any re-import (column E)"},
           {"step": "reimport", "op": "import", "scope": "main", "messages": day1["messages"], "gold": day1_gold,
            "at_of": "day1", "note": "the day-1 material again, through the import path, at its original time"},
           {"step": "reimport", "op": "settle"},
           {"step": "after-reimport", **assess},
           {"step": "after-reimport", "op": "probe", "scope": "main", "targets": ["original"], "stale": "original",
            "note": "the derived stores again, after the re-import (part of C')"}]
    if change_gold:
        # a retraction's fact names no value, so the same words recur across cases: forget it as it was said
        undo = said if shape == "retraction" else change_gold[-1]["statement"]
        ops += [{"step": "undo", "op": "forget", "scope": "main", "text": undo, "note": "forget the correction itself"},
                {"step": "undo", "op": "settle"},
                {"step": "after-undo", "op": "assess", "scope": "main", "ask": ask, "stale": "original"}]
    how = "bare" if axes["wrap"] == "bare" else "wrapped in small talk"
    return {"id": f"{shape}-{topic['name']}-{n:03d}", "shape": shape,
            "description": f"{shape} of {'an' if topic['name'][0] in 'aeiou' else 'a'} {topic['name']} fact after {axes['gap']}, the correction said {how}"
                           + (f", in a stream of {len(stream)} other facts and {len(fixes)} other corrections"
                              if stream else ""),
            "axes": dict(axes), "scopes": {"main": f"user-{n:03d}"}, "targets": targets, "ops": ops}


def cases(spec: dict, rng: random.Random, values) -> list[dict]:
    names, choices = list(spec["axes"]), list(itertools.product(*spec["axes"].values()))
    return [make_case(spec, n, dict(zip(names, choices[(n // len(SHAPES)) % len(choices)])), rng, values)
            for n in range(spec["count"])]
