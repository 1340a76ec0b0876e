"""The deletion-durability protocol (seed 000 §6): does a deleted memory stay deleted?

Thirteen steps, each a column of the matrix. Every negative assertion is paired with
controls: the value was reachable before (no vacuous pass) and a never-forgotten twin
sharing the question's words stays served (no pass by deleting everything). "Gone"
means unreachable through every door and the raw recall, asked both the natural
question and the value itself, matched as whole tokens.
"""

from __future__ import annotations

from ..common.tokens import found_in, tokens
from .base import (ERROR, FAIL, PASS, SKIP, UNSUPPORTED, Cell, EvalProtocol, OpRecords, StepDef, describe_error, group_ops)
from .observe import evidence, probe_polls, sight
from .stages import NOT_RETRIEVED, NOT_STORED, OPERATION, trail

#: Audit event names that record a deletion (compared case-folded).
DELETION_EVENTS = frozenset({
    "forget", "forgotten", "delete", "deleted", "remove", "removed", "purge", "purged",
    "erase", "erased", "reject", "rejected", "tombstone", "tombstoned", "deletion", "removal", "erasure",
    "forgetting", "expunge", "expunged",
})

#: Words in an event name that say the deletion did not happen (or was undone).
NOT_DONE = frozenset({"failed", "failure", "error", "undo", "undone", "undelete", "undeleted", "restore",
                      "restored", "cancelled", "canceled", "pending", "requested"})


def is_deletion(event: str) -> bool:
    """An audit event records a deletion when a word of its name is a deletion word ("memory_deleted",
    "DELETE", "forget") and none says it did not happen ("delete_failed", "undelete")."""
    words = set(tokens(event))
    return bool(words & DELETION_EVENTS) and not words & NOT_DONE


STEPS = (
    StepDef("1", "write", "the canary's source conversation and its twin are written"),
    StepDef("2", "present", "canary and twin are served before any deletion (control)", needs=("1",)),
    StepDef("3", "forget", "the canary is forgotten through the system's delete path", needs=("1",), essential="forget"),
    StepDef("4", "gone", "the canary is unreachable through every door and recall; the twin is still served", needs=("3",),
            skips=(("was never reachable in scope", "the value was never reachable in that scope before, so its absence proves nothing"), ("had not reported quiescence and the check", "the system gave no quiescence signal and the check could not be polled for the whole settle timeout"),)),
    StepDef("5", "refeed", "the original source conversation is written again", needs=("3",)),
    StepDef("6", "gone-after-refeed", "still unreachable after re-ingesting the source; twin served", needs=("3", "5"),
            skips=(("was never reachable in scope", "the value was never reachable in that scope before, so its absence proves nothing"), ("had not reported quiescence and the check", "the system gave no quiescence signal and the check could not be polled for the whole settle timeout"),)),
    StepDef("7", "jobs", "every background job the system has is run, the system restarts on its stores, then settles",
            needs=("1",), essential="run_background_jobs"),
    StepDef("8", "gone-after-jobs", "still unreachable after the background jobs and a restart; twin served",
            needs=("3", "7"),
            skips=(("was never reachable in scope", "the value was never reachable in that scope before, so its absence proves nothing"), ("had not reported quiescence and the check", "the system gave no quiescence signal and the check could not be polled for the whole settle timeout"),)),
    StepDef("9", "residue", "right after the forget (once it has taken effect), no store (vectors, history, summaries, "
            "buffers) holds the canary, and every store keeps the twin; what the re-feed and the jobs bring back is "
            "recorded per store", needs=("3",), essential="probe",
            skips=(("probes no store right after the forget", "the case has no probe right after the forget, so what the delete left cannot be told from what came back"), ("before deletion, so the probes prove nothing", "no store held the canary before the forget"), ("right after the forget, but the system had not reported quiescence", "no store showed it right after the forget, but the system gave no quiescence signal and the probes could not be polled for the whole settle timeout"),)),
    StepDef("10", "audit", "the deletion is audited as an event, without the deleted value", needs=("3",), essential="audit"),
    StepDef("11", "share", "a second canary is shared to another scope before deletion and served there (control)", essential="share"),
    StepDef("12", "forget-original", "the shared canary is forgotten in its own scope: gone there, its twin stays", needs=("11",), essential="forget",
            skips=(("was never reachable in scope", "the value was never reachable in that scope before, so its absence proves nothing"), ("had not reported quiescence and the check", "the system gave no quiescence signal and the check could not be polled for the whole settle timeout"),)),
    StepDef("13", "gone-from-copy", "the copy in the other scope is gone too; the copied twin stays", needs=("11", "12"),
            skips=(("was never reachable in scope", "the value was never reachable in that scope before, so its absence proves nothing"), ("had not reported quiescence and the check", "the system gave no quiescence signal and the check could not be polled for the whole settle timeout"),)),
)

