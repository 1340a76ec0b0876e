"""Single-defect doubles for the contradiction protocol: each breaks exactly one column.

``MOVES[shape]`` is what the double's row must differ from the reference's in, per case shape
(a defect some shapes cannot show moves nothing there; where the protocol defines one column
through another, the dependent moves too and the docstring says why).
"""

from __future__ import annotations

from base import Double

CORRECTED = ("replacement", "polarity", "retraction", "partial")
WITH_NEW_VALUE = ("replacement", "polarity", "partial")
ALL = CORRECTED + ("bounded",)


def moves(shapes, cells):
    return {shape: dict(cells) if shape in shapes else {} for shape in ALL}


class FirstWriteFormerUntilCorrected(Double):
    """setup: until a third write reaches the scope, what the first write stored is served marked 'former'.
    Where the correction leaves no new value (retraction, bounded), the columns that judge only the stale value's
    absence (A, B, C, C') become SKIP: the reference hands history over only to a question about the past, so
    nothing is left to judge, and an absence is evidence only when the original was served before."""
    NAME = "c-setup"
    MOVES = {**moves(ALL, {"setup": "FAIL"}),
             **{shape: {"setup": "FAIL", "A": "SKIP", "B": "SKIP", "C": "SKIP", "C'": "SKIP"}
                for shape in ("retraction", "bounded")}}

    def write(self, scope, at, messages):
        out = super().write(scope, at, messages)
        n = self.count(f"writes:{scope}")
        if n == 1:
            self.remember(**{f"first:{scope}": out["ids"]})
        return out

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.note.get(f"writes:{scope}", 0) < 3:
            for item in out["items"]:
                if item["id"] in self.note.get(f"first:{scope}", []):
                    item["status"] = "former"
        return out


class NewValuesPendingUntilTheJob(Double):
    """A: a correction's new value is served marked 'former' (pending) until the background job confirms it.
    Retraction and bounded cases have no new value to serve, so nothing moves there. Where the door then serves
    nothing current (replacement, partial, polarity), B's absence of the stale value, or its qualification, proves
    nothing: SKIP."""
    NAME = "c-answer"
    MOVES = {**moves(WITH_NEW_VALUE, {"A": "FAIL"}),
             **{s: {"A": "FAIL", "B": "SKIP"} for s in ("replacement", "partial", "polarity")}}

    def write(self, scope, at, messages):
        out = super().write(scope, at, messages)
        correction = any(f.get("intent") in ("supersede", "retract") for f in self._extract(messages))
        if correction and not self.note.get("jobs"):
            self.remember(pending=self.note.get("pending", []) + out["ids"])
        return out

    def run_background_jobs(self, at):
        self.remember(pending=[], jobs=True)
        return super().run_background_jobs(at)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for item in out["items"]:
            if item["id"] in self.note.get("pending", []):
                item["status"], item["valid_to"], item["superseded_by"] = "former", None, None
        return out


class SupersedesOnlyAtTheJob(Double):
    """B: until the background job runs, a superseded or retracted value is still served as current.
    Where there is no new value (retraction), 'no longer served as current' is column A too."""
    NAME = "c-hygiene"
    MOVES = {**moves(WITH_NEW_VALUE, {"B": "FAIL"}), "retraction": {"A": "FAIL", "B": "FAIL"}, "bounded": {}}

    def run_background_jobs(self, at):
        self.remember(jobs=True)
        return super().run_background_jobs(at)

    def door_items(self, query, scope, at):
        items = super().door_items(query, scope, at)
        if not self.note.get("jobs"):
            for item in items:
                if item["status"] in ("superseded", "retracted"):
                    item.update(status="current", valid_to=None, superseded_by=None)
        return items


class JobRestoresTheOldValueAtTheDoor(Double):
    """C: the background job re-asserts the day-1 value from retained history into the door, until the next
    import rebuilds the door."""
    NAME = "c-durable"
    MOVES = moves(ALL, {"C": "FAIL"})

    def write(self, scope, at, messages):
        if self.note.get(f"day1:{scope}") is None:
            self.remember(**{f"day1:{scope}": [f["statement"] for f in self._extract(messages) if f.get("statement")]})
        return super().write(scope, at, messages)

    def run_background_jobs(self, at):
        self.remember(restored=True)
        return super().run_background_jobs(at)

    def import_history(self, scope, at, messages):
        self.remember(restored=False)
        return super().import_history(scope, at, messages)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.note.get("restored"):
            for text in self.note.get(f"day1:{scope}", []):
                out["items"].append({"text": text, "status": "current", "kind": "digest"})
                out["text"] += f"\n- {text}"
        return out


