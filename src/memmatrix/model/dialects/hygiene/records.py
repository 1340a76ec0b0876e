"""Qualifiers a record carries: a JSON object's status, end date or successor, an inline field, a table row."""

from __future__ import annotations

import json
import re

from .lexicon import (_END_KEYS, _FALSE_MEANS_OLD, _LABEL_QUAL, _LINK_KEYS, _MONTHS, _NOT_CURRENT_VALUES, _OPEN_END,
    _RELATIVE_DAYS, _STATUS_KEYS, _SUBTOKEN_RE, _TABLE_END, _TRUE_MEANS_OLD)
from .text import _contains


# ------------------------------------------------------------------------------- records and tables

_OBJECT_MARKS = re.compile(r'[\\"{}]')


def _object_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of {...} objects, innermost last, tolerant of broken JSON."""
    # Only quotes, backslashes and braces change the state, so only they are visited; a backslash inside a string
    # escapes the character after it (skip), whatever that is.
    spans, stack, in_str, skip = [], [], False, -1
    for m in _OBJECT_MARKS.finditer(text):
        k, ch = m.start(), m.group()
        if in_str:
            if k == skip:
                continue
            if ch == "\\":
                skip = k + 1
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            stack.append(k)
        elif ch == "}" and stack:
            spans.append((stack.pop(), k + 1))
    return spans


_NOT_KEY_CHAR = re.compile(r"[^a-z0-9]")
_DIGIT = re.compile(r"\d")
_INLINE_PAIR = re.compile(r"""["']?([A-Za-z][\w \-]{0,40}?)["']?\s*[:=]\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^,}\n]*)""")
_TABLE_RULE = re.compile(r"\s*\|?[\s:\-|]+\|?\s*")


def _norm_key(key: str) -> str:
    return _NOT_KEY_CHAR.sub("", key.casefold())


def _date_like(value: str) -> bool:
    s = value.strip().strip("\"'").casefold()
    if not s or s in _OPEN_END or s in ("none", "null", "present", "-", "—"):
        return False
    return bool(_DIGIT.search(s)) or any(m in _SUBTOKEN_RE.findall(s) for m in _MONTHS | _RELATIVE_DAYS)


def _record_pairs(obj_text: str) -> list[tuple[str, object]]:
    try:
        data = json.loads(obj_text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        return [(k, v) for k, v in data.items() if not isinstance(v, (dict, list))]
    pairs = []
    for m in _INLINE_PAIR.finditer(obj_text):
        raw = m.group(2).strip()
        val: object = raw[1:-1] if raw[:1] in "\"'" else raw
        if isinstance(val, str) and val.casefold() in ("true", "false"):
            val = val.casefold() == "true"
        pairs.append((m.group(1), val))
    return pairs


def _record_qualifier(pairs: list[tuple[str, object]], stale: str | None = None) -> str | None:
    for key, val in pairs:
        k = _norm_key(key)
        if stale and isinstance(val, str) and _contains(val, stale) and \
                any(part in _LABEL_QUAL for part in _SUBTOKEN_RE.findall(key.casefold().replace("_", " "))):
            return f"{key}: {val}"  # {"previous_gym": "X"}
        sval = val.strip() if isinstance(val, str) else val
        if k in _STATUS_KEYS and isinstance(sval, str) and sval.casefold() in _NOT_CURRENT_VALUES:
            return f"{key}: {sval}"
        if k in _LINK_KEYS and isinstance(sval, str) and sval and sval.casefold() not in ("none", "null"):
            return f"{key}: {sval}"
        if k in _END_KEYS and k != "to" and isinstance(sval, str) and _date_like(sval):
            return f"{key}: {sval}"
        if k in _FALSE_MEANS_OLD and sval is False:
            return f"{key}: false"
        if k in _TRUE_MEANS_OLD and sval is True:
            return f"{key}: true"
    return None


def _table_rows(text: str) -> dict[int, str]:
    """Character offset of each markdown table data row's start -> the row's qualifier, when it has one."""
    lines = text.splitlines(keepends=True)
    offs, pos = [], 0
    for ln in lines:
        offs.append(pos)
        pos += len(ln)
    out: dict[int, str] = {}
    k = 0
    while k < len(lines):
        if lines[k].strip().startswith("|") and k + 1 < len(lines) and \
                _TABLE_RULE.fullmatch(lines[k + 1]) and "-" in lines[k + 1]:
            header = [_norm_key(c) for c in lines[k].strip().strip("|").split("|")]
            r = k + 2
            while r < len(lines) and lines[r].strip().startswith("|"):
                cells = [c.strip() for c in lines[r].strip().strip("|").split("|")]
                for h, c in zip(header, cells):
                    if h in _TABLE_END and c and c.casefold() not in _OPEN_END and c not in ("-", "—", "–"):
                        out[offs[r]] = f"{h}: {c}"
                        break
                    if h in _STATUS_KEYS and c.casefold() in _NOT_CURRENT_VALUES:
                        out[offs[r]] = f"{h}: {c}"
                        break
                out.setdefault(offs[r], "")
                r += 1
            k = r
        else:
            k += 1
    return out
