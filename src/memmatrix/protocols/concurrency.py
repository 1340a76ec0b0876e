"""The concurrency protocol: two writers at once, and a correction made while another write runs.

Every case writes the same conversations twice, in two scopes of its own:

- ``seq``: one write after the other (the control: what the system does with these writes at all);
- ``con``: the same writes, the last ones sent together, each by a writer of its own
  (``write_concurrent``: threads, tasks or HTTP requests in flight at once, as the adapter's system
  receives concurrent writers).

Then both scopes are asked every fact's questions. Three columns, each compared with the control, so a
system that loses or keeps a fact whatever the timing is not charged with a concurrency defect:

- S (sequential): written one after the other, every fact is served and a corrected value is not served as
  current. The control; its FAIL is the system's behaviour without any concurrency (see the deletion and
  contradiction protocols for why).
- W (no lost write): every fact the control served is also served after the concurrent writes. A writer the
  system refused (its answer is an error) writes again alone; a refusal is visible to its writer, a loss is not.
- T (correction holds, ``correction`` and ``entangled`` cases): when the control retired the corrected
  value and the concurrent correction was stored, the corrected value is not served as current beside it.
  A correction that was lost is W's, not T's (SKIP here); a stale value kept sequentially too is SKIP.

Shapes: ``disjoint`` (two writers, unrelated facts), ``correction`` (one writer corrects a fact while the
other writes an unrelated one), ``entangled`` (the other writer's fact is about the corrected fact's subject:
both writes touch one entity). A race is a matter of timing, so a column's measure counts facts over cases,
with the upper bound of the failure rate (Wilson 95%): "no lost write in N" is a bound, not a zero.
"""

from __future__ import annotations

from .base import ERROR, FAIL, PASS, SKIP, UNSUPPORTED, Cell, EvalProtocol, StepDef, describe_error, group_ops
from .observe import sight
from .stages import DELIVERED, NOT_STORED, UNLOCATED
from .writepath import checked_rate

STEPS = (
    StepDef("S", "sequential", "written one after the other, every fact is served and a corrected value is retired"),
    StepDef("W", "no-lost-write", "written by concurrent writers, every fact the control served is still served",
            essential="write_concurrent",
            skips=(("no fact is served even when written alone", "no fact is served even when written alone: nothing to compare"),)),
    StepDef("T", "correction-holds", "a correction written beside another writer retires the corrected value, as "
            "it does sequentially", essential="write_concurrent",
            skips=(("the case names no corrected value", "the case has no correction"), ("stays current when written one after the other too", "the corrected value stays current even when written sequentially (column S), so the race is not what keeps it"), ("the concurrent correction is not served", "the correction was lost (a lost write, column W)"),)),
)
SHAPES = ("disjoint", "correction", "entangled")
SCOPES = ("seq", "con")


