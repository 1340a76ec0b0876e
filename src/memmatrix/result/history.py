"""A system's release history as committed: ``<out>/history/<system>.json`` (the release list the package index gave
at sweep time, the releases each sweep sampled, every run bisect made), read and checked; and the change points
between measured releases, computed from the results (never stored), so a timeline can only say what the verified
results say. ``memmatrix sweep`` and ``bisect`` (ci/sweep.py) write it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from packaging.version import Version

from ..common import schemas
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..common.releases import between

Cells = dict[tuple[str, str], str]  # (case id, step) -> verdict


def verdicts(result: dict) -> Cells:
    """A result's verdict per (case id, step)."""
    return {(c["id"], cell["step"]): cell["verdict"] for c in result["cases"] for cell in c["cells"]}


def history_file(out: Path, system: str) -> Path:
    return out / "history" / f"{system}.json"


def load_history(path: Path, config: Config) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise MemmatrixError(f"{path} cannot be read as JSON ({exc}); delete it and sweep again") from None
    problems = schemas.errors(config.schemas_dir, "history", data)
    if problems:
        raise MemmatrixError(f"{path} does not fit schemas/history.schema.json: {problems[0]}; delete it and sweep again")
    return data


def check_history(path: Path, config: Config) -> list[str]:
    """What is wrong with a history file: its schema, and every release a sweep or bisect names must be one the
    index listed (a result of a release the list does not hold would be a timeline nobody can check)."""
    try:
        data = load_history(path, config)
    except MemmatrixError as exc:
        return [str(exc)]
    listed = {r["version"] for r in data["releases"]}
    named = {v for s in data["sweeps"] for v in s["versions"]} | {r["version"] for b in data["bisections"] for r in b["runs"]}
    problems = [f"release {v} was measured but the recorded index list does not hold it"
                for v in sorted(named - listed, key=Version)]
    if path.stem != data["system"]:
        problems.append(f"the file is named {path.name} but records system {data['system']!r}")
    return problems + result_problems(path, data, config)


def _folder(runtime: str, options: dict, cases: str | None, config: Config) -> str | None:
    """The result folder a sweep of this setup writes (as ``RunRequest.variant`` names it); None if the case file
    it names is not in this checkout."""
    parts = [f"{k}={v}" for k, v in sorted((options or {}).items())]
    if cases:
        from ..common.canon import sha256_file
        f = config.home / cases
        if not f.is_file():
            return None
        data = json.loads(f.read_text(encoding="utf-8"))
        named = f"{data['set']}-" if data.get("set") else ""
        parts.append(f"cases={named}{data['version']}-{sha256_file(f)[:8]}")
    return runtime + ("+" + "+".join(parts) if parts else "")


def result_problems(path: Path, data: dict, config: Config) -> list[str]:
    """A history and the results beside it agree: every release a sweep or bisect measured has its result, and every
    result of a release the system does not pin is one a sweep or bisect of this history measured."""
    from ..systems import load_system_yaml, system_folder
    root, system = path.parent.parent, data["system"]
    named: set[tuple[str, str, str]] = set()
    for s in data["sweeps"]:
        folder = _folder(s["runtime"], s.get("options") or {}, s.get("cases"), config)
        failed = {(f["version"], f["protocol"]) for f in s.get("failures", [])}
        for v in s["versions"]:
            for p in s["protocols"]:
                if folder and (v, p) not in failed:
                    named.add((p, v, folder))
    for b in data["bisections"]:
        named |= {(b["protocol"], r["version"], b["variant"]) for r in b["runs"] if not r.get("error")}
    problems = [f"{path.name}: release {v} ({p}, {f}) was measured, but results/{p}/{system}/{v}/{f}/ holds no result"
                for p, v, f in sorted(named) if not (root / p / system / v / f / "result.json").is_file()]
    home = system_folder(config, system)
    pinned = set(load_system_yaml(home, config)["versions"]) if home else set()
    for result in sorted(root.glob(f"*/{system}/*/*/result.json")):
        p, _, v, f = result.parent.relative_to(root).parts
        base = re.sub(r"\+repeat-\d+$", "", f)  # a repeated protocol's later draws, written by the run that wrote base
        if v not in pinned and (p, v, f) not in named and (p, v, base) not in named:
            problems.append(f"{result.parent.relative_to(root)}: a result of release {v}, which no sweep or bisect in "
                            f"{path.name} measured (run it with `memmatrix sweep`, which records it)")
    return problems


def find_histories(paths: list[Path]) -> list[Path]:
    found = []
    for p in map(Path, paths):
        for folder in ([p] if p.name == "history" else [p / "history"]) if p.is_dir() else []:
            found += sorted(folder.glob("*.json")) if folder.is_dir() else []
    return found


def save_history(path: Path, data: dict, config: Config) -> None:
    problems = schemas.errors(config.schemas_dir, "history", data)
    if problems:  # our own bug: never write an artifact that breaks its contract
        raise AssertionError(f"history does not fit its schema: {problems}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _differing(a: Cells, b: Cells) -> set[tuple[str, str]]:
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def change_points(measured: dict[str, Cells], releases: list[str]) -> list[dict]:
    """Every cell whose verdict differs between two consecutive measured releases, with whether the two are
    adjacent releases (exact) or how many drivable releases lie between (not yet bisected)."""
    order = sorted(measured, key=Version)
    points = []
    for lo, hi in zip(order, order[1:]):
        gap = len(between(releases, lo, hi))
        for case, step in sorted(_differing(measured[lo], measured[hi])):
            points.append({"case": case, "step": step, "before": {"version": lo, "verdict": measured[lo].get((case, step))},
                           "after": {"version": hi, "verdict": measured[hi].get((case, step))},
                           "exact": gap == 0, "releases_between": gap})
    return points