#: The moments the stores are probed at: before the forget, right after it (once it has taken effect), and at the
#: end (after the re-feed, the jobs and a restart). Step 9 is decided by what the forget left (AFTER_FORGET).
BEFORE, AFTER_FORGET, END = "before", "after-forget", "end"
MOMENTS = (BEFORE, AFTER_FORGET, END)

_ORDER = {"ERROR": 4, "FAIL": 3, "SKIP": 2, "PASS": 1}


def _combine(outcomes: list[tuple[str, str, list[dict]]]) -> tuple[str, str, list[dict]]:
    """The worst verdict wins (ERROR > FAIL > SKIP > PASS); reasons of that verdict are joined."""
    if not outcomes:
        return PASS, "", []
    worst = max(outcomes, key=lambda o: _ORDER[o[0]])[0]
    reasons = [o[1] for o in outcomes if o[0] == worst and o[1]]
    checks = [c for o in outcomes for c in o[2]]
    return worst, "; ".join(dict.fromkeys(reasons)), checks


class DeletionProtocol(EvalProtocol):
    name = "deletion"
    version = "1.5.0"
    steps = STEPS
    moves = {"1.5.0": "step 9 is decided by what the forget left (every store right after the forget, once it has "
                      "taken effect), no longer also by what the re-feed and the jobs brought back, which steps 6 and 8 "
                      "score through the doors; each store's sub-verdict at each moment is recorded"}
    store_moments = {"9": MOMENTS}

    # ---------------------------------------------------------------- validation
    def validate_case(self, case: dict) -> list[str]:
        from ..cases.rules import case_problems
        from .deletion_rules import validate_deletion_case
        return validate_deletion_case(case, self) + case_problems(case)  # every target is a canary to remember

    # ---------------------------------------------------------------- scoring
    def score_case(self, header: dict, records: list[dict], capabilities: dict) -> list[Cell]:
        targets, scopes = header["targets"], header["scopes"]
        ops = group_ops(records)
        state = _State(capabilities, ops)
        per_step: dict[str, list] = {s.key: [] for s in self.steps}
        skipped: dict[str, list[str]] = {s.key: [] for s in self.steps}
        for op in ops:
            for skip in op.skips:
                skipped.setdefault(op.step, []).append(skip)
            outcome = state.judge(op, targets, scopes)
            if outcome is not None:
                per_step.setdefault(op.step, []).append(outcome)

        cells: dict[str, Cell] = {}
        for step in self.steps:
            cells[step.key] = self._cell(step, per_step[step.key], skipped[step.key], cells)
        return [cells[s.key] for s in self.steps]

    def _cell(self, step: StepDef, outcomes: list, skips: list[dict], done: dict[str, Cell]) -> Cell:
        for skip in skips:
            if skip["call"] == step.essential:
                return Cell(step.key, UNSUPPORTED, f"{skip['call']} is unsupported: {skip['reason']}")
        for need in step.needs:
            prior = done[need]
            title = f"step {need} ({self.step(need).name})"
            if prior.verdict == UNSUPPORTED:
                return Cell(step.key, UNSUPPORTED, f"needs {title}, which is unsupported")
            if prior.verdict == ERROR:
                return Cell(step.key, ERROR, f"{title} errored, so this step cannot be measured")
        verdict, reason, checks = _combine(outcomes)
        return Cell(step.key, verdict, reason, checks)


