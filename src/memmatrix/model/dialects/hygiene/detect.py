"""Finding the qualifier operators of a text: labels, tags, ranges, inline fields."""

from __future__ import annotations

from .lexicon import (_END_KEYS, _HAVE, _LABEL_QUAL, _LINK_KEYS, _MODALS, _MONTHS, _OPEN_END, _STATUS_KEYS,
    _STRONG_WORDS, _TAG_QUAL)
from .text import _is_day, _is_year
from .records import _record_qualifier
from .ops import SOFT, STRONG, _Op


class _Detect:
    """Finding the qualifier operators of a text (a mixin of _Analysis)."""

    # -------------------------------------------------------------- operator detection
    def _add(self, kind, start, end, **kw) -> _Op:
        op = _Op(kind, start, end, self.v.text(start, end), **kw)
        self.ops.append(op)
        return op

    def _modal_before(self, i: int) -> bool:
        p = self.v.prev_word(i - 1)
        while p >= 0 and self.v.low(p) in ("just", "really", "finally", "also", "then", "probably", "soon",
                                            "definitely", "never", "not"):
            p = self.v.prev_word(p - 1)
        w = self.v.low(p)
        return w in _MODALS or w.endswith("'ll") or w in ("going", "want", "plan", "planning", "intend", "hope")

    def _have_before(self, i: int) -> bool:
        p = self.v.prev_word(i - 1)
        while p >= 0 and self.v.low(p) in ("always", "just", "also", "already", "only", "ever", "all", "both",
                                            "mostly", "really"):
            p = self.v.prev_word(p - 1)
        w = self.v.low(p)
        return w in _HAVE or w.endswith("'ve")

    def _fronted(self, i: int) -> bool:
        """No word before token i in its sentence, except a label ended by a colon or 'from'/'between'."""
        v = self.v
        for k in range(i - 1, -1, -1):
            if v.t[k].text == ":":
                return True
            if v.t[k].word and v.low(k) not in ("from", "between", "and", "only", "valid", "good", "effective"):
                return False
        return True

    def _find_ops(self) -> None:
        v = self.v
        i = 0
        self._find_label()
        self._find_ranges()
        range_tokens = {k for op in self.ops for k in range(op.start, op.end)}
        while i < v.n:
            if i in range_tokens or not v.t[i].word:
                if v.t[i].text in ("->", "=>", "→", "⇒", "⟶"):
                    self._add("change", i, i + 1, order="bwd", bwd=(6, {STRONG, SOFT}))
                i += 1
                continue
            i = self._op_at(i)

    def _find_label(self) -> None:
        v = self.v
        start = 0
        while start < v.n:  # skip list markers: "-", "*", "1.", "2)"
            if v.t[start].text in "-*•#>`":
                start += 1
            elif _is_day(v.low(start)) and start + 1 < v.n and v.t[start + 1].text in ".)":
                start += 2
            else:
                break
        if start < v.n and v.t[start].text in "[(":
            self._find_tag(start)
        words = []
        for k in range(min(v.n, 14)):
            t = v.t[k]
            if t.text == ":":
                if 1 <= len(words) <= 4 and any(w in _LABEL_QUAL for w in words):
                    self._add("label", 0, k + 1, meta={"after": k + 1})
                return
            if t.word:
                if _is_day(t.low) and not words and k + 1 < v.n and v.t[k + 1].text in ".)":
                    continue  # "1." list numbers
                words.append(t.low)
                if len(words) > 4:
                    return
            elif t.text not in "-*•#>`_":
                return

    def _find_tag(self, start: int) -> None:
        """A leading '[superseded, no longer true since ...]' or '(former)' annotates its whole item."""
        v = self.v
        opening = v.t[start].text
        closing = ")" if opening == "(" else "]"
        depth = 0
        for k in range(start, v.n):
            if v.t[k].text == opening:
                depth += 1
            elif v.t[k].text == closing:
                depth -= 1
                if depth == 0:
                    inner = [v.low(j) for j in range(start + 1, k) if v.t[j].word]
                    qualifies = any(w in _TAG_QUAL for w in inner) or \
                        any(a == "no" and b in ("longer", "more") for a, b in zip(inner, inner[1:]))
                    if qualifies and k + 1 < v.n:
                        self._add("label", start, k + 1, meta={"after": k + 1})
                    return

    def _find_ranges(self) -> None:
        """Closed date ranges: '2019–2024', '2–14 March', 'from 2 March to 14 March', 'between X and Y'.
        An open end ('2021–present', '2021-') is no bound."""
        v = self.v
        i = 0
        while i < v.n:
            lead = v.low(i) in ("from", "between")
            j = v.next_word(i + 1) if lead else i
            first_end = v.date_at(j)
            bare_day = first_end is None and _is_day(v.low(j))  # "2" in "2–14 March"
            if first_end is None and not bare_day:
                i += 1
                continue
            k = first_end if first_end is not None else j + 1
            conn = v.low(k)
            if conn not in ("-", "–", "—", "--", "to", "through", "thru", "until", "till", "and", "->", "→", "⟶") or \
                    (conn == "and" and v.low(i) != "between"):
                i = max(k, i + 1)
                continue
            second = k + 1
            end = v.date_at(second) if second < v.n and v.low(second) not in _OPEN_END else None
            if end is None or (bare_day and v.low(end - 1) not in _MONTHS and not _is_year(v.low(end - 1))):
                i = k + 1
                continue
            self._add("bound", i, end, order="bwd_then_fwd", bwd=(12, {STRONG}), fwd=(12, {STRONG}), fwd_from=end,
                      meta={"fronted": self._fronted(i)})
            i = end

    def _inline_field(self, i: int) -> int | None:
        """'status: sold', 'valid_to: 2026-03-01', 'superseded_by=m7' in running text: a field of the line's
        record, qualifying the value it annotates whatever punctuation separates them."""
        v = self.v
        key_words, k = [], i
        while k < v.n and len(key_words) < 3:
            if not v.t[k].word:
                return None
            key_words.append(v.low(k))
            k += 1
            if k < v.n and v.t[k].text in ":=":
                break
            if k < v.n and v.t[k].text in "_-" and v.t[k].glued:
                k += 1
                continue
            if k < v.n and v.t[k].word and len(key_words) < 3:
                continue
            return None
        if k >= v.n or v.t[k].text not in ":=":
            return None
        key = "".join(key_words)
        if key not in _END_KEYS | _STATUS_KEYS | _LINK_KEYS or key == "to":
            return None
        e = k + 1
        while e < v.n and v.t[e].text not in ",;)]" and not (v.t[e].word and v.low(e) in _STRONG_WORDS):
            e += 1
        value = v.text(k + 1, e).strip().strip("\"'")
        if not value or not _record_qualifier([(key, value)]):
            return None
        self._field_bound(i, e)
        return e