class ConcurrencyProtocol(EvalProtocol):
    name = "concurrency"
    version = "1.0.0"
    steps = STEPS
    in_main_job = False  # a stress protocol: run it with --protocol concurrency
    repeated = "timing"  # one run is one draw of a race: the report pools every repeat's facts

    def validate_case(self, case: dict) -> list[str]:
        cid, shape, problems = case["id"], case.get("shape"), []
        if shape not in SHAPES:
            return [f"case {cid!r}: shape {shape!r} is not one of {list(SHAPES)}"]
        if sorted(case["scopes"]) != sorted(SCOPES) or len(set(case["scopes"].values())) != 2:
            problems.append(f"case {cid!r}: needs the two distinct scopes {list(SCOPES)} (control, concurrent)")
        ops, targets = case["ops"], case["targets"]
        together = [op for op in ops if op["op"] == "concurrent"]
        if len(together) != 1 or together[0]["scope"] != "con":
            problems.append(f"case {cid!r}: needs exactly one concurrent op, in scope 'con'")
            return problems
        later = [op for op in ops if op["op"] == "write" and op["scope"] == "seq"]
        said = [m["content"] for op in later for m in op["messages"]]
        for w in together[0]["writes"]:
            if not all(m["content"] in said for m in w["messages"]):
                problems.append(f"case {cid!r}: every concurrent write must also be written, alone, in scope 'seq'")
        present = {n for op in ops if op["op"] == "expect" for n in op.get("present", [])}
        absent = {n for op in ops if op["op"] == "expect" for n in op.get("absent", [])}
        for scope in SCOPES:
            if not any(op["op"] == "expect" and op["scope"] == scope for op in ops):
                problems.append(f"case {cid!r}: needs an expect in scope {scope!r}")
        unknown = sorted((present | absent) - set(targets))
        if unknown:
            problems.append(f"case {cid!r}: expects name targets it does not define: {unknown}")
        if shape == "disjoint" and absent:
            problems.append(f"case {cid!r}: a disjoint case corrects nothing, so it expects nothing absent")
        if shape != "disjoint" and any(op.get("absent") != ["stale"] for op in ops if op["op"] == "expect"):
            problems.append(f"case {cid!r}: a {shape} case expects its corrected value 'stale' absent, in both scopes")
        if shape != "disjoint" and "current" not in present:
            problems.append(f"case {cid!r}: a {shape} case expects its correction's value 'current' present")
        written = " ".join(m["content"] for op in ops if op["op"] == "write" for m in op["messages"])
        for name in present | absent:
            if name in targets and targets[name]["token"].lower() not in written.lower():
                problems.append(f"case {cid!r}: target {name!r} is never written")
        return problems

    def generated_problems(self, case: dict) -> list[str]:
        from ..cases.rules import case_problems
        return case_problems(case)

    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        ops = group_ops(records)
        keys = ["S", "W"] + ([] if header["shape"] == "disjoint" else ["T"])
        errors = [describe_error(c) for o in ops for c in o.errors()]
        errors += [f"write_concurrent answered {len(c['result']['writes'])} writer(s) of {len(o.spec['writes'])}: "
                   "the adapter must answer each writer, in order" for o in ops for c in o.calls
                   if c["call"] == "write_concurrent" and "result" in c
                   and len(c["result"]["writes"]) != len(o.spec["writes"])]
        if errors:
            return [Cell(k, ERROR, "; ".join(errors[:3])) for k in keys]
        targets = header["targets"]
        seen = {scope: _seen(ops, scope, targets) for scope in SCOPES}
        if any(v is None for v in seen.values()):
            return [Cell(k, ERROR, "the case's expects did not run") for k in keys]
        skipped = [s for o in ops for s in o.skips if s["call"] == "write_concurrent"]
        cells, refused = [_sequential(seen["seq"])], _refused(ops)
        for k in keys[1:]:
            if skipped:
                cells.append(Cell(k, UNSUPPORTED, f"write_concurrent is unsupported: {skipped[0]['reason']}"))
            else:
                cell = (_lost if k == "W" else _torn)(seen, refused)
                cell.checks.append(_writers(ops, refused))
                cells.append(cell)
        return cells

    def error_cells(self, reason: str, header: dict | None = None) -> list[Cell]:
        disjoint = (header or {}).get("shape") == "disjoint"
        return [Cell(s.key, ERROR, reason) for s in self.steps if not (disjoint and s.key == "T")]

    def measures(self, cases: list[dict]) -> dict:
        """Per column, facts kept over facts measured (an ERROR cell is measured and earns nothing), with the
        Wilson 95% interval and the upper bound of the failure rate."""
        return {step.key: checked_rate([c for case in cases for c in case["cells"] if c["step"] == step.key])
                for step in self.steps}


