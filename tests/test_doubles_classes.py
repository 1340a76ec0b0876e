"""The five classes of misclassification, each shown on a pair of doubles (tests/doubles/classes.py):
the pair's rows differ in exactly the cells the class is about."""

import json
import sys
from pathlib import Path

import pytest

from helpers import one_case, run
from memmatrix.common.config import Config
from conftest import ROOT

DOUBLES = Path(__file__).parent / "doubles"
sys.path.insert(0, str(DOUBLES))
sys.modules.setdefault("adapterkit", __import__("memmatrix.adapterkit", fromlist=["adapterkit"]))

CORRECTED_WITH_NEW = ("replacement", "polarity", "partial")


def row_of(run_dir: Path) -> dict[str, dict[str, str]]:
    r = json.loads((run_dir / "result.json").read_text())
    return {c["id"]: {"shape": c["shape"], **{x["step"]: x["verdict"] for x in c["cells"]}} for c in r["cases"]}


_RIGHT: dict = {}  # a correct double's row, run once per (double, protocol, case file) for every pair it is in


def pair(config, tmp_path, right: str, wrong: str, protocol: str = "deletion", cases: Path | None = None):
    key = (right, protocol, cases.read_text() if cases else None, config.settle_timeout_s)
    if key not in _RIGHT:
        _RIGHT[key] = row_of(run(config, f"{DOUBLES / 'classes.py'}:{right}", tmp_path / "a", protocol=protocol,
                                 cases=cases))
    a = _RIGHT[key]
    b = row_of(run(config, f"{DOUBLES / 'classes.py'}:{wrong}", tmp_path / "b", protocol=protocol, cases=cases))
    return a, {case: {k: v for k, v in b[case].items() if a[case][k] != v} for case in b}


@pytest.fixture
def slow_config(tmp_path):
    """Settle timeout 3 s: a system without a quiescence signal is watched that long after a forget."""
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache"),
                            "MEMMATRIX_CALL_TIMEOUT": "5", "MEMMATRIX_SETTLE_TIMEOUT": "3"})


# ---------------------------------------------------------------- 1. qualifiers count everywhere
def test_closing_the_wrong_value_fails_the_answer(config, tmp_path):
    _, moved = pair(config, tmp_path, "MarksCorrectionsRight", "ClosesTheWrongValue", "contradiction")
    for case, cells in moved.items():
        shape = cells.pop("shape", None) or case.split("-")[0]
        if shape in CORRECTED_WITH_NEW:
            assert cells.get("A") == "FAIL", (case, cells)  # the new value reaches the door only as superseded
            assert cells.get("B") == "FAIL", (case, cells)  # and the old one as current


def test_marking_everything_former_fails_setup_and_answer(config, tmp_path):
    right, moved = pair(config, tmp_path, "MarksCorrectionsRight", "MarksEverythingFormer", "contradiction")
    for case, cells in moved.items():
        assert cells["setup"] == "FAIL", (case, cells)
        if right[case]["shape"] in CORRECTED_WITH_NEW:
            assert cells["A"] == "FAIL" and cells["C"] == "FAIL", (case, cells)
        else:  # nothing current was ever served: the stale value marked former proves no correction
            assert cells["A"] == "SKIP" and cells["C"] == "SKIP", (case, cells)
        assert cells["B"] == "SKIP", (case, cells)  # qualified, but beside nothing served as current
        assert "D" not in cells  # the history is still knowable


def test_retiring_the_twin_fails_every_control(config, tmp_path):
    _, moved = pair(config, tmp_path, "MarksCorrectionsRight", "RetiresTheTwinOnForget")
    assert all(cells == dict.fromkeys(["4", "6", "8", "11", "12", "13"], "FAIL") for cells in moved.values()), moved


# ---------------------------------------------------------------- 2. absences wait for the system
def test_a_late_reindex_of_the_refed_source_is_caught(slow_config, tmp_path):
    cases = one_case(tmp_path)
    right, moved = pair(slow_config, tmp_path, "IndexesLateWithTombstones", "IndexesLateNoTombstones", cases=cases)
    assert {v for k, v in next(iter(right.values())).items() if k != "shape"} == {"PASS"}
    assert moved == {"identifier-locker-code": {"6": "FAIL", "8": "FAIL"}}  # re-derived, not left by the delete
    result = json.loads(next((tmp_path / "b").rglob("result.json")).read_text())
    rows = store_rows(result, "identifier-locker-code", "canary")
    assert rows[("facts", "after-forget")] is False and rows[("facts", "end")] is True
    assert any("every absence check was polled for the whole settle timeout (7 polls" in f for f in result["findings"])


