"""The verdict: absent, qualified or unqualified, with the sentence that decided it (rule 5)."""

from __future__ import annotations

import bisect
import functools
import gc
import re
from array import array

from ....adapterkit import SizedMemo
from .lexicon import _SUBTOKEN_RE
from .text import _View, _contains, _fold, _sentences, _subtokens, _tokenize
from .records import _object_spans, _record_pairs, _record_qualifier, _table_rows
from .analysis import _Analysis


# ------------------------------------------------------------------------------- the judgement

def _value_spans(view: _View, value: str | None) -> list[tuple[int, int]]:
    if not value:
        return []
    want = _subtokens(value)
    if not want:
        return []
    subs: list[tuple[str, int]] = []
    for i, t in enumerate(view.t):
        if t.word:
            subs.extend((s, i) for s in _SUBTOKEN_RE.findall(t.low))
    n = len(want)
    spans = []
    for k in range(len(subs) - n + 1):
        if [s for s, _ in subs[k:k + n]] == want:
            spans.append((subs[k][1], subs[k + n - 1][1] + 1))
    return spans


def _without_gc(judge):
    """Run ``judge`` with the cyclic garbage collector paused: a judged text can hold a whole store, a million tokens
    the collector would otherwise walk again and again while they are made (it creates no cycles worth collecting
    meanwhile). Nothing else changes; the collector runs as before once the judgement is made."""

    @functools.wraps(judge)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return judge(*args, **kwargs)
        gc.disable()
        try:
            return judge(*args, **kwargs)
        finally:
            gc.enable()
    return paused


#: where a text falls apart into pieces read alone: a line whose first token is a word. Units never cross a line
#: break, and a line that begins with a word begins a unit that is not merged into the one before it (only a
#: bracket group is); the cuts around it look one token across, at a word on one side and a line break on the
#: other, which decide nothing there. So each piece's units are the whole text's, counted from the piece's start.
_PIECE = re.compile(r"[\n\r]\s*(?=[^\W_])")


def _layout(text: str) -> tuple[list[int], list[int]]:
    """Where the pieces of ``text`` start and end (see ``_PIECE``; together they are the text). Each door answer is
    judged for each of a case's stale values: the last texts' layouts are kept (``TEXTS``)."""
    def make():
        starts = [0, *(m.end() for m in _PIECE.finditer(text))]
        return starts, [*starts[1:], len(text)]
    return TEXTS.get(text, make)


def _read(piece: str) -> tuple:
    """What the judgement reads of a piece whatever the stale value: its tokens, units (and the character span of
    each) and folded text. The next door answer repeats most of the last one's lines, so the last pieces' readings are
    kept, up to 300,000 characters (``READ``; a judgement changes none of it, ``_Tokens`` only fills its memos)."""
    def make():
        toks = _tokenize(piece)
        units = _sentences(toks)
        spans = [toks.span(u[0], u[-1]) for u in units]  # in order, none overlapping another
        # as machine integers: a store's units number tens of thousands
        return toks, units, _fold(piece), array("q", [a for a, _ in spans]), \
            array("q", [b for _, b in spans])
    return READ.get(piece, make)


def _records(text: str) -> tuple:
    """The text's objects (by start) and their starts, each object's key/value pairs as read (filled as asked), its
    table rows' qualifiers and the rows' starts: read once a mention needs them."""
    def make():
        tables = _table_rows(text)
        objects = sorted(_object_spans(text))
        return objects, [a for a, _ in objects], {}, tables, sorted(tables)
    return RECORDS.get(text, make)


def _innermost(objects: list[tuple[int, int]], starts: list[int], char: int) -> tuple[int, int] | None:
    """The innermost object holding ``char``: objects nest (each closes the last one open), so it is the one starting
    last at or before ``char`` that ends after it."""
    k = bisect.bisect_right(starts, char) - 1
    while k >= 0:
        if char < objects[k][1]:
            return objects[k]
        k -= 1
    return None


#: bounded so that the largest committed run's peak does not grow (each keeps at least its last entry)
TEXTS = SizedMemo(2_000_000, lambda text, _: len(text))
READ = SizedMemo(300_000, lambda piece, _: len(piece))
RECORDS = SizedMemo(1_000_000, lambda text, _: len(text))


def forget_readings() -> None:
    """Drop the texts', pieces' and units' readings the judgement keeps."""
    for memo in (TEXTS, READ, RECORDS, UNITS):
        memo.clear()


def _readings(text: str, want: list[str]):
    """(offset, piece, tokens, units, folded, unit starts, unit ends) of each piece of ``text`` that could hold a
    stale mention: one whose folded text holds every subtoken of the stale value (a unit lies within one piece, so a
    unit of any other piece is passed over by the judgement's first test anyway)."""
    starts, ends = _layout(text)
    folded = _fold(text)
    if len(folded) == len(text):
        word = max(want, key=len)
        held = [(starts[k], ends[k]) for k in _holding(folded, word, starts, ends)
                if all(folded.find(w, starts[k], ends[k]) >= 0 for w in want)]
    else:  # a character folds to several: the folded text's places are not the text's
        held = [(a, b) for a, b in zip(starts, ends) if all(w in _fold(text[a:b]) for w in want)]
    del folded  # a whole store's worth, not held while the pieces are read
    for a, b in held:
        piece = text[a:b]
        yield (a, piece, *_read(piece))


