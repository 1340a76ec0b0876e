"""The door protocol (seed 004): the exact text a memory hands the model, scored by token match, never a model.

Four sections, each a column, each with its own points; a section a system cannot be measured on is SKIP
and leaves the denominator. The Core (door + updates + time + abstention, 55 points) is given only when
all four were measured: two scores over different coverage are not one measure.

- door (25): the expected words are in the door's *text* for each question, and no retired value is;
- updates (10): a new value written with no pointer to the old replaces it; an unrelated fact about the
  same subject survives; restating the value adds no copy;
- time (10): a memory reaches the model with its own date (not the write or query time), a question
  naming a day gets that day's memory and not another's, and an imported old memory keeps its old date
  (SKIP without an import path);
- abstention (10): asked about an invented name, the door text holds no value the scope was told and
  nothing about the name, while the same door serves a real fact when asked (control).

Only the door's ``text`` counts: it is what the model receives; the items behind it are evidence for the
stage of a failure, not for a point.
"""

from __future__ import annotations

import re

from ..common.tokens import contains
from .base import ERROR, FAIL, PASS, SKIP, Cell, EvalProtocol, OpRecords, StepDef, describe_error, group_ops
from .observe import sight, wordings
from .stages import DELIVERED, trail

WEIGHTS = {"door": 25, "updates": 10, "time": 10, "abstention": 10}
STEPS = (
    StepDef("door", "door", "the expected words reach the model in the door's text, and no retired value does"),
    StepDef("updates", "updates", "a new value replaces the old without being told which; an unrelated fact survives; "
            "restating adds no copy",
            skips=(("the new value never reached the door", "the new value never reached the door, so there is no copy to count"),)),
    StepDef("time", "time", "memories reach the model with their own date; a day's question gets that day; an imported "
            "old memory keeps its date"),
    StepDef("abstention", "abstention", "asked about an invented name, the door hands over nothing it was told and "
            "nothing about the name",
            skips=(("the door did not serve the facts it was told", "the door did not serve the facts it was told (control), so its silence proves nothing"),)),
)

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def dated(text: str, date: str) -> bool:
    """Does ``text`` render the calendar day ``date`` (YYYY-MM-DD): ISO (also inside a date-time), YYYY/MM/DD,
    '2 March 2026', 'March 2, 2026', 'Mar 2nd 2026', '2 Mar. 2026'?"""
    y, m, d = date.split("-")
    month = _MONTHS[int(m) - 1]
    day = str(int(d))
    names = f"(?:{month}|{month[:3]}\\.?)"
    patterns = [rf"(?<!\d){y}[-/]{m}[-/]{d}(?!\d)",
                rf"(?<!\d)0?{day}(?:st|nd|rd|th)?\s+(?:of\s+)?{names},?\s+{y}(?!\d)",
                rf"\b{names}\s+0?{day}(?:st|nd|rd|th)?,?\s+{y}(?!\d)"]
    return any(re.search(p, text, re.IGNORECASE) for p in patterns)


def copies(text: str, target: dict) -> int:
    """How many lines of the door text hold the target's value."""
    return sum(any(contains(line, w) for w in wordings(target)) for line in text.splitlines())


class DoorProtocol(EvalProtocol):
    name = "door"
    version = "1.0.0"
    steps = STEPS
    repeated = "model"

    def validate_case(self, case: dict) -> list[str]:
        from .door_rules import validate_door_case
        return validate_door_case(case)

    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        return [_Scorer(header, records, capabilities).cell()]

    def error_cells(self, reason: str, header: dict | None = None) -> list[Cell]:
        """The case's section (its shape) ERROR."""
        shape = (header or {}).get("shape")
        return [Cell(s.key, ERROR, reason) for s in self.steps if shape in (None, s.key)]

    def measures(self, cases: list[dict]) -> dict:
        """Points per section (weight x checks passed / checks measured), and the Core when all four were measured."""
        out = {}
        for key, weight in WEIGHTS.items():
            cells = [cell for case in cases for cell in case["cells"] if cell["step"] == key]
            rows = [c for cell in cells if cell["verdict"] != ERROR for c in cell["checks"] if c.get("ok") is not None]
            errors = sum(cell["verdict"] == ERROR for cell in cells)  # an ERROR is measured and earns nothing
            passed, n = sum(bool(r["ok"]) for r in rows), len(rows) + errors
            out[key] = {"weight": weight, "passed": passed, "of": n,
                        "points": round(weight * passed / n, 2) if n else None}
        covered = [k for k in WEIGHTS if out[k]["points"] is not None]
        out["core"] = {"weight": sum(WEIGHTS.values()), "coverage": sum(WEIGHTS[k] for k in covered),
                       "points": round(sum(out[k]["points"] for k in covered), 2) if len(covered) == len(WEIGHTS)
                       else None}
        return out


