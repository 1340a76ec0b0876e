"""Case sets generated from a versioned spec: the same bytes every time, and a validator that rejects any case
that cannot discriminate."""

import copy
import json

import pytest

from conftest import ROOT

from memmatrix.cases.generate import generate, load_spec
from memmatrix.cases.rules import case_problems, file_problems
from memmatrix.cases import default_case_file, load_cases
from memmatrix.cli import main
from memmatrix.common.errors import CaseFileError
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


def test_a_twin_whose_tokens_hold_the_canarys_is_rejected_and_names_the_sequence(generated):
    case = _one(generated)
    canary = case["targets"]["canary"]["token"]
    case["targets"]["twin"]["token"] = f"{canary} 7"
    problems = [p for p in case_problems(case) if "occurs inside" in p]
    assert problems and repr(canary) in problems[0] and "token sequence" in problems[0]


@pytest.mark.parametrize("canary, twin", [("ana.lind@quellmark.example", "bo.berg@quellmark.example"),
                                          ("14 Harbour Road, Vessby", "31 Harbour Road, Vessby"),
                                          ("0731-559-208", "0731-559-114")])
def test_values_that_share_tokens_but_not_a_whole_sequence_are_accepted(generated, canary, twin):
    """Realistic canaries share tokens (a domain, a street, an area code); whole-sequence matching tells them apart."""
    from memmatrix.cases.rules import inside
    assert inside(canary, twin) == "" and inside(twin, canary) == ""
    case = _one(generated)
    old = case["targets"]["twin"]["token"]
    case["targets"]["twin"]["token"] = twin
    assert not any("occurs inside" in p for p in case_problems(case)), old


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
        from memmatrix.common.tokens import contains
        assert not any(contains(text, t["token"]) for t in case["targets"].values())


CONTRA = ROOT / "cases/specs/contradiction-2.0.0.yaml"


@pytest.fixture(scope="module")
def contra():
    return generate(load_spec(CONTRA))


@pytest.mark.parametrize("spec", ["contradiction-2.0.0.yaml", "contradiction-density20-2.0.0.yaml",
                                  "contradiction-scale10-2.0.0.yaml", "contradiction-scale100-2.0.0.yaml"])
def test_the_committed_contradiction_sets_are_what_their_specs_generate(spec, capsys):
    assert main(["cases", "generate", str(ROOT / "cases/specs" / spec), "--check"]) == 0


def test_the_contradiction_set_covers_every_shape_and_gaps_from_minutes_to_years(config, contra):
    cases = contra["cases"]
    assert len(cases) >= 100
    assert {c["shape"] for c in cases} == {"replacement", "polarity", "retraction", "partial", "bounded"}
    gaps = {c["axes"]["gap"] for c in cases}
    assert "PT5M" in gaps and "P1095D" in gaps
    for shape in ("replacement", "bounded"):
        assert {c["axes"]["gap"] for c in cases if c["shape"] == shape} == gaps
    load_cases(ROOT / "cases/contradiction/breadth-2.0.0.json", config, get_protocol("contradiction"))
    assert default_case_file(config, "contradiction").name == "1.3.0.json"


def test_a_bounded_case_ends_its_validity_between_the_control_and_the_next_look(contra):
    from memmatrix.common.clock import parse_duration, parse_time
    for case in (c for c in contra["cases"] if c["shape"] == "bounded"):
        end = parse_time(case["ops"][0]["gold"][0]["valid_to"])
        start = parse_time(contra["clock"]["start"])
        assert start + parse_duration("PT3M") < end < start + parse_duration(case["axes"]["gap"]), case["id"]


def test_a_generated_contradiction_case_with_a_guessable_sibling_is_rejected(config, contra, tmp_path):
    data = copy.deepcopy(contra)
    case = data["cases"][0]
    old = case["targets"]["sibling"]["token"]
    case["targets"]["sibling"]["token"] = "4471"
    for op in case["ops"]:
        for m in op.get("messages", []):
            m["content"] = m["content"].replace(old, "4471")
        for f in op.get("gold", []):
            f["value"], f["statement"] = f["value"].replace(old, "4471"), f["statement"].replace(old, "4471")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError, match="fewer than 5 digits"):
        load_cases(path, config, get_protocol("contradiction"))
    del data["set"]  # still generated from a spec: the generated rules hold
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError, match="fewer than 5 digits"):
        load_cases(path, config, get_protocol("contradiction"))
    del data["generated_from"]  # a hand-written file keeps only the structural rules (1.3.0 has a four-digit rating)
    path.write_text(json.dumps(data))
    load_cases(path, config, get_protocol("contradiction"))


def test_two_cases_with_the_same_forget_request_are_rejected(contra):
    data = copy.deepcopy({"cases": contra["cases"][:2]})
    undo = [op for op in data["cases"][1]["ops"] if op["op"] == "forget"][0]
    undo["text"] = [op for op in data["cases"][0]["ops"] if op["op"] == "forget"][0]["text"]
    assert any("same text in each" in p for p in file_problems(data))
    assert file_problems({"cases": contra["cases"]}) == []


def test_the_contradiction_set_runs_on_the_reference_and_it_passes_everything_it_can(config, tmp_path, contra):
    from helpers import run, verdicts
    subset = {**contra, "cases": contra["cases"][:10]}
    path = tmp_path / "subset.json"
    path.write_text(json.dumps(subset))
    out = run(config, "reference", tmp_path / "out", protocol="contradiction", cases=path)
    got = {(case, step): v for case, row in verdicts(out).items() for step, v in row.items()}
    assert {v for (case, step), v in got.items() if not case.startswith("bounded")} == {"PASS"}
    assert {v for (case, step), v in got.items() if case.startswith("bounded") and step != "U"} == {"PASS"}