def _unit(stale: str, current: str | None, piece: str, toks, idx, span: tuple[int, int]) -> tuple:
    """(mentions inside the current value, [(character offset from the unit's start, attached qualifier or None)
    for each stale mention in order], the unit's sentence) for one unit. This reads nothing but the unit's tokens
    (texts, whether glued, whether after a line break), so it is remembered by them (``UNITS``): the door answers of a
    case repeat their lines, a store's unit judged again for each answer and stale value."""
    shape = tuple(i - idx[0] for i in idx) if isinstance(idx, list) else len(idx)
    key = (stale, current, piece[span[0]:span[1]], toks.glued(idx[0]), toks.newline(idx[0]), shape)

    def make():
        view = _View(toks, idx)
        stale_spans = _value_spans(view, stale)
        if not stale_spans:
            return 0, (), ""
        cur_spans = [s for s in _value_spans(view, current)
                     if not any(a <= s[0] and s[1] <= b and (b - a) >= (s[1] - s[0]) and (a, b) != s
                                for a, b in stale_spans)] if current else []
        analysis = _Analysis(view, stale_spans, cur_spans)
        attached = analysis.attach()
        inside = sum(1 for a, _ in stale_spans if analysis.mentions.get(a, ("",))[0] != "stale")
        mentions = []
        for a, (kind, _) in sorted(analysis.mentions.items()):
            if kind == "stale":
                op = attached[a][0] if a in attached else None
                mentions.append((view.t[a].start - view.t[0].start,
                                 f"{op.kind} qualifier {op.phrase!r}" if op is not None else None))
        return inside, tuple(mentions), view.text(0, view.n)
    return UNITS.get(key, make)


#: the units' readings (``_unit``), by their text and stale and current values: up to a million characters, an
#: entry counted 200 more for what it holds besides the text
UNITS = SizedMemo(1_000_000, lambda key, _: 200 + len(key[2]))


@_without_gc
def judge_hygiene(stale: str, current: str | None, text: str) -> tuple[str, str]:
    """(verdict, reason) for one judge request: absent, qualified or unqualified."""
    if not _subtokens(stale or ""):
        return "absent", "the stale value has no letters or digits to look for"
    if not _contains(text, stale):
        return "absent", "the stale value does not appear"
    return _judge(stale, current, text, _readings(text, _subtokens(stale)))


def _holding(folded: str, word: str, starts: list[int], ends: list[int]) -> list[int]:
    """The spans (units or pieces: in order, none overlapping another) by number, in order, whose stretch of ``folded``
    holds ``word``: a place it occurs falls in the last span starting at or before it, if that span ends after it.
    Once a span is found the search goes on from its end (a place starting before then lies in it or in no span, the
    next one starting no earlier)."""
    out: list[int] = []
    at = folded.find(word)
    while at >= 0:
        j = bisect.bisect_right(starts, at) - 1
        if j >= 0 and at + len(word) <= ends[j]:
            out.append(j)
            at = folded.find(word, ends[j])
        else:
            at = folded.find(word, at + 1)
    return out


def _judge(stale: str, current: str | None, text: str, readings) -> tuple[str, str]:
    """The verdict from ``readings`` of the text (``_readings``; the whole text read as one piece gives the same)."""
    qualified: list[str] = []
    bare: list[str] = []
    seen = inside_current = 0
    record_cache: dict[tuple[int, int], str | None] = {}
    want = _subtokens(stale)
    records = None  # the text's objects and table rows, read once a mention needs them
    for at, piece, toks, units, folded, starts, ends in readings:
        exact = len(folded) == len(piece)  # no character folds to several: the folded piece's places are the piece's
        for j in _holding(folded, max(want, key=len), starts, ends) if exact else range(len(units)):
            # a subtoken of a token's folded text is a substring of the folded stretch of text its unit spans
            # (folding and the apostrophe rewrite go character by character): a unit whose stretch lacks one of the
            # stale value's has no stale span, and is passed over here as it would be below
            idx, a, b = units[j], starts[j], ends[j]
            seg = folded[a:b] if exact else _fold(piece[a:b])
            if not all(w in seg for w in want):
                continue
            inside, mentions, sentence = _unit(stale, current, piece, toks, idx, (a, b))
            inside_current += inside
            for rel, qualifier in mentions:
                seen += 1
                if records is None:
                    records = _records(text)
                objects, object_starts, pairs, tables, table_starts = records
                char = at + a + rel
                why = None
                inner = _innermost(objects, object_starts, char)
                if inner is not None:
                    if inner not in record_cache:
                        if inner not in pairs:
                            pairs[inner] = _record_pairs(text[inner[0]:inner[1]])
                        record_cache[inner] = _record_qualifier(pairs[inner], stale)
                    if record_cache[inner]:
                        why = f"its record says {record_cache[inner]}"
                if why is None and table_starts:
                    k = bisect.bisect_right(table_starts, char)
                    row = table_starts[k - 1] if k else None
                    if row is not None and tables.get(row) and "\n" not in text[row:char]:
                        why = f"its table row says {tables[row]}"
                if why is None and qualifier:
                    why = qualifier
                if why:
                    qualified.append(f"{why} in {sentence[:160]!r}")
                else:
                    bare.append(sentence)
    if seen == 0 and inside_current:
        return "absent", "the stale value appears only inside the current value"
    if seen == 0:  # found as tokens, but split across units: never call that absent
        return "unqualified", "the stale value appears without any qualifier attached to it"
    if bare:
        more = f" (and {len(bare) - 1} more)" if len(bare) > 1 else ""
        return "unqualified", f"presented as current, no qualifier attached: {bare[0][:200]!r}{more}"
    return "qualified", f"every mention ({seen}) is qualified; first: {qualified[0][:300]}"
