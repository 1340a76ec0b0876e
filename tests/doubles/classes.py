"""Doubles for the five classes of misclassification seen from outside, in pairs.

Each class has a correct system and one with the defect (or, for the harness's own blind spots, the
same behaviour shown two ways): tests/test_doubles_classes.py asserts the pair's rows differ in
exactly the cells the class is about.
"""

from __future__ import annotations

import json
import threading
import time

from adapterkit import contains
from base import Double


# ---------------------------------------------------------------- 1. qualifiers count everywhere
class MarksCorrectionsRight(Double):
    NAME = "q-right"
    HISTORY_AT_DOOR = "always"  # the qualifier classes judge history the door hands over, marked


class ClosesTheWrongValue(Double):
    """A correction marks the NEW value superseded and leaves the old one current."""
    NAME = "q-wrong-value"
    HISTORY_AT_DOOR = "always"

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        successors = {i["superseded_by"] for i in out["items"] if i.get("superseded_by")}
        for item in out["items"]:
            if item["status"] in ("superseded", "retracted"):
                item.update(status="current", valid_to=None, superseded_by=None)
            elif item["id"] in successors:
                item["status"] = "superseded"
        return out


class MarksEverythingFormer(Double):
    """Every item reaches the door marked 'former', the current value too."""
    NAME = "q-all-former"
    HISTORY_AT_DOOR = "always"

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for item in out["items"]:
            item["status"] = "former"
        return out


class RetiresTheTwinOnForget(Double):
    """Forgetting the canary also marks the never-forgotten twin 'former' (deletion's control)."""
    NAME = "q-twin"

    def forget(self, scope, at, text):
        self.remember(forgot=True)
        return super().forget(scope, at, text)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.note.get("forgot"):
            for item in out["items"]:
                item["status"] = "former"
        return out


# ---------------------------------------------------------------- 2. absences wait for the system
class _NoSignal(Double):
    """No quiescence signal: writes (and imports) are applied ``LAG`` seconds after they are made."""
    LAG = 1.5
    TOMBSTONES = True   # a re-fed forgotten value is rejected when it is finally applied
    REASSERT = False    # an import stores old material as a new current fact instead of as history

    def __init__(self, config):
        super().__init__(config)
        self.pending: list = []
        self.lock = threading.Lock()

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["settle"] = {"support": "unsupported", "reason": "no quiescence signal"}
        return caps

    def _apply(self):
        with self.lock:
            due = [p for p in self.pending if p[0] <= time.monotonic()]
            self.pending = [p for p in self.pending if p[0] > time.monotonic()]
        for _, kind, scope, at, messages in due:
            if kind == "import":
                super().import_history(scope, at, messages)
            elif kind == "reassert":
                for f in self._extract(messages):
                    self.mem._add(scope, at, {**f, "valid_from": None, "valid_to": None})
                self.mem.save()
            elif self.TOMBSTONES:
                super().write(scope, at, messages)
            else:
                stones, self.mem.state["tombstones"] = self.mem.state["tombstones"], {}
                try:
                    super().write(scope, at, messages)
                finally:
                    self.mem.state["tombstones"] = stones
                    self.mem.save()

    def _later(self, kind, scope, at, messages):
        with self.lock:
            self.pending.append((time.monotonic() + self.LAG, kind, scope, at, messages))
        return {"ids": []}

    def write(self, scope, at, messages):
        return self._later("write", scope, at, messages)

    def import_history(self, scope, at, messages):
        if self.REASSERT:
            return self._later("reassert", scope, self.note.get("now", at), messages)
        return self._later("import", scope, at, messages)

    def door(self, query, scope, door, at):
        self.remember(now=at)
        self._apply()
        return super().door(query, scope, door, at)

    def recall(self, query, scope, k, at):
        self._apply()
        return super().recall(query, scope, k, at)

    def probe(self, store, scope, needle):
        self._apply()
        return super().probe(store, scope, needle)

    def forget(self, scope, at, text):
        self._apply()
        return super().forget(scope, at, text)


class CorrectsLate(_NoSignal):
    """Correct, only slow: a correction (and an import) reaches the door 1.5 s after it is written."""
    NAME = "a-corrects-late"


class ReimportsLateAsCurrent(_NoSignal):
    """Slow, and the import stores day-1 material as a new current fact: the first polls look clean."""
    NAME = "a-reimport-late"
    REASSERT = True


class IndexesLateWithTombstones(_NoSignal):
    """Correct, only slow: a re-fed value is rejected when it is finally indexed."""
    NAME = "a-late-right"


class IndexesLateNoTombstones(_NoSignal):
    """Slow, and a re-fed source is indexed again 1.5 s later: the early polls look clean."""
    NAME = "a-late-refed"
    TOMBSTONES = False


