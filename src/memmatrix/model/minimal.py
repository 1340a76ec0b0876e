"""The smallest answer a JSON Schema accepts: what the oracle gives when a client is promised an answer of a shape
(a strict ``json_schema`` response format, a forced tool's arguments) and no dialect answered it.

``minimal_instance(schema)`` walks the schema once, without a solver: required properties only, each the least
value of its type ("" / 0 / false / [] / null, a nested object in turn), an ``enum``'s first value, a ``const``,
the first branch of ``anyOf`` / ``oneOf`` (null when a branch allows it), ``allOf`` merged, ``$ref`` followed
inside the schema (``#/$defs/...``, ``#/definitions/...``), and the bounds a value must meet (``minimum``,
``minLength``, ``minItems``). That covers what the ``openai`` client, LangChain and pydantic v2's
``model_json_schema()`` send; ``pattern`` and ``format`` are not honoured.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["minimal_instance"]

_DEPTH = 64  # a schema that requires itself has no finite instance: give up there


def minimal_instance(schema: Any) -> Any:
    """The least value ``schema`` accepts (``schema`` as JSON, ``$ref`` resolved against itself)."""
    return _walk(schema, schema, 0)


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"$ref {ref!r} points outside the schema; only '#/...' pointers are followed")
    node = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _merged(schema: dict, root: Any) -> dict:
    """``schema`` with its ``$ref`` and ``allOf`` folded in: one object to read keywords from."""
    out = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
    parts = ([_resolve(schema["$ref"], root)] if isinstance(schema.get("$ref"), str) else []) + \
        [p for p in schema.get("allOf") or [] if isinstance(p, dict)]
    for part in parts:
        part = _merged(part, root) if isinstance(part, dict) else {}
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**value, **out.get("properties", {})}
            elif key == "required":
                out["required"] = [*out.get("required", []), *(r for r in value if r not in out.get("required", []))]
            else:
                out.setdefault(key, value)
    return out


def _allows_null(schema: Any, root: Any) -> bool:
    if not isinstance(schema, dict):
        return schema is True
    s = _merged(schema, root)
    kind = s.get("type")
    return kind == "null" or (isinstance(kind, list) and "null" in kind) or s.get("const", 0) is None or \
        None in (s.get("enum") or [0])


def _walk(schema: Any, root: Any, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > _DEPTH:
        return None  # true, or an empty schema: anything goes, null is the least thing
    s = _merged(schema, root)
    if "const" in s:
        return s["const"]
    if isinstance(s.get("enum"), list) and s["enum"]:
        return None if None in s["enum"] else s["enum"][0]
    branches = [b for b in (s.get("anyOf") or s.get("oneOf") or []) if b is not False]
    if branches:
        if any(_allows_null(b, root) for b in branches):
            return None
        rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
        return _walk({**rest, **_merged(branches[0], root)} if isinstance(branches[0], dict) else rest, root, depth + 1)
    kind = s.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else (kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in s or "required" in s else "array" if "items" in s else None
    if kind == "object":
        props = s.get("properties") or {}
        return {name: _walk(props.get(name, True), root, depth + 1) for name in s.get("required") or []}
    if kind == "array":
        prefix = s.get("prefixItems") or []
        n = max(int(s.get("minItems") or 0), 0)
        return [_walk(prefix[i] if i < len(prefix) else s.get("items", True), root, depth + 1) for i in range(n)]
    if kind == "string":
        return "x" * int(s.get("minLength") or 0)
    if kind in ("integer", "number"):
        return _number(s, kind == "integer")
    if kind == "boolean":
        return False
    return None


def _number(s: dict, integer: bool) -> int | float:
    """0, or the value nearest to it that the bounds (and an integer's ``multipleOf``) allow."""
    num = lambda k: s.get(k) if isinstance(s.get(k), (int, float)) and not isinstance(s.get(k), bool) else None  # noqa: E731
    low, high, xlow, xhigh = num("minimum"), num("maximum"), num("exclusiveMinimum"), num("exclusiveMaximum")
    ok = lambda v: ((low is None or v >= low) and (high is None or v <= high)  # noqa: E731
                    and (xlow is None or v > xlow) and (xhigh is None or v < xhigh))
    if ok(0):
        return 0
    lows, highs = [v for v in (low, xlow) if v is not None], [v for v in (high, xhigh) if v is not None]
    if integer:
        m = num("multipleOf") or 1
        base = math.ceil(max(lows) / m) * m if lows else math.floor(min(highs) / m) * m
        candidates = [base, base + m] if lows else [base, base - m]
        return next((int(v) for v in candidates if ok(v)), int(base))
    if low is not None and ok(low):
        return low
    if high is not None and ok(high):
        return high
    if lows and highs:
        return (max(lows) + min(highs)) / 2
    return max(lows) + 1 if lows else min(highs) - 1
