"""Whole-token, case-folded matching: ``8766`` does not match ``18766``.

A text is split into runs of letters and digits (Unicode-aware), case-folded.
A needle matches when its token sequence occurs contiguously in the haystack's.
So ``Vantablack-7`` matches "vantablack-7's" but not "Vantablack-77", and
``0.2.4`` does not match ``10.2.4``.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from ..adapterkit import contains, holds_tokens, token_tuple, tokens

__all__ = ["contains", "found_in", "norm", "strings", "tokens"]


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


_ESCAPES = (("\\\"", '"'), ("\\'", "'"), ("\\n", " "), ("\\t", " "))
_SPACE = re.compile(r"\s+")


def norm(text: str) -> str:
    """Case-folded, whitespace-collapsed, JSON/Python escapes undone: how prompts quote messages."""
    for a, b in _ESCAPES:
        text = text.replace(a, b)
    return _SPACE.sub(" ", text).strip().casefold()
