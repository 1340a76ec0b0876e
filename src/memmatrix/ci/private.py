"""Private case sets (holdouts): a system cannot be tuned to questions it never sees.

A case file that says ``"private": true`` lives outside the repository. A run on it is written outside the
checkout (its transcript holds the set's questions; refused inside, before anything runs), and
``memmatrix private record RESULT...`` commits what may be shown: the set's sha256, version and size, and
each run's measures, bound to the run by the sha256 of its result.json and of its transcript. The report
then sets each system's Core on the private set beside its Core on the public one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..common import schemas
from ..evidence.bindings import find_case_file
from ..cases import CaseFile
from ..common.config import Config
from ..common.errors import ConfigError
from ..publish.reportmodel import setup_label
from ..result.stamp import now_utc
from ..evidence.verify import load_result, verify_result


def check_private_out(cases: CaseFile, out: Path, config: Config) -> None:
    """A private set's run must be written outside the checkout (its transcript holds the questions)."""
    if not cases.data.get("private"):
        return
    home, where = config.home.resolve(), Path(out).resolve()
    if where == home or home in where.parents:
        raise ConfigError(f"{cases.path.name} is a private case set, and --out {out} is inside the checkout: its "
                          "transcripts hold the set's questions; write them outside it (--out /elsewhere) and commit "
                          "only the scores with `memmatrix private record`")


def check_record(path: Path, config: Config) -> list[str]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return [f"cannot be read as JSON: {exc}"]
    return [f"does not fit schemas/private.schema.json {p}" for p in schemas.errors(config.schemas_dir, "private", data)]


def record(results: list[Path], config: Config, into: Path | None = None) -> list[Path]:
    """Verify each private run and add its scores to ``results/private/<protocol>.json`` (replacing an earlier
    record of the same system, version, runtime and set). Returns the files written."""
    written: dict[Path, dict] = {}
    for path in results:
        problems = verify_result(path, config)
        if problems:
            raise ConfigError(f"{path} does not verify ({problems[0]}); a private run is recorded only when it "
                              "re-derives (point MEMMATRIX_PRIVATE_CASES at the folder holding the set)")
        r = load_result(path, config)
        s = r["stamp"]
        found = find_case_file(s, config)
        if found is None or not json.loads(found.read_text(encoding="utf-8")).get("private"):
            raise ConfigError(f"{path} was not made on a private case set; commit its folder as a result instead")
        target = Path(into) if into else config.home / "results" / "private" / f"{s['protocol']['name']}.json"
        data = written.get(target) or (json.loads(target.read_text(encoding="utf-8")) if target.is_file() else
                                       {"kind": "memmatrix.private", "protocol": s["protocol"]["name"], "runs": []})
        entry = {"system": s["system"]["name"], "version": s["system"]["version"], "runtime": setup_label(path, r),
                 "cases": {"version": s["dataset"]["version"], "sha256": s["dataset"]["sha256"], "cases": len(r["cases"])},
                 "measures": r.get("measures") or {}, "result_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                 "transcript_sha256": r["transcript"]["sha256"], "fingerprint": s["fingerprint"], "recorded_at": now_utc()}
        same = ("system", "version", "runtime")
        data["runs"] = [e for e in data["runs"] if not (all(e[k] == entry[k] for k in same)
                                                        and e["cases"]["sha256"] == entry["cases"]["sha256"])] + [entry]
        written[target] = data
    for target, data in written.items():
        problems = schemas.errors(config.schemas_dir, "private", data)
        if problems:
            raise ConfigError(f"the record for {target} does not fit schemas/private.schema.json {problems[0]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return list(written)
