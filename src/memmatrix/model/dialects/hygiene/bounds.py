"""What an operator reaches: a bound's value, a change verb's object, a negation, a retraction, a past state."""

from __future__ import annotations

from .lexicon import (_ANAPHORS, _COPULA, _DETS, _LEFT_NOT_VERB_AFTER, _LEFT_NOT_VERB_BEFORE, _NAMING_PARTICIPLES,
    _NEG_COPULA, _NEG_IDIOMS, _NOT_STATE_ING, _OBJECT_PRONOUNS, _PARTICIPLES, _ROLE_AFTER_NEG)
from .ops import AND, CLAUSE_AND, DEST, PRESENT, PRESVERB, SOFT, STRONG


class _Bounds:
    """What each operator reaches: bounds, changes, negations, retractions, past states (a mixin of _Analysis)."""

    # -------------------------------------------------------------- operator helpers
    def _bound(self, i: int, end: int, prepositional: bool) -> None:
        """A bound belongs to the value before it ("X until 9 April", across commas and "and" when it is a
        prepositional phrase, "X, valid until ..."), or, when it opens the sentence, to the value after it."""
        stops_b = {STRONG} if prepositional else {STRONG, SOFT, AND}
        self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, stops_b), fwd=(12, {STRONG}), fwd_from=end,
                  meta={"fronted": self._fronted(i)})

    def _field_bound(self, i: int, end: int) -> None:
        """'expiry: <date>', 'valid until: <date>': a field of the record the line is, whatever separates it."""
        self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, set()), fwd=(12, set()), fwd_from=end,
                  meta={"fronted": True})

    def _bound_prior_to(self, i: int, to_idx: int) -> int:
        end = self.v.date_at(self.v.next_word(to_idx + 1))
        if end is None:
            return to_idx + 1
        self._bound(i, end, prepositional=True)
        return end

    def _change(self, i: int, end: int, window: int, stops: set | None = None) -> int:
        """A change verb governing its object ("quit X", "cancelled my membership of X"); without an object
        ("Veltrani Corsa: sold last month", "membership cancelled") it is said of the value before it."""
        if self.v.low(self.v.next_word(end)) in _OBJECT_PRONOUNS:
            return end  # "sold it": the object is something named elsewhere
        if self.v.low(self.v.prev_word(i - 1)) in _COPULA | {"got", "get", "gets"}:  # passive: "was sold"
            self._add("change", i, end, order="bwd", bwd=(8, {STRONG, AND}), cancellable=True)
            return end
        if self._has_object(end):
            self._add("change", i, end, order="fwd", fwd=(window, (stops or {STRONG, DEST, PRESENT}) | {CLAUSE_AND}),
                      cancellable=True)
        else:
            self._add("change", i, end, order="bwd", bwd=(6, {STRONG, AND}), cancellable=True)
        return end

    def _has_object(self, end: int) -> bool:
        v = self.v
        if end >= v.n or not v.t[end].word:
            return end < v.n and v.t[end].text in "\"'"  # "quit 'Marovian'": a quoted object
        w = v.low(end)
        if end in self.value_starts:
            return True
        if v.date_at(end) is not None and w not in _DETS:
            return False
        return w not in {"on", "in", "at", "by", "last", "this", "yesterday", "today", "recently", "long", "ago",
                         "already", "and", "but", "or", "for", "since", "after", "before", "when", "because"}

    def _left_role(self, i: int) -> str | None:
        """'object' (I left Quillmere), 'predicate' (Quillmere: left in May) or None (on the left, left-handed)."""
        v = self.v
        if i + 1 < v.n and v.t[i + 1].text == "-" and v.t[i + 1].glued:
            return None  # left-handed, left-wing
        pw = v.low(v.prev_word(i - 1))
        if pw in _DETS | _LEFT_NOT_VERB_BEFORE or self._modal_before(i):
            return None
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        if nw in ("in", "on", "at", "by") and v.date_at(v.next_word(nxt + 1)) is not None:
            return "predicate"
        if nw in _LEFT_NOT_VERB_AFTER:
            return None
        if i + 1 >= v.n or not v.t[i + 1].word or v.date_at(nxt) is not None:
            return "predicate"
        return "object"

    def _negation(self, i: int) -> int:
        v = self.v
        w = v.low(i)
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        end = i + 1
        if nw in _NEG_IDIOMS or (w.startswith("can") and nw == "wait") or (nw == "to" and v.low(nxt + 1) == "mention"):
            return i + 1
        if nw in ("any",) and v.low(v.next_word(nxt + 1)) in ("longer", "more"):
            # "not any longer" after the value, or before the predicate: both directions
            e = v.next_word(nxt + 1) + 1
            self._add("past", i, e, order="bwd", bwd=(8, {STRONG}))
            self._add("negation", i, e, order="fwd", fwd=(8, {STRONG, SOFT, PRESENT}), cancels=True)
            return e
        if nw == "anymore":
            self._add("past", i, nxt + 1, order="bwd", bwd=(8, {STRONG}))
            return nxt + 1
        if nw in ("true", "correct", "accurate", "right", "so", "the") and \
                (nw != "the" or v.words_at(nxt, "the", "case")):
            k = v.words_at(nxt, "the", "case") or nxt + 1
            if v.low(v.next_word(k)) == "that":
                self._add("negation", i, k, order="fwd", fwd=(10, {STRONG, PRESENT}), cancels=True)
            else:
                self._retraction_pred(i, k)
            return k
        # copula negation with the value as subject: "X is not my employer", "X isn't current"
        p = v.prev_word(i - 1)
        if (w in _NEG_COPULA or (w in ("not", "never") and v.low(p) in _COPULA)) and \
                (nw in _ROLE_AFTER_NEG or (nw == "any" and v.low(v.next_word(nxt + 1)) in ("longer", "more"))):
            subj_end = i if w in _NEG_COPULA else p
            self._add("negation", subj_end, end, order="bwd", bwd=(4, {STRONG, SOFT, AND}))
        self._add("negation", i, end, order="fwd", fwd=(8, {STRONG, SOFT, PRESENT}), cancels=True)
        return end

    def _retraction_pred(self, i: int, end: int) -> None:
        """'X was wrong', '(retracted)', 'that was a mistake': the value before it."""
        v = self.v
        # anaphoric: "that was wrong", "which is outdated", "it's false" → the preceding clause(s)
        k = v.prev_word(i - 1)
        steps, anaphoric = 0, False
        while k >= 0 and steps < 4:
            lw = v.low(k)
            if lw in _ANAPHORS:
                anaphoric = True
                break
            if lw not in _COPULA | {"a", "an", "all", "just", "simply", "completely", "totally", "been", "has", "have",
                                    "had", "entirely", "actually", "was", "mixed", "mix", "big", "bit", "of",
                                    "sadly", "plain", "and", "so", "also", "now"}:
                break
            k = v.prev_word(k - 1)
            steps += 1
        if anaphoric:
            self._add("retraction", k, end, order="bwd", bwd=(15, set()))
        else:
            self._add("retraction", i, end, order="bwd", bwd=(8, {STRONG, AND}))

    def _past_state(self, i: int, nxt: int, nw: str) -> int:
        v = self.v
        w = v.low(i)
        if self._have_before(i) or self._modal_before(i):
            return i + 1
        if w in ("was", "were", "had"):
            if w == "had" and nw == "been":
                pass
            elif nw in _PARTICIPLES or (nw.endswith("ed") and nw not in _NAMING_PARTICIPLES) or \
                    (nw.endswith("en") and len(nw) > 4 and nw not in ("often", "seven", "eleven")):
                return i + 1
            elif nw.endswith("ing") and (nw in _NOT_STATE_ING or len(nw) <= 4):
                return i + 1  # "I was thinking about X", "we were going to": no past state of X
            elif w == "had" and nw in ("to", "better"):
                return i + 1
        stops = {STRONG, SOFT, PRESENT, PRESVERB, CLAUSE_AND}
        bwd = (3, {STRONG, SOFT, AND, PRESENT}) if w in ("was", "were") else None
        self._add("past", i, i + 1, order="fwd_then_bwd" if bwd else "fwd", fwd=(8, stops), bwd=bwd,
                  meta={"tense": True})
        return i + 1