def test_a_density_stream_writes_one_correction_in_five(config):
    data = generate(load_spec(ROOT / "cases/specs/contradiction-density20-2.0.0.yaml"))
    for case in data["cases"]:
        writes = [op for op in case["ops"] if op["op"] == "write"]
        fixes = [op for op in writes if any(f.get("intent") in ("supersede", "retract") for f in op["gold"])]
        displaced = len(fixes) + (case["shape"] == "bounded")
        assert 0.18 <= displaced / len(writes) <= 0.25, (case["id"], displaced, len(writes))
        subjects = [f["subject"] for op in writes if op.get("note", "").startswith("the stream: another")
                    for f in op["gold"]]
        assert len(subjects) == len(set(subjects)) == 16  # no stream fact contradicts another


@pytest.mark.parametrize("name, other", [("scale10", 36), ("scale100", 396)])
def test_a_contradiction_scale_set_grows_the_store_between_the_original_and_its_correction(name, other):
    data = generate(load_spec(ROOT / f"cases/specs/contradiction-{name}-2.0.0.yaml"))
    assert sorted(c["shape"] for c in data["cases"]) == sorted(["replacement", "polarity", "retraction", "partial",
                                                                 "bounded"])
    for case in data["cases"]:
        ops = case["ops"]
        stream = [k for k, op in enumerate(ops) if op.get("note", "").startswith("the stream: another")]
        subjects = [f["subject"] for k in stream for f in ops[k]["gold"]]
        assert len(subjects) == len(set(subjects)) == other  # each about a subject of its own: none contradicts
        day1 = next(k for k, op in enumerate(ops) if op.get("id") == "day1")
        fixes = [k for k, op in enumerate(ops) if op["op"] == "write"
                 and any(f.get("intent") in ("supersede", "retract") for f in op["gold"])]
        assert fixes == ([] if case["shape"] == "bounded" else [fixes[0]])  # the case's own correction only
        assert day1 < min(stream) and all(k > max(stream) for k in fixes)


def test_a_history_question_that_shares_no_word_with_the_fact_it_asks_about_is_rejected(contra):
    case = copy.deepcopy(next(c for c in contra["cases"] if c["id"].startswith("retraction-nickname")))
    assert case_problems(case) == []
    case["targets"]["original"]["history_queries"] = ["What nickname did I give you before?"]
    assert any("no history question shares a word" in p for p in case_problems(case)), case_problems(case)


CONC = ROOT / "cases/specs/concurrency-1.0.0.yaml"


def test_the_committed_concurrency_cases_are_what_their_spec_generates_and_are_the_default(config, capsys):
    from memmatrix.cases import default_case_file
    assert main(["cases", "generate", str(CONC), "--check"]) == 0
    assert default_case_file(config, "concurrency") == ROOT / "cases/concurrency/1.0.0.json"


def test_the_concurrency_cases_rotate_their_shapes_and_write_the_same_words_alone_and_together():
    data = generate(load_spec(CONC))
    shapes = [c["shape"] for c in data["cases"]]
    assert {s: shapes.count(s) for s in set(shapes)} == {"disjoint": 8, "correction": 8, "entangled": 8}
    for case in data["cases"]:
        together = next(op for op in case["ops"] if op["op"] == "concurrent")
        alone = [op["messages"] for op in case["ops"] if op["op"] == "write" and op["scope"] == "seq"][1:]
        assert [w["messages"] for w in together["writes"]] == alone
        assert ("stale" in case["targets"]) == (case["shape"] != "disjoint")


def test_a_concurrency_case_whose_concurrent_write_is_never_written_alone_is_rejected():
    from memmatrix.protocols import get_protocol
    case = json.loads(json.dumps(generate(load_spec(CONC))["cases"][1]))
    proto = get_protocol("concurrency")
    assert proto.validate_case(case) == []
    together = next(op for op in case["ops"] if op["op"] == "concurrent")
    together["writes"][1]["messages"] = [{"role": "user", "content": "Something never said alone."}]
    assert any("written, alone, in scope 'seq'" in p for p in proto.validate_case(case))
    case["ops"] = [op for op in case["ops"] if not (op["op"] == "expect" and op["scope"] == "seq")]
    assert any("needs an expect in scope 'seq'" in p for p in proto.validate_case(case))


def test_a_deletion_case_whose_canary_and_twin_share_a_domain_is_accepted_and_a_contained_one_named():
    """Matching is by whole-token sequence: two addresses on one domain are told apart; a twin that holds its
    canary's whole sequence is not, and the problem names the sequence."""
    import json as _json
    from memmatrix.protocols import get_protocol
    from memmatrix.protocols.deletion_rules import validate_deletion_case
    case = _json.loads((ROOT / "cases" / "deletion" / "1.2.0.json").read_text())["cases"][0]
    text = _json.dumps(case).replace("QX-4471-TRV", "ana.lind@vetrano-works.example").replace(
        "MB-9025-KLO", "bo.berg@vetrano-works.example")
    assert validate_deletion_case(_json.loads(text), get_protocol("deletion")) == []
    worse = _json.dumps(case).replace("QX-4471-TRV", "ana.lind@vetrano-works.example").replace(
        "MB-9025-KLO", "ana.lind@vetrano-works.example.org")
    problems = validate_deletion_case(_json.loads(worse), get_protocol("deletion"))
    assert len(problems) == 1 and "'canary' and 'twin'" in problems[0]
    assert "['ana', 'lind', 'vetrano', 'works', 'example']" in problems[0], problems
