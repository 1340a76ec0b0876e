"""Single-defect doubles for the deletion protocol: each breaks exactly one step.

``MOVES`` is what the double's row must differ from the reference's in: the broken step, and,
where it ERRORs, the steps that declare it as a need (an unmeasurable step makes its dependents
unmeasurable). tests/test_doubles.py runs each and asserts exactly these cells moved.
"""

from __future__ import annotations

from base import Double


class FailsFirstWrite(Double):
    """Step 1: the first write of a case raises (a broken ingestion path)."""
    NAME = "d-write"
    MOVES = {"1": "ERROR", "2": "ERROR", "3": "ERROR", "4": "ERROR", "5": "ERROR", "6": "ERROR", "7": "ERROR",
             "8": "ERROR", "9": "ERROR", "10": "ERROR"}

    def write(self, scope, at, messages):
        if self.count("writes") == 1:
            raise RuntimeError("ingestion failed")
        return super().write(scope, at, messages)


class ServesFirstFactsAsFormer(Double):
    """Step 2: before any deletion, what the first write stored reaches the door only marked 'former'."""
    NAME = "d-present"
    MOVES = {"2": "FAIL"}

    def write(self, scope, at, messages):
        out = super().write(scope, at, messages)
        if "first" not in self.note:
            self.remember(first=out["ids"])
        return out

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for item in out["items"]:
            if item["id"] in self.note.get("first", []) and not self.note.get("forgot"):
                item["status"] = "former"
        return out

    def forget(self, scope, at, text):
        self.remember(forgot=True)
        return super().forget(scope, at, text)


class FirstForgetRaises(Double):
    """Step 3: the delete path raises (the first time)."""
    NAME = "d-forget"
    MOVES = {"3": "ERROR", "4": "ERROR", "5": "ERROR", "6": "ERROR", "8": "ERROR", "9": "ERROR", "10": "ERROR"}

    def forget(self, scope, at, text):
        if self.count("forgets") == 1:
            raise RuntimeError("delete failed")
        return super().forget(scope, at, text)


class DoorLagsTheFirstForget(Double):
    """Step 4: the door keeps serving what the first forget removed until the next write (a stale door cache)."""
    NAME = "d-gone"
    MOVES = {"4": "FAIL"}

    def forget(self, scope, at, text):
        if self.count("forgets") == 1:
            gone = [dict(f) for f in self.mem.matching(scope, text, self._extract([{"role": "user", "content": text}]))]
            self.remember(cache=gone)
        return super().forget(scope, at, text)

    def write(self, scope, at, messages):
        self.remember(cache=[])
        return super().write(scope, at, messages)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        for f in self.note.get("cache", []):
            if f["scope"] == scope:
                out["items"].append(self._item(f, at))
                out["text"] += "\n" + self._line(self._item(f, at))
        return out


class RefeedRaises(Double):
    """Step 5: writing material that holds a forgotten value raises instead of being rejected."""
    NAME = "d-refeed"
    MOVES = {"5": "ERROR", "6": "ERROR"}

    def write(self, scope, at, messages):
        stones = set(self.mem.state["tombstones"].get(scope, []))
        if any(self.mem.digest(f["value"]) in stones for f in self._extract(messages)):
            raise RuntimeError("tombstone check crashed")
        return super().write(scope, at, messages)


class TombstonesOnlyAtTheJob(Double):
    """Step 6: a re-fed value is stored again; only the background job enforces the tombstones."""
    NAME = "d-refed"
    MOVES = {"6": "FAIL"}

    def write(self, scope, at, messages):
        stones, self.mem.state["tombstones"] = self.mem.state["tombstones"], {}
        try:
            return super().write(scope, at, messages)
        finally:
            self.mem.state["tombstones"] = stones
            self.mem.save()

    def run_background_jobs(self, at):
        for fid, f in list(self.mem.state["facts"].items()):
            if self.mem.digest(f["value"]) in self.mem.state["tombstones"].get(f["scope"], []):
                del self.mem.state["facts"][fid]
                self.mem.state["vectors"].pop(fid, None)
        self.mem.save()
        return super().run_background_jobs(at)


class SkipsADeclaredJob(Double):
    """Step 7: run_background_jobs does not run every job it declares."""
    NAME = "d-jobs"
    MOVES = {"7": "FAIL"}

    def run_background_jobs(self, at):
        super().run_background_jobs(at)
        return {"jobs": ["summarize"]}


