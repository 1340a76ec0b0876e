"""The contradiction protocol (seed 000 §7): does a correction hold, without becoming amnesia?

A case writes an original value on day 1 and displaces it later (replacement, polarity,
retraction, a partial change, or a validity bound passing on the harness clock), by saying
so (a write) or, in a case set that corrects through the system's own update API, by an
update; then it scores columns, never one number:

- setup: the original and a sibling fact are served before the correction (the control)
- A answer: the door serves the current value (for retraction and bounded: it no longer
  serves the old one as current)
- B hygiene: the stale value is absent from the door, or present but qualified
- C durability: A and B again after every background job; C' after the day-1 material is
  re-fed through a different write path (import), at its original time (the doors, and any derived
  store the import made assert the stale value when it did not before)
- D history: the old value is still knowable when asked about the past
- E derived reach: after the background jobs and before any re-import, derived stores no longer
  assert the stale value as current
- S siblings: the never-contradicted sibling (and the unchanged part of a compound fact)
  is still served: over-invalidation is a real failure
- U undo: once the correction itself is forgotten, the original value is current again

"Served" means served as current everywhere (protocols/observe.py): a value the door hands over
only as former, superseded, retracted or expired is not served.
"""

from __future__ import annotations

from .base import ERROR, FAIL, PASS, SKIP, UNSUPPORTED, Cell, EvalProtocol, OpRecords, StepDef, group_ops
from .deletion import _combine
from .hygiene import door_answers, hygiene, judge_for
from .observe import holds, items_holding, served_as_current, sight, store_holds
from .stages import DELIVERED, trail

STEPS = (
    StepDef("setup", "setup", "the original value and its sibling are served before the correction (control)"),
    StepDef("A", "answer", "the door serves the current value (retraction, bounded: no longer the old one as current)",
            needs=("setup",),
            skips=(("served neither value: absence proves nothing", "neither the stale nor the current value was served, and nothing was served as current before: an absence proves nothing"), ("without any qualifier the system exposes", "the stale value is mentioned with no qualifier the system exposes, and the run had no judge"), ("served the stale value only as no longer current, and nothing as current", "the stale value is served only as former while nothing is served as current: a qualifier on everything proves no correction"),)),
    StepDef("B", "hygiene", "the stale value is absent from the door, or present but qualified as former",
            needs=("setup",),
            skips=(("served neither value: absence proves nothing", "neither the stale nor the current value was served, and nothing was served as current before: an absence proves nothing"), ("without any qualifier the system exposes", "the stale value is mentioned with no qualifier the system exposes, and the run had no judge"), ("served the stale value only as no longer current, and nothing as current", "the stale value is served only as former while nothing is served as current: a qualifier on everything proves no correction"),)),
    StepDef("C", "durable", "A and B still hold after every background job ran and the system restarted", needs=("setup",),
            essential="run_background_jobs",
            skips=(("the case has no", "the case has no assessment at this phase"), ("served neither value: absence proves nothing", "neither the stale nor the current value was served, and nothing was served as current before: an absence proves nothing"), ("without any qualifier the system exposes", "the stale value is mentioned with no qualifier the system exposes, and the run had no judge"), ("served the stale value only as no longer current, and nothing as current", "the stale value is served only as former while nothing is served as current: a qualifier on everything proves no correction"),)),
    StepDef("C'", "re-entry", "A and B still hold, and no derived store newly asserts the stale value, after the day-1 "
            "material is re-fed through another write path", needs=("setup",), essential="import_history",
            skips=(("the case has no", "the case has no assessment at this phase"), ("served neither value: absence proves nothing", "neither the stale nor the current value was served, and nothing was served as current before: an absence proves nothing"), ("without any qualifier the system exposes", "the stale value is mentioned with no qualifier the system exposes, and the run had no judge"), ("served the stale value only as no longer current, and nothing as current", "the stale value is served only as former while nothing is served as current: a qualifier on everything proves no correction"),)),
    StepDef("D", "history", "the old value is still knowable when asked about the past", needs=("setup",)),
    StepDef("E", "derived", "after the background jobs, derived stores (summaries, profiles, edges) no longer assert "
            "the stale value as current", needs=("setup",), essential="probe",
            skips=(("served neither value: absence proves nothing", "neither the stale nor the current value was served, and nothing was served as current before: an absence proves nothing"), ("without any qualifier the system exposes", "the stale value is mentioned with no qualifier the system exposes, and the run had no judge"), ("served the stale value only as no longer current, and nothing as current", "the stale value is served only as former while nothing is served as current: a qualifier on everything proves no correction"), ("no derived store held the original value before the correction", "no derived store held the original before the correction, so there is nothing for the correction to reach"),)),
    StepDef("S", "siblings", "the never-contradicted sibling (and unchanged parts) survive the correction",
            needs=("setup",),
            skips=(("no sibling was served as current before the correction", "the control sibling was not served before the correction, so losing it proves nothing"),)),
    StepDef("U", "undo", "once the correction itself is forgotten, the original value is current again",
            needs=("setup",), essential="forget",
            skips=(("nothing was corrected in this case", "a bounded case: nothing was corrected, so nothing is undone"), ("the correction never retired the original", "the correction never retired the original (column B failed), so undoing it has nothing to restore"), ("had already put it back beside the correction", "the jobs or the re-import had already put the original back before the undo, so what the undo restores cannot be told apart"), ("served without qualifiers the system exposes", "the original is back, but without qualifiers the system exposes; deciding whether it is current needs the judge"),)),
)