def store_rows(result: dict, case: str, target: str) -> dict[tuple[str, str], bool]:
    """Step 9's sub-verdicts of one case: (store, moment) -> held."""
    cell = next(c for x in result["cases"] if x["id"] == case for c in x["cells"] if c["step"] == "9")
    return {(r["store"], r["moment"]): r["held"] for r in cell["checks"]
            if r.get("check") == "store" and r["target"] == target}


def test_a_delete_that_takes_effect_a_moment_later_is_not_a_leak(slow_config, tmp_path):
    """No quiescence signal, eventually consistent: the first polls after each forget still show the value; once
    it is gone it stays gone. Steps 4, 9 and 12 wait for the forget to take effect, as an absence check does."""
    right, moved = pair(slow_config, tmp_path, "NoGhost", "DeletesAMomentLater", cases=one_case(tmp_path))
    assert {v for k, v in right["identifier-locker-code"].items() if k != "shape"} == {"PASS"}
    assert moved == {"identifier-locker-code": {}}
    result = json.loads(next((tmp_path / "b").rglob("result.json")).read_text())
    rows = store_rows(result, "identifier-locker-code", "canary")
    assert rows[("facts", "before")] is True and rows[("facts", "after-forget")] is False


def test_what_the_refeed_brings_back_to_a_store_is_not_residue(config, tmp_path):
    """The forget cleans the raw log; the re-fed source is logged again. Step 9 reads what the delete left."""
    _, moved = pair(config, tmp_path, "AuditByDigest", "RawLogRefilledByRefeed")
    assert all(cells == {} for cells in moved.values()), moved
    result = json.loads(next((tmp_path / "b").rglob("result.json")).read_text())
    for case in moved:
        rows = store_rows(result, case, "canary")
        assert (rows[("raw-log", "before")], rows[("raw-log", "after-forget")], rows[("raw-log", "end")]) == \
            (True, False, True), (case, rows)


def test_a_value_that_flickers_back_is_a_leak(slow_config, tmp_path):
    _, moved = pair(slow_config, tmp_path, "NoGhost", "FlickersAfterForget", cases=one_case(tmp_path))
    assert moved == {"identifier-locker-code": {"4": "FAIL", "6": "FAIL", "8": "FAIL"}}


def test_a_store_that_gets_the_value_back_after_the_forget_is_caught(slow_config, tmp_path):
    _, moved = pair(slow_config, tmp_path, "NoGhost", "GhostAfterForget", cases=one_case(tmp_path))
    assert moved == {"identifier-locker-code": {"9": "FAIL"}}


# ---------------------------------------------------------------- 3. renumbering must not hide a leak
@pytest.mark.parametrize("wrong", ["AuditIdHoldsTheValue", "AuditKeyHoldsTheValue"])
def test_a_value_in_an_id_or_a_key_is_still_a_leak(config, tmp_path, wrong):
    _, moved = pair(config, tmp_path, "AuditByDigest", wrong)
    assert all(cells == {"10": "FAIL"} for cells in moved.values()), moved


def test_normalisation_keeps_a_target_inside_an_id(config, tmp_path):
    out = run(config, f"{DOUBLES / 'classes.py'}:AuditIdHoldsTheValue", tmp_path)
    from helpers import text_of
    assert '"memory_id":"forgotten: The code for my storage locker is QX-4471-TRV."' in text_of(out)


# ---------------------------------------------------------------- 4. judge words
def test_a_label_that_merely_contains_a_qualifier_is_not_one(config, tmp_path):
    right, moved = pair(config, tmp_path, "LabelsFormerly", "LabelsRecommended", "contradiction")
    for case, cells in moved.items():
        shape = right[case]["shape"]
        if shape == "bounded":
            assert cells == {}, (case, cells)  # the user's own words carry the bound under either label
        else:
            assert cells.get("B") == "FAIL", (case, cells)
    judged = json.loads(next((tmp_path / "b").rglob("result.json")).read_text())
    assert judged["stamp"]["judge"]["accuracy"]["items"] >= 80


