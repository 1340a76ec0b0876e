"""Ask the oracle again: every answer an oracle run recorded must be the answer the oracle gives today.

The oracle is deterministic: its answer is a function of the request, the run's case file, its ablation and the
system's oracle module. ``memmatrix verify`` re-asks every chat request of an oracle run's model
transcript and compares the answer (content, tool calls, dialect and whether gold matched) with the recorded
one. A model transcript edited by hand (an answer that makes a FAIL a PASS, a judge verdict changed) no longer
matches; nor does a run made with an oracle that has changed since, which is how a change to the oracle shows
which committed rows it would move. Embedding requests are not re-asked: the embedder is checked by its name.

Requests are re-asked one at a time as the model transcript is read (``Reask`` is called per record). Because the
answer is a function of those inputs, one ``Answers`` cache serves every result of a ``verify``: per system oracle
module, case file and ablation, the oracle is built once and the reply to a request seen before (the same JSON
value) is reused — the same system's runs on the same cases at other versions, runtimes or repeats ask many of the
same requests. It holds at most ``size`` replies, the oldest dropped first.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path

import orjson

from ..common.canon import ORJSON_AT_MOST
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..model.dialects.common import chat_completion, message_text, messages_of, response_object
from ..model.dialectsource import load_dialects
from ..model.gold import GoldIndex
from ..model.oracle import Oracle
from ..model.settings import ablation_of
from ..systems import recorded_system
from .reasked import Marks


def oracle_for(stamp: dict, case_file: Path | None, config: Config) -> Oracle:
    if case_file is None:
        raise MemmatrixError(f"the case file {stamp['dataset']['path']} is not in this checkout at the sha256 the "
                             "stamp records")
    spec = recorded_system(stamp["system"], config)  # an adapter file named by its path has no oracle module
    gold = GoldIndex([json.loads(case_file.read_text(encoding="utf-8"))], ablation_of(stamp["model"]))
    return Oracle(gold, load_dialects(spec.oracle) if spec.oracle is not None else ())


def _answer(response: dict) -> object:
    """What the oracle said: the choices (chat completions) or the output (responses). Not the usage: it counts
    the request as sent, before wall-clock times were normalised in the record."""
    return response.get("choices", response.get("output"))


def key_of(request: dict) -> bytes:
    """What identifies a request for the cache: the sha256 of its JSON text with sorted keys, as orjson writes it
    (several times quicker than json for the long prompts), or json where orjson cannot (an integer past 64 bits, a
    lone surrogate) or where the messages hold more than ``ORJSON_AT_MOST`` characters (orjson holds about nine times
    the text it writes, json about two: 33 MB against 7.5 MB for a 3.7 MB request), each text marked by which wrote
    it. One request, one text: the records are read by ``canon.loads_line``, which reads no NaN or infinity (orjson
    would write them as null). Never stored."""
    if _message_chars(request) <= ORJSON_AT_MOST:
        try:
            return hashlib.sha256(b"o" + orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).digest()
        except TypeError:  # orjson.JSONEncodeError
            pass
    return hashlib.sha256(b"j" + json.dumps(request, sort_keys=True, separators=(",", ":"), allow_nan=False)
                          .encode()).digest()


def _message_chars(request: dict) -> int:
    """The characters of the messages' text (chat ``messages`` or responses ``input``): where a request's size is."""
    return sum(len(message_text(m)) for m in messages_of(request) if isinstance(m, dict))


class Answers:
    """The oracles and their replies, shared by the results of one ``verify`` (see the module's docstring)."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self.oracles: OrderedDict[tuple, Oracle] = OrderedDict()
        self.replies: OrderedDict[tuple, object] = OrderedDict()
        self.hits = self.asked = 0

    def oracle(self, stamp: dict, case_file: Path | None, config: Config) -> tuple[tuple, Oracle]:
        spec = recorded_system(stamp["system"], config) if case_file is not None else None
        key = (stamp["system"]["name"], str(getattr(spec, "oracle", None)), str(case_file),
               ablation_of(stamp["model"]))
        if key not in self.oracles:
            self.oracles[key] = oracle_for(stamp, case_file, config)
            while len(self.oracles) > 8:
                self.oracles.popitem(last=False)
        self.oracles.move_to_end(key)
        return key, self.oracles[key]

    def reply(self, key: tuple, oracle: Oracle, request: dict):
        self.asked += 1
        k = (key, key_of(request))
        if k in self.replies:
            self.hits += 1
            self.replies.move_to_end(k)
            return self.replies[k]
        reply = self.replies[k] = oracle.chat(request)
        if len(self.replies) > self.size:
            self.replies.popitem(last=False)
        return reply


class Reask:
    """Called with every model transcript record of one result, in order; ``problems()`` at the end."""

    def __init__(self, stamp: dict, case_file: Path | None, config: Config, answers: Answers | None = None,
                 marks: Marks | None = None, model_sha256: str | None = None) -> None:
        self.stamp, self.case_file, self.config = stamp, case_file, config
        self.answers = answers if answers is not None else Answers(size=0)
        self.on = stamp["model"]["mode"] == "oracle"
        self.asked, self.differ, self.failed = 0, [], None
        self.oracle: tuple | None = None
        # this machine re-asked the same transcript with the same inputs before, every answer matching (reasked.py)
        self.marks, self.mark = marks, None
        if self.on and marks is not None and case_file is not None and model_sha256:
            self.mark = marks.key(stamp, case_file, config, model_sha256)
            if self.mark is not None and marks.seen(self.mark):
                self.on = False

    def __call__(self, rec: dict) -> None:
        if not self.on or rec.get("kind") != "chat" or rec.get("status") != 200 or "response" not in rec:
            return
        if self.oracle is None:
            try:
                self.oracle = self.answers.oracle(self.stamp, self.case_file, self.config)
            except MemmatrixError as exc:
                self.on, self.failed = False, f"cannot re-ask the oracle: {exc}"
                return
        self.asked += 1
        request, recorded = rec["request"], rec["response"]
        reply = self.answers.reply(*self.oracle, request)
        make = response_object if rec.get("endpoint", "").endswith("/responses") else chat_completion
        rid = str(recorded.get("id", "")).partition("-" if make is chat_completion else "_")[2]
        # the choices or output depend on the reply and the id alone: the request is not passed, so its tokens
        # (the usage, which is not compared) are not counted again
        answer = make({}, reply, rid)
        if _answer(answer) != _answer(recorded) or reply.dialect != rec.get("dialect") or reply.matched != rec.get("matched"):
            self.differ.append(rec.get("seq"))

    def done(self, read_as_recorded: bool) -> None:
        """The transcript has been read (``read_as_recorded``: its lines hashed to the sha256 the result records):
        mark it re-asked when every answer matched."""
        if self.mark is not None and self.on and read_as_recorded and self.asked and not self.differ \
                and not self.failed:
            self.marks.keep(self.mark)

    def problems(self) -> list[str]:
        if self.failed:
            return [self.failed]
        if not self.differ:
            return []
        d, asked = self.differ, self.asked
        return [f"{len(d)} of {asked} oracle answers differ from what the oracle answers today (seq "
                f"{d[:5]}{' …' if len(d) > 5 else ''}): the model transcript was edited, or the oracle "
                "(memmatrix's or the system's oracle module) changed since the run"]
