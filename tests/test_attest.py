"""Attestations verified for real: a Sigstore bundle GitHub Actions signed (tests/fixtures/attestations/README.md),
checked offline with sigstore-python against the trust root it ships. Nothing of the cryptography is mocked."""

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.cli import main

pytest.importorskip("sigstore")
from memmatrix.evidence.attest import ATTESTED, INVALID, UNATTESTED, attestation, place, verify_bundle  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "attestations" / "pypi_attestations-0.0.19.slsa.sigstore.json"
BUNDLE = FIXTURE.read_text().strip()
NAME, DIGEST = "pypi_attestations-0.0.19.tar.gz", "9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3"
WORKFLOW = "trailofbits/pypi-attestations/.github/workflows/release.yml"


def test_a_real_bundle_verifies_offline_and_names_its_workflow():
    a = verify_bundle(BUNDLE, NAME, DIGEST)
    assert a.status == ATTESTED
    assert a.identity == f"https://github.com/{WORKFLOW}@refs/tags/v0.0.19"
    assert verify_bundle(BUNDLE, NAME, DIGEST, WORKFLOW).status == ATTESTED


def test_another_workflow_is_refused():
    a = verify_bundle(BUNDLE, NAME, DIGEST, "memmatrix/memmatrix/.github/workflows/nightly.yml")
    assert a.status == INVALID and "not https://github.com/memmatrix/memmatrix/.github/workflows/nightly.yml" in a.detail


def test_a_file_that_changed_after_it_was_signed_is_not_attested():
    a = verify_bundle(BUNDLE, NAME, "0" * 64)
    assert a.status == INVALID and "names no subject" in a.detail


def test_a_flipped_signature_fails():
    b = json.loads(BUNDLE)
    sig = b["dsseEnvelope"]["signatures"][0]["sig"]
    b["dsseEnvelope"]["signatures"][0]["sig"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    assert verify_bundle(json.dumps(b), NAME, DIGEST).status == INVALID


def test_a_statement_edited_to_name_another_file_fails():
    b = json.loads(BUNDLE)
    statement = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    statement["subject"][0]["digest"]["sha256"] = "1" * 64
    b["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    a = verify_bundle(json.dumps(b), NAME, "1" * 64)
    assert a.status == INVALID and "does not verify" in a.detail


def test_garbage_is_invalid_not_a_crash():
    assert verify_bundle("{}", NAME, DIGEST).status == INVALID


def test_a_result_with_no_bundle_is_unattested_and_refused_when_a_workflow_is_named(tmp_path, capsys):
    run = tmp_path / "results" / "deletion" / "reference" / "1.0" / "embedded"
    shutil.copytree(ROOT / "results" / "deletion" / "reference" / "1.0" / "embedded", run)
    assert attestation(run / "result.json", tmp_path).status == UNATTESTED
    assert main(["verify", str(run)]) == 0
    assert main(["verify", str(run), "--attested-by", WORKFLOW]) == 1
    assert "unattested: no attestation beside it" in capsys.readouterr().out
    (run / "attestation.sigstore.json").write_text(BUNDLE + "\n")  # a real signature, of another file
    assert main(["verify", str(run)]) == 1
    assert "names no subject" in capsys.readouterr().out


def test_place_writes_the_bundle_beside_each_result_it_signs(tmp_path):
    results = tmp_path / "results"
    target = results / "x" / "y" / "z" / "embedded"
    target.mkdir(parents=True)
    (target / "result.json").write_bytes(b"a result")
    digest = hashlib.sha256(b"a result").hexdigest()
    b = json.loads(BUNDLE)
    statement = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    statement["subject"] = [{"name": "results/x/y/z/embedded/result.json", "digest": {"sha256": digest}}]
    b["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    bundle = tmp_path / "attestation.json"
    bundle.write_text(json.dumps(b) + "\n")
    assert place(bundle, results) == [target]
    assert (target / "attestation.sigstore.json").is_file()


def test_a_wrong_workflow_name_is_one_line_before_any_work(tmp_path, capsys):
    assert main(["verify", str(ROOT / "results" / "deletion" / "reference"), "--attested-by", "nightly.yml"]) == 2
    err = capsys.readouterr().err.strip()
    assert "OWNER/REPO/.github/workflows/FILE" in err and len(err.splitlines()) == 1
