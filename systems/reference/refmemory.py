"""refmemory: a small bi-temporal fact memory built to pass every column of every protocol.

It is the positive control of memmatrix: if it fails a step, the protocol is wrong.

- Writes go through an extractor (a model behind the memmatrix gateway) that turns a
  conversation into facts: (subject, attribute, value, statement, intent, replaces, validity).
- A correction never overwrites: it closes the old fact's validity (superseded or retracted)
  and links it to its successor, so the old value stays knowable as history; the door hands
  history over only to a question about the past. Material re-fed
  with its original, older time is recognised as history and reopens nothing; forgetting the
  correction itself reopens what it closed.
- Forget removes the matching facts, their vectors and every copy shared from them (copies
  keep a back-reference), drops any summary derived from them, and leaves value-level
  tombstones: salted digests that make a later write asserting the same value be rejected.
- Every fact keeps the conversation it was extracted from (its provenance, answered by ``trace``).
- Derived stores record their sources; the audit trail records events with ids and salted
  digests, never the deleted text.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path

from adapterkit import content_tokens, tokens

DIMS = 256
PAST = frozenset({"before", "earlier", "previously", "formerly", "former", "once", "used", "use", "was", "were", "did",
                  "had"})
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
#: Calendar words are capitalised without being names: "on Saturdays" asks about no one.
CALENDAR = frozenset({*MONTHS, "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})


def stem(word: str) -> str:
    """A word without its plural or possessive ending: "Saturdays", "Saturday's" and "Saturday" are one name."""
    word = word.lower()
    for end in ("'s", "’s", "es", "s"):
        if word.endswith(end) and len(word) - len(end) >= 3:
            return word[: -len(end)]
    return word


def embed(text: str) -> list[float]:
    """Feature-hashed bag of words, L2-normalised: the system's own deterministic embedder."""
    vec = [0.0] * DIMS
    for tok in tokens(text):
        h = int.from_bytes(hashlib.sha256(tok.encode()).digest()[:8], "big")
        vec[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def key(fact: dict) -> tuple[str, str]:
    return " ".join(tokens(fact["subject"])), " ".join(tokens(fact["attribute"]))


def same_value(a: str, b: str) -> bool:
    return tokens(a) == tokens(b)


class RefMemory:
    """The store: one JSON file, rewritten atomically on every mutation."""

    def __init__(self, root: Path, seed: int):
        self.path = Path(root) / "refmemory.json"
        self.salt = hashlib.sha256(f"memmatrix-reference-salt:{seed}".encode()).hexdigest()[:16]
        self.state = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else self._empty()

    @staticmethod
    def _empty() -> dict:
        return {"seq": 0, "facts": {}, "vectors": {}, "tombstones": {}, "summaries": {}, "audit": []}

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)

    def reset(self) -> None:
        self.state = self._empty()
        self.save()

    def digest(self, text: str) -> str:
        return hashlib.sha256((self.salt + " ".join(tokens(text))).encode()).hexdigest()[:24]

    def _audit(self, event: str, memory_id, scope: str, at: str, digest: str, actor: str = "user") -> None:
        self.state["audit"].append({"event": event, "memory_id": memory_id, "actor": actor, "at": at,
                                    "scope": scope, "digest": digest})

    # ---------------------------------------------------------------- facts
    def facts(self, scope: str) -> list[dict]:
        return [f for f in self.state["facts"].values() if f["scope"] == scope]

    def status(self, fact: dict, at: str) -> str:
        if fact.get("ended_by") in ("superseded", "retracted"):
            return fact["ended_by"]
        if fact.get("valid_to") and fact["valid_to"] <= at:
            return "former"
        return "current"

    def _add(self, scope: str, at: str, f: dict, copy_of: str | None = None, source: str | None = None,
             **extra) -> str:
        self.state["seq"] += 1
        fid = f"f{self.state['seq']}"
        self.state["facts"][fid] = {
            "id": fid, "scope": scope, "subject": f["subject"], "attribute": f["attribute"], "value": f["value"],
            "text": f.get("statement") or f"{f['subject']} {f['attribute']}: {f['value']}",
            "valid_from": f.get("valid_from") or at, "valid_to": f.get("valid_to"), "recorded_at": at,
            "ended_by": None, "superseded_by": None, "copy_of": copy_of, "kind": f.get("kind", "fact"),
            "source": source, **extra}
        self.state["vectors"][fid] = embed(self.state["facts"][fid]["text"])
        return fid

    def _close(self, fact: dict, at: str, how: str, successor: str | None) -> None:
        fact["prior_valid_to"] = fact["valid_to"]  # kept, so forgetting the correction can undo this
        fact["valid_to"], fact["ended_by"], fact["superseded_by"] = at, how, successor

    def _reopen_closed_by(self, fid: str) -> None:
        """A forgotten correction takes its invalidations with it: what it closed is current again."""
        for f in self.state["facts"].values():
            if f.get("superseded_by") == fid and f.get("ended_by") in ("superseded", "retracted"):
                f["valid_to"], f["ended_by"], f["superseded_by"] = f.get("prior_valid_to"), None, None

    def remember(self, scope: str, at: str, facts: list[dict], source: str | None = None) -> list[str]:
        """Apply facts extracted from ``source`` at event time ``at``; returns the ids of new facts."""
        added = []
        stones = set(self.state["tombstones"].get(scope, []))
        for f in facts:
            if self.digest(f["value"]) in stones:
                self._audit("reject", None, scope, at, self.digest(f["value"]), actor="system")
                continue
            same_key = [g for g in self.facts(scope) if key(g) == key(f) and g["kind"] == "fact"]
            if f.get("intent") == "supersede" and any(same_value(g["value"], f["value"]) and g["ended_by"] is None
                                                      for g in same_key):
                continue  # the new value is already the current one: restating it adds no copy
            if f.get("intent") in ("supersede", "retract"):
                gone = f.get("replaces") if f["intent"] == "supersede" else f["value"]
                victims = [g for g in same_key if g["ended_by"] is None and
                           (gone is None or same_value(g["value"], gone))]
                if f["intent"] == "retract":
                    nid = self._add(scope, at, {**f, "kind": "retraction"}, source=source, retracts=f["value"])
                    for g in victims:
                        self._close(g, at, "retracted", nid)
                else:
                    nid = self._add(scope, at, f, source=source)
                    for g in victims:
                        self._close(g, at, "superseded", nid)
                added.append(nid)
                continue
            if any(same_value(g["value"], f["value"]) for g in same_key):
                continue  # already known, current or as history: re-feeding reopens nothing
            newer = [g for g in same_key if g["ended_by"] is None and g["valid_from"] > at]
            nid = self._add(scope, at, f, source=source)
            if newer:  # older material arriving late is history from the start
                self._close(self.state["facts"][nid], min(g["valid_from"] for g in newer), "superseded", newer[0]["id"])
            added.append(nid)
        self.save()
        return added

    def matching(self, scope: str, request: str, stated: list[dict]) -> list[dict]:
        """The facts a request names: those with the key, value and kind of what the request states
        (as extracted), or, when nothing could be extracted, the facts whose statement it is."""
        if stated:
            wanted = {(key(f), " ".join(tokens(f["value"])), "retraction" if f.get("intent") == "retract" else "fact")
                      for f in stated}
            return [f for f in self.facts(scope) if (key(f), " ".join(tokens(f["value"])), f["kind"]) in wanted]
        return [f for f in self.facts(scope) if tokens(f["text"]) == tokens(request)]

    def forget(self, scope: str, at: str, request: str, stated: list[dict]) -> list[str]:
        gone: list[str] = []
        queue = [f["id"] for f in self.matching(scope, request, stated)]
        while queue:  # follow back-references: a copy goes with its original
            fid = queue.pop(0)
            fact = self.state["facts"].pop(fid, None)
            if fact is None:
                continue
            gone.append(fid)
            self.state["vectors"].pop(fid, None)
            stones = self.state["tombstones"].setdefault(fact["scope"], [])
            if self.digest(fact["value"]) not in stones:
                stones.append(self.digest(fact["value"]))
            for scope_key, summary in list(self.state["summaries"].items()):
                if fid in summary["sources"]:
                    del self.state["summaries"][scope_key]
            self._audit("forget", fid, fact["scope"], at, self.digest(fact["value"]))
            self._reopen_closed_by(fid)
            queue += [f["id"] for f in self.state["facts"].values() if f["copy_of"] == fid]
        self.save()
        return gone

    def share(self, scope: str, to_scope: str, at: str, request: str, stated: list[dict]) -> list[str]:
        copies = []
        for fact in self.matching(scope, request, stated):
            f = {k: fact[k] for k in ("subject", "attribute", "value")} | {"statement": fact["text"],
                                                                             "valid_from": fact["valid_from"]}
            cid = self._add(to_scope, at, f, copy_of=fact["id"], source=fact.get("source"))
            self._audit("share", cid, to_scope, at, self.digest(fact["value"]))
            copies.append(cid)
        self.save()
        return copies

    def run_jobs(self, at: str) -> list[str]:
        """Summaries and the vector index, both re-derived from the facts that exist."""
        self.state["summaries"] = {}
        for scope in sorted({f["scope"] for f in self.state["facts"].values()}):
            facts = self.facts(scope)
            self.state["summaries"][scope] = {"sources": [f["id"] for f in facts], "at": at}
        self.state["vectors"] = {fid: embed(f["text"]) for fid, f in self.state["facts"].items()}
        self.save()
        return ["summarize", "reindex"]

    # ---------------------------------------------------------------- reads
    def unknown_names(self, query: str, scope: str) -> list[str]:
        """Names (capitalised words after the first) the query asks about that no fact of the scope mentions."""
        known = {stem(t) for t in tokens(" ".join(f["text"] for f in self.facts(scope)))} | {stem(w) for w in CALENDAR}
        names = [w for w in re.findall(r"[^\W\d_]+", query, re.UNICODE)[1:] if w[0].isupper() and w != "I"]
        return [w for w in names if stem(w) not in known]

    @staticmethod
    def asks_about_past(query: str) -> bool:
        """Does the question ask about the past ('before', 'used to', 'did I have')? Only then does the door hand
        over what is no longer current."""
        return bool(set(tokens(query)) & PAST)

    @staticmethod
    def day_asked(query: str) -> str | None:
        """The calendar day a query names ('2026-03-05', '5 March 2026', 'March 5, 2026'), as YYYY-MM-DD."""
        iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", query)
        if iso:
            return "-".join(iso.groups())
        m = re.search(r"\b(\d{1,2})\s+([A-Za-z]+)\s+(\d{4})\b", query) or \
            re.search(r"\b([A-Za-z]+)\s+(\d{1,2}),?\s+(\d{4})\b", query)
        if not m:
            return None
        day, month, year = (m.group(1), m.group(2), m.group(3)) if m.group(1).isdigit() else \
            (m.group(2), m.group(1), m.group(3))
        if month.lower() not in MONTHS:
            return None
        return f"{year}-{MONTHS.index(month.lower()) + 1:02d}-{int(day):02d}"

    def rank(self, query: str, scope: str, k: int) -> list[dict]:
        """Word overlap with the statement, subject and attribute; a hit on a closed fact brings its successor.
        A query about a name the memory has never heard of gets nothing: it abstains instead of handing over
        neighbours."""
        day = self.day_asked(query)
        if day:  # a question about a day gets that day's memories
            return sorted((f for f in self.facts(scope) if f["valid_from"][:10] == day), key=lambda f: f["id"])[:k]
        if self.unknown_names(query, scope):
            return []
        words = content_tokens(query)
        scored = []
        for f in self.facts(scope):
            have = set(tokens(" ".join((f["text"], f["subject"], f["attribute"]))))
            score = sum(w in have for w in words)
            if score:
                scored.append((-score, -int(f["id"][1:]), f))
        hits = [f for *_, f in sorted(scored, key=lambda s: s[:2])]
        out: list[dict] = []
        for f in hits:
            chain = f
            while chain is not None and chain not in out:
                out.append(chain)
                chain = self.state["facts"].get(chain.get("superseded_by") or "")
        return out[:k]

    def nearest(self, text: str, scope: str) -> tuple[dict | None, float]:
        q = embed(text)
        best, sim = None, -1.0
        for fid, vec in self.state["vectors"].items():
            fact = self.state["facts"].get(fid)
            if fact is not None and fact["scope"] != scope:
                continue
            s = cosine(q, vec)
            if s > sim:
                best, sim = (fact or {"id": fid, "text": ""}), s
        return best, sim
