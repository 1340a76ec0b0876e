"""Every model call of every committed run is answered by today's oracle as a careful model would:
a dialect change that leaves a recorded call unanswered (matched=false) fails here, system by system. The oracle is assembled as a
run of that system assembles it: memmatrix's own dialects, then the system folder's oracle module.

A run under an error mode (``oracle-MODE``, docs/plumbing.md) may hold calls no gold covers, made only because of the
injected mistake (a retry after a failed tool call, a prompt quoting a broken answer): each must be one the run itself
recorded as unanswered, where and how many exactly, so today's oracle leaves nothing else unanswered."""

import json
from collections import Counter

import pytest

from conftest import ROOT
from memmatrix.evidence.bindings import find_case_file
from memmatrix.common.canon import read_text
from memmatrix.common.config import Config
from memmatrix.model.oracle import Oracle
from memmatrix.evidence.reask import oracle_for
from memmatrix.publish.sensitivity import split_variant

RESULTS = sorted(p for p in ROOT.glob("results/**/result.json")
                 if json.loads(p.read_text())["stamp"]["model"]["mode"] == "oracle")
CONFIG = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})


def test_there_are_committed_oracle_runs_to_check():
    assert len(RESULTS) >= 20


def oracle_of(stamp: dict) -> Oracle:
    """The oracle a run of the stamp's system gets: its folder's dialects after memmatrix's own."""
    return oracle_for(stamp, find_case_file(stamp, CONFIG), CONFIG)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: "/".join(p.parts[-5:-1]))
def test_every_recorded_call_is_answered(path):
    result = json.loads(path.read_text())
    under_a_mode = split_variant(path.parent.name)[1] is not None
    recorded = Counter(result["cost"]["unmatched"]) if under_a_mode else Counter()
    assert result["cost"]["total"]["unmatched"] == sum(recorded.values()), result["cost"]["unmatched"]
    if "model_transcript" not in result:
        return
    oracle = oracle_of(result["stamp"])
    missed = []
    for line in read_text(path.parent / result["model_transcript"]["file"]).splitlines():
        rec = json.loads(line)
        if rec["kind"] != "chat":
            continue
        if not oracle.chat(rec["request"]).matched:
            missed.append((rec["seq"], rec.get("dialect"), rec["context"]))
    where = Counter(f"{(ctx or {}).get('call') or 'setup'}: {dialect or 'no dialect'}" for _, dialect, ctx in missed)
    assert where == recorded, missed


def test_a_system_gets_its_own_dialects_only():
    """The chain is assembled per system: another system's prompts go unanswered (so the test above can fail)."""
    mem0 = next(p for p in RESULTS if "/mem0/" in p.as_posix() and "model_transcript" in json.loads(p.read_text()))
    result = json.loads(mem0.read_text())
    stamp = result["stamp"]
    as_other = Oracle(oracle_of(stamp).gold, ())  # memmatrix's own dialects only: what a system without one gets
    records = [json.loads(line) for line in read_text(mem0.parent / result["model_transcript"]["file"]).splitlines()]
    extraction = [r for r in records if r["kind"] == "chat" and r.get("dialect", "").startswith("mem0")]
    assert extraction and not any(as_other.chat(r["request"]).matched for r in extraction)
