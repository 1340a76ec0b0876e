"""The vendor-claims registry: statuses computed from results, and every mistake in a claim file named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from memmatrix.claims import (CONTRADICTED, INCONCLUSIVE, NOT_MEASURED, PARTLY, REPRODUCED, UNTESTABLE, Claim,
                              Measured, cell_status, evaluate)
from memmatrix.cli import main


def claim(tests, versions="", **extra) -> Claim:
    raw = {"id": "X-1", "quote": "q", "source": {"url": "https://example.org", "date": "2026-01-01"},
           "versions": versions, "kind": "capability", "topic": "deletion", "tests": tests, **extra}
    return Claim("mem0", raw, Path("claims/mem0.yaml"))


def result(version, protocol, runtime="embedded", **cells) -> Measured:
    return Measured("mem0", version, protocol, runtime, Path(f"r/{protocol}/{version}/result.json"), dict(cells))


@pytest.mark.parametrize("verdicts, expect, status", [
    (["PASS", "PASS"], "PASS", REPRODUCED),
    (["FAIL", "FAIL"], "FAIL", REPRODUCED),           # the vendor itself predicted the failure
    (["FAIL", "SKIP"], "PASS", CONTRADICTED),
    (["PASS", "FAIL"], "PASS", PARTLY),
    (["PASS", "ERROR"], "PASS", INCONCLUSIVE),        # an errored case cannot be counted as reproducing
    (["FAIL", "ERROR"], "PASS", CONTRADICTED),
    (["UNSUPPORTED", "SKIP"], "PASS", INCONCLUSIVE),
    ([], "PASS", INCONCLUSIVE),
])
def test_a_cell_is_read_across_every_case(verdicts, expect, status):
    assert cell_status(verdicts, expect) == status


def test_a_claim_is_judged_at_each_release_in_range_and_headlined_by_the_newest():
    c = claim([{"protocol": "deletion", "step": "9", "expect": "PASS"},
               {"protocol": "contradiction", "step": "D", "expect": "PASS"}], versions=">=1.0,<3")
    rows = evaluate([c], [
        result("0.9", "deletion", **{"9": ["FAIL"]}),                       # out of range: ignored
        result("1.0.7", "deletion", **{"9": ["PASS", "PASS"]}), result("1.0.7", "contradiction", D=["PASS"]),
        result("2.2.1", "deletion", **{"9": ["PASS"]}), result("2.2.1", "contradiction", D=["FAIL", "FAIL"]),
    ])
    (row,) = rows
    assert [(m["version"], m["status"]) for m in row["measured"]] == [("1.0.7", REPRODUCED), ("2.2.1", PARTLY)]
    assert row["status"] == PARTLY
    assert row["measured"][0]["cells"][0]["result"] == "r/deletion/1.0.7/result.json"


def test_an_unmeasured_protocol_keeps_a_claim_from_being_reproduced():
    c = claim([{"protocol": "deletion", "step": "4", "expect": "PASS"},
               {"protocol": "contradiction", "step": "A", "expect": "PASS"}])
    (row,) = evaluate([c], [result("2.2.1", "deletion", **{"4": ["PASS"]})])
    assert row["status"] == PARTLY and row["measured"][0]["cells"][1]["status"] == NOT_MEASURED
    (row,) = evaluate([c], [])
    assert row["status"] == NOT_MEASURED and row["measured"] == []


def test_a_benchmark_claim_is_untestable_offline_whatever_the_results():
    c = claim([], kind="benchmark", untestable="a real model and the LoCoMo dataset")
    (row,) = evaluate([c], [result("2.2.1", "deletion", **{"4": ["PASS"]})])
    assert row["status"] == UNTESTABLE and row["untestable"].startswith("a real model")


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
    assert now[0]["measured"][0]["version"] == "2.2.1" and now[0]["status"] in (REPRODUCED, CONTRADICTED, PARTLY)
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
    from memmatrix.claims import changes
    before = [{"id": "X-1", "system": "mem0", "status": REPRODUCED}, {"id": "X-2", "system": "mem0", "status": PARTLY}]
    after = [{"id": "X-1", "system": "mem0", "status": NOT_MEASURED}, {"id": "X-2", "system": "mem0", "status": CONTRADICTED}]
    assert changes(before, after) == ["X-2 (mem0): partly -> contradicted"]
