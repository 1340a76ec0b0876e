"""Case files: versioned JSON op scripts, validated against schemas/cases.schema.json and their protocol."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..common import schemas
from ..common.canon import sha256_bytes
from .rules import file_problems
from ..common.config import Config
from ..common.errors import CaseFileError


@dataclass(frozen=True)
class CaseFile:
    path: Path
    data: dict
    sha256: str

    @property
    def protocol(self) -> str:
        return self.data["protocol"]

    @property
    def version(self) -> str:
        return self.data["version"]

    @property
    def cases(self) -> list[dict]:
        return self.data["cases"]


def _version_key(path: Path) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in path.stem.split("."))
    except ValueError:
        return (-1,)


def default_case_file(config: Config, protocol: str) -> Path:
    """The newest ``cases/<protocol>/<version>.json`` (a breadth set, ``breadth-<version>.json``, never is)."""
    folder = config.cases_dir / protocol
    files = sorted((f for f in folder.glob("*.json") if _version_key(f) != (-1,)), key=_version_key)
    if not files:
        raise CaseFileError(f"no case file in {folder}; pass one with --cases path/to/cases.json")
    return files[-1]


def _read(path: Path) -> tuple[bytes, dict]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CaseFileError(f"case file {path} cannot be read ({exc.strerror}); check the --cases path") from None
    try:
        return raw, json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"case file {path} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def read_case_json(path: Path) -> dict:
    """The parsed case file, without validation (to learn which protocol it is for)."""
    data = _read(path)[1]
    return data if isinstance(data, dict) else {}


def _normalisable(case: dict) -> list[str]:
    """A target the transcript would renumber or mask could never be seen: refuse it."""
    from ..common.patterns import _DATETIME, _UUID
    out = []
    for name, t in case.get("targets", {}).items():
        for w in [t.get("token", ""), *t.get("alternatives", [])]:
            if _UUID.search(w) or _DATETIME.search(w):
                out.append(f"case {case['id']!r}: target {name!r} wording {w!r} looks like a UUID or a date-time, which "
                           "transcripts renumber or mask; choose a value that cannot be mistaken for one")
    return out


def load_cases(path: Path, config: Config, protocol) -> CaseFile:
    """Read, hash and validate a case file; every problem is reported, by case and op."""
    path = Path(path)
    raw, data = _read(path)
    problems = schemas.errors(config.schemas_dir, "cases", data)
    if not problems:
        if data["protocol"] != protocol.name:
            problems.append(f"it is a {data['protocol']!r} case file; the {protocol.name!r} protocol was asked for")
        ids = [c["id"] for c in data["cases"]]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            problems.append(f"duplicate case id(s) {dupes}")
        for case in data["cases"]:
            problems.extend(protocol.validate_case(case))
            problems.extend(_normalisable(case))
            if data.get("set") or data.get("generated_from"):
                problems.extend(protocol.generated_problems(case))
        problems.extend(file_problems(data))
    if problems:
        shown = "\n  - ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise CaseFileError(f"case file {path} is not valid (schemas/cases.schema.json and the "
                            f"{protocol.name} protocol's rules):\n  - {shown}{more}")
    return CaseFile(path=path, data=data, sha256=sha256_bytes(raw))
