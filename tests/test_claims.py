"""The vendor-claims registry: statuses computed from results, and every mistake in a claim file named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from memmatrix.publish.claims import (CONTRADICTED, NOT_MEASURED, REPRODUCED, UNDECIDED, UNTESTABLE, Claim, Measured, case_outcome, evaluate, folder_setup, load_claims, measured, unread_mentions)
from memmatrix.cli import main


def claim(tests, versions="", **extra) -> Claim:
    raw = {"id": "X-1", "quote": "q", "source": {"url": "https://example.org", "date": "2026-01-01"},
           "versions": versions, "kind": "capability", "topic": "deletion", "tests": tests, **extra}
    return Claim("mem0", raw, Path("claims/mem0.yaml"))


def cell(step, verdict, reason="", checks=()):
    return {"step": step, "verdict": verdict, "reason": reason, "checks": list(checks)}


def result(version, protocol, *cases, runtime="embedded", options=None, cases_set="") -> Measured:
    """A result whose cases are given as {step: verdict} dicts (or {step: cell} where a cell needs checks)."""
    rows = [{"id": f"c{i}", "cells": {k: v if isinstance(v, dict) else cell(k, v) for k, v in c.items()}}
            for i, c in enumerate(cases)]
    return Measured("mem0", version, protocol, runtime, Path(f"r/{protocol}/{version}/result.json"), options or {},
                    cases_set, rows)


def stores_cell(verdict="FAIL", **held):
    """A deletion step-9 cell whose canary rows say, per store, (before, after-forget, end) held."""
    rows = [{"check": "store", "target": "canary", "store": s, "moment": m, "held": h}
            for s, moments in held.items() for m, h in zip(("before", "after-forget", "end"), moments)]
    return cell("9", verdict, "", rows)


@pytest.mark.parametrize("test, cells, outcome", [
    ({"step": "4", "expect": "PASS"}, {"4": cell("4", "PASS")}, "agree"),
    ({"step": "4", "expect": "FAIL"}, {"4": cell("4", "FAIL")}, "agree"),  # the vendor itself predicted the failure
    ({"step": "4", "expect": "PASS"}, {"4": cell("4", "FAIL")}, "against"),
    ({"step": "4", "expect": "PASS"}, {"4": cell("4", "ERROR", "boom")}, "undecided"),
    ({"step": "4", "expect": "PASS"}, {"4": cell("4", "SKIP")}, "undecided"),
    ({"step": "4", "expect": "PASS"}, {}, "undecided"),
    # one store at one moment, whatever the others hold
    ({"step": "9", "expect": "PASS", "stores": ["observations"]},
     {"9": stores_cell(observations=(True, False, True), **{"llm-requests": (True, True, True)})}, "agree"),
    ({"step": "9", "expect": "PASS", "stores": ["observations"], "moment": "end"},
     {"9": stores_cell(observations=(True, False, True))}, "against"),
    ({"step": "9", "expect": "PASS", "stores": ["observations"]},
     {"9": stores_cell(observations=(False, False, False))}, "undecided"),  # never held it: clean proves nothing
    ({"step": "9", "expect": "PASS", "stores": ["vectors"]},
     {"9": stores_cell(observations=(True, False, False))}, "undecided"),  # not probed
    ({"step": "9", "expect": "PASS", "stores": ["observations"]},
     {"9": cell("9", "ERROR", "probe failed")}, "undecided"),
])
def test_one_case_is_read_as_the_test_names_it(test, cells, outcome):
    assert case_outcome(cells, {"protocol": "deletion", **test})[0] == outcome


def test_statuses_count_decided_cases_and_name_the_rest():
    c = claim([{"protocol": "contradiction", "step": "A", "expect": "PASS"}])
    (row,) = evaluate([c], [result("1.0", "contradiction", {"A": "PASS"}, {"A": "PASS"}, {"A": "ERROR"})])
    assert row["status"] == REPRODUCED and row["summary"] == "reproduced in 2 of 2 decided cases (1 undecided)"
    (row,) = evaluate([c], [result("1.0", "contradiction", {"A": "PASS"}, {"A": "FAIL"}, {"A": "ERROR"})])
    assert row["status"] == CONTRADICTED and row["summary"] == "contradicted in 1 of 2 decided cases (1 undecided)"
    (row,) = evaluate([c], [result("1.0", "contradiction", {"A": cell("A", "ERROR", "upstream #1876")})])
    assert row["status"] == UNDECIDED and "upstream #1876" in row["summary"]


def test_a_claim_is_judged_at_each_release_in_range_and_headlined_by_the_newest():
    c = claim([{"protocol": "deletion", "step": "9", "expect": "PASS"},
               {"protocol": "contradiction", "step": "D", "expect": "PASS"}], versions=">=1.0,<3")
    rows = evaluate([c], [
        result("0.9", "deletion", {"9": "FAIL"}),                              # out of range: ignored
        result("1.0.7", "deletion", {"9": "PASS"}, {"9": "PASS"}), result("1.0.7", "contradiction", {"D": "PASS"}),
        result("2.2.1", "deletion", {"9": "PASS"}), result("2.2.1", "contradiction", {"D": "FAIL"}, {"D": "FAIL"}),
    ])
    (row,) = rows
    assert [(m["version"], m["status"]) for m in row["measured"]] == [("1.0.7", REPRODUCED), ("2.2.1", CONTRADICTED)]
    assert row["status"] == CONTRADICTED and row["at"] == "2.2.1"
    assert row["summary"] == "contradicted in 2 of 3 decided cases"
    assert row["measured"][0]["cells"][0]["result"] == "r/deletion/1.0.7/result.json"


def test_an_unmeasured_protocol_is_named_beside_the_status():
    c = claim([{"protocol": "deletion", "step": "4", "expect": "PASS"},
               {"protocol": "contradiction", "step": "A", "expect": "PASS"}])
    (row,) = evaluate([c], [result("2.2.1", "deletion", {"4": "PASS"})])
    assert row["status"] == REPRODUCED and row["measured"][0]["cells"][1]["status"] == NOT_MEASURED
    assert row["summary"] == "reproduced in 1 of 1 decided cases (not measured: contradiction A)"
    (row,) = evaluate([c], [])
    assert row["status"] == NOT_MEASURED and row["measured"] == []


def test_a_test_reads_only_results_of_its_setup_and_case_set_and_variants_have_their_own_line():
    c = claim([{"protocol": "deletion", "step": "4", "expect": "PASS"},
               {"protocol": "deletion", "step": "4", "expect": "PASS", "setup": {"graph": "kuzu"}},
               {"protocol": "deletion", "step": "4", "expect": "PASS", "cases": "breadth"}])
    rows = evaluate([c], [result("1.0", "deletion", {"4": "PASS"}),
                          result("1.0", "deletion", {"4": "FAIL"}, options={"graph": "kuzu"}),
                          result("1.0", "deletion", {"4": "FAIL"}, {"4": "PASS"}, cases_set="breadth-2.0.0-1a0edcf4"),
                          result("1.0", "deletion", {"4": "FAIL"}, options={"forget_path": "x"})])  # read by none
    (row,) = rows
    assert row["status"] == CONTRADICTED and row["summary"] == "contradicted in 1 of 3 decided cases"
    (variant,) = row["variants"]
    assert variant["setup"] == {"graph": "kuzu"} and variant["status"] == CONTRADICTED


def test_a_claim_about_an_opt_in_mode_is_headlined_by_that_mode():
    c = claim([{"protocol": "contradiction", "step": "D", "expect": "PASS", "setup": {"mode": "on"}}],
              setup={"mode": "on"})
    (row,) = evaluate([c], [result("1.0", "contradiction", {"D": "PASS"}, options={"mode": "on"}),
                            result("1.0", "contradiction", {"D": "FAIL"})])
    assert row["status"] == REPRODUCED and row["variants"] == []


@pytest.mark.parametrize("folder, parsed", [
    ("embedded", ("embedded", {}, "", True)),
    ("compose+forget_path=agent_delete", ("compose", {"forget_path": "agent_delete"}, "", True)),
    ("embedded+cases=breadth-2.0.0-1a0edcf4", ("embedded", {}, "breadth-2.0.0-1a0edcf4", True)),
    ("embedded+oracle-undated", ("embedded", {}, "", False)),
    ("embedded+seed=3", ("embedded", {}, "", False)),
])
def test_a_result_folder_names_its_setup(folder, parsed):
    assert folder_setup(folder) == parsed


def test_a_benchmark_claim_is_untestable_offline_whatever_the_results():
    c = claim([], kind="benchmark", untestable="a real model and the LoCoMo dataset")
    (row,) = evaluate([c], [result("2.2.1", "deletion", {"4": "PASS"})])
    assert row["status"] == UNTESTABLE and row["untestable"].startswith("a real model")


def test_every_store_and_moment_a_note_names_is_read_by_its_tests(config):
    """A note that says which store or moment decides a claim must be what its status is computed from."""
    from memmatrix.evidence.verify import find_results
    declared: dict[str, set[str]] = {}
    for path in find_results([ROOT / "results"]):
        r = json.loads(path.read_text())
        declared.setdefault(r["stamp"]["system"]["name"], set()).update(s["name"] for s in r["capabilities"]["stores"])
    problems = {c.id: unread_mentions(c, declared.get(c.system, set())) for c in load_claims(ROOT / "claims", config)}
    assert {k: v for k, v in problems.items() if v} == {}


def test_a_note_naming_an_unread_store_or_moment_is_caught():
    c = claim([{"protocol": "deletion", "step": "4", "expect": "PASS"}],
              note="the `observations` store decides it, right after the forget; observations are facts")
    assert unread_mentions(c, {"observations", "llm-requests"}) == ["store 'observations'", "moment 'after-forget'"]
    c = claim([{"protocol": "deletion", "step": "4", "expect": "PASS"}], note="llm-requests keeps every prompt")
    assert unread_mentions(c, {"observations", "llm-requests"}) == ["store 'llm-requests'"]
    c = claim([{"protocol": "deletion", "step": "9", "expect": "PASS", "stores": ["observations"]}],
              note="the `observations` store decides it, right after the forget; llm-requests is a log",
              ignores=[{"store": "llm-requests", "why": "a log of prompts, not a derived memory"}])
    assert unread_mentions(c, {"observations", "llm-requests"}) == []


def test_every_claim_names_stores_its_system_declares(config):
    from memmatrix.evidence.verify import find_results
    declared: dict[str, set[str]] = {}
    for path in find_results([ROOT / "results"]):
        r = json.loads(path.read_text())
        declared.setdefault(r["stamp"]["system"]["name"], set()).update(s["name"] for s in r["capabilities"]["stores"])
    wrong = [(c.id, s) for c in load_claims(ROOT / "claims", config) for t in c.tests for s in t.get("stores") or []
             if s not in declared.get(c.system, set())]
    assert wrong == []


def write_claims(folder: Path, **override) -> Path:
    raw = {"id": "MEM-1", "quote": "Deleted memories stay deleted.",
           "source": {"url": "https://example.org/doc", "date": "2026-08-12"}, "versions": ">=2",
           "kind": "capability", "topic": "deletion", "tests": [{"protocol": "deletion", "step": "4", "expect": "PASS"}]}
    system = override.pop("system", "mem0")
    raw.update(override)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mem0.yaml").write_text(yaml.safe_dump({"system": system, "claims": [raw]}))
    return folder


@pytest.mark.parametrize("override, says", [
    ({"tests": [{"protocol": "deletion", "step": "14", "expect": "PASS"}]}, "protocol deletion has no step '14'"),
    ({"tests": [{"protocol": "recall", "step": "1", "expect": "PASS"}]}, "unknown protocol 'recall'"),
    ({"versions": "2.x"}, "versions '2.x' is not a PEP 440 specifier set"),
    ({"tests": [{"protocol": "deletion", "step": "4", "expect": "MAYBE"}]}, "does not fit schemas/claims.schema.json"),
    ({"tests": []}, "does not fit schemas/claims.schema.json"),  # neither a cell nor what it would need
    ({"tests": [{"protocol": "deletion", "step": "4", "expect": "PASS", "stores": ["x"]}]},
     "deletion step 4 records no per-store sub-verdicts"),
    ({"tests": [{"protocol": "deletion", "step": "9", "expect": "PASS", "setup": {"colour": "red"}}]},
     "setup names option 'colour', which systems/mem0/system.yaml does not declare"),
])
def test_a_wrong_claim_file_is_one_line_naming_it_before_any_result_is_read(tmp_path, capsys, override, says):
    folder = write_claims(tmp_path / "claims", **override)
    assert main(["claims", str(tmp_path / "nowhere"), "--claims", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "mem0.yaml" in err and len(err.splitlines()) == 1, err


def test_a_status_change_against_the_baseline_fails_the_job_only_when_asked(tmp_path, capsys):
    folder = write_claims(tmp_path / "claims")
    results = ROOT / "results" / "deletion" / "mem0" / "2.2.1" / "embedded"
    out = tmp_path / "now.json"
    assert main(["claims", str(results), "--claims", str(folder), "--json", str(out)]) == 0
    now = json.loads(out.read_text())["claims"]
    assert now[0]["measured"][0]["version"] == "2.2.1" and now[0]["status"] in (REPRODUCED, CONTRADICTED, UNDECIDED)
    before = tmp_path / "before.json"
    flipped = REPRODUCED if now[0]["status"] != REPRODUCED else CONTRADICTED
    before.write_text(json.dumps({"kind": "memmatrix.claims", "claims": [{**now[0], "status": flipped}]}))
    capsys.readouterr()
    assert main(["claims", str(results), "--claims", str(folder), "--baseline", str(before)]) == 0
    assert f"MEM-1 (mem0): {flipped} -> {now[0]['status']}" in capsys.readouterr().out
    assert main(["claims", str(results), "--claims", str(folder), "--baseline", str(before), "--fail-on-change"]) == 1
    assert main(["claims", str(results), "--claims", str(folder), "--baseline", str(out), "--fail-on-change"]) == 0
    assert main(["claims", str(results), "--claims", str(folder), "--fail-on-change"]) == 2


def test_a_claim_the_new_results_do_not_measure_is_no_status_change():
    from memmatrix.publish.claims import changes
    before = [{"id": "X-1", "system": "mem0", "status": REPRODUCED}, {"id": "X-2", "system": "mem0", "status": UNDECIDED}]
    after = [{"id": "X-1", "system": "mem0", "status": NOT_MEASURED}, {"id": "X-2", "system": "mem0", "status": CONTRADICTED}]
    assert changes(before, after) == ["X-2 (mem0): undecided -> contradicted"]


def test_a_finding_that_contradicts_its_claims_status_is_caught():
    from memmatrix.publish.claimsview import findings_problems
    rows = [{"id": "HIN-2", "status": CONTRADICTED, "summary": "contradicted in 4 of 4 decided cases", "variants": [],
             "measured": [{"version": "1.1.0", "status": CONTRADICTED}]},
            {"id": "GRA-4", "status": REPRODUCED, "summary": "reproduced in 8 of 8 decided cases",
             "variants": [{"label": "forget_path=edge_delete", "status": CONTRADICTED}], "measured": []}]
    text = ("- **Confirmed: observations go with the document** (HIN-2).\n"
            "- **Refuted for GRA-4 with forget_path=edge_delete**: the summaries keep it.\n"
            "- **Confirmed: GRA-4** holds.\n"
            "- **Confirmed: history keeps deleted text.**\n"
            "- Observed: nothing to do with a claim.\n")
    assert findings_problems(text, rows, "README.md") == [
        "README.md:1: says Confirmed of HIN-2, whose status is contradicted (contradicted in 4 of 4 decided cases): make "
        "the line say what the registry says",
        "README.md:4: says 'Confirmed' but names no claim of the registry: name the claim it is about (e.g. MEM-1), or "
        "say what was observed without 'confirmed' or 'refuted'"]
