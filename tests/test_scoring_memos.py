"""What the scorer and the oracle remember between questions changes no answer: the answer's token runs
(``tokens.found_any``), long texts' tokens (``adapterkit.token_tuple``), the hygiene judge's reading of a text
(``judgement._read``), ``fold``'s accent stripping and the request normaliser's fast path. Each is checked against
the plain computation it stands for, on random values, with the memory bounds made small so eviction happens."""

from __future__ import annotations

import json
import random
import unicodedata

import pytest

from memmatrix import adapterkit
from memmatrix.common import tokens
from memmatrix.common.canon import canonical
from memmatrix.common.patterns import _DATETIME, wall_dates
from memmatrix.model import upstream
from memmatrix.model.dialects.hygiene import judgement

_WORDS = ["Vantablack-7", "vantablack", "7", "Ysaëlle", "ysaelle", "Ysa\\u00eblle", "8766", "18766", "Lyon", "lyon's",
          "the", "e\u0301te\u0301", "Ǆ", "ﬁne", "%41", "&amp;", "former", "-", " ", "\n", "{", "}", "２０２４"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(5 if depth < 3 else 2)
    if kind == 0:
        return _text(rng, rng.randrange(1, 8))
    if kind == 1:
        return rng.choice([3, 2.5, None, True])
    if kind == 2:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_text(rng, rng.randrange(1, 3)): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_found_any_answers_as_found_in_for_every_needle(monkeypatch):
    monkeypatch.setattr(tokens, "HAY", adapterkit.SizedMemo(40, tokens.HAY.size, 3))  # eviction on most questions
    rng = random.Random(7)
    answers = [_value(rng) for _ in range(40)]
    held = 0
    for _ in range(3000):
        obj = rng.choice(answers)
        needles = [_text(rng, rng.randrange(1, 3)) for _ in range(rng.randrange(1, 4))]
        needles = [n for n in needles if adapterkit.token_tuple(n)]
        want = any(tokens.found_in(obj, n) for n in needles)
        assert tokens.found_any(obj, needles) is want, (obj, needles)
        held += want
    assert 300 < held < 2700  # both answers asked about often enough to mean something
    assert len(tokens.HAY.held) <= 3


def test_found_any_refuses_a_needle_without_tokens_as_found_in_does():
    with pytest.raises(ValueError, match="no letters or digits"):
        tokens.found_any({"text": "Lyon"}, ["--"])
    assert tokens.found_any({"text": "Lyon"}, ["lyon", "--"]) is True  # found first, as any() stops


def test_long_texts_are_remembered_within_the_budget(monkeypatch):
    monkeypatch.setattr(adapterkit, "LONG_TEXT", 20)
    memo = adapterkit.SizedMemo(200, adapterkit.LONG.size)
    monkeypatch.setattr(adapterkit, "LONG", memo)
    rng = random.Random(3)
    texts = [_text(rng, rng.randrange(5, 40)) for _ in range(30)]
    made = 0
    for _ in range(300):
        t = rng.choice(texts)
        made += t not in memo.held
        assert adapterkit.token_tuple(t) == tuple(adapterkit._TOKEN.findall(adapterkit.fold(t)))
        assert memo.total == sum(map(len, memo.held))
        assert memo.total <= 200 or len(memo.held) == 1
    assert list(memo.held)[-1] == t  # the last asked is kept, last
    assert 30 < made < 300  # some remembered, some dropped and made again


def test_a_sized_memo_keeps_the_last_used_within_its_entries():
    memo, made = adapterkit.SizedMemo(10**9, lambda k, v: 1, entries=2), []
    for key in "abacb":
        memo.get(key, lambda: made.append(key) or key.upper())
    assert made == ["a", "b", "c", "b"] and list(memo.held) == ["c", "b"]
    memo.clear()
    assert memo.held == {} and memo.total == 0
    # a value of None (or any falsy value) is remembered as any other: made once, counted once
    for key in "xxyyx":
        memo.get(key, lambda: made.append(key) or (None if key == "x" else 0))
    assert made[-2:] == ["x", "y"] and memo.held == {"y": 0, "x": None} and memo.total == 2


def _plain_fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", adapterkit._unescape(text)).casefold())
    return "".join(c for c in text if not unicodedata.combining(c))


@pytest.mark.parametrize("seed", range(5))
def test_fold_drops_the_same_marks_as_one_character_at_a_time(seed):
    rng = random.Random(seed)
    chars = "aeiouAÉß\u0301\u0308\u0327\u20d7ǅﬀ\\u00e9%20&eacute;Σς\u05b0\u0e48\U0001d400 \n"
    for _ in range(200):
        text = "".join(rng.choice(chars) for _ in range(rng.randrange(30)))
        assert adapterkit.fold(text) == _plain_fold(text), repr(text)


def _plain_normalize(body: dict) -> dict:
    text, days = canonical(body), wall_dates()
    text = _DATETIME.sub(lambda m: "~wallclock" if m.group(1) in days else m.group(0), text)
    for d in sorted(days):
        text = text.replace(d, "~today")
    return json.loads(text)


def test_normalize_request_with_and_without_a_wall_clock_date():
    today = sorted(wall_dates())[1]
    for content in ("nothing dated", "on 2019-03-04 10:00 it rained", f"stamped {today}T09:15:00Z and {today}",
                    f"kept 2019-03-04T10:00 but {today} 08:00 PM UTC"):
        body = {"model": "m", "messages": [{"role": "user", "content": content}], "n": 1}
        got = upstream.normalize_request(body)
        assert got == _plain_normalize(body)
        assert (today in json.dumps(got)) is False
    assert upstream.normalize_request({"m": f"x {today}"})["m"] == "x ~today"  # the fast path is not always taken


def test_normalized_sha256_is_the_sha256_of_the_normalized_request():
    """The oracle's imperfect replies and the gateway's request ids hash the normalized request: ``normalized_sha256``
    skips parsing and writing it again where no wall-clock date is in it, and hashes the same text either way (floats,
    negative zero, big integers, escapes, key order, dated or not)."""
    from memmatrix.common.canon import sha256_json
    today = sorted(wall_dates())[1]
    for content in ("nothing dated", f"stamped {today}T09:15:00Z", "tab\tand \u00e9 \"q\" \u2028"):
        for extra in ({}, {"t": 0.1, "z": -0.0, "big": 10**30, "e": 1e300, "list": [1, 1.0, True, None]}):
            body = {"model": "m", "messages": [{"role": "user", "content": content}], **extra}
            assert upstream.normalized_sha256(body) == sha256_json(upstream.normalize_request(body))
            assert upstream.normalized_sha256(body) == sha256_json(_plain_normalize(body))
    assert upstream.normalized_sha256({"b": 1, "a": 2}) == upstream.normalized_sha256({"a": 2, "b": 1})
    assert upstream.normalized_sha256({"a": 1}) != upstream.normalized_sha256({"a": 1.0})


def test_the_judge_reads_a_text_once_and_answers_as_if_it_had_not(monkeypatch):
    text = ("Alice lives in Lyon. {\"fact\": \"Alice lives in Paris\", \"status\": \"former\"}\n"
            "| city | note |\n|---|---|\n| Paris | until 2024 |\nShe moved from Paris to Lyon.")
    asked = [("Paris", "Lyon"), ("Lyon", "Paris"), ("Marseille", "Lyon"), ("2024", None), ("Paris", None)]
    memos = ("TEXTS", "READ", "RECORDS", "UNITS")
    cold = []
    for stale, current in asked:
        for name in memos:
            monkeypatch.setattr(judgement, name, adapterkit.SizedMemo(0, getattr(judgement, name).size))
        cold.append(judgement.judge_hygiene(stale, current, text))
    for name in memos:
        monkeypatch.setattr(judgement, name, adapterkit.SizedMemo(10**6, getattr(judgement, name).size))
    warm = [judgement.judge_hygiene(s, c, text) for s, c in asked]
    assert warm == cold
    assert len({v for v, _ in cold}) >= 2  # the judgement has something to get wrong
    assert list(judgement.TEXTS.held) == [text]  # laid out once for all five
    assert "".join(judgement.READ.held) == text  # its two pieces (the last line begins with a word) each read once
