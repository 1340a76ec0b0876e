"""The one data model both reports are drawn from: the Markdown report (``report.py``, for a terminal and a job
summary) and the static site (``site.py``).

Results are grouped into sections: one per protocol version, case file and model, titled with all three, so two
sections never share a heading. A section's rows are runs (system, version, runtime and variant); its cells are
the verdicts of that run's cases in one step, never collapsed into one number.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..protocols import VERDICTS
from ..result.stamp import scoring_version

SHORT = {"PASS": "PASS", "FAIL": "FAIL", "ERROR": "ERROR", "SKIP": "SKIP", "UNSUPPORTED": "n/a"}


def cell_text(verdicts: list[str]) -> str:
    counts = {v: verdicts.count(v) for v in VERDICTS if verdicts.count(v)}
    if len(counts) == 1:
        v = next(iter(counts))
        return SHORT[v] if len(verdicts) == 1 else f"{SHORT[v]} ×{len(verdicts)}"
    return " · ".join(f"{n} {SHORT[v]}" for v, n in counts.items())


def setup_label(path: Path, result: dict) -> str:
    """The runtime, plus what sets the run apart (options, a non-default model), as its folder names it."""
    runtime = result["stamp"]["runtime"]["name"]
    folder = path.parent.name
    return folder if folder.startswith(runtime + "+") else runtime


def unmatched(result: dict) -> int:
    """Model calls the oracle did not answer (the cells they touch measure the oracle, not the system)."""
    return (result.get("cost") or {}).get("total", {}).get("unmatched", 0)


@dataclass
class Cell:
    step: str
    verdicts: list[str]
    judged: bool

    @property
    def text(self) -> str:
        return cell_text(self.verdicts) if self.verdicts else "—"

    @property
    def worst(self) -> str:
        """The verdict a colour shows: ERROR, then FAIL, then PASS, SKIP, n/a; '' for no case."""
        for v in ("ERROR", "FAIL", "PASS", "SKIP", "UNSUPPORTED"):
            if v in self.verdicts:
                return v
        return ""


@dataclass
class Row:
    path: Path
    result: dict
    cells: list[Cell]

    @property
    def system(self) -> str:
        return self.result["stamp"]["system"]["name"]

    @property
    def version(self) -> str:
        return self.result["stamp"]["system"]["version"]

    @property
    def label(self) -> str:
        return setup_label(self.path, self.result)

    @property
    def unmatched(self) -> int:
        return unmatched(self.result)

    def attestation(self, home: Path):
        """Is this result signed by CI (checked offline), unsigned, or signed but not checked here?"""
        if "_attestation" not in self.__dict__:
            from ..evidence.attest import page_status
            self.__dict__["_attestation"] = page_status(self.path, home)
        return self.__dict__["_attestation"]


@dataclass
class Section:
    protocol: str
    version: str
    dataset: dict
    model: dict
    steps: list[dict]
    rows: list[Row] = field(default_factory=list)

    @property
    def cases_name(self) -> str:
        """The case file as its name says it (``1.2.0``, ``breadth-2.0.0``)."""
        return Path(self.dataset["path"]).stem

    @property
    def title(self) -> str:
        model = self.model["mode"] + (f" {self.model['id']}" if self.model.get("id") else "")
        return (f"{self.protocol} protocol {self.version} · cases {self.cases_name} "
                f"(sha256 {self.dataset['sha256'][:8]}) · {model}")

    @property
    def runs(self) -> list[tuple[Path, dict]]:
        return [(r.path, r.result) for r in self.rows]

    @property
    def judged(self) -> bool:
        return any(c.judged for r in self.rows for c in r.cells)

    @property
    def judge(self) -> dict:
        return next((r.result["stamp"].get("judge") for r in self.rows if r.result["stamp"].get("judge")), None) or {}


def cells_of(result: dict, steps: list[dict]) -> list[Cell]:
    out = []
    for step in steps:
        column = [cell for c in result["cases"] for cell in c["cells"] if cell["step"] == step["key"]]
        out.append(Cell(step["key"], [c["verdict"] for c in column], any(c.get("method") == "judged" for c in column)))
    return out


def sections(results: list[tuple[Path, dict]]) -> list[Section]:
    groups: dict[tuple, list] = defaultdict(list)
    for path, r in results:
        s = r["stamp"]
        key = (s["protocol"]["name"], scoring_version(s), Path(s["dataset"]["path"]).stem, s["dataset"]["sha256"],
               s["model"]["mode"], s["model"].get("id") or "")
        groups[key].append((path, r))
    out = []
    for key in sorted(groups):
        runs = sorted(groups[key], key=lambda pr: (pr[1]["stamp"]["system"]["name"],
                                                   pr[1]["stamp"]["system"]["version"], setup_label(*pr)))
        first = runs[0][1]
        steps = first["steps"]
        out.append(Section(key[0], key[1], first["stamp"]["dataset"], first["stamp"]["model"], steps,
                           [Row(p, r, cells_of(r, steps)) for p, r in runs]))
    return out


def step_name(steps: list[dict], key: str) -> str:
    return next(s["name"] for s in steps if s["key"] == key)


#: what a slim cell keeps: what the overview pages and the report's tables read of it
CELL_KEYS = ("step", "verdict", "method", "stage")
#: a slim case's cells, one shared list per distinct run of cells: never change one
_SHARED_CELLS: dict[tuple, list] = {}
_SHARED_CELL: dict[tuple, dict] = {}


def _cells(cells: list[dict]) -> list[dict]:
    key = tuple(tuple((k, x[k]) for k in CELL_KEYS if k in x) for x in cells)
    shared = _SHARED_CELLS.get(key)
    if shared is None:
        shared = _SHARED_CELLS[key] = [_SHARED_CELL.setdefault(c, dict(c)) for c in key]
    return shared


#: a stamp's parts and a protocol's steps, one shared value per distinct canonical text: never change one
_SHARED_VALUES: dict[str, object] = {}


def _shared(value):
    # canon.canonical's text, but allowing NaN: a result is read by json.loads, and the report draws what it reads
    return _SHARED_VALUES.setdefault(json.dumps(value, sort_keys=True, separators=(",", ":")), value)


def slim(result: dict) -> dict:
    """What the site's overview pages and the report's tables read of a result (its stamp, steps, verdicts and
    cost figures; each case's id, shape and cells' ``CELL_KEYS``): a run's own pages, and the report's reasons, read
    the whole result again, one run at a time, so a build holds one whole result at most. What repeats from run to
    run is held once: each distinct list of a case's cells and each distinct slim case, the protocol's steps and
    each part of the stamp (its normalization, judge, harness, … are the same for most runs)."""
    keep = ("stamp", "steps", "measures", "cost", "costs", "transcript", "model_transcript")
    out = {k: result[k] for k in keep if k in result}
    if isinstance(out.get("stamp"), dict):
        out["stamp"] = {k: _shared(v) for k, v in out["stamp"].items()}
    if "steps" in out:
        out["steps"] = _shared(out["steps"])
    if "timings" in result:  # but the per-case lists (the stores' size at each case's end, each lag sample)
        out["timings"] = {k: {x: y for x, y in v.items() if x not in ("per_case", "samples")} if isinstance(v, dict)
                          else v for k, v in result["timings"].items()}
    out["cases"] = [_case(c) for c in result["cases"]]
    return out


#: slim cases, one per distinct id, shape and (shared) cells: a case file's runs repeat them
_SHARED_CASES: dict[tuple, dict] = {}


def _case(case: dict) -> dict:
    cells = _cells(case["cells"])
    key = (case["id"], "shape" in case, case.get("shape"), id(cells))  # the cells are held in _SHARED_CELLS
    got = _SHARED_CASES.get(key)
    if got is None:
        got = _SHARED_CASES[key] = {"id": case["id"], **({"shape": case["shape"]} if "shape" in case else {}),
                                    "cells": cells}
    return got