class _Scorer:
    def __init__(self, header: dict, records: list[dict], caps: dict):
        self.t, self.caps, self.shape = header["targets"], caps, header["shape"]
        self.ops = group_ops(records)
        self.skipped = {s["call"]: s["reason"] for o in self.ops for s in o.skips}

    def _op(self, kind: str, step: str) -> OpRecords | None:
        return next((o for o in self.ops if o.spec["op"] == kind and o.step == step), None)

    def cell(self) -> Cell:
        errors = [describe_error(c) for o in self.ops if o.spec["op"] != "lag" for c in o.errors()]
        if errors:
            return Cell(self.shape, ERROR, "; ".join(errors[:3]))
        rows = getattr(self, "_" + self.shape)()
        if any(r["ok"] is False for r in rows):
            return Cell(self.shape, FAIL, "; ".join(r["detail"] for r in rows if r["ok"] is False), rows)
        if all(r["ok"] is None for r in rows):
            return Cell(self.shape, SKIP, "; ".join(dict.fromkeys(r["detail"] for r in rows)), rows)
        return Cell(self.shape, PASS, "", rows)

    # ------------------------------------------------------------------ reading the door
    def text(self, op: OpRecords, name: str) -> str:
        """The door text (every door, final poll) answering the target's own questions."""
        own = set(self.t[name]["queries"])
        return "\n".join(c["result"].get("text", "") for c in op.last_poll()
                         if c["call"] == "door" and "result" in c and c["args"]["query"] in own)

    def row(self, op: OpRecords, check: str, name: str, ok: bool | None, detail: str, stage: str | None = None) -> dict:
        row = {"op": op.index, "check": check, "target": name, "ok": ok, "detail": detail}
        if ok is False:
            seen = trail(self.ops, op.index, self.t[name], self.caps, self.t[name]["queries"])
            row.update(stage=stage or seen.reached(), trail=seen.as_dict())
        return row

    def answered(self, op: OpRecords, name: str, check: str) -> dict:
        """Expected words in the text, and no retired value."""
        t, text = self.t[name], self.text(op, name)
        retired = [f for f in t.get("forbidden", []) if contains(text, f)]
        if retired:
            return self.row(op, check, name, False, f"{t['queries'][0]!r}: the retired value {retired[0]!r} reaches "
                                                    "the model", DELIVERED)
        if not any(contains(text, w) for w in wordings(t)):
            return self.row(op, check, name, False, f"{t['queries'][0]!r}: {t['token']!r} is not in the door's text")
        return self.row(op, check, name, True, "delivered")

    # ------------------------------------------------------------------ sections
    def _door(self) -> list[dict]:
        op = self._op("expect", "door")
        return [self.answered(op, n, "answer") for n in op.spec["present"]]

    def _updates(self) -> list[dict]:
        setup, update, restate = self._op("expect", "setup"), self._op("assess", "update"), self._op("assess", "restate")
        names = setup.spec["present"]
        old, kept = names[0], names[1]
        new = next(n for n in update.spec["ask"] if n != kept)
        if not all(sight(setup, self.t[n]).served for n in names):
            why = "the first value and the unrelated fact were not both served before the update, so the update has " \
                  "nothing to replace"
            return [self.row(update, c, new, None, why) for c in ("replaced", "survives", "no-copy")]
        rows = [self.answered(update, new, "replaced")]
        kept_text = self.text(update, kept)
        rows.append(self.row(update, "survives", kept, any(contains(kept_text, w) for w in wordings(self.t[kept])),
                             "the unrelated fact survives" if any(contains(kept_text, w) for w in wordings(self.t[kept]))
                             else f"the unrelated fact {self.t[kept]['token']!r} no longer reaches the model"))
        before, after = copies(self.text(update, new), self.t[new]), copies(self.text(restate, new), self.t[new])
        if before == 0:
            rows.append(self.row(restate, "no-copy", new, None, "the new value never reached the door, so there is no "
                                                                 "copy to count"))
        else:
            ok = after <= before
            rows.append(self.row(restate, "no-copy", new, ok, f"{before} line(s) before restating, {after} after" if ok
                                 else f"restating added a copy: {before} line(s) hold it before, {after} after",
                                 DELIVERED))
        return rows

    def _time(self) -> list[dict]:
        rows = []
        for op in [o for o in self.ops if o.spec["op"] == "assess" and o.step == "time"]:
            for name in op.spec["ask"]:
                t = self.t[name]
                if "date" in t:
                    text = self.text(op, name)
                    ok = dated(text, t["date"]) and any(contains(text, w) for w in wordings(t))
                    rows.append(self.row(op, "own-date", name, ok, f"{t['queries'][0]!r}: delivered with its own date "
                                         f"{t['date']}" if ok else f"{t['queries'][0]!r}: the memory does not reach the "
                                         f"model with its own date {t['date']}", DELIVERED if not ok and
                                         any(contains(text, w) for w in wordings(t)) else None))
                else:
                    rows.append(self.answered(op, name, "day"))
        imp = self._op("import", "import")
        if imp is not None and any(s["call"] == "import_history" for s in imp.skips):
            asked = self._op("assess", "imported")
            rows.append(self.row(asked, "imported-date", asked.spec["ask"][0], None,
                                 f"import_history is unsupported: {self.skipped['import_history']}"))
        elif imp is not None:
            asked = self._op("assess", "imported")
            name = asked.spec["ask"][0]
            text = self.text(asked, name)
            ok = dated(text, self.t[name]["date"])
            rows.append(self.row(asked, "imported-date", name, ok, "the imported memory keeps its old date" if ok else
                                 f"the imported memory does not reach the model with its date {self.t[name]['date']}",
                                 DELIVERED if not ok and any(contains(text, w) for w in wordings(self.t[name])) else None))
        return rows

    def _abstention(self) -> list[dict]:
        control, asked = self._op("expect", "control"), self._op("assess", "abstention")
        told = control.spec["present"]
        if not all(sight(control, self.t[n]).served for n in told):
            return [self.row(asked, "abstains", n, None, "the door did not serve the facts it was told (control), so "
                                                          "its silence would prove nothing") for n in asked.spec["ask"]]
        rows = []
        for name in asked.spec["ask"]:
            text = self.text(asked, name)
            leaked = [self.t[n]["token"] for n in [*told, name] if any(contains(text, w) for w in wordings(self.t[n]))]
            rows.append(self.row(asked, "abstains", name, not leaked, "nothing handed over" if not leaked else
                                 f"{self.t[name]['queries'][0]!r}: the door hands over {leaked}", DELIVERED))
        return rows