class FlickersAfterForget(Double):
    """No quiescence signal; after the forget the canary comes back in every third door answer."""
    NAME = "a-flicker"

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["settle"] = {"support": "unsupported", "reason": "no quiescence signal"}
        return caps

    def forget(self, scope, at, text):
        if "gone" not in self.note:
            self.remember(gone=[dict(f) for f in self.mem.matching(
                scope, text, self._extract([{"role": "user", "content": text}]))])
        return super().forget(scope, at, text)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        if self.count("doors") % 3 == 0:
            for f in self.note.get("gone", []):
                out["items"].append(self._item(f, at))
        return out


class _GhostAfterForget(Double):
    """No quiescence signal; ``DELAY`` s after the forget returns, a stale re-index queue puts the forgotten
    statement back into the vector store, until the next write rebuilds the index."""
    DELAY = None

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["settle"] = {"support": "unsupported", "reason": "no quiescence signal"}
        return caps

    def forget(self, scope, at, text):
        if self.DELAY is not None and "ghost" not in self.note:
            self.remember(ghost=[time.time() + self.DELAY, text])
        return super().forget(scope, at, text)

    def write(self, scope, at, messages):
        if self.note.get("ghost"):
            self.remember(ghost=[])
        return super().write(scope, at, messages)

    def probe(self, store, scope, needle):
        ghost = self.note.get("ghost")
        if store == "vectors" and ghost and time.time() >= ghost[0] and contains(ghost[1], needle["token"]):
            return {"state": "present", "evidence": [ghost[1]], "distance": 0.0}
        return super().probe(store, scope, needle)


class NoGhost(_GhostAfterForget):
    NAME = "a-no-ghost"


class GhostAfterForget(_GhostAfterForget):
    NAME = "a-ghost"
    DELAY = 0.5


class DeletesAMomentLater(Double):
    """Correct, eventually consistent: no quiescence signal; a forget takes effect ``LAG`` s after it returns (the
    door, the recall and every store still show the value until then), and for good."""
    NAME = "a-delete-lags"
    LAG = 0.8

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["settle"] = {"support": "unsupported", "reason": "no quiescence signal"}
        return caps

    def forget(self, scope, at, text):
        stated = self._extract([{"role": "user", "content": text}])
        facts = [dict(f) for f in self.mem.matching(scope, text, stated)]
        facts += [dict(g) for f in facts for g in self.mem.state["facts"].values() if g["copy_of"] == f["id"]]
        out = super().forget(scope, at, text)
        self.remember(lagging=self.note.get("lagging", []) + [[time.time() + self.LAG, facts]])
        return out

    def _shadows(self, scope):
        return [f for due, facts in self.note.get("lagging", []) if time.time() < due for f in facts
                if f["scope"] == scope]

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for f in self._shadows(scope):
            out["items"].append(self._item(f, at))
            out["text"] += "\n" + self._line(self._item(f, at))
        return out

    def recall(self, query, scope, k, at):
        out = super().recall(query, scope, k, at)
        out["items"] += [self._item(f, at) for f in self._shadows(scope)]
        return out

    def probe(self, store, scope, needle):
        out = super().probe(store, scope, needle)
        held = [f["text"] for f in self._shadows(scope) if contains(f["text"], needle["token"])]
        if held and store in ("facts", "vectors"):
            return {**out, "state": "present", "evidence": out.get("evidence", []) + held}
        return out


class RawLogRefilledByRefeed(Double):
    """Correct delete, and a declared raw log of every write that the forget cleans: the re-fed source is logged
    again (what the re-feed brought back, never what the delete left)."""
    NAME = "a-log-refilled"

    def capabilities(self):
        caps = super().capabilities()
        caps["stores"] = caps["stores"] + [{"name": "raw-log", "kind": "log", "description": "every write, verbatim"}]
        return caps

    def write(self, scope, at, messages):
        self.remember(log=self.note.get("log", []) + [[scope, m["content"]] for m in messages])
        return super().write(scope, at, messages)

    def forget(self, scope, at, text):
        values = [f["value"] for f in self._extract([{"role": "user", "content": text}])]
        self.remember(log=[[s, t] for s, t in self.note.get("log", []) if not any(contains(t, v) for v in values)])
        return super().forget(scope, at, text)

    def probe(self, store, scope, needle):
        if store != "raw-log":
            return super().probe(store, scope, needle)
        hits = [t for s, t in self.note.get("log", []) if s == scope and contains(t, needle["token"])]
        return {"state": "present" if hits else "absent", "evidence": hits}


class OverwritesOnUpdate(Double):
    """update() overwrites in place: what ``text`` names is deleted and the new statement stored as a plain fact, so
    nothing says what it replaced (history lost, and nothing for an undo to reopen)."""
    NAME = "u-overwrite"

    def update(self, scope, at, text, new_text):
        old = self._extract([{"role": "user", "content": text}])
        for f in self.mem.matching(scope, text, old):
            del self.mem.state["facts"][f["id"]]
            self.mem.state["vectors"].pop(f["id"], None)
        new = [{k: v for k, v in f.items() if k not in ("intent", "replaces")} for f in
               self._extract([{"role": "user", "content": new_text}])]
        return {"ids": self.mem.remember(scope, at, new, new_text)}


