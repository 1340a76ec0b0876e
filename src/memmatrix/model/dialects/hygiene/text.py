"""Reading a text for the judge: tokens, sentences (a qualifier counts only inside its mention's sentence) and dates."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexicon import (_ABBREV, _DATE_PREFIX, _MONTHS, _RELATIVE_DAYS, _SEASONS, _SUBTOKEN_RE, _TOKEN_RE, _UNITS,
    _WEEKDAYS)


@dataclass
class _Tok:
    text: str
    low: str
    start: int
    end: int
    word: bool
    glued: bool = False    # no whitespace between the previous token and this one
    newline: bool = False  # a line break between the previous token and this one


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    prev_end = 0
    for m in _TOKEN_RE.finditer(text):
        gap = text[prev_end:m.start()]
        low = m.group().casefold().replace("’", "'")
        toks.append(_Tok(m.group(), low, m.start(), m.end(), bool(_SUBTOKEN_RE.match(m.group())),
                         glued=bool(toks) and gap == "", newline="\n" in gap or "\r" in gap))
        prev_end = m.end()
    return toks


def _subtokens(value: str) -> list[str]:
    return _SUBTOKEN_RE.findall(value.casefold())


# ------------------------------------------------------------------------------- sentences

def _sentences(toks: list[_Tok]) -> list[list[int]]:
    """Token indexes of each unit: lines, sentences, JSON strings and brackets, table cells."""
    cuts: set[int] = set()
    n = len(toks)
    json_brackets = set()
    for i, t in enumerate(toks):
        if t.text == "[" and i + 1 < n and toks[i + 1].text in '"{[':
            json_brackets.add(i)
        if t.text == "]" and i > 0 and toks[i - 1].text in '"}]':
            json_brackets.add(i)
    for i, t in enumerate(toks):
        if t.newline:
            cuts.add(i)
        if t.text in "{}|" or i in json_brackets:
            cuts.update((i, i + 1))
        if t.text in ",:" and i > 0 and toks[i - 1].text == '"' and t.glued:
            cuts.update((i, i + 1))
        if t.text in ".!?" or t.text == "…":
            nxt = toks[i + 1] if i + 1 < n else None
            prev = toks[i - 1] if i > 0 else None
            if nxt is not None and nxt.glued and nxt.word:
                continue  # 3.5, e.g, U.S
            if t.text == "." and prev is not None and prev.word and prev.low in _ABBREV and nxt is not None \
                    and nxt.word and not nxt.text[:1].isupper():
                continue
            cuts.add(i + 1)
    out, cur = [], []
    for i in range(n):
        if i in cuts and cur:
            out.append(cur)
            cur = []
        if toks[i].text in "{}|" or i in json_brackets:
            continue
        cur.append(i)
    if cur:
        out.append(cur)
    # a tag standing after its item's full stop on the same line ("... Corsa. [superseded]") belongs to the item
    merged: list[list[int]] = []
    for unit in out:
        first = toks[unit[0]]
        if merged and first.text in "[(" and not first.newline and _closes_at_end(toks, unit):
            merged[-1].extend(unit)
        else:
            merged.append(unit)
    return merged


def _closes_at_end(toks: list[_Tok], unit: list[int]) -> bool:
    """Is the unit one bracket group (followed by nothing but punctuation)?"""
    opening = toks[unit[0]].text
    closing = ")" if opening == "(" else "]"
    depth = 0
    for pos, k in enumerate(unit):
        if toks[k].text == opening:
            depth += 1
        elif toks[k].text == closing:
            depth -= 1
            if depth == 0:
                return all(not toks[j].word for j in unit[pos + 1:])
    return False


# ------------------------------------------------------------------------------- dates

def _is_day(s: str) -> bool:
    m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th)?", s)
    return bool(m) and 1 <= int(m.group(1)) <= 31


def _is_year(s: str) -> bool:
    return bool(re.fullmatch(r"(19|20)\d\d", s)) or bool(re.fullmatch(r"'?\d\ds", s))


class _View:
    """One sentence: its tokens, with word-level helpers."""

    def __init__(self, toks: list[_Tok], idx: list[int]):
        self.t = [toks[i] for i in idx]
        self.n = len(self.t)

    def low(self, i: int) -> str:
        return self.t[i].low if 0 <= i < self.n else ""

    def is_word(self, i: int) -> bool:
        return 0 <= i < self.n and self.t[i].word

    def next_word(self, i: int) -> int:
        """Index of the first word token at or after i (skipping punctuation), or n."""
        while i < self.n and not self.t[i].word:
            i += 1
        return i

    def prev_word(self, i: int) -> int:
        """Index of the last word token at or before i, or -1."""
        while i >= 0 and not self.t[i].word:
            i -= 1
        return i

    def words_at(self, i: int, *words: str) -> int | None:
        """If the word tokens starting at i (punctuation skipped only for hyphens) spell ``words``, the end index."""
        j = i
        for w in words:
            while j < self.n and self.t[j].text in "-'" and self.t[j].glued:
                j += 1
            if j >= self.n or self.t[j].low != w:
                return None
            j += 1
        return j

    def text(self, a: int, b: int) -> str:
        if a >= b:
            return ""
        return "".join((" " if k > a and not self.t[k].glued else "") + self.t[k].text for k in range(a, b))

    # -- dates
    def date_at(self, i: int) -> int | None:
        """End index of a date expression starting at token i (after optional 'the end of' etc.), or None."""
        j, prefix = i, 0
        while j < self.n and prefix < 4:
            w = self.low(j)
            if w in ("-", "'") and self.t[j].glued:
                j += 1
                continue
            if w in _DATE_PREFIX and self.low(j + 1) not in ("present", "now"):
                j += 1
                prefix += 1
                continue
            break
        end = self._date_core(j)
        return end

    def _date_core(self, j: int) -> int | None:
        w = self.low(j)
        if not w:
            return None
        # ISO 2026-03-31, with an optional time
        if re.fullmatch(r"(19|20)\d\d", w) and self.low(j + 1) == "-" and self.t[j + 1].glued \
                and re.fullmatch(r"\d{1,2}", self.low(j + 2)):
            k = j + 3
            if self.low(k) == "-" and re.fullmatch(r"\d{1,2}(t\d.*)?", self.low(k + 1)):
                k += 2
                while k < self.n and self.t[k].glued and (self.t[k].text in ":.+-z" or self.t[k].word) \
                        and self.t[k].text not in ",;":
                    k += 1
            return k
        # 03/2025
        if re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and re.fullmatch(r"(19|20)\d\d", self.low(j + 2)) and self.t[j + 2].glued:
            return j + 3
        # 31/03/2026, 31.03.2026, 3/31
        if re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and re.fullmatch(r"\d{1,2}", self.low(j + 2)) and self.t[j + 2].glued:
            k = j + 3
            if self.low(k) in ("/", ".") and self.t[k].glued and re.fullmatch(r"\d{2,4}", self.low(k + 1)):
                k += 2
            return k
        if w in _MONTHS:
            k = j + 1
            if _is_day(self.low(k)):
                k += 1
                if self.low(k) == ",":
                    k += 1 if _is_year(self.low(k + 1)) else 0
            if _is_year(self.low(k)):
                k += 1
            return k
        if _is_day(w):
            k = j + 1
            if self.low(k) == "of":
                k += 1
            if self.low(k) in _MONTHS:
                k += 1
                if _is_year(self.low(k)):
                    k += 1
                return k
            if self.low(k) in ("-", "–", "—") and _is_day(self.low(k + 1)):  # part of a day range; caller decides
                return None
            return None
        if _is_year(w):
            return j + 1
        if w in _WEEKDAYS:
            return j + 1
        if w in _SEASONS:
            if w == "new" and self.low(j + 1) != "year":
                return None
            return j + (2 if w == "new" else 1)
        if w in _RELATIVE_DAYS:
            return j + 1
        if w in ("last", "next", "this", "that", "the") and (self.low(j + 1) in _UNITS or self.low(j + 1) in _MONTHS
                                                              or self.low(j + 1) in _WEEKDAYS):
            return j + 2
        if re.fullmatch(r"\d{1,2}(am|pm)", w) or (re.fullmatch(r"\d{1,2}", w) and self.low(j + 1) == ":"
                                                  and re.fullmatch(r"\d\d", self.low(j + 2))):
            return j + 1 if w.endswith("m") else j + 3
        if w == "q" and re.fullmatch(r"\d", self.low(j + 1)):
            return j + 2
        return None


def _contains(text: str, value: str) -> bool:
    want, have = _subtokens(value), _subtokens(text)
    n = len(want)
    return bool(want) and any(have[i:i + n] == want for i in range(len(have) - n + 1))
