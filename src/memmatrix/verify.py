"""``memmatrix verify``: a number that cannot be re-derived from its artifact is a bug.

For every result.json: validate it against its schema, recompute the transcript's hash,
re-score every case from the transcript alone and compare every cell, recompute the
summary and the fingerprint. Every difference is reported; none is forgiven.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import schemas
from .canon import sha256_file
from .config import Config
from .errors import ConfigError, MemmatrixError
from .protocols import get_protocol
from .scoring import recorded_capabilities, run_header, score_transcript, summarize
from .stamp import fingerprint
from .transcript import read_lines


def find_results(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_file() and p.name == "result.json":
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(q for q in p.rglob("result.json") if not any(part.startswith(".") for part in q.parts)))
        else:
            raise ConfigError(f"{p} is neither a result.json nor a folder holding results")
    if not found:
        raise ConfigError(f"no result.json under {', '.join(map(str, paths))}; run `memmatrix run` first")
    return found


def load_result(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON: {exc}") from None


def verify_result(path: Path, config: Config) -> list[str]:
    """Every problem with one run directory; an empty list means it re-derives exactly."""
    try:
        result = load_result(path)
    except ConfigError as exc:
        return [str(exc)]
    problems = schemas.errors(config.schemas_dir, "result", result)
    if problems:
        return [f"does not fit schemas/result.schema.json {p}" for p in problems]
    transcript = path.parent / result["transcript"]["file"]
    if not transcript.is_file():
        return [f"the transcript {transcript.name} named by the result is missing"]
    actual = sha256_file(transcript)
    if actual != result["transcript"]["sha256"]:
        problems.append(f"transcript sha256 is {actual}, the result records {result['transcript']['sha256']}")
    mt = result.get("model_transcript")
    if mt is not None:
        mpath = path.parent / mt["file"]
        if not mpath.is_file():
            problems.append(f"the model transcript {mt['file']} named by the result is missing")
        else:
            if sha256_file(mpath) != mt["sha256"]:
                problems.append(f"model transcript sha256 is {sha256_file(mpath)}, the result records {mt['sha256']}")
            with open(mpath, encoding="utf-8") as fh:
                lines = sum(1 for _ in fh)
            if lines != mt["records"]:
                problems.append(f"the model transcript has {lines} records, the result records {mt['records']}")
    try:
        records = read_lines(transcript)
    except (ValueError, OSError) as exc:
        return problems + [f"the transcript cannot be read: {exc}"]
    if len(records) != result["transcript"]["records"]:
        problems.append(f"the transcript has {len(records)} records, the result records {result['transcript']['records']}")
    stamp = result["stamp"]
    try:
        protocol = get_protocol(stamp["protocol"]["name"])
        header = run_header(records)
        caps = recorded_capabilities(records)
    except (MemmatrixError, ValueError) as exc:
        return problems + [str(exc)]
    if protocol.version != stamp["protocol"]["version"]:
        return problems + [f"scored by {protocol.name} protocol {stamp['protocol']['version']}; this memmatrix "
                           f"implements {protocol.version}: verify with the memmatrix version in the stamp"]
    for key, want in (("protocol", stamp["protocol"]), ("dataset", {"version": stamp["dataset"]["version"],
                                                                     "sha256": stamp["dataset"]["sha256"]})):
        if header.get(key) != want:
            problems.append(f"the transcript's {key} {header.get(key)} differs from the stamp's {want}")
    if caps != result["capabilities"]:
        problems.append("the capabilities in the result differ from those recorded in the transcript")
    rescored = score_transcript(protocol, records)
    problems += compare_cases(result["cases"], rescored)
    if summarize(protocol, rescored) != result["summary"]:
        problems.append("the summary differs from the one recomputed from the transcript")
    if fingerprint(stamp) != stamp["fingerprint"]:
        problems.append(f"the fingerprint {stamp['fingerprint']} does not match the stamp (recomputed {fingerprint(stamp)})")
    return problems


def compare_cases(stored: list[dict], rescored: list[dict]) -> list[str]:
    problems = []
    if [c["id"] for c in stored] != [c["id"] for c in rescored]:
        return [f"cases differ: result has {[c['id'] for c in stored]}, transcript has {[c['id'] for c in rescored]}"]
    for old, new in zip(stored, rescored):
        if old == new:
            continue
        cells_new = {c["step"]: c for c in new["cells"]}
        for cell in old["cells"]:
            fresh = cells_new.get(cell["step"])
            if fresh is None:
                problems.append(f"case {old['id']} step {cell['step']}: not in the transcript's scoring")
            elif fresh["verdict"] != cell["verdict"]:
                problems.append(f"case {old['id']} step {cell['step']}: stored {cell['verdict']}, "
                                f"the transcript gives {fresh['verdict']} ({fresh['reason'] or 'no reason'})")
            elif fresh != cell:
                problems.append(f"case {old['id']} step {cell['step']}: stored reason or checks differ from the transcript's")
        if len(old["cells"]) != len(new["cells"]) or old["shape"] != new["shape"]:
            problems.append(f"case {old['id']}: its cells or shape differ from the transcript's")
    return problems