class NoUpdate(Double):
    """A system with no update API (corrections are new writes only)."""
    NAME = "u-none"

    def capabilities(self):
        caps = super().capabilities()
        caps["operations"]["update"] = {"support": "unsupported", "reason": "no update API"}
        return caps


# ---------------------------------------------------------------- 3. renumbering must not hide a leak
class AuditByDigest(Double):
    NAME = "r-digest"


class _QuotesTheForget(Double):
    """Keeps the text of the last forget request, to put it where a leak could hide."""

    def forget(self, scope, at, text):
        self.remember(said=text)
        return super().forget(scope, at, text)

    def audit(self, scope):
        return {"events": [self.hide(e) if e["event"] == "forget" else e for e in super().audit(scope)["events"]]}


class AuditIdHoldsTheValue(_QuotesTheForget):
    """The deletion event's memory_id is the deleted statement itself."""
    NAME = "r-id"

    def hide(self, event):
        return {**event, "memory_id": f"forgotten: {self.note.get('said')}"}


class AuditKeyHoldsTheValue(_QuotesTheForget):
    """The deletion event keeps the deleted statement as a key of its record."""
    NAME = "r-key"

    def hide(self, event):
        return {**event, "detail": {self.note.get("said", ""): "removed"}}


# ---------------------------------------------------------------- 4. judge words (no qualifiers exposed)
class _TextOnly(Double):
    """Exposes no qualifier: only text reaches the judge. ``LABEL`` prefixes what is no longer current."""
    LABEL = "Formerly:"
    HISTORY_AT_DOOR = "always"

    def capabilities(self):
        caps = super().capabilities()
        caps["qualifiers"] = []
        return caps

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        lines = [f"{self.LABEL} {i['text']}" if i["status"] != "current" else i["text"] for i in out["items"]]
        return {"text": "\n".join(lines) or "(nothing relevant)", "items": [{"text": t} for t in lines]}


class LabelsFormerly(_TextOnly):
    NAME = "j-formerly"


class LabelsRecommended(_TextOnly):
    """The stale value goes out under a label that merely contains 'ended': it is presented as current."""
    NAME = "j-recommended"
    LABEL = "Recommended:"


# ---------------------------------------------------------------- 5. probes decided from evidence
class VectorThresholdTooLoose(Double):
    """The adapter calls a vector store 'present' whenever anything is somewhat similar."""
    NAME = "p-loose"

    def probe(self, store, scope, needle):
        out = super().probe(store, scope, needle)
        if store == "vectors" and out.get("distance") is not None and out["distance"] < 0.9:
            out["state"] = "present"
        return out


class _Log(Double):
    """A declared log store keeping every user message, never pruned; ``encode`` says how it is kept."""

    def capabilities(self):
        caps = super().capabilities()
        caps["stores"] = caps["stores"] + [{"name": "event-log", "kind": "log"}]
        return caps

    def encode(self, text: str) -> str:
        return text

    def write(self, scope, at, messages):
        lines = [self.encode(json.dumps({"scope": scope, "said": m["content"]}, ensure_ascii=False))
                 for m in messages if m["role"] == "user"]
        self.remember(log=self.note.get("log", []) + lines)
        return super().write(scope, at, messages)

    def probe(self, store, scope, needle):
        if store != "event-log":
            return super().probe(store, scope, needle)
        lines = [ln for ln in self.note.get("log", []) if scope in ln]
        # the adapter's own naive check: a plain substring test on what is stored
        state = "present" if any(needle["token"] in ln for ln in lines) else "absent"
        return {"state": state, "evidence": lines}


class LogPlain(_Log):
    NAME = "p-log-plain"


class LogEscaped(_Log):
    """The same log, kept as ASCII JSON: 'Ysaëlle' is stored as 'Ysa\\u00eblle'."""
    NAME = "p-log-escaped"

    def encode(self, text: str) -> str:
        return json.dumps(json.loads(text), ensure_ascii=True)


# ---------------------------------------------------------------- audit events named the system's own way
class _RenamesDeletions(Double):
    EVENT = ""

    def audit(self, scope):
        return {"events": [{**e, "event": self.EVENT} if e["event"] == "forget" else e
                           for e in super().audit(scope)["events"]]}


class AuditSaysMemoryDeleted(_RenamesDeletions):
    NAME = "e-memory-deleted"
    EVENT = "memory.deleted"


class AuditSaysDeleteFailed(_RenamesDeletions):
    NAME = "e-delete-failed"
    EVENT = "delete_failed"
