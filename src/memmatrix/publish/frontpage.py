"""The site's front page: the scorecard, what changed, and where each figure's evidence is.

One row per system at its newest measured release and default setup (``scorecard.rows``): each protocol's headline
(steps held, the steps that fail, linked to the run's page at that step), the cost beside it (model calls and
tokens per write, p50 latency of a write and of the door, disk bytes per byte fed, read from the deletion run at
that release, else the first protocol measured there; the write-to-door lag from its door run), and the
vendor-claims tally, linked to the claims page. What changed: the state
changes against a previous matrix (``--baseline``, through ``diff``), and the release change points: every cell
whose verdicts differ between two adjacent measured releases of one setup, linked to the releases page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .reportmodel import setup_label
from .scorecard import headline, newest_versions

#: the order of the scorecard's columns; a protocol not named here follows, alphabetically
ORDER = ("deletion", "contradiction", "writepath", "door", "boundaries", "concurrency")


@dataclass
class Figure:
    """One scorecard cell: its text, where its evidence is, and a number to sort by."""
    text: str
    href: str = ""
    sort: float | str = ""
    failed: list[tuple[str, str]] = field(default_factory=list)  # (step name, link to the run page at that step)
    remarks: list[str] = field(default_factory=list)


def _default(path: Path, result: dict) -> bool:
    return setup_label(path, result) == "embedded" and not result["stamp"]["system"].get("options")


def protocols(results: list[tuple[Path, dict]]) -> list[str]:
    found = {r["stamp"]["protocol"]["name"] for _, r in results}
    return [p for p in ORDER if p in found] + sorted(found - set(ORDER))


def _num(value: float) -> str:
    """A cost as people read it: whole above 100, two decimals at most below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}".rstrip("0").rstrip(".")


def _cost(result: dict | None, href: str, door: dict | None = None, door_href: str = "") -> dict[str, Figure]:
    """The cost beside a row's headlines: from its deletion run (else its first protocol's) the model calls and
    tokens per write, a write's and the door's p50 latency and the stores' size on disk per byte fed (p50 over its
    cases, at each case's end); from its door run the lag between a write and the door serving it (p50)."""
    model = ((result or {}).get("costs") or {}).get("model") or {}
    timings = (result or {}).get("timings") or {}
    timing, disk = timings.get("adapter_ms") or {}, timings.get("disk") or {}
    lag = ((door or {}).get("timings") or {}).get("lag_ms") or {}
    write, out = model.get("write") or {}, {}
    for key, value, unit, link in (("llm calls / write", write.get("llm_calls_per_call"), "", href),
                                   ("tokens in / write", write.get("tokens_in_per_call"), "", href),
                                   ("write p50", (timing.get("write") or {}).get("p50_ms"), " ms", href),
                                   ("door p50", (timing.get("door") or {}).get("p50_ms"), " ms", href),
                                   ("disk bytes / byte fed", disk.get("multiple_p50"), "", href),
                                   ("write-to-door lag p50", lag.get("p50"), " ms", door_href)):
        out[key] = Figure("—", "", -1.0) if value is None else Figure(f"{_num(value)}{unit}", link, float(value))
    if lag.get("never"):  # writes the door never served within the harness's wait: the p50 is of the rest
        out["write-to-door lag p50"].text += f" ({lag['never']} never served)"
    return out


#: the default setup measured again (``embedded+repeat-N``): the runs a score's range is read over
REPEAT = re.compile(r"embedded(\+repeat-\d+)?")


def _measured(figure: Figure, result: dict, runs: list[dict]) -> None:
    """A protocol that scores its steps (the result's ``measures``) shows its score, not only the steps held: a
    points total (``core``: points of its weight) with its range over the runs of the same setup, or each step's
    rate (passed of measured)."""
    measures = result.get("measures") or {}
    core = measures.get("core")
    if isinstance(core, dict) and "points" in core:
        points = sorted(x["measures"]["core"]["points"] for x in runs if (x.get("measures") or {}).get("core"))
        spread = f" (range {points[0]:g}–{points[-1]:g} over {len(points)} runs)" if len(points) > 1 else ""
        figure.remarks.insert(0, f"Core {core['points']:g}/{core['weight']:g}{spread}")
        figure.sort = core["points"]
        return
    order = [st["key"] for st in result.get("steps", [])] + sorted(measures)
    rates = [(k, measures[k]) for k in dict.fromkeys(order) if isinstance(measures.get(k), dict)
             and "rate" in measures[k] and measures[k].get("of")]
    if rates:
        figure.remarks.insert(0, ", ".join(f"{k} {m['passed']}/{m['of']}" for k, m in rates))


