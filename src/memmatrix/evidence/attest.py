"""What CI produced, signed by CI: Sigstore attestations of results, checked offline.

A result made with a real provider's model cannot be re-derived offline, and any label of any result can be
rewritten consistently; what tells them apart is a signature. The nightly workflow attests every result.json it
produced with GitHub's artifact attestations (``actions/attest-build-provenance``: an in-toto SLSA provenance
statement whose subjects are the files' sha256, signed with a short-lived certificate for the workflow's identity
and logged in Rekor), and ``memmatrix attest place`` writes the bundle beside each result it names as
``attestation.sigstore.json``.

``verify`` checks a present bundle offline with sigstore-python against the trust root it ships: the signature,
the certificate chain, the transparency-log inclusion, and that a subject of the statement is this result.json
(its name and sha256). ``--attested-by OWNER/REPO/.github/workflows/FILE`` names the workflow whose signature
counts (the certificate's identity must be that workflow at some ref, issued by GitHub Actions); a result without
such a signature is then refused. Without the option, a valid bundle's identity is reported, never trusted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import ConfigError

BUNDLE = "attestation.sigstore.json"
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
ATTESTED, UNATTESTED, INVALID, UNCHECKED = "attested", "unattested", "invalid", "unchecked"


@dataclass
class Attestation:
    status: str          # attested, unattested or invalid
    detail: str          # the workflow identity that signed, or what is wrong
    identity: str = ""   # the certificate's subject (a workflow URL with its ref)


_VERIFIER = []


def _sigstore():
    """sigstore's bundle model and a verifier on the trust root sigstore-python ships (offline: no TUF refresh)."""
    try:
        import logging
        from sigstore.models import Bundle
        from sigstore.verify import Verifier
    except ImportError:
        raise ConfigError("checking attestations needs sigstore-python: pip install 'memmatrix[attest]'") from None
    if not _VERIFIER:
        logging.getLogger("sigstore").setLevel(logging.ERROR)  # "loaded in offline mode" is what we asked for
        _VERIFIER.append(Verifier.production(offline=True))
    return Bundle, _VERIFIER[0]


def check_identity_spec(spec: str) -> str:
    """``OWNER/REPO/.github/workflows/FILE`` as a prefix of a GitHub Actions certificate identity."""
    parts = spec.strip("/").split("/")
    if len(parts) < 5 or parts[2:4] != [".github", "workflows"]:
        raise ConfigError(f"--attested-by {spec!r}: name a workflow as OWNER/REPO/.github/workflows/FILE "
                          "(e.g. memmatrix/memmatrix/.github/workflows/nightly.yml)")
    return "https://github.com/" + "/".join(parts) + "@"


class _WorkflowPolicy:
    """sigstore's policy protocol: the certificate names this workflow (at any ref) and GitHub's OIDC issuer."""

    def __init__(self, prefix: str | None):
        self.prefix = prefix
        self.identity = ""

    def verify(self, cert) -> None:
        from cryptography.x509 import ExtensionNotFound, SubjectAlternativeName, UniformResourceIdentifier
        from sigstore.errors import VerificationError
        try:
            san = cert.extensions.get_extension_for_class(SubjectAlternativeName).value
        except ExtensionNotFound:
            raise VerificationError("the certificate names no identity") from None
        uris = san.get_values_for_type(UniformResourceIdentifier)
        self.identity = uris[0] if uris else ""
        issuer = _issuer(cert)
        if issuer != GITHUB_ISSUER:
            raise VerificationError(f"the certificate was issued for {issuer!r}, not GitHub Actions")
        if self.prefix and not self.identity.startswith(self.prefix):
            raise VerificationError(f"signed by {self.identity}, not {self.prefix.rstrip('@')}")


def _issuer(cert) -> str:
    from cryptography.x509 import ObjectIdentifier
    for oid in ("1.3.6.1.4.1.57264.1.8", "1.3.6.1.4.1.57264.1.1"):  # Fulcio's issuer (V2, then the legacy one)
        try:
            value = cert.extensions.get_extension_for_oid(ObjectIdentifier(oid)).value.value
        except Exception:
            continue
        return value[2:].decode() if oid.endswith(".8") and value[:1] == b"\x0c" else value.decode(errors="replace")
    return ""