class _State:
    """What the scorer carries from op to op within one case."""

    def __init__(self, capabilities: dict, ops: list[OpRecords]):
        self.caps = capabilities
        self.ops = ops
        self.seen: set[tuple[str, str]] = set()          # (scope key, target) reachable at some expect
        self.forgotten: dict[str, list[str]] = {}        # target -> ids its forget returned
        self.moments: dict[str, dict[str, dict[str, list[dict]]]] = {}  # target -> moment -> store -> answers holding it
        self.probed: dict[str, OpRecords] = {}           # moment -> the probe op of that moment
        self.baseline_errors: list[str] = []

    def judge(self, op: OpRecords, targets: dict, scopes: dict):
        kind = op.spec["op"]
        if any(s["call"] != "settle" for s in op.skips):
            return None  # the step cell reports the unsupported call
        errors = op.errors()
        if kind == "probe" and op.step in ("2", "3"):  # before the forget, and right after it
            self._snapshot(op, targets, errors, BEFORE if op.step == "2" else AFTER_FORGET)
            return None
        if errors:
            return ERROR, "; ".join(describe_error(c) for c in errors[:3]), []
        if kind == "forget":
            ids = next((c["result"]["ids"] for c in op.calls if c["call"] == "forget"), [])
            self.forgotten[op.spec["target"]] = ids
            support = self.caps.get("operations", {}).get("forget", {})
            note = f"emulated: {support.get('reason')}" if support.get("support") == "emulated" else ""
            return PASS, note if ids else "; ".join(filter(None, [note, "forget reported no ids"])), []
        if kind == "jobs":
            return self._jobs(op)
        if kind == "expect":
            return self._expect(op, targets)
        if kind == "probe":
            return self._probe(op, targets)
        if kind == "audit":
            return self._audit(op, targets)
        return PASS, "", []

    def _jobs(self, op: OpRecords):
        ran = next((c["result"]["jobs"] for c in op.calls if c["call"] == "run_background_jobs"), [])
        declared = [j["name"] for j in self.caps.get("background_jobs", [])]
        missing = [j for j in declared if j not in ran]
        if missing:
            return FAIL, f"declared background jobs were not run: {missing}", \
                [{"ran": ran, "declared": declared, "ok": False, "stage": OPERATION}]
        return PASS, f"ran {ran}", [{"ran": ran, "declared": declared}]

    def _expect(self, op: OpRecords, targets: dict):
        scope = op.spec["scope"]
        outcomes = []
        control = bool(op.spec.get("absent"))
        for name in op.spec.get("present", []):
            ok = sight(op, targets[name]).served
            detail = "served as current" if ok else f"not served as current when asked {targets[name]['queries']}"
            why = (f"control {name} not served as current in scope {scope!r} (asked {targets[name]['queries']}): "
                   "an absence next to a lost control proves nothing" if control
                   else f"{name} not served as current in scope {scope!r} (asked {targets[name]['queries']})")
            check = {"op": op.index, "check": "present", "target": name, "scope": scope, "ok": ok, "detail": detail}
            if not ok:
                seen = trail(self.ops, op.index, targets[name], self.caps)
                check.update(stage=seen.reached(), trail=seen.as_dict())
            outcomes.append((PASS if ok else FAIL, "" if ok else why, [check]))
        for name in op.spec.get("absent", []):
            s = sight(op, targets[name])
            check = {"op": op.index, "check": "absent", "target": name, "scope": scope}
            if s.reachable:
                seen = trail(self.ops, op.index, targets[name], self.caps)
                outcomes.append((FAIL, f"{name} still reachable in scope {scope!r}: {s.where}",
                                 [{**check, "ok": False, "detail": s.where, "stage": seen.survived(),
                                   "trail": seen.as_dict()}]))
            elif (scope, name) not in self.seen:
                outcomes.append((SKIP, f"{name} was never reachable in scope {scope!r} before, so its absence proves nothing",
                                 [{**check, "ok": None, "detail": "vacuous"}]))
            elif not (op.settled_before or op.polled_to_timeout()):
                outcomes.append((SKIP, f"{name} was not seen, but the system had not reported quiescence and the check "
                                       "was not polled for the whole settle timeout: it may not have caught up",
                                 [{**check, "ok": None, "detail": "not settled"}]))
            else:
                how = "polled for the whole settle timeout" if op.polled() else "after the system settled"
                outcomes.append((PASS, "", [{**check, "ok": True, "detail": f"unreachable ({how})"}]))
        for name in [*op.spec.get("present", []), *op.spec.get("absent", [])]:
            if sight(op, targets[name]).reachable:
                self.seen.add((scope, name))
        return _combine(outcomes)

    def _snapshot(self, op: OpRecords, targets: dict, errors: list[dict], moment: str) -> None:
        self.baseline_errors += [describe_error(c) for c in errors]
        self.probed[moment] = op
        for name in op.spec["targets"]:
            self.moments.setdefault(name, {})[moment] = self._held(op, targets, name)

    def _held(self, op: OpRecords, targets: dict, name: str) -> dict[str, list[dict]]:
        """Per store, the probe answers (in the polls that count) that held ``name``."""
        kinds = {s["name"]: s.get("kind", "") for s in self.caps.get("stores", [])}
        controls = [targets[n] for n in op.spec["targets"] if n != name and n not in self.forgotten]
        return probe_polls(op, targets[name], kinds, controls)

    def _store_rows(self, name: str, targets: dict) -> list[dict]:
        """One sub-verdict per store at each moment probed: held or clean, with the evidence when held."""
        rows = []
        for moment in MOMENTS:
            op = self.probed.get(moment)
            unsettled = op is not None and not (op.settled_before or op.polled_to_timeout())
            for store, calls in sorted(self.moments.get(name, {}).get(moment, {}).items()):
                row = {"check": "store", "target": name, "store": store, "moment": moment, "held": bool(calls)}
                if unsettled:
                    row["unsettled"] = True
                if calls:
                    row["evidence"] = evidence(calls[0], targets[name])
                    if "poll" in calls[0]:
                        row["poll"] = calls[0]["poll"]
                rows.append(row)
        return rows

    def _probe(self, op: OpRecords, targets: dict):
        if self.baseline_errors:
            return ERROR, "an earlier probe (before or right after the forget) failed: " + \
                "; ".join(self.baseline_errors[:3]), []
        self._snapshot(op, targets, [], END)
        outcomes = []
        for name in op.spec["targets"]:
            held = {m: sorted(s for s, calls in self.moments[name].get(m, {}).items() if calls) for m in MOMENTS}
            rows = self._store_rows(name, targets)
            check = {"op": op.index, "check": "stores", "target": name}
            if name in self.forgotten:
                right_after, later = held[AFTER_FORGET], held[END]
                after_op = self.probed.get(AFTER_FORGET)
                came_back = (f"; after the re-feed and the jobs, {later} hold it (what came back: steps 6 and 8 score "
                             "what of it reaches the doors)") if later else ""
                if after_op is None:
                    outcomes.append((SKIP, f"the case probes no store right after the forget, so what the delete left "
                                           f"cannot be told from what the re-feed brought back{came_back}",
                                     [{**check, "ok": None}, *rows]))
                elif right_after:
                    outcomes.append((FAIL, f"{name} still held right after the forget by {right_after}{came_back}",
                                     [{**check, "ok": False, "stage": NOT_RETRIEVED}, *rows]))
                elif not held[BEFORE]:
                    outcomes.append((SKIP, f"no store held {name} before deletion, so the probes prove nothing",
                                     [{**check, "ok": None}, *rows]))
                elif not (after_op.settled_before or after_op.polled_to_timeout()):
                    outcomes.append((SKIP, f"no store showed {name} right after the forget, but the system had not "
                                           "reported quiescence and the probes were not polled for the whole settle "
                                           "timeout", [{**check, "ok": None}, *rows]))
                else:
                    outcomes.append((PASS, f"no store held {name} right after the forget{came_back}" if later else "",
                                     [{**check, "ok": True}, *rows]))
            else:
                lost = sorted({s for m in (AFTER_FORGET, END) for s in held[BEFORE] if s not in held[m]
                               and s in self.moments[name].get(m, {})})
                outcomes.append((FAIL if lost else PASS,
                                 f"control {name} lost from store(s) {lost}: over-deletion" if lost else "",
                                 [{**check, "ok": not lost, **({"stage": NOT_STORED} if lost else {})}]))
        return _combine(outcomes)

    def _audit(self, op: OpRecords, targets: dict):
        events = next((c["result"]["events"] for c in op.calls if c["call"] == "audit"), [])
        ids = {i for forgotten in self.forgotten.values() for i in forgotten}
        deletions = [e for e in events if is_deletion(e["event"])]
        wanted = {str(i) for i in ids}
        matching = [e for e in deletions if not wanted or str(e.get("memory_id")) in wanted]
        leaks = [name for name in self.forgotten if found_in(events, targets[name]["token"])]
        check = {"op": op.index, "check": "audit", "events": len(events), "deletion_events": len(deletions),
                 "forgotten_ids": sorted(ids)}
        if leaks:
            return FAIL, f"the audit trail still holds the deleted value of {leaks} in plaintext", \
                [{**check, "ok": False, "stage": NOT_RETRIEVED}]
        if not matching:
            what = f"for the forgotten id(s) {sorted(ids)}" if ids else "at all"
            return FAIL, f"no deletion event {what} among {len(events)} audit event(s)", \
                [{**check, "ok": False, "stage": OPERATION}]
        return PASS, "", [{**check, "ok": True}]

