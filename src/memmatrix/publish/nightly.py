"""``memmatrix nightly add``: keep a history of nightly matrices, one dated file per night, and chart it over time.

A history is a folder (a data branch's checkout, or a folder of the repository): ``YYYY-MM-DD.json`` per night, each
run reduced to what a trend needs (its cells per verdict, model tokens and calls, wall time), ``index.json``
listing the nights, and ``trend.svg`` and ``trend.md`` drawn from all of them. A night added twice replaces itself;
a night is never dropped. The dated files are the record: index and charts are rebuilt from them each time, so a
hand-edited or lost index is repaired by the next night. Both file kinds are checked against
``schemas/nightly.schema.json``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path

from ..common.errors import ConfigError
from ..common.releases import version_key
from ..common.schemas import errors as schema_errors
from ..evidence.verify import find_results, load_result

VERDICTS = ("PASS", "FAIL", "ERROR", "SKIP")
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def night(paths: list[Path], date: str, config) -> dict:
    """One night's entry from the results under ``paths``."""
    runs = []
    for path in find_results(paths):
        r = load_result(path, config)
        s = r["stamp"]
        cells = Counter(cell["verdict"] for case in r["cases"] for cell in case["cells"])
        total = (r.get("cost") or {}).get("total") or {}
        runs.append({"system": s["system"]["name"], "version": s["system"]["version"],
                     "protocol": s["protocol"]["name"], "runtime": s["runtime"]["name"],
                     "cases": Path((s.get("dataset") or {}).get("path") or "").stem,
                     "fingerprint": s["fingerprint"], "model": (s.get("model") or {}).get("mode", ""),
                     "cells": {v: cells.get(v, 0) for v in VERDICTS},
                     "tokens": int(total.get("tokens_in", 0) + total.get("tokens_out", 0)),
                     "model_calls": int(total.get("llm_calls", 0)),
                     "wall_s": float((r.get("timings") or {}).get("wall_s") or 0)})
    runs.sort(key=lambda x: (x["system"], x["protocol"], x["runtime"], x["version"], x["fingerprint"]))
    return {"kind": "memmatrix.nightly", "date": date, "runs": runs}


def _check(entry: dict, schemas_dir: Path, definition: str, where: Path) -> dict:
    problems = schema_errors(schemas_dir, "nightly", entry, definition)
    if problems:
        raise ConfigError(f"{where} is not a memmatrix nightly file ({problems[0]}); restore it from the history's "
                          "branch or remove it")
    return entry


def add(history: Path, entry: dict, config) -> list[Path]:
    """Write ``entry`` as its night's file, then rebuild the index and the charts from every night's file."""
    if not DATE.fullmatch(entry["date"]):
        raise ConfigError(f"--date {entry['date']!r} is not YYYY-MM-DD; give the night's date in that form")
    history.mkdir(parents=True, exist_ok=True)
    schemas = config.home / "schemas"
    _check(entry, schemas, "night", history / f"{entry['date']}.json")
    (history / f"{entry['date']}.json").write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    nights = [_check(json.loads(p.read_text(encoding="utf-8")), schemas, "night", p)
              for p in sorted(history.glob("*.json")) if DATE.fullmatch(p.stem)]
    index = {"kind": "memmatrix.nightly-index", "nights": [
        {"date": n["date"], "file": f"{n['date']}.json", "runs": len(n["runs"]),
         "cells": {v: sum(r["cells"][v] for r in n["runs"]) for v in VERDICTS}} for n in nights]}
    _check(index, schemas, "index", history / "index.json")
    (history / "index.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    (history / "trend.md").write_text(table(nights), encoding="utf-8")
    chart(nights, history / "trend.svg")
    return [history / f"{entry['date']}.json", history / "index.json", history / "trend.md", history / "trend.svg"]


def _series(nights: list[dict]) -> dict[str, dict[str, tuple[int, int, int]]]:
    """Per setup (system, protocol, case file, runtime, model; its newest version that night), per date: (failing cells, all cells, tokens)."""
    out: dict[str, dict[str, tuple[int, int, int]]] = {}
    for n in nights:
        newest: dict[tuple, dict] = {}
        for r in n["runs"]:
            k = (r["system"], r["protocol"], r["cases"], r["runtime"], r["model"])
            if k not in newest or version_key(r["version"]) > version_key(newest[k]["version"]):
                newest[k] = r
        for (system, protocol, cases, runtime, model), r in newest.items():
            bad = r["cells"]["FAIL"] + r["cells"]["ERROR"]
            out.setdefault(f"{system} · {protocol} {cases} · {runtime} · {model}", {})[n["date"]] = (bad, sum(r["cells"].values()),
                                                                                  r["tokens"])
    return out


def table(nights: list[dict]) -> str:
    series = _series(nights)
    dates = [n["date"] for n in nights][-14:]
    out = ["# Nightly history", "", f"{len(nights)} night(s), {nights[0]['date'] if nights else '—'} to "
           f"{nights[-1]['date'] if nights else '—'}. Failing cells (FAIL or ERROR) of all cells, per setup at its "
           "newest version that night; the last 14 nights.", "",
           "| setup | " + " | ".join(dates) + " |", "|---|" + "---|" * len(dates)]
    for name, points in sorted(series.items()):
        out.append(f"| {name} | " + " | ".join(f"{points[d][0]}/{points[d][1]}" if d in points else "—"
                                               for d in dates) + " |")
    return "\n".join(out) + "\n"


def chart(nights: list[dict], target: Path) -> None:
    """Two panels over the nights: each setup's share of failing cells, and its model tokens."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = _series(nights)
    when = {n["date"]: dt.date.fromisoformat(n["date"]) for n in nights}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for name, points in sorted(series.items()):
        days = sorted(points)
        top.plot([when[d] for d in days], [points[d][0] / points[d][1] if points[d][1] else 0 for d in days],
                 marker="o", markersize=3, label=name)
        bottom.plot([when[d] for d in days], [points[d][2] for d in days], marker="o", markersize=3)
    top.set_ylabel("failing cells (share)")
    top.set_ylim(-0.02, 1.02)
    bottom.set_ylabel("model tokens per run")
    top.set_title("memmatrix nightly history")
    if series:
        top.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.autofmt_xdate()
    fig.tight_layout()
    plt.rcParams["svg.hashsalt"] = "memmatrix"
    fig.savefig(target, format="svg", metadata={"Date": None})
    plt.close(fig)


def publish_history(history: Path, target: Path) -> Path:
    """The history on the site: its files copied under ``target``, with an index.html showing the chart and table."""
    import html
    import shutil
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(history.iterdir()):
        if path.name in ("index.json", "trend.svg", "trend.md") or DATE.fullmatch(path.stem):
            shutil.copy2(path, target / path.name)
    table_text = (history / "trend.md").read_text(encoding="utf-8") if (history / "trend.md").exists() else ""
    page = ("<!doctype html><html lang=en><meta charset=utf-8><title>memmatrix nightly history</title>"
            "<body><h1>Nightly history</h1><p><a href=\"../index.html\">The scorecard</a> · "
            "<a href=\"index.json\">index.json</a></p><img src=\"trend.svg\" alt=\"failing cells and model tokens "
            "per setup over the nights\" style=\"max-width:100%\"><pre>" + html.escape(table_text) + "</pre></body></html>\n")
    (target / "index.html").write_text(page, encoding="utf-8")
    return target / "index.html"


def today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()
