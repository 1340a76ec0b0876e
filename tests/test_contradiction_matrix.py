"""The contradiction protocol discriminates: shapes down the side, columns across."""

import json

import pytest

from conftest import ADAPTERS
from helpers import run

P, F, S, U = "PASS", "FAIL", "SKIP", "UNSUPPORTED"
COLUMNS = ["setup", "A", "B", "C", "C'", "D", "E", "S", "U"]
SHAPES = ["replacement", "polarity", "retraction", "partial", "bounded"]


def by_shape(run_dir, without=()):
    """shape -> the single row every case of that shape gets (asserting they agree), minus some columns."""
    result = json.loads((run_dir / "result.json").read_text())
    rows = {}
    for case in result["cases"]:
        row = {c["step"]: c["verdict"] for c in case["cells"] if c["step"] not in without}
        assert rows.setdefault(case["shape"], row) == row, (case["id"], row, rows[case["shape"]])
    return rows


def test_reference_passes_every_column_of_every_case(config, tmp_path):
    rows = by_shape(run(config, "reference", tmp_path, protocol="contradiction"))
    expected = {shape: dict.fromkeys(COLUMNS, P) for shape in SHAPES}
    expected["bounded"]["U"] = S  # nothing was corrected, so there is nothing to undo
    assert rows == expected


def test_notes_keeps_both_values_unqualified(config, tmp_path):
    out = run(config, "notes", tmp_path, protocol="contradiction")
    rows = by_shape(out, without=("U",))
    base = dict(zip(COLUMNS[:-1], [P, P, F, U, U, P, U, P]))
    assert rows == {
        "replacement": base, "polarity": base, "partial": base,
        "retraction": {**base, "A": F},             # nothing supersedes: the retracted value reads as current
        "bounded": {**base, "A": P, "B": P},        # the user's own words carry the bound ("until 14 March")
    }
    result = json.loads((out / "result.json").read_text())
    undo = {case["id"]: next(c for c in case["cells"] if c["step"] == "U") for case in result["cases"]}
    # the correction never retired the original (B fails), so there is nothing an undo could restore
    assert {c["verdict"] for c in undo.values()} == {S}
    assert all("never retired" in c["reason"] for case, c in undo.items() if not case.startswith("bounded"))


def test_append_rederives_and_reimports_the_stale_value(config, tmp_path):
    rows = by_shape(run(config, "append", tmp_path, protocol="contradiction"))
    # U is SKIP throughout: the re-import already put the original back (C' fails), so an undo cannot be seen
    base = dict(zip(COLUMNS, [P, P, F, F, F, P, F, P, S]))
    assert rows == {
        "replacement": base, "polarity": base, "partial": base,
        "retraction": {**base, "A": F},
        "bounded": {**base, "A": P, "B": P, "C": P, "C'": P, "E": P},
    }


def test_the_three_rows_differ(config, tmp_path):
    rows = [by_shape(run(config, s, tmp_path / s, protocol="contradiction"), without=("U",))
            for s in ("reference", "notes", "append")]
    assert rows[0] != rows[1] != rows[2] != rows[0]


def test_overwriting_passes_the_present_and_fails_history(config, tmp_path):
    rows = by_shape(run(config, f"{ADAPTERS / 'misbehaving.py'}:HardDeletesOnCorrection", tmp_path,
                        protocol="contradiction"))
    for shape in ("replacement", "retraction", "partial"):
        assert rows[shape]["A"] == rows[shape]["B"] == rows[shape]["C"] == P, rows[shape]
        assert rows[shape]["D"] == F, rows[shape]
    assert rows["polarity"]["D"] == P  # "I quit X" still tells that X was the habit
    assert rows["bounded"]["D"] == P  # nothing was corrected, nothing erased


def test_declared_qualifiers_are_scored_mechanically(config, tmp_path):
    out = run(config, f"{ADAPTERS / 'misbehaving.py'}:HidesQualifiers", tmp_path, protocol="contradiction")
    result = json.loads((out / "result.json").read_text())
    b = [c for case in result["cases"] for c in case["cells"] if c["step"] == "B" and case["shape"] == "replacement"]
    assert {c["verdict"] for c in b} == {F}
    assert {c["method"] for c in b} == {"mechanical"}


@pytest.mark.parametrize("system", ["notes", "reference"])
def test_without_a_judge_unqualified_mentions_are_skipped_not_guessed(config, tmp_path, system):
    from memmatrix.cases import default_case_file, load_cases
    from memmatrix.protocols import get_protocol
    from memmatrix.run.runner import RunRequest, execute
    from memmatrix.systems import resolve_system
    p = get_protocol("contradiction")
    out = execute(RunRequest(spec=resolve_system(system, config), protocol=p, out=tmp_path, runtime="inprocess",
                             cases=load_cases(default_case_file(config, "contradiction"), config, p), judge=False),
                  config)
    result = json.loads((out / "result.json").read_text())
    assert result["stamp"]["judge"] is None
    b = {c["verdict"] for case in result["cases"] for c in case["cells"] if c["step"] == "B"}
    assert b == ({S} if system == "notes" else {P})
