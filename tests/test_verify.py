"""verify re-derives every number from its artifact and binds it to its inputs: tampering fails it.

The forgeries here are self-consistent: the forger fixes the hashes, record counts, re-scores the
cases and recomputes the summary and fingerprint. What still catches them is what binds the result
to things the forger does not control: the protocol's code, the case file in the checkout, the
model transcript, and the run header the stamp must equal.
"""

import json

import pytest

from helpers import run, text_of
from memmatrix.common.canon import compress_bytes, sha256_bytes, stored_transcript
from memmatrix.protocols import get_protocol
from memmatrix.protocols.scoring import score_transcript, summarize
from memmatrix.result.stamp import fingerprint
from memmatrix.evidence.verify import verify_result


@pytest.fixture
def result_dir(config, tmp_path):
    return run(config, "append", tmp_path / "out")


def load(d):
    return json.loads((d / "result.json").read_text())


def save(d, r):
    (d / "result.json").write_text(json.dumps(r))


def forge(d, edit_lines=None, edit_result=None, name="transcript"):
    """Edit the transcript and/or result, then make everything self-consistent again, as a forger would."""
    r = load(d)
    lines = text_of(d, name).splitlines(keepends=True)
    if edit_lines:
        lines = edit_lines(lines)
    text = "".join(lines)
    stored_transcript(d, name).write_bytes(compress_bytes(text.encode()))
    key = "transcript" if name == "transcript" else "model_transcript"
    r[key].update(sha256=sha256_bytes(text.encode()), records=len(lines))
    if edit_result:
        edit_result(r)
    p = get_protocol(r["stamp"]["protocol"]["name"])
    records = [json.loads(x) for x in text_of(d).splitlines()] if name == "transcript" else None
    if records is not None:
        r["cases"] = score_transcript(p, records)
        r["summary"] = summarize(p, r["cases"])
    r["stamp"]["fingerprint"] = fingerprint(r["stamp"])
    save(d, r)


def problems(config, d):
    return verify_result(d / "result.json", config)


def test_a_fresh_result_verifies(config, result_dir):
    assert problems(config, result_dir) == []


def test_changing_one_byte_of_the_transcript_fails(config, result_dir):
    text = text_of(result_dir)
    stored_transcript(result_dir, "transcript").write_bytes(compress_bytes(text.replace("QX-4471-TRV", "ZX-4471-TRV", 1).encode()))
    assert any("transcript.jsonl.xz: sha256 of its canonical lines" in p for p in problems(config, result_dir))


def test_a_consistent_forgery_of_the_evidence_is_caught(config, result_dir):
    """Edit what the audit answered (it quoted the deleted value) and fix the hash: the stored verdict disagrees."""
    text = "".join(ln.replace("QX-4471-TRV", "[digest]") if '"call":"audit"' in ln else ln
                   for ln in text_of(result_dir).splitlines(keepends=True))
    stored_transcript(result_dir, "transcript").write_bytes(compress_bytes(text.encode()))
    r = load(result_dir)
    r["transcript"]["sha256"] = sha256_bytes(text.encode())
    save(result_dir, r)
    found = problems(config, result_dir)
    assert any("identifier-locker-code step 10: stored FAIL, the transcript gives PASS" in p for p in found), found


def test_changing_a_stored_score_fails(config, result_dir):
    r = load(result_dir)
    cell = next(c for c in r["cases"][0]["cells"] if c["verdict"] == "FAIL")
    cell["verdict"] = "PASS"
    save(result_dir, r)
    assert any(f"step {cell['step']}: stored PASS, the transcript gives FAIL" in p for p in problems(config, result_dir))


def test_changing_the_summary_or_fingerprint_fails(config, result_dir):
    r = load(result_dir)
    r["summary"]["4"]["FAIL"] -= 1
    r["summary"]["4"]["PASS"] += 1
    r["stamp"]["seed"] = 7
    save(result_dir, r)
    found = problems(config, result_dir)
    assert any("summary differs" in p for p in found)
    assert any("fingerprint" in p for p in found)


def test_a_result_relabelled_to_another_system_is_caught(config, result_dir):
    def relabel(r):
        r["stamp"]["system"]["name"] = "reference"
        r["stamp"]["system"]["declared"]["name"] = "reference"
    forge(result_dir, edit_result=relabel)
    found = problems(config, result_dir)
    assert any("run header says system.name = 'append', the stamp says 'reference'" in p for p in found), found
    assert any("declared" in p for p in found), found


def test_a_transcript_with_one_case_removed_and_rescored_is_caught(config, result_dir):
    def drop_last_case(lines):
        starts = [i for i, ln in enumerate(lines) if '"kind":"case"' in ln]
        return lines[:starts[-1]]
    forge(result_dir, edit_lines=drop_last_case)
    found = problems(config, result_dir)
    assert any("the case file 1.2.0.json has" in p and "missing ['phrase-wifi-passphrase']" in p for p in found), found


