"""Reading a text for the judge: tokens, sentences (a qualifier counts only inside its mention's sentence) and dates."""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from itertools import accumulate, islice
from operator import add

from .lexicon import (_ABBREV, _DATE_PREFIX, _MONTHS, _RELATIVE_DAYS, _SEASONS, _SUBTOKEN_RE, _TOKEN_RE, _UNITS,
    _WEEKDAYS)


@dataclass(slots=True)
class _Tok:
    text: str
    low: str
    start: int
    end: int
    word: bool
    glued: bool = False    # no whitespace between the previous token and this one
    newline: bool = False  # a line break between the previous token and this one


#: a token with the whitespace before it: every character that is not whitespace starts a token, so the gaps
#: between the tokens ``_TOKEN_RE`` finds are runs of whitespace, and this finds the same tokens in one pass
_GAPPED_TOKEN_RE = re.compile(r"(\s*)(" + _TOKEN_RE.pattern + ")", _TOKEN_RE.flags)
#: the tokens ``_sentences`` looks at beyond line breaks (every other token only joins a unit)
_MARKS = frozenset("{}|[],:.!?…")


#: what the whitespace before a token is (``_Tokens.kinds``): none, whitespace, whitespace holding a line break
GLUED, SPACED, BROKEN = 0, 1, 2


class _GapKinds(dict):
    """A gap's kind, each distinct gap worked out once (a store's text repeats a few gaps a million times)."""

    def __missing__(self, gap: str) -> int:
        kind = self[gap] = GLUED if not gap else BROKEN if ("\n" in gap or "\r" in gap) else SPACED
        return kind


class _Tokens:
    """The tokens of a text, a sequence of ``_Tok``. A judged text can hold a whole store (a million tokens) of which
    a few sentences mention the value: the tokens are kept as their texts, their ends and the kind of whitespace
    before each (a byte), and a ``_Tok`` is made (once) only for a token looked at."""

    __slots__ = ("kinds", "texts", "ends", "_made", "_lows", "_words")

    def __init__(self, text: str, piece: int = 1 << 16):
        self.kinds = bytearray()
        self.texts: list[str] = []
        # machine integers, not a list of int objects (four bytes each where the text allows)
        self.ends = array("I" if len(text) < 1 << 32 else "q")
        one = {}.setdefault  # a store's text repeats its words: each distinct token text is kept once
        kind = _GapKinds().__getitem__
        at = 0  # every character before a token is in a gap or a token: the ends add up their lengths
        for chunk in _chunks(text, piece):  # a few thousand (gap, token) tuples at a time, not a million
            pairs = _GAPPED_TOKEN_RE.findall(chunk)
            gaps = [g for g, _ in pairs]
            texts = [one(t, t) for _, t in pairs]
            self.kinds += bytes(map(kind, gaps))
            self.texts += texts
            self.ends.extend(islice(accumulate(map(add, map(len, gaps), map(len, texts)), initial=at), 1, None))
            at = self.ends[-1] if self.ends else at
        self._made: dict[int, _Tok] = {}
        self._lows: dict[str, str] = {}
        self._words: dict[str, bool] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: int) -> _Tok:
        n = len(self.texts)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("token index out of range")
        tok = self._made.get(i)
        if tok is None:
            text, kind, end = self.texts[i], self.kinds[i], self.ends[i]
            tok = self._made[i] = _Tok(text, self.low(i), end - len(text), end, self.word(i), i > 0 and kind == GLUED,
                                       kind == BROKEN)
        return tok

    def __iter__(self):
        return (self[i] for i in range(len(self.texts)))

    def low(self, i: int) -> str:
        text = self.texts[i]
        low = self._lows.get(text)
        if low is None:
            low = self._lows[text] = _fold(text)
        return low

    def word(self, i: int) -> bool:
        """A word: a subtoken starts it, which its first character decides."""
        first = self.texts[i][0]
        word = self._words.get(first)
        if word is None:
            word = self._words[first] = _SUBTOKEN_RE.match(first) is not None
        return word

    def glued(self, i: int) -> bool:
        return i > 0 and self.kinds[i] == GLUED

    def newline(self, i: int) -> bool:
        return self.kinds[i] == BROKEN

    def span(self, a: int, b: int) -> tuple[int, int]:
        """Character span from the start of token a to the end of token b."""
        return self.ends[a] - len(self.texts[a]), self.ends[b]


