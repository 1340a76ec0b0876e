"""The oracle: deterministic answers from the case files' gold annotations.

It measures a system's plumbing given a perfect extractor, an upper bound like oracle
retrieval in evaluation practice, and every result stamped with it says so. A prompt no
dialect recognises, or whose text matches no gold write, gets a well-formed empty answer
and is counted (``matched`` false in the model transcript, ``unmatched`` in the cost).

Dialects are tried in order and the first that matches answers: memmatrix's own (the judge,
then the extractor), then the run's system's (its ``oracle.py``, see ``dialectsource``), then
the empty answer. An answer the oracle did not match still keeps what the API promises a client
(``contract``): a forced tool is called, a strict JSON schema is met, with the least value it accepts.
"""

from __future__ import annotations

import traceback
from dataclasses import replace

from .contract import honour
from .dialects import memmatrix
from .dialects.common import Reply, all_text, schema_name, tool_names
from .dialects.hygiene import forget_readings
from .gold import GoldIndex
from .upstream import normalized_sha256

ORACLE_VERSION = "1.1.0"

#: memmatrix's own dialects, tried before any system's.
GENERIC = (memmatrix.Judge, memmatrix.Extract)


def forget() -> None:
    """Drop what memmatrix's own dialects remember of the texts they read (the hygiene judge's readings of judged
    texts): called once every request of a model transcript has been asked, so none is held while the cases are
    scored, nor into the next result. Replies are not held here (``evidence/reask.Answers`` keeps those)."""
    forget_readings()


def empty_answer(request: dict) -> Reply:
    """A well-formed answer that asserts nothing, in the shape the request asked for."""
    wants_json = schema_name(request) is not None or (request.get("response_format") or {}).get("type") == "json_object"
    if tool_names(request):
        return Reply("unmatched", False, content="")
    return Reply("unmatched", False, content="{}" if wants_json else "")


class DialectError(Exception):
    """A dialect that raised: its name, the method, and the file and line inside the dialect's module (a bug there,
    never the system's), so the message a system passes on points at the fix."""

    def __init__(self, dialect, method: str, exc: BaseException):
        frames = traceback.extract_tb(exc.__traceback__)[1:]  # past _ask: the dialect's call, innermost last
        code = getattr(getattr(dialect, method, None), "__code__", None)
        own = [f for f in frames if code is not None and f.filename == code.co_filename]
        where = [f for f in (own[-1:] + frames[-1:]) if f]  # the dialect's line, then the innermost if elsewhere
        said = " < ".join(dict.fromkeys(f"{_short(f.filename)}:{f.lineno} in {f.name}" for f in where))
        super().__init__(f"dialect {getattr(dialect, 'name', dialect.__name__)!r} ({dialect.__name__}.{method}) raised "
                         f"{type(exc).__name__}: {exc}" + (f" at {said}" if said else "")
                         + "; fix the dialect, or make its match() refuse this request")


def _short(filename: str) -> str:
    """A system's module is compiled as '<system>/<file>' (dialectsource); memmatrix's own files by their name."""
    return filename if not filename.startswith("/") else filename.rsplit("/", 1)[-1]


def _ask(dialect, method: str, *args):
    try:
        return getattr(dialect, method)(*args)
    except Exception as exc:
        raise DialectError(dialect, method, exc) from exc


class Oracle:
    version = ORACLE_VERSION

    def __init__(self, gold: GoldIndex, dialects: tuple = ()):
        self.gold = gold
        self.dialects = (*GENERIC, *dialects)

    def chat(self, request: dict) -> Reply:
        reply = next((_ask(d, "answer", request, self.gold) for d in self.dialects if _ask(d, "match", request)), None)
        reply = honour(request, reply or empty_answer(request))
        imperfect = self.gold.imperfection
        if imperfect is None:
            return reply
        if not reply.matched and self.gold.withheld_in(all_text(request)):
            reply = replace(reply, matched=True)  # the write was recognised; its facts were withheld on purpose
        # decided on the request as recorded, so a re-ask makes the same mistake
        return imperfect.reply(normalized_sha256(request), reply)
