"""The verdict: absent, qualified or unqualified, with the sentence that decided it (rule 5)."""

from __future__ import annotations

import bisect
import functools
import gc

from ....adapterkit import SizedMemo
from .lexicon import _SUBTOKEN_RE
from .text import _View, _contains, _sentences, _subtokens, _tokenize
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


def _read(text: str) -> tuple:
    """What the judgement reads of a text whatever the stale value: tokens, units, objects, table rows, the folded
    text. One door answer is judged for each of a case's stale values, so the last texts' readings are kept, up to
    2 million characters (``READ``; a judgement changes none of it, ``_Tokens`` only fills its memos)."""
    def make():
        toks, tables = _tokenize(text), _table_rows(text)
        return toks, _sentences(toks), _object_spans(text), tables, sorted(tables), text.casefold().replace("’", "'")
    return READ.get(text, make)


READ = SizedMemo(2_000_000, lambda text, _: len(text))


def forget_readings() -> None:
    """Drop the texts' readings ``_read`` keeps."""
    READ.clear()


@_without_gc
def judge_hygiene(stale: str, current: str | None, text: str) -> tuple[str, str]:
    """(verdict, reason) for one judge request: absent, qualified or unqualified."""
    if not _subtokens(stale or ""):
        return "absent", "the stale value has no letters or digits to look for"
    if not _contains(text, stale):
        return "absent", "the stale value does not appear"
    toks, units, objects, tables, table_starts, folded = _read(text)
    qualified: list[str] = []
    bare: list[str] = []
    seen = inside_current = 0
    record_cache: dict[tuple[int, int], str | None] = {}
    want = _subtokens(stale)
    exact = len(folded) == len(text)  # no character folds to several: the folded text's places are the text's
    for idx in units:
        # a subtoken of a token's folded text is a substring of the folded stretch of text its unit spans (folding
        # and the apostrophe rewrite go character by character): a unit whose stretch lacks one of the stale
        # value's has no stale span, and is passed over here as it would be below
        a, b = toks.span(idx[0], idx[-1])
        seg = folded[a:b] if exact else text[a:b].casefold().replace("’", "'")
        if not all(w in seg for w in want):
            continue
        view = _View(toks, idx)
        stale_spans = _value_spans(view, stale)
        if not stale_spans:
            continue
        cur_spans = [s for s in _value_spans(view, current)
                     if not any(a <= s[0] and s[1] <= b and (b - a) >= (s[1] - s[0]) and (a, b) != s
                                for a, b in stale_spans)] if current else []
        analysis = _Analysis(view, stale_spans, cur_spans)
        attached = analysis.attach()
        sentence = view.text(0, view.n)
        inside_current += sum(1 for a, _ in stale_spans if analysis.mentions.get(a, ("",))[0] != "stale")
        for a, (kind, b) in sorted(analysis.mentions.items()):
            if kind != "stale":
                continue
            seen += 1
            char = view.t[a].start
            why = None
            rec = [s for s in objects if s[0] <= char < s[1]]
            if rec:
                inner = min(rec, key=lambda s: s[1] - s[0])
                if inner not in record_cache:
                    record_cache[inner] = _record_qualifier(_record_pairs(text[inner[0]:inner[1]]), stale)
                if record_cache[inner]:
                    why = f"its record says {record_cache[inner]}"
            if why is None and table_starts:
                k = bisect.bisect_right(table_starts, char)
                row = table_starts[k - 1] if k else None
                if row is not None and tables.get(row) and "\n" not in text[row:char]:
                    why = f"its table row says {tables[row]}"
            if why is None and a in attached:
                op = attached[a][0]
                why = f"{op.kind} qualifier {op.phrase!r}"
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