def _fold(text: str) -> str:
    """How the judge compares text: case-folded, a typographic apostrophe read as a plain one (character by
    character, so a folded stretch of text is the folding of that stretch)."""
    return text.casefold().replace("’", "'")


def _chunks(text: str, size: int = 1 << 16):
    """``text`` in pieces of about ``size`` characters, each cut just before a whitespace character: no token holds
    whitespace, so every token (and the whitespace before it) is found whole in one piece, as in the whole text."""
    at, n = 0, len(text)
    while at < n:
        cut = at + size
        if cut >= n:
            yield text[at:]
            return
        while cut < n and not text[cut].isspace():  # to a whitespace character
            cut += 1
        while cut > at and text[cut - 1].isspace():  # back to the start of its run: the gap stays whole
            cut -= 1
        if cut == at:  # the piece would be whitespace only: take its run and the token after it
            cut = at + size
            while cut < n and text[cut].isspace():
                cut += 1
            while cut < n and not text[cut].isspace():
                cut += 1
        yield text[at:cut]
        at = cut


def _tokenize(text: str) -> _Tokens:
    return _Tokens(text)


def _subtokens(value: str) -> list[str]:
    return _SUBTOKEN_RE.findall(value.casefold())


# ------------------------------------------------------------------------------- sentences

def _sentences(toks: _Tokens) -> list[range | list[int]]:
    """Token indexes of each unit: lines, sentences, JSON strings and brackets, table cells."""
    texts, kinds = toks.texts, toks.kinds
    n = len(texts)
    cuts: set[int] = set()  # a line break before
    i = kinds.find(BROKEN)
    while i >= 0:
        cuts.add(i)
        i = kinds.find(BROKEN, i + 1)
    json_brackets = set()
    marks = [i for i, x in enumerate(texts) if x in _MARKS]
    for i in marks:
        if texts[i] == "[" and i + 1 < n and texts[i + 1] in '"{[':
            json_brackets.add(i)
        if texts[i] == "]" and i > 0 and texts[i - 1] in '"}]':
            json_brackets.add(i)
    for i in marks:
        x = texts[i]
        if x in "{}|" or i in json_brackets:
            cuts.update((i, i + 1))
        if x in ",:" and i > 0 and texts[i - 1] == '"' and toks.glued(i):
            cuts.update((i, i + 1))
        if x in ".!?" or x == "…":
            if i + 1 < n and toks.glued(i + 1) and toks.word(i + 1):
                continue  # 3.5, e.g, U.S
            if x == "." and i > 0 and toks.word(i - 1) and toks.low(i - 1) in _ABBREV and i + 1 < n \
                    and toks.word(i + 1) and not texts[i + 1][:1].isupper():
                continue
            cuts.add(i + 1)
    # the units: the tokens between one cut and the next, but for the brackets and bars that are cut on both sides
    # and belong to no unit
    bounds = [0, *sorted(c for c in cuts if 0 < c < n), n]
    out: list = []  # ranges of token indexes (a list only where a tag is merged into its item, below)
    for a, b in zip(bounds, bounds[1:]):
        if b - a > 1 or (b - a == 1 and not (texts[a] in "{}|" or a in json_brackets)):
            out.append(range(a, b))
    # a tag standing after its item's full stop on the same line ("... Corsa. [superseded]") belongs to the item
    merged: list[range | list[int]] = []
    for unit in out:
        if merged and texts[unit[0]] in "[(" and not toks.newline(unit[0]) and _closes_at_end(toks, unit):
            merged[-1] = [*merged[-1], *unit]
        else:
            merged.append(unit)
    return merged


