"""Imperfect oracles: the error modes a real model makes, each at a stated rate and seed.

The oracle is a perfect extractor; a real model is not. Each mode below turns the oracle into one
that makes exactly one kind of mistake, so a cell that moves under a mode moves because of that
mistake and nothing else (the sensitivity matrix, ``docs/plumbing.md``). A mode is named in the
gateway's ablation (``MEMMATRIX_MODEL_ORACLE_ABLATION``, ``--model oracle-MODE``), recorded in the
stamp's ``oracle_version`` (``1.1.0+MODE``) and the result folder's variant (``oracle-MODE``):

- ``MODE`` alone: the mistake every time it can be made (rate 1.0);
- ``MODE-RATE-sSEED`` (``paraphrase-0.2-s1``): each chance to make it is taken with probability RATE,
  decided by a hash of the seed, the mode and the chance (a case's write and fact, or a request's
  content), so the same run makes the same mistakes on every machine and a re-ask reproduces them.

Fact modes change the gold facts the oracle answers from (every dialect reads them, so every system
sees the same mistake in its own dialect); reply modes change the answer itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace

#: mode -> what the imperfect oracle does wrong (the stamp's and the docs' wording)
FACT_MODES = {
    "nocorrection": "misses a correction: a fact that supersedes or retracts an earlier one is not extracted, so the "
                    "old value stays",
    "duplicate": "duplicates instead of updating: a superseding fact is extracted as a new fact beside the old one "
                 "(no intent, nothing replaced)",
    "paraphrase": "paraphrases a value: a fact's value and statement come in another surface form (case, separators, "
                  "wording) with the same words",
    "undated": "drops a date or bound: a fact comes without its validity dates (valid_from, valid_to)",
    "invent": "invents a fact: a write's extraction gains a fact that was never said",
}
REPLY_MODES = {
    "wrongarg": "calls a tool with a wrong argument: the first id-like argument names an id that does not exist "
                "(without one, the first text argument loses its second half)",
    "malformed": "answers malformed JSON: a JSON answer or tool-call arguments are cut off halfway",
}
MODES = {**FACT_MODES, **REPLY_MODES}
#: modes the gateway itself makes (provider failures, not answers)
GATEWAY_MODES = {
    "flaky": "fails the first asking of a quarter of distinct chat requests (HTTP 500)",
    "stall": "holds those askings 10 s without an answer, then gives up (HTTP 504)",
}

_NAME = re.compile(r"^(?P<mode>[a-z]+)(?:-(?P<rate>0\.\d+)-s(?P<seed>\d+))?$")
_ID_KEY = re.compile(r"(^|_)(id|ids|uuid|uuids)$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[^\w\s]+")


def problem(ablation: str) -> str | None:
    """Why ``ablation`` is not one the oracle knows, or None."""
    if ablation in ("", *GATEWAY_MODES):
        return None
    m = _NAME.match(ablation)
    if m is None or m["mode"] not in MODES:
        return (f"{ablation!r} is not an oracle ablation; use one of {', '.join([*MODES, *GATEWAY_MODES])}, "
                f"or MODE-RATE-sSEED (e.g. paraphrase-0.2-s1) for a mode at a rate below 1")
    if m["rate"] is not None and not 0 < float(m["rate"]) < 1:
        return f"{ablation!r}: the rate must lie strictly between 0 and 1 (a mode alone is rate 1.0)"
    return None


@dataclass(frozen=True)
class Imperfection:
    mode: str
    rate: float = 1.0
    seed: int = 0

    @classmethod
    def parse(cls, ablation: str) -> "Imperfection | None":
        """The imperfection an ablation names (None for a perfect oracle or a gateway-made fault)."""
        if not ablation or ablation in GATEWAY_MODES:
            return None
        why = problem(ablation)
        if why:
            raise ValueError(why)
        m = _NAME.match(ablation)
        return cls(m["mode"], float(m["rate"]) if m["rate"] else 1.0, int(m["seed"] or 0))

    @property
    def name(self) -> str:
        return self.mode if self.rate >= 1 else f"{self.mode}-{self.rate:g}-s{self.seed}"

    def describe(self) -> str:
        return f"{MODES[self.mode]}; rate {self.rate:g}" + (f", seed {self.seed}" if self.rate < 1 else "")

    def chance(self, *key) -> float:
        digest = hashlib.sha256("|".join(map(str, (self.seed, self.mode, *key))).encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2 ** 64

    def hits(self, *key) -> bool:
        return self.rate >= 1 or self.chance(*key) < self.rate

    # ------------------------------------------------------------------ fact modes
    def facts(self, case: str, index: int, facts: tuple[dict, ...]) -> tuple[tuple[dict, ...], list, dict]:
        """(the facts the imperfect extractor gives for write ``index`` of ``case``, the facts it withheld, and for
        each paraphrased fact the statement it was said in -> its new form)."""
        if self.mode not in FACT_MODES:
            return facts, [], {}
        out, withheld, said = [], [], {}
        for k, f in enumerate(facts):
            if not self.hits(case, index, k):
                out.append(f)
            elif self.mode == "nocorrection" and f.get("intent") in ("supersede", "retract"):
                withheld.append(f)
            elif self.mode == "duplicate" and f.get("intent") == "supersede":
                out.append({key: v for key, v in {**f, "intent": "assert"}.items() if key != "replaces"})
            elif self.mode == "paraphrase" and f.get("value"):
                g = paraphrase(f, self.chance(case, index, k, "form"))
                said[f["statement"]] = g
                out.append(g)
            elif self.mode == "undated" and (f.get("valid_from") or f.get("valid_to")):
                out.append({key: v for key, v in f.items() if key not in ("valid_from", "valid_to")})
            else:
                out.append(f)
        if self.mode == "invent" and facts and self.hits(case, index, "invent"):
            out.append(invented(facts[0], self.chance(case, index, "value")))
        return tuple(out), withheld, said

    # ------------------------------------------------------------------ reply modes
    def reply(self, key: str, reply):
        """The answer as the imperfect model gives it (``key``: the request's content hash)."""
        if self.mode not in REPLY_MODES or not self.hits(key):
            return reply
        if self.mode == "malformed":
            calls = [_with_arguments(c, c["function"]["arguments"][: len(c["function"]["arguments"]) // 2])
                     for c in reply.tool_calls]
            content = reply.content
            if content and content.lstrip()[:1] in ("{", "["):
                content = content[: len(content) // 2]
            return replace(reply, content=content, tool_calls=calls)
        if reply.tool_calls:
            first = reply.tool_calls[0]
            try:
                args = json.loads(first["function"]["arguments"] or "{}")
            except ValueError:
                return reply
            if isinstance(args, dict) and _wrong(args, key):
                return replace(reply, tool_calls=[_with_arguments(first, json.dumps(args, ensure_ascii=False)),
                                                  *reply.tool_calls[1:]])
            return reply
        try:
            obj = json.loads(reply.content or "")
        except ValueError:
            return reply
        if _wrong_id_anywhere(obj, key):
            return replace(reply, content=json.dumps(obj, ensure_ascii=False))
        return reply


def paraphrase(fact: dict, chance: float) -> dict:
    """The same fact in another surface form: its value's words kept (case-folded, whole-token matching still finds
    them) in another case or with other separators, in its statement too, which says the rest as it did."""
    value = fact["value"]
    spaced = " ".join(_SEPARATORS.sub(" ", value).split())
    forms = [value.upper() if value != value.upper() else value.lower(),
             spaced if spaced != value else value.title() if value != value.title() else value.lower()]
    new = forms[int(chance * len(forms)) % len(forms)]
    statement = re.sub(re.escape(value), lambda _: new, fact["statement"], flags=re.IGNORECASE)
    if statement == fact["statement"]:  # a statement that words the value otherwise: say the value as well
        statement = f"{statement.rstrip('. ')} ({new})."
    return {**fact, "value": new, "statement": statement}


def invented(like: dict, chance: float) -> dict:
    """A fact about the write's first subject that the conversation never stated (a value no case holds)."""
    value = "Velmorran-" + format(int(chance * 0xFFFFF), "05X")
    return {"subject": like.get("subject", "user"), "attribute": "also mentioned", "value": value,
            "statement": f"The user also mentioned {value}.", "intent": "assert", "invented": True}


def _with_arguments(call: dict, arguments: str) -> dict:
    return {**call, "function": {**call["function"], "arguments": arguments}}


def _unknown_id(value, key: str):
    """An id of the same shape as ``value`` that no store holds."""
    h = hashlib.sha256(f"wrong|{key}|{value}".encode()).hexdigest()
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value + 100000 + int(h[:4], 16)
    if isinstance(value, str):
        if re.fullmatch(r"[0-9a-fA-F-]{36}", value):
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"
        if value.isdigit():
            return str(int(value) + 100000 + int(h[:4], 16))
        return f"{value}-x{h[:4]}" if value else f"x{h[:8]}"
    return value


def _wrong(args: dict, key: str) -> bool:
    """Make one argument wrong in place: the first id-like one, else the first text one (its second half cut)."""
    for name, value in args.items():
        if _ID_KEY.search(name) and value not in (None, "", []):
            args[name] = [_unknown_id(value[0], key), *value[1:]] if isinstance(value, list) else _unknown_id(value, key)
            return True
    for name, value in args.items():
        words = value.split() if isinstance(value, str) else []
        if len(words) > 1:
            args[name] = " ".join(words[: len(words) // 2])
            return True
    return False


def _wrong_id_anywhere(obj, key: str) -> bool:
    """The first id-like field of a JSON answer (depth first) made to name an id that does not exist."""
    if isinstance(obj, dict):
        for name, value in obj.items():
            if _ID_KEY.search(str(name)) and isinstance(value, (str, int)) and value not in ("", None):
                obj[name] = _unknown_id(value, key)
                return True
        return any(_wrong_id_anywhere(v, key) for v in obj.values())
    if isinstance(obj, list):
        return any(_wrong_id_anywhere(v, key) for v in obj)
    return False
