"""Case sets generated from a versioned spec: the same bytes every time, and a validator that rejects any case
that cannot discriminate."""

import copy
import json

import pytest

from conftest import ROOT

from memmatrix.casegen import generate, load_spec
from memmatrix.caserules import case_problems, file_problems
from memmatrix.cases import default_case_file, load_cases
from memmatrix.cli import main
from memmatrix.errors import CaseFileError
from memmatrix.protocols import get_protocol

SPEC = ROOT / "cases/specs/deletion-2.0.0.yaml"


@pytest.fixture(scope="module")
def generated():
    return generate(load_spec(SPEC))


def test_the_committed_breadth_set_is_what_its_spec_generates(capsys):
    assert main(["cases", "generate", str(SPEC), "--check"]) == 0
    assert "ok" in capsys.readouterr().out


def test_the_set_is_large_balanced_and_valid(config, generated):
    cases = generated["cases"]
    assert len(cases) >= 200 and len({c["id"] for c in cases}) == len(cases)
    for axis, values in load_spec(SPEC)["axes"].items():
        counts = {v: sum(c["axes"][axis] == v for c in cases) for v in values}
        assert max(counts.values()) - min(counts.values()) <= len(cases) // 10, (axis, counts)
    assert {c["shape"] for c in cases} == {"identifier", "name", "number", "phrase"}
    cf = load_cases(ROOT / "cases/deletion/breadth-2.0.0.json", config, get_protocol("deletion"))
    assert len(cf.cases) == len(cases)


def test_a_breadth_set_is_never_the_default(config):
    assert default_case_file(config, "deletion").name == "1.2.0.json"


def _one(generated):
    return copy.deepcopy(generated["cases"][0])


def test_a_twin_sharing_the_canarys_token_is_rejected(generated):
    case = _one(generated)
    case["targets"]["twin"]["token"] = case["targets"]["canary"]["token"].split("-")[0] + "-0000-ZZZ"
    assert any("share the token" in p for p in case_problems(case))


@pytest.mark.parametrize("value,why", [("4471", "fewer than 5 digits"), ("11111111", "pattern"),
                                       ("blue", "common words"), ("QX7", "shorter than 5")])
def test_a_value_a_model_could_guess_is_rejected(generated, value, why):
    case = _one(generated)
    case["targets"]["canary"]["token"] = value
    assert any(why in p for p in case_problems(case)), case_problems(case)


def test_an_answer_the_case_does_not_back_and_a_question_holding_its_answer_are_rejected(generated):
    case = _one(generated)
    case["targets"]["canary"]["token"] = "Zorblatt Quenvique"
    assert any("not backed by the case" in p for p in case_problems(case))
    case = _one(generated)
    token = case["targets"]["twin"]["token"]
    case["targets"]["twin"]["queries"] = [f"Is it {token}?"]
    assert any("contains its own answer" in p for p in case_problems(case))


def test_two_cases_whose_writes_the_oracle_cannot_tell_apart_are_rejected(generated):
    data = {"cases": [_one(generated), _one(generated)]}
    data["cases"][1]["id"] = "copy"
    assert any("could not tell them apart" in p for p in file_problems(data))
    assert file_problems({"cases": generated["cases"]}) == []


def test_a_spec_whose_pools_are_too_small_says_so_in_one_line(generated):
    spec = load_spec(SPEC)
    spec["values"]["phrase"] = {k: v[:1] for k, v in spec["values"]["phrase"].items()}
    with pytest.raises(CaseFileError, match="too small"):
        generate(spec)


def test_the_generated_file_runs_on_the_reference_and_it_passes_everything(config, tmp_path, generated):
    from helpers import run, verdicts
    subset = {**generated, "cases": generated["cases"][:8]}
    path = tmp_path / "subset.json"
    path.write_text(json.dumps(subset))
    out = run(config, "reference", tmp_path / "out", cases=path)
    assert {v for row in verdicts(out).values() for v in row.values()} == {"PASS"}


@pytest.mark.parametrize("name,crowd", [("scale10", 36), ("scale100", 396)])
def test_a_scale_set_writes_its_distractors_before_the_canary_and_clear_of_every_target(name, crowd):
    spec_path = ROOT / f"cases/specs/deletion-{name}-2.0.0.yaml"
    assert main(["cases", "generate", str(spec_path), "--check"]) == 0
    data = generate(load_spec(spec_path))
    assert data["set"] == name and len(data["cases"]) == 4
    for case in data["cases"]:
        ops = case["ops"]
        assert [op.get("note") for op in ops[:crowd]] == ["a distractor"] * crowd
        assert ops[crowd]["note"] == "the canary's source conversation"
        text = " ".join(m["content"] for op in ops[:crowd] for m in op["messages"])
        from memmatrix.tokens import contains
        assert not any(contains(text, t["token"]) for t in case["targets"].values())
