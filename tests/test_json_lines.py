"""Transcript lines are parsed by orjson where it reads the value json reads (``canon.loads_line``), and the oracle's
cache keys are written by orjson where it can (``reask.key_of``): both against json, the plain computation they
stand for, on random values that reach the edges (64-bit integers, float extremes, escapes, surrogates)."""

import hashlib
import json
import math
import random
import struct
import tracemalloc

import orjson
import pytest

from memmatrix.common.canon import ORJSON_AT_MOST, canonical, loads_line
from memmatrix.evidence.reask import key_of


def same(a, b) -> bool:
    """Equal and of the same types all the way down (1 and 1.0, 0.0 and -0.0 told apart), keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


EDGE_INTS = [0, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64 - 1, 2**64, -2**64, 10**18,
             10**19, -10**19, 10**30, 9_999_999_999_999_999_999]
KEY_TAILS = ["", "é", "\n", "\""]
EDGE_FLOATS = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1, 1e16, 1e22, 1e23,
               123456789012345678901234567890.0, 1.0, -2.5]


def value(rng: random.Random, depth: int = 0):
    pick = rng.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return rng.choice(EDGE_INTS) if rng.random() < 0.5 else rng.randrange(-10**22, 10**22)
    if pick == 1:
        f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return f if math.isfinite(f) else rng.choice(EDGE_FLOATS)
    if pick == 2:
        return rng.choice(EDGE_FLOATS)
    if pick == 3:
        return "".join(rng.choice(['a', ' ', '"', '\\', '\n', '\t', '\x00', '\x7f', 'é', 'ß', '€', '\u2028', '𝄞',
                                   '1234567890123456789', '\ud800', '\udfff']) for _ in range(rng.randrange(12)))
    if pick == 4:
        return rng.choice([None, True, False])
    if pick == 5:
        return rng.randrange(-1000, 1000)
    if pick in (6, 7):
        return {f"k{rng.randrange(50)}{rng.choice(KEY_TAILS)}": value(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [value(rng, depth + 1) for _ in range(rng.randrange(5))]


def test_loads_line_reads_what_json_reads():
    rng = random.Random(7)
    for _ in range(4000):
        v = value(rng)
        for text in (json.dumps(v), json.dumps(v, ensure_ascii=False, separators=(",", ":"))):
            line = text.encode("utf-8", "surrogatepass") if "\ud800" in text or "\udfff" in text else text.encode()
            try:
                expected = json.loads(line)
            except UnicodeDecodeError:  # a raw lone surrogate is not UTF-8: both refuse it
                with pytest.raises(ValueError):
                    loads_line(line)
                continue
            assert same(loads_line(line), expected), text
            assert same(loads_line(text), expected), text


@pytest.mark.parametrize("text", ["NaN", "[1,Infinity]", '{"a":-Infinity}', "1e400", "[-1e999]", "{", "\"\\ud800",
                                  "[1] [2]", ""])
def test_loads_line_refuses_what_is_not_canonical_json(text):
    with pytest.raises(ValueError):
        loads_line(text.encode())


def test_every_value_read_can_be_written_canonically():
    rng = random.Random(11)
    for _ in range(2000):
        v = loads_line(json.dumps(value(rng)).encode())
        assert same(json.loads(canonical(v)), json.loads(json.dumps(v, sort_keys=True)))  # canonical sorts keys


def test_key_of_tells_values_apart_and_only_them():
    rng = random.Random(3)
    seen: dict[bytes, str] = {}
    for _ in range(4000):
        v = loads_line(json.dumps({"messages": [value(rng)], "model": "m"}).encode())
        k = key_of(v)
        text = json.dumps(v, sort_keys=True, ensure_ascii=True)  # one text per value (types kept: 1 vs 1.0)
        assert seen.setdefault(k, text) == text
        assert key_of(json.loads(json.dumps(v))) == k  # the same value read again
        reordered = dict(reversed(list(v.items())))
        assert key_of(reordered) == k
    pairs = [({"a": 1}, {"a": 1.0}), ({"a": 0.0}, {"a": -0.0}), ({"a": 10**30}, {"a": 1e30}),
             ({"a": None}, {"a": "null"}), ({"a": "\ud800"}, {"a": "\udfff"}), ({"a": [1]}, {"a": [[1]]})]
    for a, b in pairs:
        assert key_of(a) != key_of(b), (a, b)


def _held_while(fn, arg):
    """``fn(arg)`` and the most memory Python held at once while it ran, beyond what it held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = fn(arg)
        return out, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_long_line_is_read_without_holding_many_times_its_size():
    """A model transcript's request can be megabytes long (a whole store handed to the model): orjson holds over ten
    times a line's size while it parses it, so a line past ``ORJSON_AT_MOST`` is parsed by json, which holds a long
    string about twice. Read the same value either way."""
    value = {"kind": "chat", "request": {"messages": [{"role": "user", "content": "fact " * 600_000 + "é\n"}]}}
    line = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(line) > 2 * ORJSON_AT_MOST
    read, peak = _held_while(loads_line, line)
    assert same(read, json.loads(line)) and read == value
    assert peak < 4 * len(line), f"{peak:,} bytes held to read a line of {len(line):,}"
    short = json.dumps({"n": 2**64, "s": "x" * 1000}).encode()
    assert same(loads_line(short), json.loads(short))


def test_a_long_request_is_keyed_without_holding_many_times_its_size():
    """The oracle's cache key of a request of megabytes is written by json (orjson holds about nine times what it
    writes): equal requests get one key, any change another, and the key of a short request is orjson's text."""
    text = "fact " * 600_000
    request = {"model": "m", "messages": [{"role": "system", "content": "judge"}, {"role": "user", "content": text}]}
    key, peak = _held_while(key_of, request)
    assert peak < 4 * len(text), f"{peak:,} bytes held to key a request of {len(text):,} characters"
    assert key_of(json.loads(json.dumps(dict(reversed(list(request.items())))))) == key
    changed = {**request, "messages": [request["messages"][0], {"role": "user", "content": text + "x"}]}
    assert key_of(changed) != key
    parts = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    assert key_of(parts) != key_of({**parts, "model": "n"})
    short = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    assert key_of(short) == hashlib.sha256(b"o" + orjson.dumps(short, option=orjson.OPT_SORT_KEYS)).digest()
