"""Every model call of every committed run is answered by today's oracle as a careful model would:
a dialect change that leaves a recorded call unanswered (matched=false) fails here, system by system."""

import json

import pytest

from conftest import ROOT
from memmatrix.bindings import find_case_file
from memmatrix.canon import read_text
from memmatrix.config import Config
from memmatrix.model.gold import GoldIndex
from memmatrix.model.oracle import Oracle

RESULTS = sorted(p for p in ROOT.glob("results/**/result.json")
                 if json.loads(p.read_text())["stamp"]["model"]["mode"] == "oracle")


def test_there_are_committed_oracle_runs_to_check():
    assert len(RESULTS) >= 20


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: "/".join(p.parts[-5:-1]))
def test_every_recorded_call_is_answered(path):
    result = json.loads(path.read_text())
    stamp = result["stamp"]
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]["unmatched"]
    if "model_transcript" not in result:
        return
    cases = find_case_file(stamp, Config.from_env({"MEMMATRIX_HOME": str(ROOT)}))
    oracle = Oracle(GoldIndex([json.loads(cases.read_text())],
                              ablation=(stamp["model"].get("oracle_version") or "").partition("+")[2]))
    missed = []
    for line in read_text(path.parent / result["model_transcript"]["file"]).splitlines():
        rec = json.loads(line)
        if rec["kind"] == "chat" and not oracle.chat(rec["request"]).matched:
            missed.append((rec["seq"], rec.get("dialect"), rec["context"]))
    assert missed == []
