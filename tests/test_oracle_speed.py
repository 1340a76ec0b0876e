"""The oracle's fast paths answer as the plain ones they replace: the gold index's anchors (gold.py) and the hygiene
judge's tokens, units and object spans (dialects/hygiene). Each is checked against the plain version on random text."""

from __future__ import annotations

import random
from dataclasses import astuple

from memmatrix.model.dialects.hygiene.lexicon import _ABBREV, _SUBTOKEN_RE, _TOKEN_RE
from memmatrix.model.dialects.hygiene.records import _object_spans
from memmatrix.model.dialects.hygiene.text import _contains, _sentences, _subtokens, _tokenize
from memmatrix.model.gold import GoldIndex, norm

_ALPHABET = [*'ab  \n\r\t{}[]|"\\\',:.!?…’-_=>ßİΣς1920 3/.', "Mr", "e.g", "No", "the", "X", "->", "—", "until 2024",
             "| a | b |\n|---|---|\n| x | 2020 |\n"]


def _plain_tokens(text: str) -> list[tuple]:
    out, prev_end = [], 0
    for m in _TOKEN_RE.finditer(text):
        gap = text[prev_end:m.start()]
        out.append((m.group(), m.group().casefold().replace("’", "'"), m.start(), m.end(),
                    bool(_SUBTOKEN_RE.match(m.group())), bool(out) and gap == "", "\n" in gap or "\r" in gap))
        prev_end = m.end()
    return out


def _plain_sentences(toks: list[tuple]) -> list[list[int]]:
    text, low, word, glued, newline = (lambda i: toks[i][0]), (lambda i: toks[i][1]), (lambda i: toks[i][4]), \
        (lambda i: toks[i][5]), (lambda i: toks[i][6])
    n, cuts, brackets = len(toks), set(), set()
    for i in range(n):
        if text(i) == "[" and i + 1 < n and text(i + 1) in '"{[' or text(i) == "]" and i > 0 and text(i - 1) in '"}]':
            brackets.add(i)
    for i in range(n):
        if newline(i):
            cuts.add(i)
        if text(i) in "{}|" or i in brackets:
            cuts.update((i, i + 1))
        if text(i) in ",:" and i > 0 and text(i - 1) == '"' and glued(i):
            cuts.update((i, i + 1))
        if text(i) in ".!?" or text(i) == "…":
            if i + 1 < n and glued(i + 1) and word(i + 1):
                continue
            if text(i) == "." and i > 0 and word(i - 1) and low(i - 1) in _ABBREV and i + 1 < n and word(i + 1) \
                    and not text(i + 1)[:1].isupper():
                continue
            cuts.add(i + 1)
    out, cur = [], []
    for i in range(n):
        if i in cuts and cur:
            out.append(cur)
            cur = []
        if not (text(i) in "{}|" or i in brackets):
            cur.append(i)
    if cur:
        out.append(cur)
    merged = []
    for unit in out:
        if merged and text(unit[0]) in "[(" and not newline(unit[0]) and _plain_closes(toks, unit):
            merged[-1].extend(unit)
        else:
            merged.append(unit)
    return merged


def _plain_closes(toks, unit) -> bool:
    opening = toks[unit[0]][0]
    closing, depth = (")" if opening == "(" else "]"), 0
    for pos, k in enumerate(unit):
        depth += (toks[k][0] == opening) - (toks[k][0] == closing)
        if toks[k][0] == closing and depth == 0:
            return all(not toks[j][4] for j in unit[pos + 1:])
    return False


def _plain_object_spans(text: str) -> list[tuple[int, int]]:
    spans, stack, in_str, esc = [], [], False, False
    for k, ch in enumerate(text):
        if in_str:
            esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            stack.append(k)
        elif ch == "}" and stack:
            spans.append((stack.pop(), k + 1))
    return spans


def test_tokens_units_and_objects_as_plain_reading():
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 40)))
        toks = _tokenize(text)
        plain = _plain_tokens(text)
        assert [astuple(t) for t in toks] == plain, text
        assert [list(u) for u in _sentences(toks)] == _plain_sentences(plain), text
        assert _object_spans(text) == _plain_object_spans(text), text
        value = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 6)))
        want, have = _subtokens(value), _subtokens(text)
        assert _contains(text, value) == (bool(want) and any(
            have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1)))


def test_a_long_text_read_in_pieces_gives_the_tokens_of_the_whole():
    """A long text is tokenised a piece at a time (cut before whitespace, a whitespace run kept whole): with pieces
    of a few characters every token, gap and line break is the one the whole text gives."""
    from memmatrix.model.dialects.hygiene.text import _Tokens
    rng = random.Random(11)
    for _ in range(2000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 60)))
        for piece in (1, 2, 3, 7):
            assert [astuple(t) for t in _Tokens(text, piece)] == _plain_tokens(text), (piece, text)