def scorecard(results: list[tuple[Path, dict]], claims: list[dict], slugs: dict) -> dict:
    """The front page's table: its columns, one row per system, and what every row shares (model, case files,
    harness), stated once above it."""
    protos = protocols(results)
    default = [(p, r) for p, r in results if _default(p, r)]
    newest = newest_versions((r["stamp"]["system"]["name"], r["stamp"]["system"]["version"]) for _, r in default)
    repeats = [((r["stamp"]["system"]["name"], r["stamp"]["system"]["version"], r["stamp"]["protocol"]["name"]), r)
               for p, r in results if REPEAT.fullmatch(setup_label(p, r)) and not r["stamp"]["system"].get("options")]
    rows, models, cases, harness = [], set(), set(), set()
    for name in sorted(newest):
        mine = {r["stamp"]["protocol"]["name"]: (p, r) for p, r in default
                if r["stamp"]["system"]["name"] == name and r["stamp"]["system"]["version"] == newest[name]}
        figures = {}
        for proto in protos:
            if proto not in mine:
                figures[proto] = Figure("not measured at this release", "", -1.0)
                continue
            p, r = mine[proto]
            run = f"runs/{slugs[id(r)]}/index.html"
            h = headline(p, r)
            remarks = ([f"{len(h.undecided)} undecided"] if h.undecided else []) + \
                ([f"{len(h.na)} n/a"] if h.na else [])
            figures[proto] = Figure(f"{len(h.held)}/{h.measured} held", run,
                                    len(h.held) / h.measured if h.measured else -1.0,
                                    [(h.name(k), f"{run}#step-{k}") for k in h.failed], remarks)
            _measured(figures[proto], r, [x for q, x in repeats if q == (name, newest[name], proto)])
            st = r["stamp"]
            models.add(st["model"]["mode"] + (f" {st['model']['id']}" if st["model"].get("id") else "")
                       + (f" (oracle {st['model']['oracle_version']})" if st["model"].get("oracle_version") else ""))
            cases.add(f"{proto} {Path(st['dataset']['path']).stem}")
            harness.add(st["harness"]["version"])
        costly = mine.get("deletion") or next(iter(mine.values()))
        door = mine.get("door")
        cost = _cost(costly[1], f"runs/{slugs[id(costly[1])]}/index.html#costs", door and door[1],
                     door and f"runs/{slugs[id(door[1])]}/index.html#costs")
        tally = {s: sum(c["status"] == s for c in claims if c["system"] == name)
                 for s in ("reproduced", "contradicted", "undecided")}
        rows.append({"system": name, "version": newest[name], "figures": figures, "cost": cost, "claims": tally})
    return {"protocols": protos, "rows": rows, "costs": list(_cost(None, "")),
            "models": sorted(models), "cases": sorted(cases), "harness": sorted(harness)}


def change_points(timeline: list[dict]) -> list[dict]:
    """Every cell that reads differently at a release than at the release measured before it, per setup."""
    out = []
    for t in timeline:
        anchor = f"{t['system']}-{t['protocol']}-{t['setup']}-{t['cases']}"
        for before, after in zip(t["rows"], t["rows"][1:]):
            moved = [(b.step, b.text, a.text) for b, a in zip(before["cells"], after["cells"]) if b.text != a.text]
            if moved:
                out.append({"system": t["system"], "protocol": t["protocol"], "setup": t["setup"],
                            "old": before["version"], "new": after["version"], "cells": moved,
                            "href": f"timeline.html#{anchor}", "run": f"runs/{after['slug']}/index.html"})
    return out


def since_baseline(baseline: Path | None, paths: list[Path], config) -> dict | None:
    """The state changes against a previous matrix (``diff``), or None when no baseline was given."""
    if baseline is None:
        return None
    from .diff import diff
    report = diff([baseline], paths, config)
    return {"baseline": "/".join(baseline.parts[-2:]), "compared": len(report.compared), "not_compared": len(report.unmatched),
            "changes": report.changes, "regressions": len(report.regressions)}
