"""``memmatrix timeline``: each system's behaviour across its releases, in Markdown, from the results alone.

Per system (one ``<out>/history/<system>.json``), per protocol and setup: the verdicts of every step in each
measured release, every cell that changed with the two results that show it (adjacent releases: exact;
otherwise how many releases are left to bisect), and the upstream change a system.yaml links to that release.
A release whose model calls the oracle did not all answer is marked: its row measures the oracle.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from packaging.version import Version

from ..common.config import Config
from ..result.history import change_points, load_history, verdicts
from ..common.releases import Ranges
from .reportmodel import cell_text, setup_label
from ..systems import load_system_yaml, system_folder
from ..evidence.verify import find_results, load_result

LETTER = {"PASS": "P", "FAIL": "F", "ERROR": "E", "SKIP": "S", "UNSUPPORTED": "–"}


def _link(path: Path, base: Path) -> str:
    rel = os.path.relpath(path, base)
    return f"[{Path(rel).parent.as_posix()}]({Path(rel).as_posix()})"


def _runs(out: Path, system: str, config: Config) -> dict[tuple[str, str], dict[str, tuple[Path, dict]]]:
    groups: dict[tuple[str, str], dict[str, tuple[Path, dict]]] = defaultdict(dict)
    for protocol_dir in sorted(p for p in out.iterdir() if p.is_dir() and (p / system).is_dir()):
        for path in find_results([protocol_dir / system]):
            r = load_result(path, config)
            groups[(r["stamp"]["protocol"]["name"], setup_label(path, r))][r["stamp"]["system"]["version"]] = (path, r)
    return groups


def _changes(system: str, config: Config) -> list[dict]:
    folder = system_folder(config, system)
    if folder is None:
        return []
    return (load_system_yaml(folder, config).get("releases") or {}).get("changes", [])


def render_system(out: Path, system: str, config: Config, base: Path) -> list[str]:
    history = load_history(out / "history" / f"{system}.json", config)
    releases = [r["version"] for r in history["releases"]]
    uploaded = {r["version"]: (r["uploaded"] or "")[:10] for r in history["releases"]}
    folder = system_folder(config, system)
    ranges = Ranges.of(load_system_yaml(folder, config)) if folder else None
    usable = [v for v in releases if ranges is None or ranges.refusal(v) is None]
    lines = [f"## {system} ({history['package']})", "",
             f"{len(releases)} releases listed by {history['index']} at {history['listed_at'][:19]}Z; the adapter "
             f"drives {len(usable)} of them" + (f" ({usable[0]} to {usable[-1]})" if usable else "") + "."]
    for nd in history["not_drivable"]:
        lines.append(f"- not drivable, declared: `{nd['versions']}`: {nd['reason']}")
    lines.append("")
    upstream = _changes(system, config)
    runs = _runs(out, system, config)
    single = sorted(f"{protocol} · {setup} ({next(iter(by_version))})" for (protocol, setup), by_version in runs.items()
                    if len(by_version) == 1)
    if single:
        lines += ["Measured at one release only (no history yet): " + "; ".join(single) + ".", ""]
    for (protocol, setup), by_version in sorted(runs.items()):
        if len(by_version) == 1:
            continue
        order = sorted(by_version, key=Version)
        steps = by_version[order[-1]][1]["steps"]
        heads = [s["key"] if s["key"] == s["name"] else f"{s['key']} {s['name']}" for s in steps]
        lines += [f"### {system} · {protocol} · {setup}", "",
                  "| release | uploaded | " + " | ".join(heads) + " | result |",
                  "|---" * (len(steps) + 3) + "|"]
        for v in order:
            path, r = by_version[v]
            per_step = defaultdict(list)
            for c in r["cases"]:
                for cell in c["cells"]:
                    per_step[cell["step"]].append(cell["verdict"])
            unmatched = r.get("cost", {}).get("total", {}).get("unmatched", 0)
            mark = f" ⚠ oracle left {unmatched} call(s) unanswered: this row measures the oracle" if unmatched else ""
            lines.append(f"| {v}{mark} | {uploaded.get(v, '')} | "
                         + " | ".join(cell_text(per_step[s["key"]]) for s in steps) + f" | {_link(path, base)} |")
        measured = {v: verdicts(by_version[v][1]) for v in order}
        points = change_points(measured, usable or releases)
        lines.append("")
        if not points:
            lines += [f"No cell changed across the {len(order)} measured release(s).", ""]
            continue
        by_interval: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for p in points:
            by_interval[(p["before"]["version"], p["after"]["version"])].append(p)
        lines += ["Change points (each cell whose verdict differs between two consecutive measured releases):", "",
                  "| from → to | exact | cells (case · step: before → after) | results | upstream |", "|---|---|---|---|---|"]
        for (lo, hi), ps in sorted(by_interval.items(), key=lambda kv: Version(kv[0][1])):
            exact = "yes" if ps[0]["exact"] else f"no: {ps[0]['releases_between']} release(s) between, run bisect"
            cells = "; ".join(f"{p['case']} · {p['step']}: {LETTER.get(p['before']['verdict'], '?')}→"
                              f"{LETTER.get(p['after']['verdict'], '?')}" for p in ps)
            known = [c for c in upstream if Version(lo) < Version(c["version"]) <= Version(hi)]
            ups = "; ".join(f"[{c['version']}: {c.get('what', 'change')}]({c['url']})" for c in known) or "—"
            lines.append(f"| {lo} → {hi} | {exact} | {cells} | {_link(by_version[lo][0], base)} · "
                         f"{_link(by_version[hi][0], base)} | {ups} |")
        lines.append("")
    lines += _known_changes(upstream, runs, usable or releases)
    return lines


def _known_changes(upstream: list[dict], runs: dict, releases: list[str]) -> list[str]:
    """Every upstream change the system.yaml cites, with the change point at its release (the measured releases
    around it), or, where no cell moved there, which cell would have to move and why it does not."""
    if not upstream:
        return []
    out = ["### Known upstream changes", "",
           "| release | change | what the matrix shows |", "|---|---|---|"]
    for c in sorted(upstream, key=lambda c: Version(c["version"])):
        seen = []
        for (protocol, setup), by_version in sorted(runs.items()):
            order = sorted(by_version, key=Version)
            measured = {v: verdicts(by_version[v][1]) for v in order}
            for p in change_points(measured, releases):
                lo, hi = p["before"]["version"], p["after"]["version"]
                if Version(lo) < Version(c["version"]) <= Version(hi):
                    seen.append(f"{protocol} · {setup} {lo} → {hi}" + ("" if p["exact"] else " (not yet bisected)"))
        seen = sorted(set(seen))
        if seen:
            shown = "change point: " + "; ".join(seen)
        elif c.get("unseen"):
            shown = f"no cell moved. {c.get('cells', 'Which cell would have to move is not said')}: {c['unseen']}"
        else:
            shown = "no cell moved, and the system.yaml does not yet say why (add `cells` and `unseen` to this change)"
        out.append(f"| {c['version']} | [{c.get('what', 'change')}]({c['url']}) | {shown} |")
    return out + [""]


def render(out: Path, config: Config, systems: list[str] | None = None, base: Path | None = None) -> str:
    files = sorted((out / "history").glob("*.json")) if (out / "history").is_dir() else []
    names = [f.stem for f in files if not systems or f.stem in systems]
    lines = ["# memmatrix timeline", "",
             "Verdicts per step and release (P PASS, F FAIL, E ERROR, S SKIP, – unsupported), from verified results.", ""]
    if not names:
        lines += ["No system has been swept yet: run `memmatrix sweep --system NAME --versions SPEC`.", ""]
    for name in names:
        lines += render_system(out, name, config, base or Path.cwd())
    return "\n".join(lines) + "\n"
