"""Private case sets in the report: every committed record of a private set's scores, and each system's Core on it
beside its Core on the public set (ci/private.py records them)."""

from __future__ import annotations

import json
from pathlib import Path


def records_in(paths: list[Path]) -> list[Path]:
    """Every private-set record under ``paths`` (``private/<protocol>.json``)."""
    out = []
    for p in map(Path, paths):
        if p.is_file() and p.parent.name == "private" and p.suffix == ".json":
            out.append(p)
        elif p.is_dir():
            out += sorted(q for q in p.rglob("private/*.json"))
    return out


def comparison(record_files: list[Path], public: list[dict]) -> list[str]:
    """Each system's Core on a private set beside its mean on the public set: lower by X, or no drop detected
    (within the wider of the public range and one point)."""
    lines = []
    by_setup = {(r["name"], r["version"], r["label"]): r for r in public}
    for f in record_files:
        data = json.loads(Path(f).read_text(encoding="utf-8"))
        for e in data["runs"]:
            core = (e["measures"].get("core") or {}).get("points")
            label = "+".join(p for p in e["runtime"].split("+") if not p.startswith(("repeat-", "cases=")))
            pub = by_setup.get((e["system"], e["version"], label))
            if core is None or pub is None:
                continue
            band = max(pub["max"] - pub["min"], 1.0)
            drop = round(pub["mean"] - core, 2)
            verdict = f"lower by {drop:g}" if drop > band else f"no drop detected (±{band:g})"
            lines.append(f"| {e['system']} | {e['version']} | {e['runtime']} | `{e['cases']['sha256'][:12]}` | "
                         f"{core:g} | {pub['mean']:g} | {verdict} |")
    if not lines:
        return []
    return ["", "On private case sets (only their sha256 is committed): each Core beside the public mean.", "",
            "| system | version | runtime | private set | Core (private) | Core (public mean) | outcome |",
            "|---|---|---|---|---|---|---|", *lines]
