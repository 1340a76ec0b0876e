"""``memmatrix rescore``: bring a result forward to this memmatrix's scorer, from its unchanged transcript.

When a protocol's scorer gains annotations (a stage on every FAIL, measures) without changing what any
cell decides, a committed result is re-derived instead of re-run: its transcript is read (the hash over
its canonical lines checked first), every case is scored again, and the result is rewritten only when
every cell keeps its verdict and its reason. The stamp then says so (``rescored``: from which protocol
version, to which, when, by which harness, and the earlier rescores); the run header and everything the
run recorded stay as they were, so ``memmatrix verify`` still binds the result to the transcript that
produced it. A scorer change that would move a verdict is refused, unless a protocol version between the
result's and this one declares that it moves verdicts (``EvalProtocol.moves``, with why): then every moved
cell is listed in ``rescored.moved`` beside that why, so a reader sees which verdicts a new reading of the
same transcript changed. Otherwise the run is made again. A result made before results carried
``costs`` (derived from the transcripts, src/memmatrix/costs.py) gains them the same way.
"""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from ..result.artifacts import check_result, render_result
from ..common.config import Config
from ..result.costs import derive_costs
from ..common.errors import ConfigError
from ..protocols import get_protocol
from ..protocols.scoring import recorded_capabilities, summarize
from ..result.stamp import fingerprint, harness, now_utc, scoring_version
from .stream import Artifact, RunRead
from .verify import load_result, run_records


class RescoreRefused(ConfigError):
    """The result cannot be brought forward without a new run."""


def _moved(old: list[dict], new: list[dict]) -> list[str]:
    """Every cell whose verdict or reason the new scorer would change."""
    if [c["id"] for c in old] != [c["id"] for c in new]:
        return ["the cases differ"]
    out = []
    for a, b in zip(old, new):
        cells = {c["step"]: c for c in b["cells"]}
        for cell in a["cells"]:
            fresh = cells.get(cell["step"], {})
            if (fresh.get("verdict"), fresh.get("reason")) != (cell["verdict"], cell["reason"]):
                same = fresh.get("verdict") == cell["verdict"]
                out.append(f"case {a['id']} step {cell['step']}: {cell['verdict']} -> {fresh.get('verdict')}"
                           + (" (its reason)" if same else ""))
        if len(a["cells"]) != len(b["cells"]):
            out.append(f"case {a['id']}: {len(a['cells'])} cells -> {len(b['cells'])}")
    return out


def rescore(path: Path, config: Config) -> str:
    """Re-derive one result.json in place; returns what happened, in a few words."""
    path = Path(path)
    result = load_result(path)
    stamp = result["stamp"]
    protocol = get_protocol(stamp["protocol"]["name"])
    before = scoring_version(stamp)
    if before == protocol.version and "costs" in result:
        return f"already scored by {protocol.name} {before}"
    run = Artifact(path.parent, result["transcript"], "transcript")
    try:  # read once, a case at a time (stream.RunRead): scored as it is read, the hash checked at its end
        reading = RunRead(protocol, lambda i, header, body: None).read(
            iter(run), lambda: recorded_capabilities(run_records(run)))
    except ValueError as exc:
        run.problems.append(str(exc))
    if run.problems:
        raise RescoreRefused(f"{path}: {run.problems[0]}; a transcript that does not match its result cannot be "
                             "re-scored")
    records = reading.slim
    if before == protocol.version:  # the cells are current; only the derived costs are new
        result["costs"] = derive_costs(records, result["cost"], reading.door)
        check_result(result, config.schemas_dir)
        path.write_text(render_result(result), encoding="utf-8")
        return "costs derived"
    cases = reading.cases
    moved = _moved(result["cases"], cases)
    why = [w for v, w in sorted(protocol.moves.items(), key=lambda vw: Version(vw[0]))
           if Version(before) < Version(v) <= Version(protocol.version)]
    if moved and not why:
        raise RescoreRefused(f"{path}: the {protocol.name} {protocol.version} scorer would change {len(moved)} cell(s) "
                             f"({'; '.join(moved[:3])}); re-run it with `memmatrix run` instead")
    result["cases"] = cases
    result["steps"] = protocol.step_table()  # a column added to the protocol (no cell of it in these cases)
    result["costs"] = derive_costs(records, result["cost"], reading.door)
    result["summary"] = summarize(protocol, cases)
    result.pop("measures", None)
    measures = protocol.measures(cases)
    if measures is not None:
        result["measures"] = measures
    earlier = stamp.get("rescored")
    stamp["rescored"] = {"protocol_version": protocol.version, "from_version": before, "at": now_utc(),
                         "harness": harness(config.home)}
    if moved:
        stamp["rescored"]["moved"] = {"why": " / ".join(why), "cells": moved}
    if earlier:
        stamp["rescored"]["earlier"] = [*earlier.pop("earlier", []), earlier]
    stamp["fingerprint"] = fingerprint(stamp)
    check_result(result, config.schemas_dir)
    path.write_text(render_result(result), encoding="utf-8")
    return f"{protocol.name} {before} -> {protocol.version}" + (f" ({len(moved)} cell(s) moved)" if moved else "")
