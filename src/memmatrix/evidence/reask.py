"""Ask the oracle again: every answer an oracle run recorded must be the answer the oracle gives today.

The oracle is deterministic: its answer is a function of the request, the run's case file, its ablation and the
system's oracle module. ``memmatrix verify`` re-asks every chat request of an oracle run's model
transcript and compares the answer (content, tool calls, dialect and whether gold matched) with the recorded
one. A model transcript edited by hand (an answer that makes a FAIL a PASS, a judge verdict changed) no longer
matches; nor does a run made with an oracle that has changed since, which is how a change to the oracle shows
which committed rows it would move. Embedding requests are not re-asked: the embedder is checked by its name.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.config import Config
from ..common.errors import MemmatrixError
from ..model.dialects.common import chat_completion, response_object
from ..model.dialectsource import load_dialects
from ..model.gold import GoldIndex
from ..model.oracle import Oracle
from ..systems import recorded_system


def oracle_for(stamp: dict, case_file: Path | None, config: Config) -> Oracle:
    if case_file is None:
        raise MemmatrixError(f"the case file {stamp['dataset']['path']} is not in this checkout at the sha256 the "
                             "stamp records")
    spec = recorded_system(stamp["system"], config)  # an adapter file named by its path has no oracle module
    ablation = (stamp["model"].get("oracle_version") or "").partition("+")[2]
    gold = GoldIndex([json.loads(case_file.read_text(encoding="utf-8"))], ablation)
    return Oracle(gold, load_dialects(spec.oracle) if spec.oracle is not None else ())


def _answer(response: dict) -> object:
    """What the oracle said: the choices (chat completions) or the output (responses). Not the usage: it counts
    the request as sent, before wall-clock times were normalised in the record."""
    return response.get("choices", response.get("output"))


def reask(stamp: dict, model_records: list[dict], case_file: Path | None, config: Config) -> tuple[int, list[str]]:
    """(requests re-asked, problems): one problem for the answers that differ, the first five named."""
    chats = [r for r in model_records if r.get("kind") == "chat" and r.get("status") == 200 and "response" in r]
    if stamp["model"]["mode"] != "oracle" or not chats:
        return 0, []
    try:
        oracle = oracle_for(stamp, case_file, config)
    except MemmatrixError as exc:
        return 0, [f"cannot re-ask the oracle: {exc}"]
    asked, differ = 0, []
    for rec in chats:
        asked += 1
        request, recorded = rec["request"], rec["response"]
        reply = oracle.chat(request)
        make = response_object if rec.get("endpoint", "").endswith("/responses") else chat_completion
        rid = str(recorded.get("id", "")).partition("-" if make is chat_completion else "_")[2]
        answer = make(request, reply, rid)
        if _answer(answer) != _answer(recorded) or reply.dialect != rec.get("dialect") or reply.matched != rec.get("matched"):
            differ.append(rec.get("seq"))
    if not differ:
        return asked, []
    return asked, [f"{len(differ)} of {asked} oracle answers differ from what the oracle answers today (seq "
                   f"{differ[:5]}{' …' if len(differ) > 5 else ''}): the model transcript was edited, or the oracle "
                   "(memmatrix's or the system's oracle module) changed since the run"]