def _case_file(rng: random.Random) -> dict:
    words = ["i", "live", "in", "berlin", "my", "sister", "is", "anna", "work", "at", "acme", "now", "moved", "to"]
    cases = []
    for c in range(30):
        ops = []
        for i in range(rng.randint(1, 4)):
            msgs = [{"role": "user", "content": " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))}
                    for _ in range(rng.randint(0, 3))]
            gold = [{"subject": "user", "attribute": f"a{rng.randint(0, 3)}", "value": rng.choice(words)}]
            ops.append({"op": "write", "messages": msgs, "gold": gold})
        cases.append({"id": f"c{c}", "ops": ops})
    return {"cases": cases}


def test_gold_index_finds_what_a_scan_finds():
    rng = random.Random(11)
    for _ in range(5):
        gold = GoldIndex([_case_file(rng)])
        messages = [m for w in gold.writes for m in w.messages]
        for _ in range(200):
            parts = rng.sample(messages, min(len(messages), rng.randint(0, 5)))
            text = rng.choice([" ", "\n", "", "x "]).join(p[rng.randint(0, 2):] if rng.random() < .2 else p
                                                          for p in parts)
            t = norm(text)
            hits = sorted((w for w in gold.writes if w.messages and all(m in t for m in w.messages)),
                          key=lambda w: -len(w.messages))
            kept = []
            for w in hits:
                if not any(set(w.messages) <= set(k.messages) for k in kept):
                    kept.append(w)
            assert gold.writes_in(text) == kept, text
            said = [key for key in gold.by_statement if key and key in t]
            assert gold.statements_in(text) == _statements_plain(gold, text, said), text


def _statements_plain(gold: GoldIndex, text: str, said: list[str]) -> list[dict]:
    out, seen = [], set()
    for key in said:
        fact = gold.fact_for_statement(key, text)
        ident = None if fact is None else tuple(fact.get(k) for k in ("subject", "attribute", "value", "intent",
                                                                          "replaces"))
        if fact is not None and ident not in seen:
            seen.add(ident)
            out.append(fact)
    return out


def _plain_judge(stale: str, current: str | None, text: str) -> tuple[str, str]:
    """The judgement read the plain way: the whole text tokenised and cut into units, every unit analysed anew."""
    import bisect
    from memmatrix.model.dialects.hygiene.analysis import _Analysis
    from memmatrix.model.dialects.hygiene.judgement import _value_spans
    from memmatrix.model.dialects.hygiene.records import _record_pairs, _record_qualifier, _table_rows
    from memmatrix.model.dialects.hygiene.text import _View
    if not _subtokens(stale or ""):
        return "absent", "the stale value has no letters or digits to look for"
    if not _contains(text, stale):
        return "absent", "the stale value does not appear"
    toks = _tokenize(text)
    objects, tables = _plain_object_spans(text), _table_rows(text)
    starts = sorted(tables)
    qualified, bare, seen, inside_current = [], [], 0, 0
    for idx in _sentences(toks):
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
        for a, (kind, _) in sorted(analysis.mentions.items()):
            if kind != "stale":
                continue
            seen += 1
            char, why = view.t[a].start, None
            rec = [s for s in objects if s[0] <= char < s[1]]
            if rec:
                said = _record_qualifier(_record_pairs(text[slice(*min(rec, key=lambda s: s[1] - s[0]))]), stale)
                why = f"its record says {said}" if said else None
            k = bisect.bisect_right(starts, char)
            if why is None and k and tables.get(starts[k - 1]) and "\n" not in text[starts[k - 1]:char]:
                why = f"its table row says {tables[starts[k - 1]]}"
            if why is None and a in attached:
                why = f"{attached[a][0].kind} qualifier {attached[a][0].phrase!r}"
            (qualified.append(f"{why} in {sentence[:160]!r}") if why else bare.append(sentence))
    if seen == 0:
        return (("absent", "the stale value appears only inside the current value") if inside_current else
                ("unqualified", "the stale value appears without any qualifier attached to it"))
    if bare:
        more = f" (and {len(bare) - 1} more)" if len(bare) > 1 else ""
        return "unqualified", f"presented as current, no qualifier attached: {bare[0][:200]!r}{more}"
    return "qualified", f"every mention ({seen}) is qualified; first: {qualified[0][:300]}"


_LINES = ["Corsa", "the car is a Corsa", "formerly Corsa, now Golf", "Corsa (superseded)", "Corsa. [old]",
          "{\"value\": \"Corsa\", \"status\": \"superseded\"}", "| car | valid_to |\n|---|---|\n| Corsa | 2024 |",
          "until 2024 Corsa", "no longer Corsa", "Golf", "- Corsa", "e.g. Corsa", "Mr. Corsa", "[\"Corsa\", {",
          "}]", "|", "{", "\"Corsa\": 1,", "Corsa-Golf", "Golf Corsa Golf", "was Corsa.\tNow Golf!", "| (superseded)",
          "{ [old]", "] (formerly)", ". now", "{\"meta\": {\"x\": 1}, \"car\": \"Corsa\", \"status\": \"old\"}",
          "{\"a\": {\"car\": \"Corsa\", \"valid_to\": \"2024\"}, \"b\": {\"car\": \"Corsa\"}}", ""]


def test_the_judgement_read_in_pieces_and_remembered_units_is_the_plain_judgement():
    """The judge reads a text a piece at a time (cut before a line that begins with a word), only the pieces holding
    the stale value's subtokens, and remembers each unit's analysis by its tokens: on texts built of lines that
    recur in other texts in other surroundings (so remembered units are met again, glued or not, after a break or
    not), every verdict and reason is the plain whole-text judgement's."""
    from memmatrix.model.dialects.hygiene.judgement import forget_readings, judge_hygiene
    rng = random.Random(17)
    forget_readings()
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(1, 8)):
            parts.append(rng.choice(_LINES) if rng.random() < 0.7 else
                         "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12))))
            parts.append(rng.choice(["\n", "\n", " ", "", "\r\n", "\n\n  ", ". ", "\t"]))
        text = "".join(parts)
        stale = rng.choice(["Corsa", "corsa", "Golf", "Corsa Golf", "a", "Mr"])
        current = rng.choice(["Golf", None, "Corsa", "Polo"])
        assert judge_hygiene(stale, current, text) == _plain_judge(stale, current, text), (stale, current, text)