class ImportReassertsAsCurrent(Double):
    """C': the import path stores the old material as a new, current fact. U then cannot tell whether undoing
    the correction restores the original (the import already put it back): U is SKIP, as the protocol says."""
    NAME = "c-reentry"
    MOVES = {**moves(CORRECTED, {"C'": "FAIL", "U": "SKIP"}), "bounded": {"C'": "FAIL"}}

    def import_history(self, scope, at, messages):
        facts = [{**f, "valid_from": None, "valid_to": None} for f in self._extract(messages)]
        self.mem.state["tombstones"] = {}
        ids = []
        for f in facts:
            ids.append(self.mem._add(scope, self.note.get("now", at), f))
        self.mem.save()
        return {"ids": ids}

    def door(self, query, scope, door, at):
        self.remember(now=at)
        return super().door(query, scope, door, at)


class _FlatSummary(Double):
    """While ``note['flat']`` is set, the summary hands every source fact over as current."""

    def probe(self, store, scope, needle):
        out = super().probe(store, scope, needle)
        if store == "summaries" and self.note.get("flat"):
            for item in out.get("items", []):
                item.update(status="current", valid_to=None, superseded_by=None)
        return out


class ImportFlattensTheSummary(_FlatSummary):
    """C' (derived stores): the import rebuilds the summary with every source fact as current; the doors stay
    right. What derived stores asserted before the import is E's, and E passes here."""
    NAME = "c-reentry-derived"
    MOVES = moves(ALL, {"C'": "FAIL"})

    def import_history(self, scope, at, messages):
        self.remember(flat=True)
        return super().import_history(scope, at, messages)


class DoorHidesHistory(Double):
    """D: the door never hands over an item that is no longer current (history unreachable, nothing erased).
    "I quit X" still names X, so polarity cases keep D."""
    NAME = "c-history"
    MOVES = moves(("replacement", "retraction", "partial", "bounded"), {"D": "FAIL"})

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        kept = [i for i in out["items"] if i["status"] == "current"]
        return {"text": "\n".join(self._line(i) for i in kept) or "(nothing relevant)", "items": kept}


class JobSummaryIgnoresValidity(_FlatSummary):
    """E: the background job's summary hands every source fact over as current; an import rebuilds it correctly."""
    NAME = "c-derived"
    MOVES = moves(ALL, {"E": "FAIL"})

    def run_background_jobs(self, at):
        self.remember(flat=True)
        return super().run_background_jobs(at)

    def import_history(self, scope, at, messages):
        self.remember(flat=False)
        return super().import_history(scope, at, messages)


class SummaryWithoutQualifiers(Double):
    """E (judged): a system that qualifies its facts hands its summary over as bare text, no qualifier field: the
    summary's words decide. A bounded fact's own words carry its bound ("until 14 March"), so bounded keeps E."""
    NAME = "c-derived-text"
    MOVES = moves(CORRECTED, {"E": "FAIL"})

    def probe(self, store, scope, needle):
        out = super().probe(store, scope, needle)
        if store == "summaries":
            out["items"] = [{"text": i["text"], "kind": "summary"} for i in out.get("items", [])]
        return out


class CorrectionRetiresSiblings(Double):
    """S: a correction also retires every other current fact about the user (over-invalidation)."""
    NAME = "c-siblings"
    MOVES = moves(CORRECTED, {"S": "FAIL"})

    def write(self, scope, at, messages):
        before = {f["id"] for f in self.mem.facts(scope) if f["ended_by"] is None}
        out = super().write(scope, at, messages)
        if any(f.get("intent") in ("supersede", "retract") for f in self._extract(messages)):
            untouched = [fid for fid in sorted(before) if self.mem.state["facts"][fid]["ended_by"] is None]
            self.remember(retired=self.note.get("retired", []) + untouched)  # not what the correction itself closed
        return out

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for item in out["items"]:
            if item["id"] in self.note.get("retired", []) and item["status"] == "current":
                item["status"] = "superseded"
        return out


class UndoKeepsTheInvalidation(Double):
    """U: forgetting the correction leaves what it closed closed (no link back from a correction)."""
    NAME = "c-undo"
    MOVES = moves(CORRECTED, {"U": "FAIL"})

    def forget(self, scope, at, text):
        reopen, self.mem._reopen_closed_by = self.mem._reopen_closed_by, lambda fid: None
        try:
            return super().forget(scope, at, text)
        finally:
            self.mem._reopen_closed_by = reopen


DOUBLES = [FirstWriteFormerUntilCorrected, NewValuesPendingUntilTheJob, SupersedesOnlyAtTheJob,
           JobRestoresTheOldValueAtTheDoor, ImportReassertsAsCurrent, ImportFlattensTheSummary, DoorHidesHistory,
           JobSummaryIgnoresValidity, SummaryWithoutQualifiers, CorrectionRetiresSiblings, UndoKeepsTheInvalidation]
