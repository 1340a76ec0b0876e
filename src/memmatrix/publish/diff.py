"""``memmatrix diff OLD NEW``: state changes per (system, version, case, step) between comparable runs.

Two runs are comparable when their setup fingerprints are equal (protocol, dataset, model, seed, options)
and they ran on the same runtime. A tree diff pairs each run with the run of the same system *version*;
``--across-versions`` pairs one version on each side instead (one run per setup on each side, or the
pairing is refused). A PASS that became FAIL or ERROR is a regression.

Exit codes (see cli): 0 nothing regressed, 1 a regression, 3 nothing was comparable (a gate must not pass
because it compared nothing), 2 something to fix (e.g. the baseline is the results folder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import MemmatrixError
from .markdown import code, md
from .thresholds import Over, compare
from ..evidence.verify import find_results, load_result

BAD = ("FAIL", "ERROR")


@dataclass
class Change:
    system: str
    old_version: str
    new_version: str
    runtime: str
    case: str
    step: str
    old: str
    new: str
    reason: str

    @property
    def kind(self) -> str:
        if self.old == "PASS" and self.new in BAD:
            return "regression"
        if self.old in BAD and self.new == "PASS":
            return "fixed"
        return "changed"


@dataclass
class DiffReport:
    changes: list[Change] = field(default_factory=list)
    compared: list[tuple[str, str]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    over: list[Over] = field(default_factory=list)           # figures over a cost or latency threshold
    thresholds: dict[str, float] = field(default_factory=dict)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    @property
    def exit_code(self) -> int:
        """3 when nothing was comparable (a gate must not pass on it), 1 on a regression, else 0."""
        return 3 if not self.compared else (1 if self.regressions else 0)

    def to_json(self) -> dict:
        return {"kind": "memmatrix.diff", "compared": [{"old": o, "new": n} for o, n in self.compared],
                "not_compared": self.unmatched, "regressions": len(self.regressions),
                "changes": [{**c.__dict__, "kind": c.kind} for c in self.changes],
                "thresholds": self.thresholds, "over_threshold": [o.to_json() for o in self.over]}

    def render(self) -> str:
        out = ["# memmatrix diff", ""]
        for old, new in self.compared:
            out.append(f"- compared {code(old)} → {code(new)}")
        for text in self.unmatched:
            out.append(f"- not compared: {md(text)}")
        out.append("")
        out += self._render_over()
        if not self.changes:
            out.append("No state changed." if self.compared else "Nothing was comparable.")
            return "\n".join(out) + "\n\n"
        out += ["| kind | system | versions | runtime | case | step | old → new | now because |",
                "|---|---|---|---|---|---|---|---|"]
        order = {"regression": 0, "changed": 1, "fixed": 2}
        for c in sorted(self.changes, key=lambda c: (order[c.kind], c.system, c.case, int(c.step) if c.step.isdigit() else 0, c.step)):
            out.append(f"| {c.kind} | {md(c.system)} | {md(c.old_version)} → {md(c.new_version)} | {md(c.runtime)} | "
                       f"{md(c.case)} | {md(c.step)} | {c.old} → {c.new} | {md(c.reason)} |")
        out += ["", f"{len(self.regressions)} regression(s), {len(self.changes)} change(s)."]
        return "\n".join(out) + "\n\n"  # a blank line: whatever is appended next renders as its own block


    def _render_over(self) -> list[str]:
        if not self.thresholds:
            return []
        said = ", ".join(f"{k} {v:.0%}" for k, v in sorted(self.thresholds.items()))
        if not self.over:
            return [f"No figure over its threshold ({said} of the baseline's).", ""]
        out = [f"Over threshold ({said} of the baseline's):", "",
               "| system | versions | runtime | figure | baseline | now | ratio |", "|---|---|---|---|---|---|---|"]
        for o in self.over:
            ratio = f"{o.ratio:.2f}×" if o.old else "new"
            out.append(f"| {md(o.system)} | {md(o.old_version)} → {md(o.new_version)} | {md(o.runtime)} | "
                       f"{o.kind}: {md(o.metric)} | {o.old:g} | {o.new:g} | {ratio} |")
        return out + [""]


def _key(r: dict, across_versions: bool) -> tuple:
    s = r["stamp"]
    return (s["fingerprint"], s["runtime"]["name"]) + (() if across_versions else (s["system"]["version"],))


def _same_folder(a: list[Path], b: list[Path]) -> bool:
    ra, rb = {p.resolve() for p in a}, {p.resolve() for p in b}
    return bool(ra & rb) or any(x in y.parents or y in x.parents for x in ra for y in rb)


def diff(old_paths: list[Path], new_paths: list[Path], config=None, across_versions: bool = False,
         thresholds: dict[str, float] | None = None) -> DiffReport:
    """``thresholds``: {"cost": 1.5, "latency": 2.0} (see thresholds.py); none by default."""
    if _same_folder(old_paths, new_paths):
        raise MemmatrixError(f"the baseline {', '.join(map(str, old_paths))} is (or holds, or lies inside) the results "
                             f"folder {', '.join(map(str, new_paths))}: every run would be compared with itself; "
                             "give a baseline saved elsewhere (e.g. a checkout of the last release's results)")
    olds = [(p, load_result(p, config)) for p in find_results(old_paths)]
    news = [(p, load_result(p, config)) for p in find_results(new_paths)]
    report = DiffReport(thresholds=dict(thresholds or {}))
    by_key: dict[tuple, list[tuple[Path, dict]]] = {}
    for p, r in olds:
        by_key.setdefault(_key(r, across_versions), []).append((p, r))
    if across_versions:
        for side, runs in (("old", olds), ("new", news)):
            seen: dict[tuple, Path] = {}
            for p, r in runs:
                k = _key(r, True)
                if k in seen:
                    raise MemmatrixError(f"--across-versions pairs one version on each side, but the {side} side holds "
                                         f"two runs of one setup: {seen[k].parent} and {p.parent}; give one version's "
                                         "folder on each side")
                seen[k] = p
    for p, new in news:
        matches = by_key.get(_key(new, across_versions))
        s = new["stamp"]
        if not matches:
            report.unmatched.append(f"`{p}` ({s['system']['name']} {s['system']['version']}, {s['runtime']['name']}): "
                                    f"no old run of the same {'setup' if across_versions else 'version and setup'} "
                                    f"(fingerprint {s['fingerprint']}: protocol, dataset, model, seed or options) "
                                    "on the same runtime")
            continue
        old_path, old = matches[0]
        report.compared.append((str(old_path), str(p)))
        report.over += compare(old, new, report.thresholds)
        old_cells = {(c["id"], cell["step"]): cell for c in old["cases"] for cell in c["cells"]}
        for case in new["cases"]:
            for cell in case["cells"]:
                before = old_cells.get((case["id"], cell["step"]))
                if before is None or before["verdict"] == cell["verdict"]:
                    continue
                report.changes.append(Change(
                    system=s["system"]["name"], old_version=old["stamp"]["system"]["version"],
                    new_version=s["system"]["version"], runtime=s["runtime"]["name"], case=case["id"],
                    step=cell["step"], old=before["verdict"], new=cell["verdict"],
                    reason=cell["reason"] or before["reason"]))
    return report