def _seen(ops, scope: str, targets: dict) -> dict | None:
    """Per target an expect in ``scope`` named: served as current (final poll), and whether it was to be absent."""
    expects = [o for o in ops if o.spec["op"] == "expect" and o.spec["scope"] == scope]
    if not expects:
        return None
    out = {}
    for o in expects:
        for n in o.spec.get("present", []):
            out[n] = {"served": sight(o, targets[n]).served, "absent": False, "op": o.index}
        for n in o.spec.get("absent", []):
            out[n] = {"served": sight(o, targets[n]).served, "absent": True, "op": o.index}
    return out


def _writers(ops, refused: list[str]) -> dict:
    """The check row of the concurrent op itself (no verdict of its own): which writers were refused."""
    op = next((o for o in ops if o.spec["op"] == "concurrent"), None)
    return {"fact": "writers", "op": op.index if op else None, "ok": None,
            "detail": "; ".join(refused) + "; written again alone" if refused else "every writer was answered"}


def _refused(ops) -> list[str]:
    """The concurrent writers the system answered with an error (each wrote again, alone)."""
    out = []
    for o in ops:
        for c in o.calls:
            if c["call"] == "write_concurrent" and "result" in c:
                out += [f"writer {i + 1}: {w['error']}" for i, w in enumerate(c["result"]["writes"]) if "error" in w]
    return out


def _sequential(seq: dict) -> Cell:
    rows = []
    for n, s in seq.items():
        ok = s["served"] != s["absent"]
        rows.append({"fact": n, "scope": "seq", "op": s["op"], "ok": ok, **({} if ok else {"stage": DELIVERED if s["absent"] else UNLOCATED}),
                     "detail": "" if ok else (f"{n} is still served as current after its correction" if s["absent"]
                                              else f"{n} is not served")})
    bad = [r["detail"] for r in rows if r["ok"] is False]
    return Cell("S", FAIL, "written one after the other: " + "; ".join(bad), rows) if bad else Cell("S", PASS, "", rows)


def _lost(seen: dict, refused: list[str]) -> Cell:
    rows = []
    for n, s in seen["seq"].items():
        if s["absent"]:
            continue
        con = seen["con"].get(n, {})
        ok = None if not s["served"] else con.get("served", False)
        rows.append({"fact": n, "scope": "con", "op": con.get("op"), "ok": ok, **({"stage": NOT_STORED} if ok is False else {}),
                     "detail": (f"{n} is not served even when written alone" if ok is None else
                                "" if ok else f"{n} is not served after the concurrent writes")})
    note = f" ({'; '.join(refused)}; written again alone)" if refused else ""
    lost = [r["detail"] for r in rows if r["ok"] is False]
    if lost:
        return Cell("W", FAIL, "; ".join(lost) + note, rows)
    if all(r["ok"] is None for r in rows):
        return Cell("W", SKIP, "no fact is served even when written alone: nothing to compare", rows)
    return Cell("W", PASS, ("refused, not lost" + note) if refused else "", rows)


def _torn(seen: dict, refused: list[str]) -> Cell:
    seq, con = seen["seq"], seen["con"]
    stale = seq.get("stale")
    if stale is None or "current" not in seq:
        return Cell("T", SKIP, "the case names no corrected value", [])
    row = {"fact": "stale", "scope": "con", "op": con.get("stale", {}).get("op")}
    if stale["served"]:
        return Cell("T", SKIP, "the corrected value stays current when written one after the other too",
                    [{**row, "ok": None}])
    if not con.get("current", {}).get("served"):
        return Cell("T", SKIP, "the concurrent correction is not served (a lost write: see W)", [{**row, "ok": None}])
    if con.get("stale", {}).get("served"):
        note = f" ({'; '.join(refused)}; written again alone)" if refused else ""
        return Cell("T", FAIL, "the corrected value is still served as current beside its correction, written while "
                    "another writer wrote; written one after the other it is retired" + note,
                    [{**row, "ok": False, "stage": DELIVERED}])
    return Cell("T", PASS, "", [{**row, "ok": True}])