def _closes_at_end(toks: _Tokens, unit: list[int]) -> bool:
    """Is the unit one bracket group (followed by nothing but punctuation)?"""
    texts = toks.texts
    opening = texts[unit[0]]
    closing = ")" if opening == "(" else "]"
    depth = 0
    for pos, k in enumerate(unit):
        if texts[k] == opening:
            depth += 1
        elif texts[k] == closing:
            depth -= 1
            if depth == 0:
                return all(not toks.word(j) for j in unit[pos + 1:])
    return False


# ------------------------------------------------------------------------------- dates

_DAY_RE = re.compile(r"(\d{1,2})(st|nd|rd|th)?")
_YEAR_RE = re.compile(r"(19|20)\d\d")
_DECADE_RE = re.compile(r"'?\d\ds")
_D12_RE = re.compile(r"\d{1,2}")
_D12T_RE = re.compile(r"\d{1,2}(t\d.*)?")
_D24_RE = re.compile(r"\d{2,4}")
_AMPM_RE = re.compile(r"\d{1,2}(am|pm)")
_DD_RE = re.compile(r"\d\d")
_D_RE = re.compile(r"\d")


def _is_day(s: str) -> bool:
    m = _DAY_RE.fullmatch(s)
    return bool(m) and 1 <= int(m.group(1)) <= 31


def _is_year(s: str) -> bool:
    return bool(_YEAR_RE.fullmatch(s)) or bool(_DECADE_RE.fullmatch(s))


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
        if _YEAR_RE.fullmatch(w) and self.low(j + 1) == "-" and self.t[j + 1].glued \
                and _D12_RE.fullmatch(self.low(j + 2)):
            k = j + 3
            if self.low(k) == "-" and _D12T_RE.fullmatch(self.low(k + 1)):
                k += 2
                while k < self.n and self.t[k].glued and (self.t[k].text in ":.+-z" or self.t[k].word) \
                        and self.t[k].text not in ",;":
                    k += 1
            return k
        # 03/2025
        if _D12_RE.fullmatch(w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and _YEAR_RE.fullmatch(self.low(j + 2)) and self.t[j + 2].glued:
            return j + 3
        # 31/03/2026, 31.03.2026, 3/31
        if _D12_RE.fullmatch(w) and self.low(j + 1) in ("/", ".") and self.t[j + 1].glued \
                and _D12_RE.fullmatch(self.low(j + 2)) and self.t[j + 2].glued:
            k = j + 3
            if self.low(k) in ("/", ".") and self.t[k].glued and _D24_RE.fullmatch(self.low(k + 1)):
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
        if _AMPM_RE.fullmatch(w) or (_D12_RE.fullmatch(w) and self.low(j + 1) == ":"
                                                  and _DD_RE.fullmatch(self.low(j + 2))):
            return j + 1 if w.endswith("m") else j + 3
        if w == "q" and _D_RE.fullmatch(self.low(j + 1)):
            return j + 2
        return None


def _contains(text: str, value: str) -> bool:
    """Do the value's subtokens occur, in order and adjacent, among the text's? Asked of the folded text as one
    pattern (each subtoken whole, only non-subtoken characters between them), so a text holding a whole store is
    never split into a list of its subtokens."""
    want = _subtokens(value)
    if not want:
        return False
    pattern = _SUBTOKEN_RUN.get(tuple(want))
    if pattern is None:
        pattern = _SUBTOKEN_RUN[tuple(want)] = re.compile(
            r"(?<![^\W_])" + r"[\W_]+".join(map(re.escape, want)) + r"(?![^\W_])", re.UNICODE)
        if len(_SUBTOKEN_RUN) > 256:
            _SUBTOKEN_RUN.pop(next(iter(_SUBTOKEN_RUN)))
    return pattern.search(text.casefold()) is not None


_SUBTOKEN_RUN: dict[tuple[str, ...], re.Pattern] = {}
