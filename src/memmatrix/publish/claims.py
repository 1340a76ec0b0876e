"""Published vendor claims (claims/<system>.yaml) and their status computed from results.

A claim names the releases it is about and the evidence that would reproduce it: each test names a protocol and a
step (a column) and the verdict the vendor's words predict, and where it matters the stores and the moment it
reads (deletion step 9 records, per store, whether the forgotten value was held before the forget, right after it
and at the end), the setup (adapter options: an operation such as a forget path, or a non-default configuration)
and the case set. A test reads only results of exactly that setup and case set; a claim's headline reads the
setup the claim is made about (``setup``; none: the vendor's default), and every other setup its tests name is a
variant with a status line of its own.

Each case of a result is *decided* (its cell PASS or FAIL; for a store test, the named stores held the value before
and were probed once the system had settled) or *undecided* (ERROR, SKIP, UNSUPPORTED: the reason is kept). The one
status vocabulary (``STATUSES``):

- reproduced: every decided case agrees with the claim ("reproduced in M of M decided cases", undecided ones named);
- contradicted: N of the M decided cases disagree ("contradicted in N of M decided cases");
- undecided: no case could be decided (the reasons, e.g. K ERROR and the upstream issue behind them);
- not measured: no result of a release in range at that setup; untestable offline: no offline cell can test it.

A claim's status at one release takes its tests together: contradicted if any case of any test contradicts it,
reproduced if some case was decided and none contradicts, else undecided. Its headline is its status at the newest
release measured.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..common import schemas
from ..common.config import Config
from ..common.errors import ConfigError
from ..protocols import get_protocol
from ..common.releases import version_key
from ..systems import load_system_yaml, system_folder
from ..common.tokens import tokens

REPRODUCED, CONTRADICTED, UNDECIDED = "reproduced", "contradicted", "undecided"
NOT_MEASURED, UNTESTABLE = "not measured", "untestable offline"
STATUSES = {
    REPRODUCED: "every decided case agrees with the claim (reproduced in M of M decided cases; cases that could not be "
                "decided are named beside it)",
    CONTRADICTED: "N of the M decided cases disagree with the claim (contradicted in N of M decided cases)",
    UNDECIDED: "no case could be decided: every one ERROR, SKIP or UNSUPPORTED, each with its reason",
    NOT_MEASURED: "no result of a release in range at the setup and case set the claim's tests name",
    UNTESTABLE: "no offline cell can test it (a real model and a dataset, a hosted service); what it would need is said",
}
AGREE, AGAINST, OPEN = "agree", "against", "undecided"

#: The words a claim's note uses for a moment of the deletion protocol's per-store sub-verdicts.
MOMENT_WORDS = {"after-forget": ("right after the forget", "right after the delete"), "end": ("at the end",)}


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

    @property
    def setup(self) -> dict:
        """The setup the claim is made about: the vendor's default ({}) unless the claim is about an opt-in mode."""
        return self.raw.get("setup") or {}

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
        home = system_folder(config, system)
        if home is None:
            raise ConfigError(f"{path} is about system {system!r}, which no systems folder holds; fix `system:`")
        options = (load_system_yaml(home, config).get("options") or {})
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
            for setup in [raw.get("setup") or {}, *((t.get("setup") or {}) for t in raw.get("tests") or [])]:
                _check_setup(where, setup, options, system)
            for t in raw.get("tests") or []:
                _check_test(where, t)
            claims.append(Claim(system, raw, path))
    if not claims:
        raise ConfigError(f"{folder} holds no claims/<system>.yaml")
    return claims


def _check_setup(where: str, setup: dict, options: dict, system: str) -> None:
    for key, value in setup.items():
        if key not in options:
            raise ConfigError(f"{where}: setup names option {key!r}, which systems/{system}/system.yaml does not "
                              f"declare (its options: {', '.join(sorted(options)) or 'none'})")
        choices = options[key].get("choices")
        if choices and value not in choices:
            raise ConfigError(f"{where}: setup {key}={value!r} is not one of the option's choices {choices}")


