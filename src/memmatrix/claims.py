"""Published vendor claims (claims/<system>.yaml) and their status computed from results.

A claim names the releases it is about and the protocol cells whose verdicts would reproduce it. For every
result of that system at a release in range, measured at its default setup (no adapter options), each cell
is read across the result's cases:

- reproduced: every case has the expected verdict;
- contradicted: every case that was decided (PASS or FAIL) has the other one;
- partly: some cases one way, some the other;
- inconclusive: no case was decided (ERROR, SKIP, UNSUPPORTED), or one errored and none contradicts.

A claim's status at one release is that of its cells taken together (all reproduced, all contradicted, else
partly; a cell of a protocol with no result is "not measured" and keeps the claim from being reproduced). Its headline is its status at the newest
release measured. A claim no offline cell tests is "untestable offline", with what it would need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from . import schemas
from .config import Config
from .errors import ConfigError
from .protocols import get_protocol
from .releases import version_key
from .systems import system_folder

REPRODUCED, CONTRADICTED, PARTLY, INCONCLUSIVE = "reproduced", "contradicted", "partly", "inconclusive"
NOT_MEASURED, UNTESTABLE = "not measured", "untestable offline"


@dataclass
class Claim:
    system: str
    raw: dict
    file: Path

    @property
    def id(self) -> str:
        return self.raw["id"]

    @property
    def tests(self) -> list[dict]:
        return self.raw.get("tests") or []

    def covers(self, version: str) -> bool:
        spec = self.raw.get("versions") or ""
        if not spec:
            return True
        try:
            return SpecifierSet(spec).contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False


def load_claims(folder: Path, config: Config) -> list[Claim]:
    """Every claims/<system>.yaml of ``folder``, each checked against its schema, the systems and protocols."""
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a folder of claims/<system>.yaml files; pass --claims DIR")
    claims: list[Claim] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path} is not valid YAML ({str(exc).splitlines()[0]}); fix it") from None
        problems = schemas.errors(config.schemas_dir, "claims", data)
        if problems:
            raise ConfigError(f"{path} does not fit schemas/claims.schema.json: {problems[0]}")
        system = data["system"]
        if system_folder(config, system) is None:
            raise ConfigError(f"{path} is about system {system!r}, which no systems folder holds; fix `system:`")
        for raw in data["claims"]:
            where = f"{path} claim {raw['id']}"
            if raw["id"] in seen:
                raise ConfigError(f"{where}: the id is also used in {seen[raw['id']]}; ids are unique")
            seen[raw["id"]] = path
            try:
                SpecifierSet(raw.get("versions") or "")
            except InvalidSpecifier:
                raise ConfigError(f"{where}: versions {raw['versions']!r} is not a PEP 440 specifier set "
                                  "(e.g. '>=1.0.2,<2')") from None
            for t in raw.get("tests") or []:
                try:
                    steps = [s.key for s in get_protocol(t["protocol"]).steps]
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None
                if t["step"] not in steps:
                    raise ConfigError(f"{where}: protocol {t['protocol']} has no step {t['step']!r}; its steps: "
                                      f"{', '.join(steps)}")
            claims.append(Claim(system, raw, path))
    if not claims:
        raise ConfigError(f"{folder} holds no claims/<system>.yaml")
    return claims


@dataclass
class Measured:
    """One result, as the claims read it."""
    system: str
    version: str
    protocol: str
    runtime: str
    path: Path
    cells: dict[str, list[str]] = field(default_factory=dict)  # step -> verdict of each case


def measured(paths: list[Path], config: Config) -> list[Measured]:
    from .verify import load_result
    out = []
    for path in paths:
        result = load_result(path, config)
        stamp = result["stamp"]
        if stamp["system"].get("options") or path.parent.name != stamp["runtime"]["name"]:
            continue  # a variant (options, a model ablation, other cases: <runtime>+<variant>/): claims read the default
        m = Measured(stamp["system"]["name"], stamp["system"]["version"], stamp["protocol"]["name"],
                     stamp["runtime"]["name"], path)
        for case in result["cases"]:
            for cell in case["cells"]:
                m.cells.setdefault(cell["step"], []).append(cell["verdict"])
        out.append(m)
    return out


def cell_status(verdicts: list[str], expect: str) -> str:
    other = "FAIL" if expect == "PASS" else "PASS"
    hits, against = verdicts.count(expect), verdicts.count(other)
    if against and hits:
        return PARTLY
    if against:
        return CONTRADICTED
    if hits and "ERROR" not in verdicts:
        return REPRODUCED
    return INCONCLUSIVE


def combine(statuses: list[str]) -> str:
    """Cells taken together: one status when all agree; unmeasured or undecided cells beside decided ones
    leave the claim partly shown, never reproduced."""
    kinds = set(statuses)
    if len(kinds) == 1:
        return statuses[0]
    if kinds <= {NOT_MEASURED, INCONCLUSIVE}:
        return INCONCLUSIVE
    return PARTLY


def evaluate(claims: list[Claim], results: list[Measured], home: Path | None = None) -> list[dict]:
    """Each claim with its status per measured release and runtime, and a headline status."""
    rows = []
    for claim in claims:
        raw = claim.raw
        row = {"id": claim.id, "system": claim.system, "quote": raw["quote"], "source": raw["source"],
               "versions": raw.get("versions") or "", "kind": raw["kind"], "topic": raw["topic"],
               "tests": claim.tests, "untestable": raw.get("untestable") or "", "contested": raw.get("contested") or [],
               "note": raw.get("note") or "",
               "measured": []}
        if not claim.tests:
            row["status"] = UNTESTABLE
            rows.append(row)
            continue
        mine = [m for m in results if m.system == claim.system and claim.covers(m.version)]
        for version, runtime in sorted({(m.version, m.runtime) for m in mine},
                                       key=lambda vr: (version_key(vr[0]), vr[1])):
            at = {m.protocol: m for m in mine if (m.version, m.runtime) == (version, runtime)}
            cells = []
            for t in claim.tests:
                m = at.get(t["protocol"])
                status = NOT_MEASURED if m is None else cell_status(m.cells.get(t["step"], []), t["expect"])
                cells.append({**t, "status": status, "result": _shown(m.path, home) if m else None})
            status = combine([c["status"] for c in cells])
            if status != NOT_MEASURED:  # a release measured with another protocol only says nothing here
                row["measured"].append({"version": version, "runtime": runtime, "status": status, "cells": cells})
        row["status"] = _headline(row["measured"]) if row["measured"] else NOT_MEASURED
        rows.append(row)
    return rows


def _headline(rows: list[dict]) -> str:
    newest = max(version_key(r["version"]) for r in rows)
    return combine([r["status"] for r in rows if version_key(r["version"]) == newest])


def _shown(path: Path, home: Path | None) -> str:
    try:
        return path.resolve().relative_to(home.resolve()).as_posix() if home else str(path)
    except ValueError:
        return str(path)


def changes(before: list[dict], after: list[dict]) -> list[str]:
    """Claims whose headline status differs from an earlier `memmatrix claims --json` output. A claim the new
    results do not measure (a nightly runs the default versions; the baseline may hold older releases) has
    no new status to compare, so it is not a change."""
    old = {r["id"]: r["status"] for r in before}
    return [f"{r['id']} ({r['system']}): {old[r['id']]} -> {r['status']}" for r in after
            if r["id"] in old and old[r["id"]] != r["status"] and NOT_MEASURED not in (old[r["id"]], r["status"])]


def load_json(path: Path) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} is not a `memmatrix claims --json` output ({exc}); pass the file it wrote") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ConfigError(f"{path} is not a `memmatrix claims --json` output (no claims list); pass the file it wrote")
    return data["claims"]


MARK = {REPRODUCED: "✅ reproduced", CONTRADICTED: "❌ contradicted", PARTLY: "◐ partly", INCONCLUSIVE: "⚠ inconclusive",
        NOT_MEASURED: "· not measured", UNTESTABLE: "∅ untestable offline"}


SHORT = {REPRODUCED: "✓", CONTRADICTED: "✗", PARTLY: "◐", INCONCLUSIVE: "⚠", NOT_MEASURED: "· not measured"}


def _cell(t: dict) -> str:
    return f"{t['protocol']} {t['step']} expects {t['expect']}"


def markdown(rows: list[dict], link_base: str = "") -> str:
    """The claims table, then one section per claim with its cells at each measured release."""
    counts = {s: sum(r["status"] == s for r in rows) for s in MARK}
    out = ["## Vendor claims", "",
           f"{len(rows)} claims: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ".", "",
           "| claim | system | releases | status | quote | source |", "|---|---|---|---|---|---|"]
    for r in rows:
        quote = r["quote"] if len(r["quote"]) <= 90 else r["quote"][:87] + "…"
        out.append(f"| [{r['id']}](#{r['id'].lower()}) | {r['system']} | `{r['versions'] or 'any'}` | {MARK[r['status']]} "
                   f"| {quote.replace('|', '/')} | [{r['source']['date']}]({r['source']['url']}) |")
    for r in rows:
        out += ["", f"### {r['id']}", "", f"> {r['quote']}", "",
                f"{r['system']} `{r['versions'] or 'any'}` · {r['kind']} · {r['topic']} · "
                f"[source]({r['source']['url']}) ({r['source'].get('where') or r['source']['date']})", ""]
        if r["untestable"]:
            out.append(f"Untestable offline: {r['untestable']}.")
        if r["tests"]:
            out.append("Tested by " + "; ".join(_cell(t) for t in r["tests"]) + " (✓ reproduced in every case, ✗ "
                       "contradicted, ◐ some cases each way, ⚠ undecided).")
        for m in r["measured"]:
            parts = []
            for protocol in dict.fromkeys(c["protocol"] for c in m["cells"]):
                cells = [c for c in m["cells"] if c["protocol"] == protocol]
                link = f" ([result]({link_base}{cells[0]['result']}))" if cells[0]["result"] else ""
                parts.append(f"{protocol} " + ", ".join(f"{c['step']} {SHORT[c['status']]}" for c in cells) + link)
            out.append(f"- {m['version']} {m['runtime']}: **{m['status']}**: " + "; ".join(parts))
        if r["tests"] and not r["measured"]:
            out.append("- no result of a release in range")
        if r["note"]:
            out.append(f"Note: {r['note']}")
        if r["contested"]:
            out.append("Contested: " + ", ".join(r["contested"]))
    return "\n".join(out) + "\n"