# ---------------------------------------------------------------- 5. probes decided from evidence
def test_a_vector_stores_own_threshold_does_not_decide(config, tmp_path):
    ref = row_of(run(config, "reference", tmp_path / "ref"))
    loose = row_of(run(config, f"{DOUBLES / 'classes.py'}:VectorThresholdTooLoose", tmp_path / "loose"))
    assert loose == ref


def test_a_value_kept_escaped_is_still_held(config, tmp_path):
    cases = one_case(tmp_path, "deletion", 1, ("Ferelith Okonkwo-Thale", "Ysaëlle Brönnicke-Thale"))
    plain, moved = pair(config, tmp_path, "LogPlain", "LogEscaped", cases=cases)
    assert moved == {"name-accountant": {}}
    assert plain["name-accountant"]["9"] == "FAIL"  # the log keeps the deleted name, escaped or not
    from helpers import text_of
    escaped = next((tmp_path / "b").rglob("result.json")).parent
    assert "Ysa\\\\u00eblle" in text_of(escaped)  # it really was stored escaped


def test_a_correction_that_arrives_late_is_not_a_stale_value(slow_config, tmp_path):
    """No quiescence signal, correct but slow: the polls before it caught up are not held against it."""
    ref = row_of(run(slow_config, "reference", tmp_path / "ref", protocol="contradiction",
                     cases=one_case(tmp_path, "contradiction")))
    late = row_of(run(slow_config, f"{DOUBLES / 'classes.py'}:CorrectsLate", tmp_path / "late",
                      protocol="contradiction", cases=one_case(tmp_path, "contradiction")))
    assert late == ref


def test_an_import_that_reasserts_late_is_caught(slow_config, tmp_path):
    _, moved = pair(slow_config, tmp_path, "CorrectsLate", "ReimportsLateAsCurrent", "contradiction",
                    cases=one_case(tmp_path, "contradiction"))
    assert moved == {"replacement-home-city": {"C'": "FAIL", "U": "SKIP"}}


def test_a_deletion_event_is_known_by_its_words_not_one_spelling(config, tmp_path):
    _, same = pair(config, tmp_path / "named", "AuditByDigest", "AuditSaysMemoryDeleted")
    assert all(cells == {} for cells in same.values()), same
    _, failed = pair(config, tmp_path / "failed", "AuditByDigest", "AuditSaysDeleteFailed")
    assert all(cells == {"10": "FAIL"} for cells in failed.values()), failed


# ---------------------------------------------------------------- 6. a correction made by update() is scored too
def test_an_update_that_overwrites_loses_history_and_cannot_be_undone(config, tmp_path):
    """The update case set corrects through the API: a system that overwrites in place keeps A and B (the new value
    is current, the old gone) and fails D where the old value is no longer said anywhere (a polarity's new statement
    still names it) and, for a retraction, U (forgetting the correction has nothing to reopen; elsewhere the
    re-import before the undo has brought the original back, which U then finds)."""
    cases = ROOT / "cases" / "contradiction" / "update-1.0.0.json"
    right, moved = pair(config, tmp_path, "AuditByDigest", "OverwritesOnUpdate", "contradiction", cases=cases)
    assert all(v == "PASS" for row in right.values() for k, v in row.items() if k != "shape")
    for case, cells in moved.items():
        shape = right[case]["shape"]
        assert set(cells) <= {"D", "U"}, (case, cells)
        assert cells.get("D") == ("FAIL" if shape != "polarity" else None), (case, cells)
        assert cells.get("U") == ("FAIL" if shape == "retraction" else None), (case, cells)


def test_a_system_without_update_has_nothing_measured_after_the_correction(config, tmp_path):
    from helpers import row
    out = run(config, f"{DOUBLES / 'classes.py'}:NoUpdate", tmp_path, protocol="contradiction",
              cases=ROOT / "cases" / "contradiction" / "update-1.0.0.json")
    r = json.loads((out / "result.json").read_text())
    for case in r["cases"]:
        cells = {c["step"]: c for c in case["cells"]}
        assert cells["setup"]["verdict"] == "PASS"
        assert {k for k, c in cells.items() if c["verdict"] == "UNSUPPORTED"} == set(cells) - {"setup"}
        assert "the correction needs update, which is unsupported" in cells["A"]["reason"]