def _check_test(where: str, t: dict) -> None:
    try:
        protocol = get_protocol(t["protocol"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    steps = [s.key for s in protocol.steps]
    if t["step"] not in steps:
        raise ConfigError(f"{where}: protocol {t['protocol']} has no step {t['step']!r}; its steps: {', '.join(steps)}")
    moments = protocol.store_moments.get(t["step"])
    if (t.get("stores") or t.get("moment")) and not moments:
        where_read = ", ".join(f"step {k}" for k in protocol.store_moments) or "no step"
        raise ConfigError(f"{where}: {t['protocol']} step {t['step']} records no per-store sub-verdicts; stores and "
                          f"a moment are read from {where_read} of {t['protocol']}")
    if t.get("moment") and t["moment"] not in moments:
        raise ConfigError(f"{where}: moment {t['moment']!r} is not one of {', '.join(moments)}")
    if t.get("moment") and not t.get("stores"):
        raise ConfigError(f"{where}: a moment is read from the stores it names: add stores: [...]")


# ---------------------------------------------------------------- which results a test reads
_EXTRA = re.compile(r"^(seed=|oracle-|proxy-|replay-|repeat-|no-judge$|embedder=)")


def folder_setup(folder: str) -> tuple[str, dict, str, bool]:
    """A result folder name ``runtime+k=v+cases=...``: its runtime, its options, its case set (``''`` for the default),
    and whether it is a plain setup (no seed, model ablation, proxy, replay, repeat or judge change)."""
    runtime, *parts = folder.split("+")
    options, cases, plain = {}, "", True
    for part in parts:
        if part.startswith("cases="):
            cases = part[len("cases="):]
        elif _EXTRA.match(part):
            plain = False
        elif "=" in part:
            k, v = part.split("=", 1)
            options[k] = v
        else:
            plain = False
    return runtime, options, cases, plain


@dataclass
class Measured:
    """One result, as the claims read it: its setup and its cases' cells."""
    system: str
    version: str
    protocol: str
    runtime: str
    path: Path
    options: dict = field(default_factory=dict)
    cases: str = ""
    rows: list[dict] = field(default_factory=list)  # the result's cases, each {"id", "cells": {step: cell}}
    ablation: str = ""  # an imperfect oracle's error mode (model/imperfect.py); "" for the perfect oracle

    def reads(self, test: dict) -> bool:
        wanted = test.get("cases") or ""
        return self.protocol == test["protocol"] and self.options == {k: str(v) for k, v in (test.get("setup") or {}).items()} \
            and (self.cases.startswith(wanted + "-") if wanted else not self.cases)


def _kept(cell: dict) -> dict:
    """What a claim reads of a cell: its verdict and reason, and its store checks (the rest is not kept, so
    reading every result holds little)."""
    return {"verdict": cell["verdict"], "reason": cell.get("reason", ""),
            "checks": [c for c in cell.get("checks", []) if c.get("check") == "store"]}


def measured(paths: list[Path], config: Config) -> list[Measured]:
    from ..evidence.verify import load_result
    from .sensitivity import split_variant
    out = []
    for path in paths:
        result = load_result(path, config)
        stamp = result["stamp"]
        folder, imperfection = split_variant(Path(path).parent.name)
        runtime, options, cases, plain = folder_setup(folder)
        if not plain or runtime != stamp["runtime"]["name"]:
            continue  # a seed, a provider fault, a proxy or replay run: claims read the oracle's plain runs
        rows = [{"id": c["id"], "shape": c.get("shape", ""), "cells": {cell["step"]: _kept(cell) for cell in c["cells"]}}
                for c in result["cases"]]
        out.append(Measured(stamp["system"]["name"], stamp["system"]["version"], stamp["protocol"]["name"], runtime,
                            Path(path), options, cases, rows, imperfection.name if imperfection else ""))
    return out


# ---------------------------------------------------------------- reading one case
def case_outcome(cells: dict[str, dict], test: dict) -> tuple[str, str]:
    """What one case says of one test: agree, against or undecided (with why)."""
    cell = cells.get(test["step"])
    if cell is None:
        return OPEN, f"the case has no step {test['step']}"
    if not test.get("stores"):
        if cell["verdict"] not in ("PASS", "FAIL"):
            return OPEN, f"{cell['verdict']}: {cell['reason']}" if cell["reason"] else cell["verdict"]
        return (AGREE if cell["verdict"] == test["expect"] else AGAINST), cell["reason"]
    if cell["verdict"] in ("ERROR", "UNSUPPORTED"):
        return OPEN, f"{cell['verdict']}: {cell['reason']}"
    moment, stores = test.get("moment") or "after-forget", set(test["stores"])
    rows = [r for r in cell.get("checks", []) if r.get("check") == "store" and r["store"] in stores]
    if not rows:
        return OPEN, f"no store of {sorted(stores)} was probed"
    if moment != "before" and not any(r["held"] for r in rows if r["moment"] == "before"):
        return OPEN, f"no store of {sorted(stores)} held the value before the forget"
    at = [r for r in rows if r["moment"] == moment]
    if not at:
        return OPEN, f"{sorted(stores)} were not probed at the moment {moment!r}"
    if any(r.get("unsettled") for r in at) and not any(r["held"] for r in at):
        return OPEN, f"clean at {moment!r}, but the system had not settled and was not watched to the timeout"
    held = sorted(r["store"] for r in at if r["held"])
    verdict = "FAIL" if held else "PASS"
    why = f"held {moment} by {held}" if held else f"no store of {sorted(stores)} held it {moment}"
    return (AGREE if verdict == test["expect"] else AGAINST), why


def test_status(m: Measured, test: dict) -> dict:
    counts = {AGREE: 0, AGAINST: 0, OPEN: 0}
    why: dict[str, list[str]] = {AGAINST: [], OPEN: []}
    shapes = set(test.get("shapes") or [])
    for row in m.rows:
        if shapes and row.get("shape") not in shapes:
            continue  # the test reads the cases of the shapes the claim is about
        outcome, reason = case_outcome(row["cells"], test)
        counts[outcome] += 1
        if outcome in why and reason:
            why[outcome].append(f"{row['id']}: {reason}")
    decided = counts[AGREE] + counts[AGAINST]
    status = CONTRADICTED if counts[AGAINST] else REPRODUCED if counts[AGREE] else UNDECIDED
    return {"status": status, "agree": counts[AGREE], "against": counts[AGAINST], "decided": decided,
            "undecided": counts[OPEN], "why_against": why[AGAINST][:3], "why_undecided": _why(why[OPEN])}


def _why(reasons: list[str]) -> list[str]:
    """The reasons cases were undecided, each once with how many cases gave it."""
    counted: dict[str, int] = {}
    for r in reasons:
        text = r.split(": ", 1)[1] if ": " in r else r
        counted[text] = counted.get(text, 0) + 1
    return [f"{n} × {text}" if n > 1 else text for text, n in counted.items()][:3]


def combine(statuses: list[str]) -> str:
    if CONTRADICTED in statuses:
        return CONTRADICTED
    if REPRODUCED in statuses:
        return REPRODUCED
    if UNDECIDED in statuses:
        return UNDECIDED
    return NOT_MEASURED


def summary(tests: list[dict]) -> str:
    """One line: the status with its counts, e.g. 'contradicted in 3 of 4 decided cases (1 undecided)'."""
    measured_tests = [t for t in tests if t["status"] != NOT_MEASURED]
    status = combine([t["status"] for t in measured_tests])
    decided = sum(t["decided"] for t in measured_tests)
    against = sum(t["against"] for t in measured_tests)
    undecided = sum(t["undecided"] for t in measured_tests)
    missing = [f"{t['protocol']} {t['step']}" for t in tests if t["status"] == NOT_MEASURED]
    tail = ([f"{undecided} undecided"] if undecided and status != UNDECIDED else []) + \
        ([f"not measured: {', '.join(missing)}"] if missing else [])
    extra = f" ({'; '.join(tail)})" if tail else ""
    if status == CONTRADICTED:
        return f"contradicted in {against} of {decided} decided cases{extra}"
    if status == REPRODUCED:
        return f"reproduced in {decided} of {decided} decided cases{extra}"
    if status == UNDECIDED:
        reasons = sorted({r for t in measured_tests for r in t["why_undecided"]})
        return f"could not be decided ({undecided} case(s): {'; '.join(reasons[:2])}){extra}"
    return NOT_MEASURED


def setup_label(setup: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(setup.items())) or "default"


# ---------------------------------------------------------------- evaluating claims
def evaluate(claims: list[Claim], results: list[Measured], home: Path | None = None) -> list[dict]:
    """Each claim with its status per measured release (at its own setup, and at each variant setup its tests name),
    and a headline status at the newest release of its own setup."""
    rows = []
    for claim in claims:
        raw = claim.raw
        row = {"id": claim.id, "system": claim.system, "quote": raw["quote"], "source": raw["source"],
               "versions": raw.get("versions") or "", "kind": raw["kind"], "topic": raw["topic"],
               "tests": claim.tests, "setup": claim.setup, "untestable": raw.get("untestable") or "",
               "contested": raw.get("contested") or [], "note": raw.get("note") or "",
               "ignores": raw.get("ignores") or [], "measured": [], "variants": []}
        if not claim.tests:
            row.update(status=UNTESTABLE, summary=UNTESTABLE)
            rows.append(row)
            continue
        everything = [m for m in results if m.system == claim.system and claim.covers(m.version)]
        mine = [m for m in everything if not m.ablation]
        setups: dict[str, dict] = {}
        for t in claim.tests:
            setups.setdefault(setup_label(t.get("setup") or {}), t.get("setup") or {})
        for label, setup in setups.items():
            tests = [t for t in claim.tests if (t.get("setup") or {}) == setup]
            lines = _releases(tests, mine, home)
            if setup == claim.setup:
                row["measured"] = lines
            else:
                row["variants"].append({"setup": setup, "label": label, "measured": lines,
                                        **_headline(lines)})
        row.update(_headline(row["measured"]))
        row["under_modes"] = _under_modes(claim, row, everything, home)
        rows.append(row)
    return rows


def _under_modes(claim: Claim, row: dict, everything: list[Measured], home: Path | None) -> dict:
    """The claim's headline status at its release, read again from the results of each imperfect oracle there
    (mode -> status), and in one line whether it holds under every mode measured."""
    tests = [t for t in claim.tests if (t.get("setup") or {}) == claim.setup]
    modes = sorted({m.ablation for m in everything if m.ablation and m.version == row.get("at")})
    status = {}
    for mode in modes:
        lines = _releases(tests, [m for m in everything if m.ablation == mode and m.version == row["at"]], home)
        if lines:
            status[mode] = _headline(lines)["status"]
    if not status or row["status"] in (UNTESTABLE, NOT_MEASURED):
        return {"modes": {}, "summary": "not measured under an error mode"}
    moved = {m: s for m, s in status.items() if s != row["status"]}
    if not moved:
        return {"modes": status, "summary": f"holds under all {len(status)} error modes measured"}
    return {"modes": status, "summary": f"moves under {len(moved)} of {len(status)} error modes: " +
            ", ".join(f"{m} ({s})" for m, s in moved.items())}


def _releases(tests: list[dict], mine: list[Measured], home: Path | None) -> list[dict]:
    out = []
    for version, runtime in sorted({(m.version, m.runtime) for m in mine}, key=lambda vr: (version_key(vr[0]), vr[1])):
        at = [m for m in mine if (m.version, m.runtime) == (version, runtime)]
        cells = []
        for t in tests:
            m = next((m for m in at if m.reads(t)), None)
            if m is None:
                cells.append({**t, "status": NOT_MEASURED, "result": None, "decided": 0, "against": 0, "agree": 0,
                              "undecided": 0, "why_against": [], "why_undecided": []})
            else:
                cells.append({**t, **test_status(m, t), "result": _shown(m.path, home)})
        if all(c["status"] == NOT_MEASURED for c in cells):
            continue  # a release measured with other protocols or setups only says nothing here
        out.append({"version": version, "runtime": runtime, "status": combine([c["status"] for c in cells]),
                    "summary": summary(cells), "cells": cells})
    return out


def _headline(lines: list[dict]) -> dict:
    """The newest release's status: each test's cases added up over the runtimes that measured it there (a test
    one runtime did not measure is not "not measured" when another did)."""
    if not lines:
        return {"status": NOT_MEASURED, "summary": NOT_MEASURED, "at": None}
    newest = max(version_key(r["version"]) for r in lines)
    top = [r for r in lines if version_key(r["version"]) == newest]
    cells = []
    for i in range(len(top[0]["cells"])):
        measured_here = [r["cells"][i] for r in top if r["cells"][i]["status"] != NOT_MEASURED]
        if not measured_here:
            cells.append(top[0]["cells"][i])
            continue
        merged = {**measured_here[0]}
        for k in ("agree", "against", "decided", "undecided"):
            merged[k] = sum(c[k] for c in measured_here)
        merged["why_undecided"] = [w for c in measured_here for w in c["why_undecided"]][:3]
        merged["status"] = combine([c["status"] for c in measured_here])
        cells.append(merged)
    return {"status": combine([c["status"] for c in cells if c["status"] != NOT_MEASURED] or [NOT_MEASURED]),
            "summary": summary(cells), "at": top[0]["version"]}


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


def unread_mentions(claim: Claim, stores: set[str]) -> list[str]:
    """Stores and moments a claim's note names that none of its tests reads (nor its ``ignores`` sets aside, with
    why): a note that says which evidence decides a claim must be what the status is computed from. A note names a
    store in backticks (`observations`), or by a hyphenated name no sentence uses otherwise (llm-requests)."""
    note = (claim.raw.get("note") or "").lower()
    words = tokens(note)
    quoted = set(re.findall(r"`([^`]+)`", note))
    read = {s for t in claim.tests for s in t.get("stores") or []}
    ignored = {i["store"] for i in claim.raw.get("ignores") or []}
    named = {s for s in stores if s.lower() in quoted or ("-" in s and _names(words, s))}
    out = [f"store {s!r}" for s in sorted(named - read - ignored)]
    moments = {t.get("moment") or "after-forget" for t in claim.tests if t.get("stores")}
    moments |= {"after-forget" for t in claim.tests if get_protocol(t["protocol"]).store_moments.get(t["step"])}
    for moment, phrases in MOMENT_WORDS.items():
        if any(p in note for p in phrases) and moment not in moments:
            out.append(f"moment {moment!r}")
    return out


def _names(words: list[str], store: str) -> bool:
    want = tokens(store)
    return any(words[i:i + len(want)] == want for i in range(len(words) - len(want) + 1))


__all__ = ["CONTRADICTED", "NOT_MEASURED", "REPRODUCED", "STATUSES", "UNDECIDED", "UNTESTABLE", "Claim", "Measured",
           "changes", "evaluate", "load_claims", "load_json", "measured", "unread_mentions"]
