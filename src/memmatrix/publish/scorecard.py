"""The scorecard: one row per system at its newest measured release and default setup, each protocol's headline
beside it, read from the committed results alone.

- deletion: the steps held of thirteen (every case PASS), and the first step that fails;
- contradiction: the columns held (every case PASS), and the columns that fail;
- the vendor claims about the system: how many are reproduced, contradicted and undecided.

A step every case of which is UNSUPPORTED is "n/a" (the system has no such operation); one with only SKIP
cells, or ERROR, is neither held nor failed: it is counted as undecided, never rounded into either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..common.releases import version_key

HEADLINE_PROTOCOLS = ("deletion", "contradiction")


@dataclass
class Headline:
    """One protocol's headline for one run: the steps held, failed, undecided and not applicable."""
    protocol: str
    path: Path
    steps: list[dict]
    held: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    na: list[str] = field(default_factory=list)

    @property
    def measured(self) -> int:
        return len(self.steps) - len(self.na)

    def name(self, key: str) -> str:
        step = next(s for s in self.steps if s["key"] == key)
        return key if step["name"] == key else f"{key} {step['name']}"

    def text(self) -> str:
        out = f"{len(self.held)}/{self.measured} held"
        if self.failed:
            out += "; fails " + ", ".join(self.name(k) for k in self.failed)
        if self.undecided:
            out += f"; {len(self.undecided)} undecided"
        return out


def headline(path: Path, result: dict) -> Headline:
    h = Headline(result["stamp"]["protocol"]["name"], Path(path), result["steps"])
    for step in result["steps"]:
        verdicts = [c["verdict"] for case in result["cases"] for c in case["cells"] if c["step"] == step["key"]]
        if not verdicts or all(v == "UNSUPPORTED" for v in verdicts):
            h.na.append(step["key"])
        elif "FAIL" in verdicts:
            h.failed.append(step["key"])
        elif all(v == "PASS" for v in verdicts):
            h.held.append(step["key"])
        else:
            h.undecided.append(step["key"])
    return h


def newest_versions(pairs) -> dict[str, str]:
    """Each system's newest release among (system, version) pairs, by release order (the scorecard, the front page
    and the grids all pick their rows with it)."""
    newest: dict[str, str] = {}
    for name, version in pairs:
        if name not in newest or version_key(version) > version_key(newest[name]):
            newest[name] = version
    return newest


def rows(results: list[tuple[Path, dict]], claims: list[dict] | None = None) -> list[dict]:
    """One row per system: its newest release with a default-setup result of a headline protocol."""
    default = [(p, r) for p, r in results if Path(p).parent.name == r["stamp"]["runtime"]["name"] == "embedded"
               and r["stamp"]["protocol"]["name"] in HEADLINE_PROTOCOLS and not r["stamp"]["system"].get("options")]
    newest = newest_versions((r["stamp"]["system"]["name"], r["stamp"]["system"]["version"]) for _, r in default)
    out = []
    for name in sorted(newest):
        row = {"system": name, "version": newest[name], "protocols": {}}
        for p, r in default:
            s = r["stamp"]["system"]
            if s["name"] == name and s["version"] == newest[name]:
                row["protocols"][r["stamp"]["protocol"]["name"]] = headline(p, r)
        mine = [c for c in claims or [] if c["system"] == name]
        row["claims"] = {s: sum(c["status"] == s for c in mine) for s in ("reproduced", "contradicted", "undecided")}
        out.append(row)
    return out


def markdown(table: list[dict], link_base: str = "") -> str:
    lines = ["| system | release | deletion (13 steps) | contradiction (9 columns) | vendor claims |",
             "|---|---|---|---|---|"]
    for row in table:
        cells = []
        for proto in HEADLINE_PROTOCOLS:
            h = row["protocols"].get(proto)
            cells.append(f"[{h.text()}]({link_base}{h.path.as_posix()})" if h else "not measured")
        c = row["claims"]
        claims = f"{c['reproduced']} reproduced, {c['contradicted']} contradicted" + \
            (f", {c['undecided']} undecided" if c["undecided"] else "")
        lines.append(f"| {row['system']} | {row['version']} | {cells[0]} | {cells[1]} | {claims} |")
    return "\n".join(lines)
