"""A failure is data: raising, hanging or malformed adapters give ERROR cells, never PASS.
And the protocol cannot be passed vacuously or by deleting everything."""

import json

import pytest

from helpers import one_case, row, run, text_of, verdicts
from conftest import ADAPTERS

AFTER_FORGET = ["4", "6", "8", "11", "12", "13"]  # every step that reads a door after the first forget


def adapter(name: str) -> str:
    return f"{ADAPTERS / 'misbehaving.py'}:{name}"


@pytest.mark.parametrize("name", ["RaisesAfterForget", "MalformedAfterForget", "NotJsonAfterForget"])
@pytest.mark.parametrize("runtime", ["inprocess", "embedded"])
def test_errors_are_error_cells_never_pass(config, tmp_path, name, runtime):
    cells = row(run(config, adapter(name), tmp_path, runtime=runtime))
    assert [cells[s] for s in ("1", "2", "3")] == ["PASS"] * 3
    assert {cells[s] for s in AFTER_FORGET} == {"ERROR"}


@pytest.mark.parametrize("runtime", ["inprocess", "embedded"])
def test_a_hanging_adapter_errors_everything_after_it(config, tmp_path, runtime):
    out = run(config, adapter("HangsAfterForget"), tmp_path, runtime=runtime)
    per_case = verdicts(out)
    first, *others = per_case.values()
    assert [first[s] for s in ("1", "2", "3")] == ["PASS"] * 3
    assert {first[str(n)] for n in range(4, 14)} == {"ERROR"}
    result = json.loads((out / "result.json").read_text())
    assert any("stopped answering" in f for f in result["findings"])
    for cells in others:
        if runtime == "inprocess":  # a hung thread cannot be killed: nothing later may pass
            assert set(cells.values()) == {"ERROR"}
        else:  # the process is restarted before the next case, which then hangs at its own forget
            assert cells == first
    if runtime == "embedded":
        assert sum("was restarted before case" in f for f in result["findings"]) == len(others)


def test_malformed_answers_name_the_schema(config, tmp_path):
    out = run(config, adapter("MalformedAfterForget"), tmp_path)
    reasons = [c["reason"] for case in json.loads((out / "result.json").read_text())["cases"] for c in case["cells"]
               if c["step"] == "4"]
    assert all("wire.schema.json#/$defs/door" in r for r in reasons), reasons


def test_an_amnesiac_system_never_passes_an_absence(config, tmp_path):
    cells = row(run(config, adapter("Amnesiac"), tmp_path))
    assert cells["2"] == "FAIL"
    assert "PASS" not in {cells[s] for s in ("4", "6", "8", "9", "11", "12", "13")}
    assert cells["9"] == "SKIP"  # no store ever held the canary: the probes prove nothing


def test_deleting_everything_fails_on_the_twin(config, tmp_path):
    out = run(config, adapter("WipesScope"), tmp_path)
    cells = row(out)
    assert cells["4"] == "FAIL"
    reasons = [c["reason"] for case in json.loads((out / "result.json").read_text())["cases"] for c in case["cells"]
               if c["step"] == "4"]
    assert all("control twin not served" in r for r in reasons), reasons


def test_a_system_without_quiescence_signal_is_polled_and_it_is_a_finding(config, tmp_path):
    out = run(config, adapter("EventuallyConsistent"), tmp_path, cases=one_case(tmp_path))
    cells = row(out)
    assert cells["2"] == "PASS"  # reached only by polling: writes apply three door calls later
    result = json.loads((out / "result.json").read_text())
    assert any("no quiescence signal" in f for f in result["findings"])
    polls = [json.loads(line).get("poll", 0) for line in text_of(out).splitlines()]
    assert max(polls) >= 1
