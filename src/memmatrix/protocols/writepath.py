"""The write-path protocol (seed 002): is a fact recorded, superseded, kept through a conflict, removed, traced?

A case is one write unit (or one out-of-scope probe) in its own scope; it has a cell only for the
measures it exercises, and every cell holds one row per fact (``checks``), so every rate is a count of
facts with the rows behind it:

- W write: after its write settles, each unit fact reaches the door when asked its own question;
- S staleness: after an update stated in conversation, the door serves the new value and no longer
  the old one as current;
- C contradiction: two sources assert incompatible values with no update between them; the door and
  raw recall keep an auditable trace, flagged (an item marked ``contested``) or kept (both values still
  reachable, the older as history or beside the newer), never silently collapsed to one value;
- D deletion: after a forget, the fact is gone from every door, the raw recall, every declared store
  (a vector store's nearest neighbour included), while a fact written beside it is still served;
- P provenance: a returned memory is traced, by asking the system (``trace``), to the message that
  produced it;
- A abstention: asked about an invented subject, the door hands over no stored value and nothing
  about the subject, while the same door serves a real fact of the scope (control).
"""

from __future__ import annotations

import math
import re

from ..common.tokens import contains, tokens
from .base import (ERROR, FAIL, PASS, SKIP, UNSUPPORTED, Cell, EvalProtocol, OpRecords, StepDef, describe_error, group_ops)
from .observe import holds, items_holding, not_current, probe_hits, sight
from .stages import DELIVERED, NOT_RETRIEVED, trail

STEPS = (
    StepDef("W", "write", "after its write settles, each fact of the unit reaches the door when asked its own question"),
    StepDef("S", "staleness", "after an update stated in conversation, the door serves the new value and not the old "
            "one as current",
            skips=(("the old value never reached the door", "the old value never reached the door, so there is nothing to supersede"),)),
    StepDef("C", "contradiction", "two sources' incompatible values leave a trace (flagged, or both kept), never one "
            "silently collapsed answer",
            skips=(("the first assertion never reached the door", "the first assertion never reached the door: its loss is a write failure (column W), not a collapse"),)),
    StepDef("D", "deletion", "after a forget, the fact is gone from every door, the raw recall and every declared store; "
            "the fact written beside it stays", essential="forget",
            skips=(("the fact never reached the door before the forget", "the fact never reached the door before the forget, so its absence proves nothing"), ("had not reported quiescence and the check", "no quiescence signal and the check could not be polled for the whole settle timeout"), ("the fact written beside it never reached the door", "the control written beside the fact never reached the door (a write failure, column W), so whether the forget spared it cannot be told"),)),
    StepDef("P", "provenance", "a returned memory traces, by asking the system, to the message that produced it",
            essential="trace",
            skips=(("was never returned with an id", "the fact was never returned with an id, so there was nothing to trace"),)),
    StepDef("A", "abstention", "asked about an invented subject, the door hands over no stored value and nothing "
            "about the subject",
            skips=(("the door did not serve the scope's real fact", "the door did not serve the scope's real fact (control), so its silence proves nothing"),)),
)

#: Which cells each shape of case has.
SHAPE_STEPS = {"stable": ("W", "P"), "update": ("W", "S", "P"), "contradiction": ("W", "C"),
               "deletion": ("W", "D"), "out-of-scope": ("A",)}


def wilson(passed: int, n: int, z: float = 1.959964) -> list[float] | None:
    """The Wilson score interval (95%) of a rate of ``passed`` out of ``n``."""
    if n == 0:
        return None
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def checked_rate(cells: list[dict]) -> dict:
    """Checks passed over checks measured in ``cells`` (a check whose ``ok`` is None is not measured; an ERROR cell
    is measured and earns nothing), with the Wilson 95% interval and the upper bound of the failure rate: "none
    failed in N" is a bound, not a zero."""
    rows = [r for cell in cells for r in cell["checks"] if r.get("ok") is not None]
    errors = sum(cell["verdict"] == ERROR for cell in cells)
    passed, n = sum(r["ok"] is True for r in rows), len(rows) + errors
    interval = wilson(passed, n)
    return {"passed": passed, "of": n, "rate": round(passed / n, 4) if n else None, "wilson95": interval,
            "failure_upper95": round(1 - interval[0], 4) if interval else None, **({"errors": errors} if errors else {})}


def _texts(answer: dict) -> str:
    """An answer's text and its items' texts, one string."""
    items = [i.get("text", "") for i in answer.get("items", []) or [] if isinstance(i, dict)]
    return "\n".join([answer.get("text", "") or "", *[t for t in items if isinstance(t, str)]])


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _starts_sentence(text: str, at: int) -> bool:
    """Is the word at ``at`` the first of its text, line, sentence, list item or colon-introduced part?"""
    before = text[max(0, at - 16):at].rstrip(" \t")
    if not before:
        return at <= 16
    if before[-1] in ".!?:;\n\r":
        return True
    return before[-1] in "-*•" and (len(before) == 1 or before[-2] in " \t\n")


