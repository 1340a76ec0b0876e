"""refmemory: a small memory built to pass every step of the deletion protocol.

It is the positive control of memmatrix: if it fails a step, the protocol is wrong.

- Facts are the sentences of user messages, each with the *values* it asserts: quoted
  phrases, tokens with a digit (identifiers, numbers) and capitalised names.
- Forget removes the matching facts, their vectors and every copy shared from them
  (copies keep a back-reference), drops any summary derived from them, and leaves
  value-level tombstones: salted digests that make a later write asserting the same
  value (the re-fed source conversation, a paraphrase) be rejected, not stored.
- Derived stores record their sources: the summary lists the fact ids it came from and
  is dropped when one of them goes; the vector index is rebuilt from live facts only.
- The audit trail records events (forget, reject, share) with ids and salted digests,
  never the deleted text.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path

from adapterkit import content_tokens, coverage, tokens

DIMS = 256
FORGET_COVERAGE = 0.6
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,})[\"“”]")
_IDENT = re.compile(r"[\w-]*\d[\w-]*")
_NAME = re.compile(r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.replace("\n", " ")) if s.strip()]


def values(sentence: str) -> list[str]:
    """What a sentence asserts that a tombstone must catch again, and its distinctive parts."""
    found = [m.group(1) for m in _QUOTED.finditer(sentence)]
    found += [m.group(0) for m in _IDENT.finditer(sentence)]
    found += [m.group(0) for m in _NAME.finditer(sentence) if m.start() > 0 and m.group(0) != "I"]
    parts = [w for v in found if len(v.split()) > 1 for w in v.split()
             if any(c.isdigit() for c in w) or w[:1].isupper()]
    return list(dict.fromkeys(v.strip(".,;:!?") for v in found + parts if tokens(v)))


def embed(text: str) -> list[float]:
    """Feature-hashed bag of words, L2-normalised: deterministic and dependency-free."""
    vec = [0.0] * DIMS
    for tok in tokens(text):
        h = int.from_bytes(hashlib.sha256(tok.encode()).digest()[:8], "big")
        vec[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [x / norm for x in vec]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


class RefMemory:
    """The store: one JSON file, rewritten atomically on every mutation."""

    def __init__(self, root: Path, seed: int):
        self.path = Path(root) / "refmemory.json"
        self.salt = hashlib.sha256(f"memmatrix-reference-salt:{seed}".encode()).hexdigest()[:16]
        self.state = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else self._empty()

    @staticmethod
    def _empty() -> dict:
        return {"seq": 0, "facts": {}, "vectors": {}, "tombstones": {}, "summaries": {}, "audit": []}

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)

    def digest(self, text: str) -> str:
        return hashlib.sha256((self.salt + " ".join(tokens(text))).encode()).hexdigest()[:24]

    def _audit(self, event: str, memory_id, scope: str, at: str, digest: str, actor: str = "user") -> None:
        self.state["audit"].append({"event": event, "memory_id": memory_id, "actor": actor, "at": at,
                                    "scope": scope, "digest": digest})

    def reset(self) -> None:
        self.state = self._empty()
        self._save()

    # ---------------------------------------------------------------- writes
    def facts(self, scope: str) -> list[dict]:
        return [f for f in self.state["facts"].values() if f["scope"] == scope]

    def _add(self, scope: str, at: str, text: str, copy_of: str | None = None) -> str:
        self.state["seq"] += 1
        fid = f"f{self.state['seq']}"
        self.state["facts"][fid] = {"id": fid, "scope": scope, "at": at, "text": text, "copy_of": copy_of}
        self.state["vectors"][fid] = embed(text)
        return fid

    def write(self, scope: str, at: str, text: str) -> list[str]:
        added = []
        stones = set(self.state["tombstones"].get(scope, []))
        for sentence in sentences(text):
            hits = [d for d in [self.digest(sentence), *map(self.digest, values(sentence))] if d in stones]
            if hits:
                self._audit("reject", None, scope, at, hits[0], actor="system")
                continue
            if any(tokens(f["text"]) == tokens(sentence) for f in self.facts(scope)):
                continue
            added.append(self._add(scope, at, sentence))
        self._save()
        return added

    def matching(self, scope: str, request: str) -> list[dict]:
        return [f for f in self.facts(scope) if coverage(request, f["text"]) >= FORGET_COVERAGE]

    def forget(self, scope: str, at: str, request: str) -> list[str]:
        gone: list[str] = []
        queue = [f["id"] for f in self.matching(scope, request)]
        while queue:  # follow back-references: a copy goes with its original
            fid = queue.pop(0)
            fact = self.state["facts"].pop(fid, None)
            if fact is None:
                continue
            gone.append(fid)
            self.state["vectors"].pop(fid, None)
            stones = self.state["tombstones"].setdefault(fact["scope"], [])
            stones.extend(d for d in [self.digest(fact["text"]), *map(self.digest, values(fact["text"]))]
                          if d not in stones)
            for key, summary in list(self.state["summaries"].items()):
                if fid in summary["sources"]:
                    del self.state["summaries"][key]
            self._audit("forget", fid, fact["scope"], at, self.digest(fact["text"]))
            queue += [f["id"] for f in self.state["facts"].values() if f["copy_of"] == fid]
        self._save()
        return gone

    def share(self, scope: str, to_scope: str, at: str, request: str) -> list[str]:
        copies = []
        for fact in self.matching(scope, request):
            cid = self._add(to_scope, at, fact["text"], copy_of=fact["id"])
            self._audit("share", cid, to_scope, at, self.digest(fact["text"]))
            copies.append(cid)
        self._save()
        return copies

    def run_jobs(self, at: str) -> list[str]:
        """Summaries and the vector index, both re-derived from live facts only."""
        self.state["summaries"] = {}
        for scope in sorted({f["scope"] for f in self.state["facts"].values()}):
            facts = self.facts(scope)
            self.state["summaries"][scope] = {"text": " ".join(f["text"] for f in facts),
                                              "sources": [f["id"] for f in facts], "at": at}
        self.state["vectors"] = {fid: embed(f["text"]) for fid, f in self.state["facts"].items()}
        self._save()
        return ["summarize", "reindex"]

    # ---------------------------------------------------------------- reads
    def rank(self, query: str, scope: str, k: int) -> list[dict]:
        words = content_tokens(query)
        scored = []
        for f in self.facts(scope):
            have = set(tokens(f["text"]))
            score = sum(w in have for w in words)
            if score:
                scored.append((-score, -int(f["id"][1:]), f))
        return [f for *_, f in sorted(scored, key=lambda s: s[:2])[:k]]

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
