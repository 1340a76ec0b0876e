"""Rules that keep cases discriminating, checked before anything runs.

``case_problems`` holds for a protocol whose every target is a canary to remember (deletion): a case is
rejected when a target's answer is not backed by the case, when a model could guess its value without reading
it, when one target's token sequence occurs inside another's (scoring could not tell them apart; sharing a token,
a street or a domain, is fine), when a question contains its own
answer, or when a question (or a history question) shares no word with the sentence that states its answer. ``file_problems`` holds for every case file: the oracle finds the write a model call is about by its
user messages, so no write may repeat, or be contained in, another case's write, and no forget, share or
update request may be word for word another case's.
"""

from __future__ import annotations

import re

from ..common.tokens import contains, norm, tokens

#: Words any model could produce unprompted: a target made only of these could be guessed, not remembered.
COMMON = frozenset("""
a an the and or of to in on at for with my your our their his her its is are was be code number name pass
password passphrase pin key one two three four five six seven eight nine ten red blue green black white
john mary james anna david sarah michael emma paul lisa peter laura mark anne tom kate
""".split())


def _guessable(token: str) -> str | None:
    toks = tokens(token)
    letters_digits = re.sub(r"[^0-9A-Za-z]", "", token)
    if not toks:
        return "has no letters or digits"
    if all(t in COMMON for t in toks):
        return "is made only of common words a model could produce unprompted"
    if letters_digits.isdigit():
        if len(letters_digits) < 5:
            return "is a number of fewer than 5 digits, which a model could guess"
        if len(set(letters_digits)) <= 2 or letters_digits in "01234567890" or letters_digits in "9876543210":
            return "is a number with a pattern (repeated or consecutive digits), which a model could guess"
    elif len(letters_digits) < 5 and len(toks) < 2:
        return "is shorter than 5 letters and digits, which a model could guess"
    return None


def case_problems(case: dict, words: tuple[str, ...] = ()) -> list[str]:
    """Per-case rules: backed answers, unguessable values, no shared tokens, no answer inside a question.
    ``words`` names targets that are a word to look for (a polarity's "quit"), not a value to remember."""
    out: list[str] = []
    cid = case["id"]
    targets = {k: v for k, v in case.get("targets", {}).items() if k not in words}
    writes = [op for op in case.get("ops", []) if op["op"] in ("write", "import", "update")]
    gold = [f for op in writes for f in op.get("gold", [])]
    for name, t in targets.items():
        token = t["token"]
        why = _guessable(token)
        if why:
            out.append(f"case {cid!r}: target {name!r} value {token!r} {why}; use a fictional, high-entropy value")
        for q in t.get("queries", []):
            if contains(q, token):
                out.append(f"case {cid!r}: target {name!r} question {q!r} contains its own answer")
        backed = [f for f in gold if contains(f.get("value", ""), token) or contains(f.get("statement", ""), token)]
        if not backed:
            out.append(f"case {cid!r}: target {name!r} value {token!r} is in no write's gold fact: the answer is not "
                       "backed by the case")
        else:  # the sentences that state the value tie a question to it (a retraction names it as its value only)
            stating = [f for f in backed if contains(f.get("statement", ""), token)] or backed
            for kind in ("queries", "history_queries"):  # a history question is answered by the same fact
                if t.get(kind) and not any(set(tokens(q)) - COMMON & set(tokens(f.get("statement", "")))
                                           - {*tokens(token)} for q in t[kind] for f in stating):
                    what = "history question" if kind == "history_queries" else "question"
                    out.append(f"case {cid!r}: target {name!r}: no {what} shares a word (beyond "
                               "common ones) with the fact that answers it, so nothing ties the question to its answer")
    names = sorted(targets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            inner = inside(targets[a]["token"], targets[b]["token"]) or inside(targets[b]["token"], targets[a]["token"])
            if inner:
                out.append(f"case {cid!r}: targets {a!r} and {b!r}: {inner}, so whole-token matching cannot tell them "
                           "apart (a value may share tokens with another, e.g. a street or a domain, but not contain "
                           "its whole token sequence)")
    return out


def inside(a: str, b: str) -> str:
    """Why ``a``'s token sequence occurs inside ``b``'s ('' when it does not): matching is by whole-token sequence, so
    only then does finding one also find the other."""
    ta, tb = tokens(a), tokens(b)
    if ta and any(tb[i:i + len(ta)] == ta for i in range(len(tb) - len(ta) + 1)):
        return f"the token sequence {ta} of {a!r} occurs inside {b!r}" if ta != tb else f"{a!r} and {b!r} are the same tokens"
    return ""


def file_problems(data: dict) -> list[str]:
    """Across the file: every write must be one the oracle can tell from every other case's writes."""
    out: list[str] = []
    sets: list[tuple[str, frozenset[str]]] = []
    for case in data.get("cases", []):
        seen = set()
        for op in case.get("ops", []):
            if op["op"] not in ("write", "import"):
                continue
            users = frozenset(norm(m["content"]) for m in op.get("messages", []) if m.get("role") == "user")
            if users and users not in seen:
                seen.add(users)
                sets.append((case["id"], users))
    by_message: dict[str, set[int]] = {}
    for k, (_, users) in enumerate(sets):
        for m in users:
            by_message.setdefault(m, set()).add(k)
    for k, (cid, users) in enumerate(sets):
        rivals = set.intersection(*(by_message[m] for m in users)) - {k}
        others = sorted({sets[j][0] for j in rivals if sets[j][0] != cid})
        if others:
            out.append(f"case {cid!r}: a write's user messages all occur in a write of case(s) {others}; the oracle "
                       "finds a write by its user messages, so it could not tell them apart: make each write unique")
    texts: dict[str, set[str]] = {}
    for case in data.get("cases", []):
        for op in case.get("ops", []):
            if op["op"] in ("forget", "share", "update") and op.get("text"):
                texts.setdefault(norm(op["text"]), set()).add(case["id"])
    for text, ids in texts.items():
        if len(ids) > 1:
            out.append(f"cases {sorted(ids)}: the {text!r} request is the same text in each; the oracle reads a "
                       "request by its text, so it could not tell them apart: name the case's own value in it")
    return out