PHASES = {"now": ("A", "B", "D"), "after-jobs": ("C",), "after-reimport": ("C'",)}


class ContradictionProtocol(EvalProtocol):
    name = "contradiction"
    version = "1.7.0"
    steps = STEPS
    uses_judge = True

    def validate_case(self, case: dict) -> list[str]:
        from .contradiction_rules import validate_contradiction_case
        return validate_contradiction_case(case)

    def generated_problems(self, case: dict) -> list[str]:
        from ..cases.rules import case_problems
        return case_problems(case, words=("current",) if case["shape"] == "polarity" else ())  # "quit" is a word

    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        return _Scorer(header, records, capabilities).cells()


class _Scorer:
    def __init__(self, header: dict, records: list[dict], caps: dict):
        self.t = header["targets"]
        self.caps = caps
        self.ops = group_ops(records)
        self.judges = [r for r in records if r.get("kind") == "judge"]
        self.at = {r["index"]: r["at"] for r in records if r.get("kind") == "op"}
        self.mechanical = bool(caps.get("qualifiers"))
        self.current = self.t.get("current")
        self.stale = self.t["original"]
        self.derived = {s["name"] for s in caps.get("stores", []) if s.get("role", "derived") == "derived"}

    def _op(self, step: str, kind: str) -> OpRecords | None:
        return next((o for o in self.ops if o.step == step and o.spec["op"] == kind), None)

    def _judges(self, op: OpRecords) -> list[dict]:
        return [j for j in self.judges if j["index"] == op.index]

    def cells(self) -> list[Cell]:
        cells: dict[str, Cell] = {}
        skipped = {s["call"] for o in self.ops for s in o.skips}
        setup = self._setup()
        cells["setup"] = setup
        fix = next((s for o in self.ops if o.step == "contradict" and o.spec["op"] in ("update", "write")
                    for s in o.skips if s["call"] == o.spec["op"]), None)
        for step in STEPS[1:]:
            if fix is not None:  # the correction itself (an update) could not be made: nothing after it is measured
                cells[step.key] = Cell(step.key, UNSUPPORTED, f"the correction needs {fix['call']}, which is "
                                                              f"unsupported: {fix['reason']}")
            elif step.essential and step.essential in skipped:
                reason = next(s["reason"] for o in self.ops for s in o.skips if s["call"] == step.essential)
                cells[step.key] = Cell(step.key, UNSUPPORTED, f"{step.essential} is unsupported: {reason}")
            elif setup.verdict == ERROR:
                cells[step.key] = Cell(step.key, ERROR, "setup errored, so this column cannot be measured")
            else:
                cells[step.key] = getattr(self, "_" + {"C'": "Cp"}.get(step.key, step.key))()
        return [cells[s.key] for s in STEPS]

    # ------------------------------------------------------------------ columns
    def _setup(self) -> Cell:
        op = self._op("setup", "assess")
        errs = op.errors()
        if errs:
            return Cell("setup", ERROR, errs[0].get("error", {}).get("message", "a door call failed"))
        missing = [n for n in op.spec.get("ask", []) if not sight(op, self.t[n]).served]
        if missing:
            return Cell("setup", FAIL, f"not served as current before the correction: {missing}",
                        [{"op": op.index, "missing": missing, "ok": False, "stage": self._reached(op, missing[0])}])
        return Cell("setup", PASS, "", [{"op": op.index, "served": op.spec.get("ask", [])}])

    def _reached(self, op: OpRecords, name: str, queries: list[str] | None = None) -> str:
        """How far a value that should have been served got (protocols/stages.py)."""
        target = self.t[name]
        return trail(self.ops, op.index, target, self.caps, queries or target["queries"]).reached()

    def _setup_ok(self) -> bool:
        op = self._op("setup", "assess")
        return sight(op, self.stale).served

    def _answer(self, step: str) -> tuple[str, str, list[dict], bool]:
        op = self._op(step, "assess")
        if self.current is not None:
            answers, errors = door_answers(op, self.current["queries"], every_poll=False)
            if errors:
                return ERROR, errors[0], [], False
            ok = any(served_as_current(a, self.current, self.at[op.index]) for _, a in answers)
            if ok:
                return PASS, "", [{"op": op.index, "current": "served as current"}], False
            held = any(holds(a, self.current) for _, a in answers)
            why = "is served only as no longer current" if held else "is not served"
            return FAIL, f"the current value {self.current['token']!r} {why} for {self.current['queries']}", \
                [{"op": op.index, "current": "qualified" if held else "not served", "ok": False,
                  "stage": self._reached(op, "current")}], False
        answers, errors = door_answers(op, self.stale["queries"])
        if errors:
            return ERROR, errors[0], [], False
        h = hygiene(answers, self.stale, None, self.at[op.index], self.mechanical, self._judges(op),
                    self._setup_ok(), "the answer")
        return h.verdict, h.reason, [{"op": op.index, **c} for c in h.checks], h.judged

    def _hygiene(self, step: str) -> tuple[str, str, list[dict], bool]:
        op = self._op(step, "assess")
        answers, errors = door_answers(op, self.stale["queries"])
        if errors:
            return ERROR, errors[0], [], False
        last = door_answers(op, self.current["queries"], every_poll=False)[0] if self.current else []
        served_now = any(served_as_current(a, self.current, self.at[op.index]) for _, a in last)
        h = hygiene(answers, self.stale, self.current, self.at[op.index], self.mechanical, self._judges(op),
                    served_now or (self.current is None and self._setup_ok()), "the door")
        return h.verdict, h.reason, [{"op": op.index, **c} for c in h.checks], h.judged

    @staticmethod
    def _cell(key: str, verdict: str, reason: str, checks: list[dict], judged: bool) -> Cell:
        return Cell(key, verdict, reason, checks, "judged" if judged else "mechanical")

    def _A(self) -> Cell:
        return self._cell("A", *self._answer("now"))

    def _B(self) -> Cell:
        return self._cell("B", *self._hygiene("now"))

    def _again(self, key: str, step: str, extra: list = ()) -> Cell:
        if self._op(step, "assess") is None:
            return Cell(key, SKIP, f"the case has no {step} assessment")
        a, b = self._answer(step), self._hygiene(step)
        parts = [(a[0], f"answer: {a[1]}" if a[1] else "", a[2]), (b[0], f"hygiene: {b[1]}" if b[1] else "", b[2])]
        verdict, reason, checks = _combine(parts + [e[:3] for e in extra])
        return self._cell(key, verdict, reason, checks, a[3] or b[3] or any(e[3] for e in extra))

    def _C(self) -> Cell:
        for kind in ("jobs", "restart"):
            op = self._op("jobs", kind)
            errs = op.errors() if op else []
            if errs:
                return Cell("C", ERROR, f"the {kind} step failed: {errs[0]['error']['message']}")
        return self._again("C", "after-jobs")

    def _Cp(self) -> Cell:
        imp = self._op("reimport", "import")
        errs = imp.errors() if imp else []
        if errs:
            return Cell("C'", ERROR, f"the re-import failed: {errs[0]['error']['message']}")
        probe, before = self._op("after-reimport", "probe"), self._op("derived", "probe")
        extra = []
        if probe is not None and before is not None and not probe.skips and self.derived:
            # what the import did to derived stores is C'; what they asserted before it is E's
            v, _, checks, judged = self._derived(probe)
            if v == ERROR:
                extra.append((ERROR, "a derived-store probe after the re-import failed", [], judged))
            else:
                worse = sorted(self._unqualified_stores(checks) - self._unqualified_stores(self._derived(before)[2]))
                extra.append((FAIL if worse else PASS,
                              f"derived stores: {worse} assert the stale value as current after the re-import, "
                              "and did not before it" if worse else "", [c for c in checks if c.get("store") in worse],
                              judged))
        return self._again("C'", "after-reimport", extra)

    @staticmethod
    def _unqualified_stores(checks: list[dict]) -> set[str]:
        return {c["store"] for c in checks if c.get("stale") == "unqualified" and "store" in c}

    def _D(self) -> Cell:
        op = self._op("now", "assess")
        queries = self.stale.get("history_queries", [])
        answers, errors = door_answers(op, queries, every_poll=False)
        if errors:
            return Cell("D", ERROR, errors[0])
        if any(holds(a, self.stale) for _, a in answers):
            return Cell("D", PASS, "", [{"op": op.index, "history": "knowable"}])
        return Cell("D", FAIL, f"the former value {self.stale['token']!r} is no longer knowable when asked "
                               f"{queries}: the correction became amnesia",
                    [{"op": op.index, "history": "lost", "ok": False,
                      "stage": self._reached(op, "original", queries)}])

    def _derived(self, final: OpRecords) -> tuple[str, str, list[dict], bool]:
        """Do the derived stores assert the stale value as current (hygiene over every poll)?"""
        base = self._op("setup", "probe")
        for op in (base, final):
            errs = op.errors()
            if errs:
                return ERROR, f"a probe failed: {errs[0]['error']['message']}", [], False
        kinds = {s["name"]: s.get("kind", "") for s in self.caps.get("stores", [])}
        held_before = {c["args"]["store"] for c in base.calls if c["args"]["store"] in self.derived
                       and "result" in c and store_holds(c, self.stale, kinds)}
        answers = []
        for c in final.calls:
            if c["args"]["store"] in self.derived and c["args"]["needle"]["token"] == self.stale["token"]:
                where = {"store": c["args"]["store"], **({"poll": c["poll"]} if "poll" in c else {})}
                answers.append((where, {"text": "\n".join(c["result"]["evidence"]), "items": c["result"].get("items", [])}))
        h = hygiene(answers, self.stale, self.current, self.at[final.index], self.mechanical, self._judges(final),
                    bool(held_before), "a derived store")
        checks = [{"op": final.index, "held_before": sorted(held_before), **c} for c in h.checks]
        reason = h.reason
        if h.verdict == SKIP and not held_before:
            reason = "no derived store held the original value before the correction, so there is nothing to reach"
        return h.verdict, reason, checks, h.judged

    def _E(self) -> Cell:
        if not self.derived:
            return Cell("E", UNSUPPORTED, "the system declares no derived store")
        return self._cell("E", *self._derived(self._op("derived", "probe")))

    def _retired(self, step: str) -> bool | None:
        """Was the original no longer served as current at ``step``? (None: not measured or undecided)."""
        if self._op(step, "assess") is None:
            return None
        verdict = self._hygiene(step)[0]
        return {PASS: True, FAIL: False}.get(verdict)

    def _U(self) -> Cell:
        op = self._op("after-undo", "assess")
        forget = self._op("undo", "forget")
        if op is None or forget is None:
            return Cell("U", SKIP, "nothing was corrected in this case, so there is nothing to undo")
        for o in (forget, op):
            if o.errors():
                return Cell("U", ERROR, o.errors()[0]["error"]["message"])
        phases = [p for p in ("now", "after-jobs", "after-reimport") if self._op(p, "assess") is not None]
        retired = {p: self._retired(p) for p in phases}
        if phases and retired[phases[-1]] is False:  # the original was served as current right before the undo
            if all(v is False for v in retired.values()):
                return Cell("U", SKIP, "the correction never retired the original (it was still served as current "
                                       "after the correction, column B), so undoing the correction has nothing to restore")
            first = next(i for i, p in enumerate(phases) if retired[p] is not False)
            came = next((p for p in phases[first:] if retired[p] is False), phases[-1])
            back = {"after-jobs": "the background jobs", "after-reimport": "the re-import"}.get(came, "something")
            return Cell("U", SKIP, f"the correction retired the original, but {back} had already put it back beside "
                                   "the correction, so whether undoing the correction restores it cannot be told apart")
        answers, _ = door_answers(op, self.stale["queries"], every_poll=False)
        held = [(w, a) for w, a in answers if holds(a, self.stale)]
        if not held:
            return Cell("U", FAIL, f"the original value {self.stale['token']!r} is gone: forgetting the correction "
                                   "did not bring it back", [{"op": op.index, "original": "absent", "ok": False,
                                                              "stage": self._reached(op, "original")}], "mechanical")
        at = self.at[op.index]
        checks, verdicts, judged = [], [], False
        for where, a in held:
            if self.mechanical and items_holding(a, self.stale):
                ok = served_as_current(a, self.stale, at)
                verdicts.append(ok)
                checks.append({"op": op.index, **where, "original": "current" if ok else "still former",
                               **({} if ok else {"ok": False, "stage": DELIVERED})})
                continue
            j = judge_for(self._judges(op), where)
            if j is None or "error" in j:
                checks.append({"op": op.index, **where, "original": "needs-judge"})
                verdicts.append(None)
                continue
            judged = True
            ok = j["result"]["verdict"] == "unqualified"  # presented as current: what an undo must restore
            verdicts.append(ok)
            checks.append({"op": op.index, **where, "original": "current" if ok else j["result"]["verdict"],
                           "method": "judged", **({} if ok else {"ok": False, "stage": DELIVERED})})
        method = "judged" if judged else "mechanical"
        if any(v is True for v in verdicts):
            return Cell("U", PASS, "", checks, method)
        if all(v is None for v in verdicts):
            return Cell("U", SKIP, "the original is served without qualifiers the system exposes; deciding whether it "
                                   "is current again needs the judge", checks, method)
        return Cell("U", FAIL, "the original value is served but still marked as no longer current: the correction's "
                               "invalidation outlived the correction", checks, method)

    def _S(self) -> Cell:
        setup = self._op("setup", "assess")
        names = [n for n in ("sibling", "kept") if n in self.t and sight(setup, self.t[n]).served]
        if not names:
            return Cell("S", SKIP, "no sibling was served as current before the correction, so losing it proves nothing")
        outcomes = []
        for step in ("now", "after-jobs", "after-reimport"):
            op = self._op(step, "assess")
            if op is None or not op.calls:
                continue
            errs = op.errors()
            if errs:
                outcomes.append((ERROR, errs[0]["error"]["message"], []))
                continue
            lost = [n for n in names if not sight(op, self.t[n]).served]
            check = {"op": op.index, "phase": step, "lost": lost}
            if lost:
                check.update(ok=False, stage=self._reached(op, lost[0]))
            outcomes.append((FAIL if lost else PASS,
                             f"over-invalidation: {lost} no longer served as current ({step})" if lost else "", [check]))
        return Cell("S", *_combine(outcomes))