def test_a_changed_model_identity_is_caught(config, tmp_path):
    d = run(config, "reference", tmp_path / "ref")

    def claim_a_real_model(r):
        r["stamp"]["model"] = {**r["stamp"]["model"], "mode": "proxy", "id": "gpt-4o-mini", "oracle_version": None}

    def header_too(lines):  # the forger edits the run header as well, so header and stamp agree
        first = json.loads(lines[0])
        first["model"] = {**first["model"], "mode": "proxy", "id": "gpt-4o-mini", "oracle_version": None}
        return [json.dumps(first, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n", *lines[1:]]
    forge(d, edit_lines=header_too, edit_result=claim_a_real_model)
    found = problems(config, d)
    assert any("were not answered by the proxy model the stamp names (gpt-4o-mini)" in p for p in found), found


def test_emptied_findings_are_caught(config, result_dir):
    forge(result_dir, edit_result=lambda r: r.update(findings=[]))
    found = problems(config, result_dir)
    assert any("findings differ from those derived from the transcripts" in p and "emulated" not in p or
               "missing" in p for p in found), found


def test_swapped_step_labels_are_caught(config, result_dir):
    def swap(r):
        steps = r["steps"]
        steps[3]["name"], steps[5]["name"] = steps[5]["name"], steps[3]["name"]
    forge(result_dir, edit_result=swap)
    found = problems(config, result_dir)
    assert any("labels step 4 'gone-after-refeed'" in p and "calls it 'gone'" in p for p in found), found


def test_a_result_moved_into_another_systems_folder_is_caught(config, result_dir, tmp_path):
    import shutil
    moved = tmp_path / "out" / "deletion" / "notes" / "1.0" / "inprocess"
    shutil.copytree(result_dir, moved)
    assert any("folder for system 'notes', its stamp says 'append'" in p for p in problems(config, moved))


def test_a_result_that_breaks_its_schema_is_named(config, result_dir):
    r = load(result_dir)
    r["cases"][0]["cells"][0]["verdict"] = "MAYBE"
    save(result_dir, r)
    found = problems(config, result_dir)
    assert found and all("schemas/result.schema.json" in p for p in found)
    assert any("/cases/0/cells/0/verdict" in p for p in found)


def edit_one_answer(lines):
    """A model transcript's lines with one extraction answer's value changed (an X put before it)."""
    k = next(i for i, ln in enumerate(lines) if '"dialect":"memmatrix-extract"' in ln and '"matched":true' in ln)
    rec = json.loads(lines[k])
    message = rec["response"]["choices"][0]["message"]
    message["content"] = message["content"].replace('"value": "', '"value": "X', 1)
    return [*lines[:k], json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n",
            *lines[k + 1:]]


def test_an_oracle_answer_edited_in_the_model_transcript_is_caught(config, tmp_path):
    """The forger changes what the oracle answered (one extracted value) and fixes every hash: asked again, the
    oracle answers what it answered in the run, so the edited answer stands out."""
    d = run(config, "reference", tmp_path / "ref")
    assert problems(config, d) == []
    forge(d, edit_lines=edit_one_answer, name="model-transcript")
    found = problems(config, d)
    assert any("1 of" in p and "oracle answers differ from what the oracle answers today" in p for p in found), found


def test_the_oracle_of_a_system_outside_systems_is_found_through_its_folder(tmp_path, monkeypatch):
    """A system under a MEMMATRIX_SYSTEMS root is stamped with its adapter's absolute path; re-asking the oracle
    finds its folder (and its oracle module) by name, as the run did."""
    from memmatrix.common.config import Config
    from memmatrix.evidence.reask import oracle_for
    from conftest import ROOT
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(ROOT / "tests" / "fixtures" / "systems"))
    config = Config.from_env()
    stamp = {"system": {"name": "flipper", "version": "1.0.0",
                        "adapter": str(ROOT / "tests/fixtures/systems/flipper/adapter.py") + ":FlipperAdapter"},
             "model": {"oracle_version": "1.1.0"}, "dataset": {"path": "cases/deletion/1.2.0.json"}}
    assert oracle_for(stamp, ROOT / "cases" / "deletion" / "1.2.0.json", config) is not None


def test_an_op_or_case_field_unlike_the_case_file_is_caught_with_the_case_file_already_read(config, result_dir):
    """The case file's cases are read once per verify (bindings._case_file): checking an intact result first leaves
    them remembered, and a forged op spec and a forged case field are still each named against the file."""
    from memmatrix.common.canon import canonical
    assert problems(config, result_dir) == []

    def edit(lines):
        out, op_done, case_done = [], False, False
        for ln in lines:
            rec = json.loads(ln)
            if rec.get("kind") == "op" and rec.get("index") == 1 and not op_done:
                rec["spec"] = {**rec["spec"], "forged": True}
                op_done, ln = True, canonical(rec) + "\n"
            elif rec.get("kind") == "case" and not case_done:
                rec["recall_k"] = rec.get("recall_k", 10) + 1
                case_done, ln = True, canonical(rec) + "\n"
            out.append(ln)
        assert op_done and case_done
        return out
    forge(result_dir, edit_lines=edit)
    found = problems(config, result_dir)
    assert any(p.endswith("op 1: the transcript's op is not the case file's op 1") for p in found), found
    assert any(p.endswith("the transcript's recall_k differs from the case file's") for p in found), found
