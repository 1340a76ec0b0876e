"""Which operator each word opens: the qualifier lexicon of rule 3, read top to bottom."""

from __future__ import annotations

from .lexicon import (_ADJ_PAST, _ADV_PAST, _ANAPHORS, _CHANGE_GERUNDS, _COPULA, _DETS, _IMPERATIVE_ONLY,
    _IRREG_PAST, _NEG_IDIOMS, _OPEN_END, _PAST_PHRASES, _PAST_STATE_VERBS, _RETRACT_FWD, _RETRACT_PRED, _SUBJ_PRON,
    _UNITS)
from .ops import AND, COLON, DEST, OF, PREP, PRESENT, SOFT, STRONG


class _OpWords:
    """The qualifier lexicon as code: which operator a token opens (a mixin of _Analysis)."""

    def _op_at(self, i: int) -> int:  # noqa: C901 - a lexicon, read top to bottom
        v = self.v
        field_end = self._inline_field(i)
        if field_end is not None:
            return field_end
        w = v.low(i)
        nxt = v.next_word(i + 1)
        nw = v.low(nxt)
        glued_hyphen_next = i + 1 < v.n and v.t[i + 1].text == "-" and v.t[i + 1].glued and \
            i + 2 < v.n and v.t[i + 2].glued
        prev = v.prev_word(i - 1)
        pw = v.low(prev)

        # ---------------------------------------------------------------- temporal bounds
        if w in ("until", "till", "til", "unto", "through", "thru") or (w == "up" and nw in ("to", "until", "till",
                                                                                               "through")):
            kw_end = nxt + 1 if w == "up" else i + 1
            if w == "up":
                w = nw
            comp = v.next_word(kw_end)
            date_end = v.date_at(comp)
            if date_end is not None and v.low(comp) not in _OPEN_END:
                if any(v.t[k].text in ":=" for k in range(kw_end, comp)):
                    self._field_bound(i, date_end)  # "valid until: 2026-03-31"
                else:
                    self._bound(i, date_end, prepositional=True)
                return date_end
            if w in ("until", "till", "til", "unto") and v.low(comp) not in ("further", "now", "forever", "notice",
                                                                           "death") and comp < v.n:
                end = comp
                while end < v.n and not self._stop(end, {STRONG, SOFT}):
                    end += 1
                self._bound(i, end, prepositional=True)
                return end
            return i + 1
        if w == "to" and pw in ("valid", "good", "effective", "runs", "running", "lasts", "lasting"):
            date_end = v.date_at(v.next_word(i + 1))
            if date_end is not None:
                if any(v.t[k].text in ":=" for k in range(i + 1, v.next_word(i + 1))):
                    self._field_bound(i, date_end)
                else:
                    self._bound(i, date_end, prepositional=True)
                return date_end
        if w == "before":
            comp = v.next_word(i + 1)
            date_end = v.date_at(comp)
            c = v.low(comp)
            if date_end is not None and c not in _OPEN_END:
                self._bound(i, date_end, prepositional=True)
                return date_end
            if c in ("that", "then") and (comp + 1 >= v.n or not v.t[comp + 1].word or v.low(comp + 1) in _SUBJ_PRON):
                self._bound(i, comp + 1, prepositional=True)
                return comp + 1
            c2 = v.low(v.next_word(comp + 1))
            if c in _CHANGE_GERUNDS or (c in _SUBJ_PRON and (c2 in _IRREG_PAST or c2.endswith("ed"))):
                end = comp
                while end < v.n and not self._stop(end, {STRONG, SOFT}):
                    end += 1
                self._bound(i, end, prepositional=True)
                return end
            return i + 1
        if w in ("ending", "ends", "expires", "expiring", "expiry", "expiration", "lapses", "lapsing"):
            if nw == "of" or (w == "ending" and pw == "happy"):
                return i + 1
            comp = nxt + 1 if nw in ("on", "in", "at", "by", "date", ":") else nxt
            date_end = v.date_at(v.next_word(comp))
            if date_end is not None:
                if ":" in v.text(i, v.next_word(comp)) or "=" in v.text(i, v.next_word(comp)):
                    self._field_bound(i, date_end)  # "expiry date: 2026-03-31", a field of the line's record
                else:
                    self._bound(i, date_end, prepositional=w == "ending")
                return date_end
            if w in ("expires", "expiring", "lapses"):
                self._add("bound", i, i + 1, order="bwd", bwd=(8, {STRONG, SOFT, AND}))
            return i + 1
        if w in ("ended", "expired", "lapsed"):
            if nw in ("up",):
                return nxt + 1
            if w == "ended" and nw in _DETS - {"the", "a", "an"}:
                return self._change(i, i + 1, window=8)
            end = i + 1
            comp = nxt + 1 if nw in ("on", "in", "at", "by", "last", "this") else nxt
            date_end = v.date_at(v.next_word(comp)) if nw in ("on", "in", "at", "by") else v.date_at(nxt)
            if date_end is not None:
                end = date_end
            # "My stay ended on 14 March" (the subject before it) or "the expired pass TP-5520-QV"
            self._add("bound", i, end, order="bwd_then_fwd", bwd=(8, {STRONG, SOFT, AND}),
                      fwd=(3, {STRONG, SOFT, AND, PREP}), fwd_from=i + 1, meta={"adjectival": True})
            return i + 1
        if (w in ("checking", "check", "checked") and nw == "out") or w in ("checkout", "departing", "departure"):
            k = nxt + 1 if nw == "out" else i + 1
            if v.low(v.next_word(k)) in ("on", "at", "date", "by"):
                k = v.next_word(k) + 1
            date_end = v.date_at(v.next_word(k))
            if date_end is not None:
                self._bound(i, date_end, prepositional=True)
                return date_end
            return k
        if w == "valid" and nw in ("till", "until", "through", "thru", "to", "up"):
            return i + 1  # the keyword that follows carries the bound

        # ---------------------------------------------------------------- "no longer", "used to", "not anymore"
        if w == "no" and nw in ("longer", "more"):
            end = nxt + 1
            if nw == "more" and v.is_word(v.next_word(end)) and v.low(v.next_word(end)) not in ("than",):
                # "no more X": denial of what follows
                self._add("negation", i, end, order="fwd", fwd=(6, {STRONG, SOFT, PRESENT}))
                return end
            if nw == "more" and v.low(v.next_word(end)) == "than":
                return end
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}), bwd=(6, {STRONG, SOFT, AND}),
                      cancellable=True)
            return end
        if w in ("not", "never", "nobody") or w.endswith("n't") or w == "cannot":
            return self._negation(i)
        if w == "no" and i + 1 < v.n and v.t[i + 1].text in (",", "!", ".", ":"):
            return i + 1  # an interjection
        if w == "no" and nw not in _NEG_IDIOMS:
            if nw in ("one", "where", "body"):
                return i + 1
            self._add("negation", i, i + 1, order="fwd", fwd=(6, {STRONG, SOFT, PRESENT}), cancels=True)
            return i + 1
        if w in ("anymore", "any") and (w == "anymore" or nw in ("more", "longer")):
            end = i + 1 if w == "anymore" else nxt + 1
            p = v.prev_word(i - 1)
            if v.low(p) in ("not", "no") or v.low(p).endswith("n't"):
                self._add("past", p, end, order="bwd", bwd=(8, {STRONG}))
            return end
        if w == "used" and nw == "to" and pw not in _COPULA | {"get", "got", "getting", "gets", "i'm", "we're",
                                                                "you're", "they're", "he's", "she's", "it's"}:
            end = nxt + 1
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}), bwd=(6, {STRONG, SOFT, AND}))
            return end

        # ---------------------------------------------------------------- adverbs and adjectives of a past state
        if w in _ADV_PAST and not glued_hyphen_next:
            if w == "once" and (nw in ("again", "more", "upon", "in", "per", "every", "or")
                                or (nw in ("a", "an") and v.low(v.next_word(nxt + 1)) in _UNITS | {"day", "while"})):
                return i + 1
            if w == "earlier" and not (self._fronted(i) and v.t[min(i + 1, v.n - 1)].text in (",", ":")):
                return i + 1
            self._add("past", i, i + 1, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}),
                      bwd=(6, {STRONG, SOFT, AND, PRESENT}))
            return i + 1
        end = next((e for e in (v.words_at(i, *p) for p in _PAST_PHRASES) if e), None)
        if end is not None:
            self._add("past", i, end, order="fwd_then_bwd", fwd=(8, {STRONG, PRESENT}),
                      bwd=(8, {STRONG, SOFT, AND, PRESENT}))
            return end
        if w in _ADJ_PAST:
            if w == "ex" and not (glued_hyphen_next or nw in ("wife", "husband", "partner", "boyfriend",
                                                                "girlfriend", "employer", "colleague")
                                  or i + 1 >= v.n or not v.t[i + 1].word):  # "X is my ex."
                return i + 1
            if w != "ex" and glued_hyphen_next:
                return i + 1
            if w == "prior" and nw == "to":
                return self._bound_prior_to(i, nxt)
            # "the previous tenant of X" names someone else; "my former employer X" is about the value
            stops = {STRONG, PREP, PRESENT} | ({OF} if pw == "the" else set())
            self._add("past", i, i + 1, order="fwd_then_bwd", fwd=(5, stops),
                      bwd=(6, {STRONG, AND, PRESENT}))
            return i + 1

        # ---------------------------------------------------------------- change verbs governing their object
        if w in ("moved", "relocated", "switched", "changed", "went", "upgraded", "transferred", "converted",
                 "migrated", "graduated", "downgraded", "emigrated", "came", "escaped") and not self._modal_before(i):
            j = nxt
            if v.low(j) in ("away", "out", "back", "over", "on", "up"):
                j = v.next_word(j + 1)
            if v.low(j) not in ("from", "of"):  # "changed my address from X", "switched the plan from X"
                k, hops = j, 0
                while hops < 3 and k < v.n and v.t[k].word and v.low(k) not in ("from", "to", "into") and \
                        k not in self.value_starts and not self._stop(k, {STRONG, SOFT, AND}):
                    k, hops = v.next_word(k + 1), hops + 1
                if v.low(k) == "from" and hops <= 3:
                    j = k
            if v.low(j) in ("from", "of"):
                end = j + 1
                self._add("change", i, end, order="fwd", fwd=(6, {STRONG, DEST, PRESENT}), cancellable=True)
                return end
            return i + 1
        if w == "left":
            role = self._left_role(i)
            if role == "object":
                return self._change(i, i + 1, window=5, stops={STRONG, SOFT, DEST, PRESENT})
            if role == "predicate":
                self._add("change", i, i + 1, order="bwd", bwd=(6, {STRONG, AND}), cancellable=True)
            return i + 1
        if w in ("quit", "quitted", "sold", "abandoned", "ditched", "divorced", "terminated", "closed", "cancelled",
                 "canceled", "dumped", "vacated", "surrendered", "returned", "discontinued", "renounced",
                 "unsubscribed", "deleted", "removed"):
            if w in ("returned",) and nw in ("to", "home", "from"):
                return i + 1
            if w in ("closed", "removed", "deleted", "returned", "discontinued") and nw not in _DETS and \
                    nxt not in self.value_starts and self._has_object(i + 1) and pw not in _COPULA | {"got"}:
                return i + 1  # "the shop closed early": not said of a value
            if self._modal_before(i):
                return i + 1
            return self._change(i, i + 1, window=8)
        if w == "stopped" and nw not in ("at", "in", "by", "off", "for", "over", "to", "outside", "near", "on",
                                         "briefly", "there", "here", "raining"):
            if self._modal_before(i):
                return i + 1
            return self._change(i, i + 1, window=8)
        if w == "dropped" and nw not in ("off", "by", "in", "at"):
            if pw in _COPULA or pw in ("been", "got"):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG, SOFT, AND}))
                return i + 1
            if nw == "out":
                return self._change(i, v.next_word(nxt + 1) + 1 if v.low(v.next_word(nxt + 1)) == "of" else nxt + 1,
                                    window=8)
            return self._change(i, i + 1, window=8)
        if w in ("gave", "given", "giving") and nw == "up":
            if w == "giving" or self._modal_before(i):
                return nxt + 1
            return self._change(i, nxt + 1, window=8)
        if w in ("took", "taken", "taking", "takes", "take") and v.words_at(nxt, "over", "from"):
            end = v.words_at(nxt, "over", "from")  # "Y has taken over from X"
            self._add("change", i, end, order="fwd", fwd=(6, {STRONG, DEST, PRESENT}), cancellable=True)
            return end
        if w in ("got", "gotten") and v.words_at(nxt, "rid", "of"):
            return self._change(i, v.words_at(nxt, "rid", "of"), window=8)
        if w == "broke" and v.words_at(nxt, "up", "with"):
            return self._change(i, v.words_at(nxt, "up", "with"), window=6)
        if w in ("resigned", "retired", "withdrew", "graduated", "unsubscribed", "departed", "exited") and \
                nw in ("from", "as"):
            if self._modal_before(i):
                return nxt + 1
            return self._change(i, nxt + 1, window=8)
        if w in ("traded", "swapped", "exchanged", "replaced", "superseded", "overrode", "overwrote", "succeeded") \
                and nw not in ("by", "with"):
            if (nw in _DETS or nxt in self.value_starts) and not self._modal_before(i):
                return self._change(i, i + 1, window=6)
            if w in ("replaced", "superseded"):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG}))
            return i + 1
        if w in ("replaced", "superseded", "overridden", "overwritten", "succeeded", "retracted", "withdrawn",
                 "corrected", "invalidated", "revoked", "retired") and nw == "by":
            self._add("retraction", i, nxt + 1, order="bwd", bwd=(8, {STRONG}))
            return nxt + 1
        if (w == "instead" and nw == "of") or (w == "rather" and nw == "than") or \
                (w == "in" and v.words_at(i, "in", "place", "of")):
            end = v.words_at(i, "in", "place", "of") or nxt + 1
            self._add("change", i, end, order="fwd", fwd=(5, {STRONG, PRESENT}))
            return end

        # ---------------------------------------------------------------- retractions
        if w in _RETRACT_FWD:
            if w in _IMPERATIVE_ONLY and not (self._fronted(i) or pw in ("please", "just", "kindly", "so")):
                return i + 1
            if w in ("retracted", "withdrawn") and not (nw in _DETS or nxt in self.value_starts):
                self._add("retraction", i, i + 1, order="bwd", bwd=(8, {STRONG}))
                return i + 1
            self._add("retraction", i, i + 1, order="fwd", fwd=(10, {STRONG, COLON}))
            return i + 1
        if w == "meant" and any(v.low(k) in ("said", "wrote", "typed", "told", "put") for k in range(i)):
            self._add("retraction", i, i + 1, order="bwd", bwd=(15, set()))  # "I said X, but I meant Y"
            return i + 1
        if w in ("take", "took", "taking") and nw == "back":
            self._add("retraction", i, nxt + 1, order="fwd", fwd=(8, {STRONG, COLON}))
            return nxt + 1
        if w in ("wrong", "mistaken", "incorrect") and nw in ("about", "to", "when", "that"):
            self._add("retraction", i, nxt + 1, order="fwd", fwd=(10, {STRONG, COLON}))
            return nxt + 1
        if w in ("mix", "mixed", "mixup", "mix-up") or w in _RETRACT_PRED:
            end = i + 1
            if w in ("mix", "mixed"):
                k = v.words_at(i, w, "up")
                if k is None:
                    k2 = v.next_word(nxt + 1)
                    if nw in _ANAPHORS and v.low(k2) == "up":
                        k = k2 + 1
                if k is None:
                    return i + 1
                end = k
            self._retraction_pred(i, end)
            return end
        if w in ("typo",) or (w == "out" and v.words_at(i, "out", "of", "date")):
            end = v.words_at(i, "out", "of", "date") or i + 1
            self._retraction_pred(i, end)
            return end

        # ---------------------------------------------------------------- simple past of a state
        if w in _PAST_STATE_VERBS or (w == "had" and nw == "been"):
            return self._past_state(i, nxt, nw)
        return i + 1