def invented_words(answer: dict, known: set[str]) -> list[str]:
    """Words of an answer to an out-of-scope question that look like a value nothing written said: any unknown word of
    a returned item (a memory the system was never given), and in the free text an unknown word that holds a digit or
    is capitalised inside a sentence (a name or a code). ``known`` holds every token the case said or asked, and those
    of the door's answer to a real question (its own wording around results). "Nothing relevant." is not a value."""
    out = []
    for item in answer.get("items", []) or []:
        text = item.get("text", "") if isinstance(item, dict) else ""
        out += [w for w in tokens(text if isinstance(text, str) else "") if w not in known and len(w) > 2]
    text = answer.get("text", "") or ""
    for m in _WORD.finditer(text if isinstance(text, str) else ""):
        word = m.group(0)
        low = tokens(word)[0] if tokens(word) else ""
        if not low or low in known:
            continue
        code = any(ch.isdigit() for ch in word) and not (word.isdigit() and len(word) <= 2)  # "(0 results)" counts
        if code or (word[0].isupper() and not _starts_sentence(text, m.start())):
            out.append(low)
    return out


def traceable_ids(answers: list[dict], target: dict) -> list:
    """Ids of the returned items that hold ``target``, in order of appearance, at most three."""
    ids: list = []
    for answer in answers:
        for item in items_holding(answer, target):
            if item.get("id") is not None and item["id"] not in ids:
                ids.append(item["id"])
    return ids[:3]


class WritePathProtocol(EvalProtocol):
    name = "writepath"
    version = "1.1.0"
    steps = STEPS

    def validate_case(self, case: dict) -> list[str]:
        from .writepath_rules import validate_writepath_case
        return validate_writepath_case(case)

    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        return _Scorer(header, records, capabilities).cells()

    def error_cells(self, reason: str, header: dict | None = None) -> list[Cell]:
        """The cells the case would have had (its shape's measures), each ERROR."""
        keys = SHAPE_STEPS.get((header or {}).get("shape"), tuple(s.key for s in self.steps))
        return [Cell(k, ERROR, reason) for k in keys]

    def measures(self, cases: list[dict]) -> dict:
        """Per step: facts passed out of facts measured (rows whose ``ok`` is true or false, and each ERROR cell,
        which earns nothing), with the Wilson 95% interval; C also counts its three outcomes."""
        out = {}
        for step in self.steps:
            cells = [cell for case in cases for cell in case["cells"] if cell["step"] == step.key]
            rows = [c for cell in cells for c in cell["checks"] if "fact" in c and c.get("ok") is not None]
            errors = sum(cell["verdict"] == ERROR for cell in cells)  # measured, and earns nothing
            passed, n = sum(bool(r["ok"]) for r in rows), len(rows) + errors
            m = {"passed": passed, "of": n, "rate": round(passed / n, 4) if n else None, "wilson95": wilson(passed, n)}
            if errors:
                m["errors"] = errors
            if step.key == "C":
                m["outcomes"] = {o: sum(r.get("outcome") == o for r in rows) for o in ("flagged", "kept", "collapsed")}
            out[step.key] = m
        return out


