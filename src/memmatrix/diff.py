"""``memmatrix diff OLD NEW``: state changes per (system, version, case, step) between comparable runs.

Two runs are comparable when their setup fingerprints are equal; the fingerprint leaves
the system version out, so one system's pinned versions can be compared under one setup.
A PASS that became FAIL or ERROR is a regression, and the command exits non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .verify import find_results, load_result

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

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    def render(self) -> str:
        out = ["# memmatrix diff", ""]
        for old, new in self.compared:
            out.append(f"- compared `{old}` → `{new}`")
        for text in self.unmatched:
            out.append(f"- not compared: {text}")
        out.append("")
        if not self.changes:
            out.append("No state changed." if self.compared else "Nothing was comparable.")
            return "\n".join(out) + "\n"
        out += ["| kind | system | versions | runtime | case | step | old → new | now because |",
                "|---|---|---|---|---|---|---|---|"]
        order = {"regression": 0, "changed": 1, "fixed": 2}
        for c in sorted(self.changes, key=lambda c: (order[c.kind], c.system, c.case, int(c.step) if c.step.isdigit() else 0, c.step)):
            out.append(f"| {c.kind} | {c.system} | {c.old_version} → {c.new_version} | {c.runtime} | {c.case} | "
                       f"{c.step} | {c.old} → {c.new} | {c.reason.replace('|', '/')} |")
        out += ["", f"{len(self.regressions)} regression(s), {len(self.changes)} change(s)."]
        return "\n".join(out) + "\n"


def _key(r: dict) -> tuple:
    return r["stamp"]["fingerprint"], r["stamp"]["runtime"]["name"]


def diff(old_paths: list[Path], new_paths: list[Path], config=None) -> DiffReport:
    olds = [(p, load_result(p, config)) for p in find_results(old_paths)]
    news = [(p, load_result(p, config)) for p in find_results(new_paths)]
    report = DiffReport()
    by_key: dict[tuple, tuple[Path, dict]] = {}
    for p, r in olds:
        by_key.setdefault(_key(r), (p, r))
    for p, new in news:
        match = by_key.get(_key(new))
        s = new["stamp"]
        if match is None:
            report.unmatched.append(f"`{p}` ({s['system']['name']} {s['system']['version']}, {s['runtime']['name']}): "
                                    f"no old run with fingerprint {s['fingerprint']} "
                                    f"and the same runtime (protocol, dataset, model, seed or system differ)")
            continue
        old_path, old = match
        report.compared.append((str(old_path), str(p)))
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