class JobRederivesIntoTheDoor(Double):
    """Step 8: the background job re-derives forgotten facts from a retained raw log into the door's digest."""
    NAME = "d-jobs-rederive"
    MOVES = {"8": "FAIL"}

    def write(self, scope, at, messages):
        self.remember(log=self.note.get("log", []) + [[scope, m["content"]] for m in messages if m["role"] == "user"])
        return super().write(scope, at, messages)

    def forget(self, scope, at, text):
        values = [f["value"] for f in self._extract([{"role": "user", "content": text}])]
        self.remember(forgot=self.note.get("forgot", []) + values)
        return super().forget(scope, at, text)

    def run_background_jobs(self, at):
        gone = self.note.get("forgot", [])
        self.remember(digest=[[s, t] for s, t in self.note.get("log", [])
                              if any(adapter_contains(t, v) for v in gone)])
        return super().run_background_jobs(at)

    def door(self, query, scope, door, at):
        out = super().door(query, scope, door, at)
        lines = [t for s, t in self.note.get("digest", []) if s == scope]
        if lines:
            out["text"] += "\nDigest: " + " ".join(lines)
        return out


class KeepsARawLog(Double):
    """Step 9: a declared derived store (a raw log of every write) keeps the deleted value; it is never served."""
    NAME = "d-stores"
    MOVES = {"9": "FAIL"}

    def capabilities(self):
        caps = super().capabilities()
        caps["stores"] = caps["stores"] + [{"name": "raw-log", "kind": "log", "description": "every write, verbatim"}]
        return caps

    def write(self, scope, at, messages):
        self.remember(log=self.note.get("log", []) + [[scope, m["content"]] for m in messages])
        return super().write(scope, at, messages)

    def probe(self, store, scope, needle):
        if store != "raw-log":
            return super().probe(store, scope, needle)
        hits = [t for s, t in self.note.get("log", []) if s == scope and adapter_contains(t, needle["token"])]
        return {"state": "present" if hits else "absent", "evidence": hits}


class AuditQuotesTheValue(Double):
    """Step 10: the deletion event carries the deleted statement."""
    NAME = "d-audit"
    MOVES = {"10": "FAIL"}

    def audit(self, scope):
        events = super().audit(scope)["events"]
        said = self.note.get("forgot", [])
        return {"events": [{**e, "detail": said[0]} if e["event"] == "forget" and said else e for e in events]}

    def forget(self, scope, at, text):
        self.remember(forgot=self.note.get("forgot", []) + [text])
        return super().forget(scope, at, text)


class ShareRaises(Double):
    """Step 11: sharing to another scope raises."""
    NAME = "d-share"
    MOVES = {"11": "ERROR", "12": "ERROR", "13": "ERROR"}

    def share(self, scope, to_scope, at, text):
        raise RuntimeError("share failed")


class ForgetOfASharedOriginalMissesIt(Double):
    """Step 12: forgetting a shared original removes its copies but not the original itself."""
    NAME = "d-forget-original"
    MOVES = {"12": "FAIL"}

    def forget(self, scope, at, text):
        stated = self._extract([{"role": "user", "content": text}])
        hits = self.mem.matching(scope, text, stated)
        shared = [f for f in hits if any(g["copy_of"] == f["id"] for g in self.mem.state["facts"].values())]
        if not shared:
            return super().forget(scope, at, text)
        ids = []
        for f in shared:
            for g in [g for g in self.mem.state["facts"].values() if g["copy_of"] == f["id"]]:
                ids += self.mem.forget(g["scope"], at, g["text"], [])
        return {"ids": ids}


class ForgetDoesNotFollowCopies(Double):
    """Step 13: a copy shared to another scope survives the deletion of its original."""
    NAME = "d-copy"
    MOVES = {"13": "FAIL"}

    def share(self, scope, to_scope, at, text):
        ids = super().share(scope, to_scope, at, text)["ids"]
        for cid in ids:
            self.mem.state["facts"][cid]["copy_of"] = None  # no back-reference: nothing for a deletion to follow
        self.mem.save()
        return {"ids": ids}


def adapter_contains(haystack: str, needle: str) -> bool:
    from adapterkit import contains
    return contains(haystack, needle)


DOUBLES = [FailsFirstWrite, ServesFirstFactsAsFormer, FirstForgetRaises, DoorLagsTheFirstForget, RefeedRaises,
           TombstonesOnlyAtTheJob, SkipsADeclaredJob, JobRederivesIntoTheDoor, KeepsARawLog, AuditQuotesTheValue,
           ShareRaises, ForgetOfASharedOriginalMissesIt, ForgetDoesNotFollowCopies]
