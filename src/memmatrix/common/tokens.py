"""Whole-token, case-folded matching: ``8766`` does not match ``18766``.

A text is split into runs of letters and digits (Unicode-aware), case-folded.
A needle matches when its token sequence occurs contiguously in the haystack's.
So ``Vantablack-7`` matches "vantablack-7's" but not "Vantablack-77", and
``0.2.4`` does not match ``10.2.4``.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterator

from ..adapterkit import LONG, SizedMemo, contains, holds_run, holds_tokens, plain, token_tuple, tokens

__all__ = ["contains", "forget", "found_any", "found_in", "norm", "strings", "tokens", "word_count"]


def strings(obj: Any) -> Iterator[str]:
    """Every string inside a JSON value, keys included: a value hidden in a key is still there."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from strings(value)


def found_in(obj: Any, needle: str) -> bool:
    """True when ``needle`` matches as whole tokens inside any string of a JSON value (keys included, as in
    ``strings``). The scorers ask this of every answer for every wording of every target, so the needle is
    tokenised once and the value walked without generators."""
    want = token_tuple(needle)
    if not want:
        return any(contains(s, needle) for s in strings(obj))  # raises as contains does, where there is a string
    todo = [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            if holds_tokens(x, want):
                return True
        elif isinstance(x, dict):
            for key, value in x.items():
                if holds_tokens(str(key), want):
                    return True
                todo.append(value)
        elif isinstance(x, list):
            todo.extend(x)
    return False


def found_any(obj: Any, needles) -> bool:
    """``any(found_in(obj, n) for n in needles)``. A scorer asks this of one answer for every wording of every
    target, and of the same answer for several targets, so the answer's distinct strings are listed once, each with
    its lower case where that is its folded form (``plain``): the strings of the last answers asked about are kept
    (``HAY``). A string whose lower case does not hold a needle's first token is ruled out without tokenising it;
    only the others are tokenised (``token_tuple`` remembers them). An answer must not be changed while it is being
    scored (none is: they are read from a transcript)."""
    strings_ = None
    for needle in needles:
        want = token_tuple(needle)
        if not want:
            if found_in(obj, needle):  # raises as contains does, where there is a string
                return True
            continue
        if strings_ is None:
            strings_ = _hay(obj)[1]
        first = want[0]
        for text, low in strings_:
            if (low is None or first in low) and holds_run(token_tuple(text), want):
                return True
    return False


#: the answers' distinct strings, by identity, each answer with them (so no other object takes its id while it is
#: held): four million characters or 512 answers
HAY = SizedMemo(4_000_000, lambda _, got: got[2], 512)


def _hay(obj: Any) -> tuple:
    def make():
        distinct = dict.fromkeys(strings(obj))
        return obj, tuple((s, s.lower() if plain(s) else None) for s in distinct), sum(map(len, distinct))
    return HAY.get(id(obj), make)


def forget() -> None:
    """Drop what ``found_any``, ``token_tuple`` and ``norm`` remember of answers and texts (``verify`` does after each
    result, so nothing of one result is held while the next is read)."""
    HAY.clear()
    LONG.clear()
    _norm_short.cache_clear()


_ESCAPES = (("\\\"", '"'), ("\\'", "'"), ("\\n", " "), ("\\t", " "))


def norm(text: str) -> str:
    """Case-folded, whitespace-collapsed, JSON/Python escapes undone: how prompts quote messages. The oracles compare
    the same short texts (a store's memories, a fact's fields) again and again, so the last 8,192 short ones are
    remembered."""
    return _norm_short(text) if len(text) <= 512 else _norm(text)


def _norm(text: str) -> str:
    for a, b in _ESCAPES:
        text = text.replace(a, b)
    return " ".join(text.split()).casefold()  # split() parts at what \s matches (str.isspace), the ends dropped


_norm_short = functools.lru_cache(maxsize=8192)(_norm)


_WORD_RUN = re.compile(r"\w+")


def word_count(text: str) -> int:
    """How many words and punctuation marks ``text`` holds: ``len(re.findall(r"\\w+|[^\\w\\s]", text))``, the
    oracle's deterministic token estimate, counted without making a string of each (the runs of word characters,
    then every character left that is not whitespace)."""
    rest, runs = _WORD_RUN.subn("", text)
    return runs + len("".join(rest.split()))