def verify_bundle(bundle_text: str, name: str, digest: str, identity: str | None = None) -> Attestation:
    """Is ``bundle_text`` a valid Sigstore bundle, signed by GitHub Actions (the named workflow when ``identity`` is
    given), whose in-toto statement names a subject called ``name`` (or ending in it) with sha256 ``digest``?"""
    Bundle, Verifier = _sigstore()
    from sigstore.errors import Error as SigstoreError
    try:
        bundle = Bundle.from_json(bundle_text)
    except Exception as exc:
        return Attestation(INVALID, f"{BUNDLE} is not a Sigstore bundle ({type(exc).__name__}: {exc})")
    policy = _WorkflowPolicy(check_identity_spec(identity) if identity else None)
    try:
        payload_type, payload = Verifier.verify_dsse(bundle, policy)
    except SigstoreError as exc:
        return Attestation(INVALID, f"{BUNDLE} does not verify: {exc}", policy.identity)
    except Exception as exc:  # a malformed bundle is a finding about this result, never a crash of verify
        return Attestation(INVALID, f"{BUNDLE} does not verify ({type(exc).__name__}: {exc})", policy.identity)
    if payload_type != "application/vnd.in-toto+json":
        return Attestation(INVALID, f"{BUNDLE} signs {payload_type}, not an in-toto statement", policy.identity)
    statement = json.loads(payload)
    for subject in statement.get("subject", []):
        if (subject.get("digest") or {}).get("sha256") == digest and _same_place(str(subject.get("name", "")), name):
            return Attestation(ATTESTED, f"signed by {policy.identity}", policy.identity)
    return Attestation(INVALID, f"{BUNDLE} is a valid signature by {policy.identity}, but names no subject {name} "
                                f"with this file's sha256 {digest[:16]}…: the result changed after it was signed",
                       policy.identity)


def _same_place(subject: str, name: str) -> bool:
    """A subject names this file: its <protocol>/<system>/<version>/<setup>/result.json (wherever the workflow's tree
    sat), or only its file name (attest's subject-path: then the sha256 alone says which result)."""
    tail = lambda p: "/".join(p.strip("/").split("/")[-5:])  # noqa: E731
    return subject == name or subject == Path(name).name or tail(subject) == tail(name)


def attestation(result_json: Path, home: Path, identity: str | None = None) -> Attestation:
    """The attestation status of one result (its folder's ``attestation.sigstore.json``)."""
    bundle = Path(result_json).parent / BUNDLE
    if not bundle.is_file():
        return Attestation(UNATTESTED, "no attestation beside it")
    digest = hashlib.sha256(Path(result_json).read_bytes()).hexdigest()
    try:
        name = Path(result_json).resolve().relative_to(Path(home).resolve()).as_posix()
    except ValueError:
        name = "/".join(Path(result_json).parts[-5:])  # <protocol>/<system>/<version>/<runtime>/result.json
    return verify_bundle(bundle.read_text(encoding="utf-8").strip().splitlines()[0], name, digest, identity)


def page_status(result_json: Path, home: Path) -> Attestation:
    """What a report or a site page says about one result: attested (and by whom), unattested, invalid, or, when
    sigstore-python is not installed, unchecked (a bundle is present but nothing here verified it). Never raises: a
    page marks what it could establish, and only a verified signature is called attested."""
    if not (Path(result_json).parent / BUNDLE).is_file():
        return Attestation(UNATTESTED, "no attestation beside it")
    try:
        _sigstore()
    except ConfigError:
        return Attestation(UNCHECKED, "an attestation is beside it, not checked here (pip install 'memmatrix[attest]')")
    return attestation(result_json, home)


def place(bundle_path: Path, results: Path) -> list[Path]:
    """Write the bundle beside every result.json under ``results`` that its statement names with that file's sha256
    (the workflow attests them all in one statement). Returns the result folders it was placed in."""
    text = Path(bundle_path).read_text(encoding="utf-8").strip().splitlines()[0]
    try:
        envelope = json.loads(text)["dsseEnvelope"]
        import base64
        statement = json.loads(base64.b64decode(envelope["payload"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{bundle_path} is not a DSSE attestation bundle ({exc}); pass the attest step's "
                          "bundle-path") from None
    wanted = {(s.get("digest") or {}).get("sha256"): s.get("name", "") for s in statement.get("subject", [])}
    placed = []
    for result_json in sorted(Path(results).rglob("result.json")):
        digest = hashlib.sha256(result_json.read_bytes()).hexdigest()
        name = wanted.get(digest)
        if name and _same_place(name, "/".join(result_json.parts[-5:])):
            (result_json.parent / BUNDLE).write_text(text + "\n", encoding="utf-8")
            placed.append(result_json.parent)
    return placed
