"""The analysis of one text: its operators, and the stale mentions each attaches to (rule 3)."""

from __future__ import annotations

from .lexicon import (_AND_WORDS, _CHANGE_FORMS, _DEST, _DETS, _PREPS, _PRESENT, _PRESENT_PAIRS, _PRESENT_VERBS,
    _SOFT_PUNCT, _STRONG_WORDS)
from .ops import AND, CLAUSE_AND, COLON, DEST, OF, PREP, PRESENT, PRESVERB, SOFT, STRONG, _Op
from .text import _View
from .detect import _Detect
from .opwords import _OpWords
from .bounds import _Bounds


class _Analysis(_Detect, _OpWords, _Bounds):
    """Qualifier operators of one sentence, and which value mention each attaches to."""

    def __init__(self, view: _View, stale: list[tuple[int, int]], current: list[tuple[int, int]]):
        self.v = view
        self.ops: list[_Op] = []
        self.value_starts = {a for a, _ in stale + current}  # lets a verb see that its object is a value
        self._find_ops()
        op_tokens = {k for op in self.ops if op.kind != "label" for k in range(op.start, op.end)}
        cur = [(a, b) for a, b in current if not any(k in op_tokens for k in range(a, b))]
        self.mentions: dict[int, tuple[str, int]] = {}
        for a, b in cur:
            self.mentions[a] = ("current", b)
        for a, b in stale:
            if not any(ca <= a and b <= cb and (cb - ca) > (b - a) for ca, cb in cur):
                self.mentions[a] = ("stale", b)
        self.ends = {b: a for a, (_, b) in self.mentions.items()}
        self.op_starts = {op.start: op for op in self.ops if op.cancellable}

    # -------------------------------------------------------------- stop classes
    def _stop(self, i: int, stops: set) -> bool:
        v = self.v
        t = v.t[i]
        w = t.low
        if STRONG in stops and (w == ";" or (t.word and w in _STRONG_WORDS)):
            return True
        if SOFT in stops and w in _SOFT_PUNCT:
            return True
        if AND in stops and t.word and w in _AND_WORDS:
            return True
        if PRESENT in stops and t.word and (w in _PRESENT or (v.low(i - 1), w) in _PRESENT_PAIRS
                                            or (w == "moment" and v.low(i - 1) == "the")):
            return True
        if COLON in stops and w == ":":
            return True
        if DEST in stops and t.word and w in _DEST:
            return True
        if PREP in stops and t.word and w in _PREPS:
            return True
        if PRESVERB in stops and t.word and w in _PRESENT_VERBS:
            return True
        if OF in stops and w == "of":
            return True
        if CLAUSE_AND in stops and t.word and w in _AND_WORDS:
            # "and" starts a new clause unless a value follows it directly ("quit tea and X")
            k = v.next_word(i + 1)
            if v.low(k) in _DETS:
                k = v.next_word(k + 1)
            return k not in self.mentions and k not in self.value_starts
        return False

    def scan_fwd(self, i: int, max_words: int, stops: set, cancels: bool = False) -> tuple[str, int] | None:
        words = 0
        while i < self.v.n:
            if i in self.mentions:
                return ("mention", i)
            if cancels and i in self.op_starts and not self.op_starts[i].cancelled:
                return ("op", i)
            if cancels and self.v.t[i].word and self.v.low(i) in _CHANGE_FORMS:
                return ("change-verb", i)
            if self._stop(i, stops):
                return None
            if self.v.t[i].word:
                words += 1
                if words > max_words:
                    return None
            i += 1
        return None

    def scan_bwd(self, i: int, max_words: int, stops: set) -> tuple[str, int] | None:
        """Nearest mention ending before token i."""
        words = 0
        j = i - 1
        while j >= 0:
            if j + 1 in self.ends:
                return ("mention", self.ends[j + 1])
            if self._stop(j, stops):
                return None
            if self.v.t[j].word:
                words += 1
                if words > max_words:
                    return None
            j -= 1
        return None

    # -------------------------------------------------------------- attachment
    def attach(self) -> dict[int, list[_Op]]:
        """mention start -> the operators attached to it (cancelled ones excluded)."""
        # negations first: they may cancel a change verb they govern ("never left X")
        for op in sorted(self.ops, key=lambda o: (not o.cancels, o.start)):
            if op.kind == "label":
                continue
            if op.cancels and op.fwd:
                hit = self.scan_fwd(op.end, op.fwd[0], op.fwd[1], cancels=True)
                if hit and hit[0] == "op":
                    self.op_starts[hit[1]].cancelled = True
                    op.cancelled = True
                elif hit and hit[0] == "change-verb":
                    op.cancelled = True  # "didn't leave X": the change is denied, X stands
        out: dict[int, list[_Op]] = {}
        for op in self.ops:
            if op.cancelled:
                continue
            if op.kind == "label":
                for a in self.mentions:
                    if a >= op.meta["after"]:
                        out.setdefault(a, []).append(op)
                continue
            target = self._target(op)
            if target is not None:
                for a in self._same_value_run(target):
                    out.setdefault(a, []).append(op)
        return out

    def _same_value_run(self, target: int) -> list[int]:
        """The target and the other mentions of the same value in its clause, with no other value or strong
        boundary between them ("Kvalvika  I am staying in Kvalvika until 14 March": one stay, one bound)."""
        kind = self.mentions[target][0]
        run = [target]
        for step in (-1, 1):
            i = target + step
            while 0 <= i < self.v.n:
                if i in self.mentions:
                    if self.mentions[i][0] != kind:
                        break
                    run.append(i)
                elif self._stop(i, {STRONG}):
                    break
                i += step
        return run

    def _target(self, op: _Op) -> int | None:
        order = op.order
        if order == "bwd_then_fwd":
            hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
            if hit:
                return hit[1]
            if op.meta.get("fronted") or op.meta.get("adjectival"):
                hit = self.scan_fwd(op.fwd_from if op.fwd_from is not None else op.end, op.fwd[0], op.fwd[1])
                return hit[1] if hit else None
            return None
        if order in ("fwd", "fwd_then_bwd"):
            hit = self.scan_fwd(op.end, op.fwd[0], op.fwd[1])
            if hit:
                return hit[1]
            if order == "fwd_then_bwd":
                if self._current_ahead(op.end):
                    return None  # "Quillmere, formerly of the Tarrowick area": it belongs ahead, not behind
                hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
                return hit[1] if hit else None
            return None
        if order == "bwd":
            hit = self.scan_bwd(op.start, op.bwd[0], op.bwd[1])
            return hit[1] if hit else None
        return None

    def _current_ahead(self, i: int) -> bool:
        """Is the next value after token i, before a strong boundary, the current one? Then a qualifier whose
        forward search stopped short is about that value and does not look back to a stale one."""
        while i < self.v.n:
            if i in self.mentions:
                return self.mentions[i][0] == "current"
            if self._stop(i, {STRONG}):
                return False
            i += 1
        return False
