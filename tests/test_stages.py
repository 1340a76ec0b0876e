"""Seed 003: every FAIL says where it broke, and results made before stages existed are brought forward only
when no verdict moves."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.protocols.stages import (DELIVERED, NOT_DELIVERED, NOT_RETRIEVED, NOT_STORED, STORED_UNDELIVERED, UNLOCATED, Trail)


@pytest.mark.parametrize("trail,reached,survived", [
    (Trail(True, True, ["vectors"]), DELIVERED, DELIVERED),
    (Trail(False, True, ["vectors"]), NOT_DELIVERED, NOT_DELIVERED),
    (Trail(False, False, ["vectors"]), NOT_RETRIEVED, NOT_RETRIEVED),
    (Trail(False, None, ["vectors"]), STORED_UNDELIVERED, STORED_UNDELIVERED),
    (Trail(False, False, []), NOT_STORED, None),
    (Trail(False, None, None), UNLOCATED, None),
])
def test_a_trail_names_the_furthest_point_a_value_reached_or_survived(trail, reached, survived):
    assert trail.reached() == reached
    assert trail.survived() == survived


def test_every_fail_in_every_committed_result_carries_a_stage():
    fails = [(p, case["id"], cell) for p in (ROOT / "results").rglob("result.json")
             for case in json.loads(p.read_text())["cases"] for cell in case["cells"] if cell["verdict"] == "FAIL"]
    assert fails, "the committed results hold FAIL cells"
    assert [f"{p}: {cid} {c['step']}" for p, cid, c in fails if not c.get("stage")] == []


def _old_result(tmp_path: Path, protocol: str = "writepath", version: str = "1.0.0") -> Path:
    """A committed run with FAIL cells, as it was before it was rescored."""
    src = ROOT / "results" / protocol / "notes" / "1.0" / "embedded"
    dst = tmp_path / protocol / "notes" / "1.0" / "embedded"
    shutil.copytree(src, dst)
    r = json.loads((dst / "result.json").read_text())
    r["stamp"].pop("rescored", None)
    r["stamp"]["protocol"]["version"] = version
    for case in r["cases"]:
        for cell in case["cells"]:
            cell.pop("stage", None)
    (dst / "result.json").write_text(json.dumps(r))
    return dst / "result.json"


def test_rescore_brings_a_result_forward_when_no_verdict_moves(config, tmp_path):
    from memmatrix.evidence.rescore import rescore
    from memmatrix.result.stamp import scoring_version
    from memmatrix.evidence.verify import verify_result
    path = _old_result(tmp_path)
    assert "stage" in verify_result(path, config)[0]  # a FAIL without a stage no longer fits the schema
    assert rescore(path, config) == "writepath 1.0.0 -> 1.1.0"
    r = json.loads(path.read_text())
    assert scoring_version(r["stamp"]) == "1.1.0" and r["stamp"]["rescored"]["from_version"] == "1.0.0"
    assert "moved" not in r["stamp"]["rescored"]
    assert verify_result(path, config) == []


def test_rescore_refuses_when_a_verdict_would_move(config, tmp_path):
    from memmatrix.evidence.rescore import RescoreRefused, rescore
    path = _old_result(tmp_path)
    r = json.loads(path.read_text())
    cell = next(c for case in r["cases"] for c in case["cells"] if c["verdict"] == "FAIL")
    cell["verdict"], cell["reason"] = "PASS", ""
    path.write_text(json.dumps(r))
    with pytest.raises(RescoreRefused, match="would change 1 cell"):
        rescore(path, config)
    assert json.loads(path.read_text()) == r


def test_rescore_across_a_version_that_moves_verdicts_lists_every_moved_cell_with_why(config, tmp_path):
    """deletion 1.5.0 reads step 9 from what the forget left: a result scored before says which cells moved."""
    from memmatrix.protocols import get_protocol
    from memmatrix.evidence.rescore import rescore
    from memmatrix.evidence.verify import verify_result
    path = _old_result(tmp_path, "deletion", "1.3.0")
    r = json.loads(path.read_text())
    for case in r["cases"]:
        cell = next(c for c in case["cells"] if c["step"] == "9")
        cell.update(verdict="FAIL", reason="canary still held at the end by ['notes-file']",
                    checks=[{"check": "stores", "target": "canary", "ok": False, "stage": "stored-not-retrieved"}])
    path.write_text(json.dumps(r))
    assert rescore(path, config) == f"deletion 1.3.0 -> 1.5.0 ({len(r['cases'])} cell(s) moved)"
    rescored = json.loads(path.read_text())["stamp"]["rescored"]
    assert rescored["moved"]["why"] == get_protocol("deletion").moves["1.5.0"]
    assert rescored["moved"]["cells"] == [f"case {c['id']} step 9: FAIL -> PASS" for c in r["cases"]]
    assert verify_result(path, config) == []


def test_every_skip_in_every_committed_result_is_documented_by_its_step():
    """A SKIP a reader meets is explained in its column's how-to-read row (StepDef.skips)."""
    from memmatrix.protocols import get_protocol
    problems = []
    for p in (ROOT / "results").rglob("result.json"):
        r = json.loads(p.read_text())
        problems += get_protocol(r["stamp"]["protocol"]["name"]).undocumented_skips(r["cases"])
    assert problems == []


def test_an_undocumented_skip_is_caught():
    from memmatrix.protocols import get_protocol
    cases = [{"id": "c", "cells": [{"step": "U", "verdict": "SKIP", "reason": "a reason nobody wrote down"},
                                   {"step": "U", "verdict": "SKIP", "reason": "nothing was corrected in this case, so"}]}]
    assert get_protocol("contradiction").undocumented_skips(cases) == ["contradiction U (case c): 'a reason nobody wrote down'"]
