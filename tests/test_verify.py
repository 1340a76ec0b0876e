"""verify re-derives every number from its artifact, and any tampering makes it fail."""

import json

import pytest

from helpers import run
from memmatrix.verify import verify_result


@pytest.fixture
def result_dir(config, tmp_path):
    return run(config, "append", tmp_path / "out")


def test_a_fresh_result_verifies(config, result_dir):
    assert verify_result(result_dir / "result.json", config) == []


def test_changing_one_byte_of_the_transcript_fails(config, result_dir):
    t = result_dir / "transcript.jsonl"
    data = bytearray(t.read_bytes())
    i = data.index(b"QX-4471-TRV")
    data[i] = ord("Z")
    t.write_bytes(bytes(data))
    problems = verify_result(result_dir / "result.json", config)
    assert any("transcript sha256" in p for p in problems), problems


def test_a_consistent_forgery_of_the_transcript_is_caught_by_rescoring(config, result_dir):
    """Edit the evidence and fix the hash: the re-scored verdict no longer matches the stored one."""
    from memmatrix.canon import sha256_file
    t = result_dir / "transcript.jsonl"
    lines = t.read_text().splitlines(keepends=True)
    i = next(n for n, line in enumerate(lines) if '"kind":"case"' in line)
    lines[i] = lines[i].replace('"token":"QX-4471-TRV"', '"token":"QX-0000-TRV"')  # claim another canary
    t.write_text("".join(lines))
    r = json.loads((result_dir / "result.json").read_text())
    r["transcript"]["sha256"] = sha256_file(t)
    (result_dir / "result.json").write_text(json.dumps(r))
    problems = verify_result(result_dir / "result.json", config)
    assert any("stored FAIL, the transcript gives" in p for p in problems), problems


def test_changing_a_stored_score_fails(config, result_dir):
    r = json.loads((result_dir / "result.json").read_text())
    cell = next(c for c in r["cases"][0]["cells"] if c["verdict"] == "FAIL")
    cell["verdict"] = "PASS"
    (result_dir / "result.json").write_text(json.dumps(r))
    problems = verify_result(result_dir / "result.json", config)
    assert any(f"step {cell['step']}: stored PASS, the transcript gives FAIL" in p for p in problems), problems


def test_changing_the_summary_or_fingerprint_fails(config, result_dir):
    r = json.loads((result_dir / "result.json").read_text())
    r["summary"]["4"]["FAIL"] -= 1
    r["summary"]["4"]["PASS"] += 1
    r["stamp"]["seed"] = 7
    (result_dir / "result.json").write_text(json.dumps(r))
    problems = verify_result(result_dir / "result.json", config)
    assert any("summary differs" in p for p in problems)
    assert any("fingerprint" in p for p in problems)


def test_a_result_that_breaks_its_schema_is_named(config, result_dir):
    r = json.loads((result_dir / "result.json").read_text())
    r["cases"][0]["cells"][0]["verdict"] = "MAYBE"
    (result_dir / "result.json").write_text(json.dumps(r))
    problems = verify_result(result_dir / "result.json", config)
    assert problems and all("schemas/result.schema.json" in p for p in problems)
    assert any("/cases/0/cells/0/verdict" in p for p in problems)