class _Scorer:
    def __init__(self, header: dict, records: list[dict], caps: dict):
        self.header, self.caps = header, caps
        self.t = header["targets"]
        self.ops = group_ops(records)
        self.shape = header["shape"]
        self.skipped = {s["call"]: s["reason"] for o in self.ops for s in o.skips}

    def _ops(self, kind: str, step: str | None = None) -> list[OpRecords]:
        return [o for o in self.ops if o.spec["op"] == kind and (step is None or o.step == step)]

    def cells(self) -> list[Cell]:
        out = []
        for key in SHAPE_STEPS.get(self.shape, ()):
            if key == "P" and not self._ops("trace"):
                continue
            step = next(s for s in STEPS if s.key == key)
            if step.essential and step.essential in self.skipped:
                out.append(Cell(key, UNSUPPORTED, f"{step.essential} is unsupported: {self.skipped[step.essential]}"))
                continue
            writes = [c for o in self._ops("write") for c in o.calls if "error" in c]
            if writes:
                out.append(Cell(key, ERROR, describe_error(writes[0])))
                continue
            out.append(getattr(self, f"_{key}")())
        return out

    # ------------------------------------------------------------------ helpers
    def _door(self, op: OpRecords, name: str) -> list[dict]:
        """The final poll's door answers to the target's own questions."""
        own = set(self.t[name]["queries"])
        return [c["result"] for c in op.last_poll() if c["call"] == "door" and "result" in c
                and c["args"]["query"] in own]

    def _answers(self, op: OpRecords) -> list[dict]:
        """The final poll's door and recall answers."""
        return [c["result"] for c in op.last_poll() if c["call"] in ("door", "recall") and "result" in c]

    def _row(self, op: OpRecords, name: str, ok: bool | None, detail: str, **extra) -> dict:
        row = {"op": op.index, "fact": name, "ok": ok, "detail": detail, **extra}
        if ok is False and "stage" not in row:
            seen = trail(self.ops, op.index, self.t[name], self.caps, self.t[name]["queries"])
            row.update(stage=seen.reached(), trail=seen.as_dict())
        return row

    @staticmethod
    def _cell(key: str, rows: list[dict], errors: list[str] = ()) -> Cell:
        if errors:
            return Cell(key, ERROR, "; ".join(errors[:3]), rows)
        if any(r["ok"] is False for r in rows):
            return Cell(key, FAIL, "; ".join(r["detail"] for r in rows if r["ok"] is False), rows)
        if rows and all(r["ok"] is None for r in rows):
            return Cell(key, SKIP, "; ".join(dict.fromkeys(r["detail"] for r in rows)), rows)
        return Cell(key, PASS, "", rows)

    def _seen_before(self, name: str, before: int) -> bool:
        return any(holds(a, self.t[name]) for o in self.ops if o.index < before and o.spec["op"] == "expect"
                   for a in self._answers(o))

    # ------------------------------------------------------------------ measures
    def _W(self) -> Cell:
        rows, errors = [], []
        for op in self._ops("expect", "W"):
            errors += [describe_error(c) for c in op.errors()]
            for name in op.spec["present"]:
                if name not in self.header.get("units", []):
                    continue
                ok = any(holds(a, self.t[name]) for a in self._door(op, name))
                rows.append(self._row(op, name, ok, "reaches the door" if ok else
                                      f"{name} ({self.t[name]['token']!r}) does not reach the door when asked "
                                      f"{self.t[name]['queries']}"))
        return self._cell("W", rows, errors)

    def _S(self) -> Cell:
        op = self._ops("expect", "S")[0]
        if op.errors():
            return self._cell("S", [], [describe_error(c) for c in op.errors()])
        if not self._seen_before("old", op.index):
            return self._cell("S", [self._row(op, "new", None, "the old value never reached the door, so there is "
                                                                "nothing to supersede")])
        new, old = sight(op, self.t["new"]).served, sight(op, self.t["old"]).served
        if old:
            row = self._row(op, "new", False, f"the old value {self.t['old']['token']!r} is still served as current "
                            "after the update", stage=DELIVERED)
        elif not new:
            row = self._row(op, "new", False, f"the new value {self.t['new']['token']!r} is not served as current")
        else:
            row = self._row(op, "new", True, "the new value is served; the old one is not served as current")
        return self._cell("S", [row])

    def _C(self) -> Cell:
        op = self._ops("expect")[-1]
        if op.errors():
            return self._cell("C", [], [describe_error(c) for c in op.errors()])
        if not self._seen_before("first", op.index):
            return self._cell("C", [self._row(op, "first", None, "the first assertion never reached the door: its "
                                                                  "loss is a write failure (W), not a collapse")])
        answers = self._answers(op)
        kept = {n: any(holds(a, self.t[n]) for a in answers) for n in ("first", "second")}
        items = [it for a in answers for n in kept for it in items_holding(a, self.t[n])]
        if all(kept.values()):
            if any(it.get("status") == "contested" for it in items):
                return self._cell("C", [self._row(op, "first", True, "flagged as contested", outcome="flagged")])
            at = next((c["args"]["at"] for c in op.calls if "args" in c and "at" in c["args"]), "")
            history = any(not_current(it, at) for it in items)
            how = "the older as history" if history else "side by side, neither marked"
            return self._cell("C", [self._row(op, "first", True, f"both values kept, {how}", outcome="kept")])
        lost = [n for n, k in kept.items() if not k]
        detail = (f"silently collapsed: only {self.t[[n for n in kept if kept[n]][0]]['token']!r} is left, "
                  f"{self.t[lost[0]]['token']!r} is gone from the door and the raw recall") if len(lost) == 1 else \
            "both values are gone from the door and the raw recall"
        seen = trail(self.ops, op.index, self.t[lost[0]], self.caps)
        return self._cell("C", [self._row(op, lost[0], False, detail, outcome="collapsed", stage=seen.reached(),
                                          trail=seen.as_dict())])

    def _D(self) -> Cell:
        forget = self._ops("forget", "D")[0]
        op = self._ops("expect", "D")[0]
        errors = [describe_error(c) for o in [forget, op, *self._ops("probe", "D")] for c in o.errors()]
        if errors:
            return self._cell("D", [], errors)
        if not self._seen_before("fact", op.index):
            return self._cell("D", [self._row(op, "fact", None, "the fact never reached the door before the forget, so "
                                                                "its absence proves nothing")])
        if not (op.settled_before or op.polled_to_timeout()):
            return self._cell("D", [self._row(op, "fact", None, "the system had not reported quiescence and the check "
                                                                "was not polled for the whole settle timeout")])
        s = sight(op, self.t["fact"])
        kinds = {st["name"]: st.get("kind", "") for st in self.caps.get("stores", [])}
        held = sorted(st for p in self._ops("probe", "D")
                      for st, hit in probe_hits(p, self.t["fact"], kinds, [self.t["control"]]).items() if hit)
        if s.reachable or held:
            stage = trail(self.ops, op.index, self.t["fact"], self.caps).survived() or NOT_RETRIEVED
            where = "; ".join(filter(None, [s.where, f"held by store(s) {held}" if held else ""]))
            return self._cell("D", [self._row(op, "fact", False, f"still reachable after the forget: {where}",
                                              stage=stage, stores=held)])
        if not sight(op, self.t["control"]).served:
            if not self._seen_before("control", op.index):
                return self._cell("D", [self._row(op, "fact", None, "the fact written beside it never reached the door "
                                                                    "(a write failure, column W), so whether the forget "
                                                                    "spared it cannot be told")])
            seen = trail(self.ops, op.index, self.t["control"], self.caps)
            return self._cell("D", [self._row(op, "fact", False, "the fact written beside it is no longer served: "
                                              "over-deletion", stage=seen.reached(), trail=seen.as_dict())])
        return self._cell("D", [self._row(op, "fact", True, "gone from every door, the recall and every store; the "
                                                            "fact beside it stays")])

    def _P(self) -> Cell:
        rows, errors = [], []
        writes = {o.spec.get("id"): o for o in self._ops("write")}
        for op in self._ops("trace"):
            name, write = op.spec["target"], writes[op.spec["of"]]
            errors += [describe_error(c) for c in op.errors()]
            calls = [c for c in op.calls if c["call"] == "trace" and "result" in c]
            if not calls:
                rows.append(self._row(op, name, None, f"{name} was never returned with an id, so nothing could be "
                                      "traced") if not self._seen_before(name, op.index) else
                            self._row(op, name, False, f"{name} is returned only in items without an id: no lineage "
                                      "can be asked for", stage=DELIVERED))
                continue
            users = [m["content"] for m in write.spec["messages"] if m["role"] == "user"]
            sources = [s for c in calls for s in c["result"]["sources"]]
            ok = any(all(contains(s.get("text", ""), u) for u in users) for s in sources)
            rows.append(self._row(op, name, ok, "traced to its message" if ok else
                                  f"{name}'s lineage ({len(sources)} source record(s)) does not lead to the message "
                                  "that produced it", **({} if ok else {"stage": DELIVERED})))
        return self._cell("P", rows, errors)

    def _A(self) -> Cell:
        control = self._ops("expect", "A")[0]
        asked = self._ops("assess", "A")[0]
        errors = [describe_error(c) for o in (control, asked) for c in o.errors()]
        if errors:
            return self._cell("A", [], errors)
        if not all(sight(control, self.t[n]).served for n in control.spec["present"]):
            return self._cell("A", [self._row(asked, "absent", None, "the door did not serve the scope's real fact "
                                                                     "(control), so its silence would prove nothing")])
        answers = [c["result"] for c in asked.calls if c["call"] == "door" and "result" in c]
        leaked = [n for n in self.t if any(holds(a, self.t[n]) for a in answers)]
        if leaked:
            what = ", ".join(f"{self.t[n]['token']!r}" for n in leaked)
            return self._cell("A", [self._row(asked, "absent", False, f"asked {self.t['absent']['queries']}, the door "
                                              f"handed over {what}", stage=DELIVERED)])
        known = self._said() | {t for c in control.calls if "result" in c for t in tokens(_texts(c["result"]))}
        invented = sorted({w for a in answers for w in invented_words(a, known)})
        if invented:
            return self._cell("A", [self._row(asked, "absent", False, f"asked {self.t['absent']['queries']}, the door "
                                              f"handed over {invented[:5]}, which nothing written in the scope said: an "
                                              "invented answer", stage=DELIVERED)])
        return self._cell("A", [self._row(asked, "absent", True, "the door handed over nothing stored, nothing about "
                                                                 "the invented subject and no invented value")])

    def _said(self) -> set[str]:
        """Every token the case put into the system or asked it: its messages, its questions, its scopes."""
        texts = [m["content"] for o in self._ops("write") for m in o.spec.get("messages", [])]
        texts += [q for t in self.t.values() for q in t.get("queries", [])] + list(self.header.get("scopes", {}).values())
        return set(tokens(" ".join(texts)))
