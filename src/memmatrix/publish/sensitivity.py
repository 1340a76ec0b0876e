"""Which cells are plumbing and which move with the model: the sensitivity matrix (docs/plumbing.md).

A cell is one case's verdict at one step of one protocol, for one system release at one setup. Measured with the
perfect oracle, it says what the system's plumbing does given a perfect extractor; measured again under each
imperfect oracle (an ``oracle-MODE`` result of the same release, protocol, setup and case file, see
``model/imperfect.py``), it either keeps its verdict or moves. A decided cell (PASS or FAIL with the perfect oracle)
that no mode turned into the other verdict is *plumbing* under the modes measured; one that a mode flipped is
*model-dependent*, and the modes that flipped it are named. A mode that leaves a cell undecided (a malformed answer
makes a write an ERROR) says nothing about its verdict: it is counted apart, never as a flip, and a cell every
mode left undecided is neither plumbing nor model-dependent. A cell the perfect oracle left undecided (SKIP,
ERROR, UNSUPPORTED) is not counted. Nothing is said of a mode that was not measured.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..common.releases import version_key
from ..model.imperfect import MODES, Imperfection

DECIDED = ("PASS", "FAIL")


def split_variant(folder: str) -> tuple[str, Imperfection | None]:
    """A result folder's name without its ``oracle-MODE`` part, and the imperfection that part names (None for the
    perfect oracle, a provider fault, or no such part)."""
    parts, found = [], None
    for part in folder.split("+"):
        if part.startswith("oracle-"):
            try:
                found = Imperfection.parse(part[len("oracle-"):])
            except ValueError:
                found = None
            if found is None:
                return folder, None  # a provider fault (flaky, stall) or an unknown ablation: not an error mode
            continue
        parts.append(part)
    return "+".join(parts), found


@dataclass
class Group:
    """One system release, protocol and setup: the perfect oracle's cells and each mode's."""
    system: str
    version: str
    protocol: str
    setup: str
    perfect: dict = field(default_factory=dict)        # (case, step) -> verdict
    perfect_path: Path | None = None
    modes: dict = field(default_factory=dict)          # mode name -> {(case, step): verdict}
    paths: dict = field(default_factory=dict)          # mode name -> result path
    unanswered: dict = field(default_factory=dict)     # mode name -> {where: calls the oracle left unanswered}
    perfect_unanswered: int = 0
    _moved: dict = field(default_factory=dict, repr=False, compare=False)  # mode name -> moved(), computed once

    def moved(self, name: str) -> dict:
        """(case, step) -> (verdict with the perfect oracle, under the mode) for each decided cell the mode moved."""
        if name not in self._moved:
            got = self.modes[name]
            self._moved[name] = {k: (v, got.get(k, "missing")) for k, v in self.perfect.items()
                                 if v in DECIDED and got.get(k) != v}
        return self._moved[name]

    def flipped(self, name: str) -> set:
        """The decided cells the mode turned into the other verdict (PASS to FAIL, FAIL to PASS)."""
        return {k for k, (_, new) in self.moved(name).items() if new in DECIDED}

    def blurred(self, name: str) -> set:
        """The decided cells the mode left undecided (ERROR, SKIP ...): they say nothing about the verdict."""
        return {k for k, (_, new) in self.moved(name).items() if new not in DECIDED}

    def kinds(self) -> tuple[set, set, set]:
        """(plumbing, model-dependent, never decided under a mode) among the decided cells, over the modes at
        rate 1.0: model-dependent when a mode flipped it; plumbing when none did and at least one mode decided it."""
        full = self.full
        dependent = {k for m in full for k in self.flipped(m)}
        blurred_by_all = set(self.decided) - dependent
        for m in full:
            blurred_by_all &= self.blurred(m)
        plumbing = set(self.decided) - dependent - blurred_by_all
        return plumbing, dependent, blurred_by_all

    @property
    def decided(self) -> list:
        return [k for k, v in self.perfect.items() if v in DECIDED]

    @property
    def full(self) -> list[str]:
        """The modes measured at rate 1.0, in the order the docs list them."""
        return [m for m in MODES if m in self.modes]


def _order(name: str) -> tuple:
    im = Imperfection.parse(name)
    return (list(MODES).index(im.mode), -im.rate, im.seed)


def _cells(result: dict) -> dict:
    return {(c["id"], x["step"]): x["verdict"] for c in result["cases"] for x in c["cells"]}


def groups(results: list[tuple[Path, dict]]) -> list[Group]:
    """Every (system, release, protocol, setup) measured both with the perfect oracle and under an error mode."""
    found: dict[tuple, Group] = {}
    for path, result in results:
        stamp = result["stamp"]
        setup, imperfection = split_variant(Path(path).parent.name)
        if "oracle-" in setup:
            continue
        key = (stamp["system"]["name"], stamp["system"]["version"], stamp["protocol"]["name"], setup)
        g = found.setdefault(key, Group(*key))
        if imperfection is None:
            g.perfect, g.perfect_path = _cells(result), Path(path)
            g.perfect_unanswered = sum(((result.get("cost") or {}).get("unmatched") or {}).values())
        else:
            g.modes[imperfection.name], g.paths[imperfection.name] = _cells(result), Path(path)
            if (result.get("cost") or {}).get("unmatched"):
                g.unanswered[imperfection.name] = result["cost"]["unmatched"]
    return sorted((g for g in found.values() if g.perfect and g.modes),
                  key=lambda g: (g.system, version_key(g.version), g.protocol, g.setup))


def _steps(g: Group) -> list[str]:
    return list(dict.fromkeys(step for _, step in g.perfect))


def _per_mode(g: Group, m: str, cells) -> str:
    flipped, blurred = g.flipped(m) & cells, g.blurred(m) & cells
    parts = ([f"{len(flipped)} flip"] if flipped else []) + ([f"{len(blurred)} undecided"] if blurred else [])
    return ", ".join(parts) or "·"


def group_markdown(g: Group, base: str) -> list[str]:
    full = g.full
    plumbing, dependent, never = g.kinds()
    decided = set(g.decided)
    undecided = len(g.perfect) - len(decided)
    link = f"[result]({base}{g.perfect_path.as_posix()})" if g.perfect_path else ""
    out = [f"#### {g.system} {g.version} · {g.protocol} · `{g.setup}`", "",
           f"{len(decided)} decided cells with the perfect oracle ({link}); under the {len(full)} error mode(s) "
           f"measured at rate 1.0 ({', '.join(full) or 'none'}): **{len(plumbing)} plumbing**, "
           f"**{len(dependent)} model-dependent**" + (f", {len(never)} left undecided by every mode" if never else "")
           + (f"; {undecided} cells the perfect oracle left undecided" if undecided else "") + ".", ""]
    if full:
        out += ["| column | decided | plumbing | model-dependent | " + " | ".join(full) + " |",
                "|---|---|---|---|" + "---|" * len(full)]
        for step in _steps(g):
            mine = {k for k in decided if k[1] == step}
            if not mine:
                continue
            out.append(f"| {step} | {len(mine)} | {len(mine & plumbing)} | {len(mine & dependent)} | " +
                       " | ".join(_per_mode(g, m, mine) for m in full) + " |")
        out.append("")
    if g.unanswered:
        said = "; ".join(f"{m}: {sum(w.values())} ({', '.join(f'{k} ×{n}' for k, n in w.items())})"
                         for m, w in sorted(g.unanswered.items(), key=lambda kv: _order(kv[0])))
        why = ("the perfect oracle's run left none, so these are requests the injected mistake led to (a retry "
               "after a failed tool call, a prompt quoting a broken earlier answer) and that mode's moves include "
               "what the system did with an answer that asserts nothing" if not g.perfect_unanswered else
               f"the perfect oracle's run left {g.perfect_unanswered} as well (see its result)")
        out += [f"Calls the oracle could not answer from gold (it replied with an answer that asserts nothing), "
                f"per mode: {said}; {why}.", ""]
    rated = sorted(m for m in g.modes if m not in full)
    if rated:
        by_mode: dict[str, list[str]] = defaultdict(list)
        for m in rated:
            im = Imperfection.parse(m)
            by_mode[f"{im.mode} at rate {im.rate:g}"].append(
                f"seed {im.seed}: {_per_mode(g, m, decided).replace('·', 'none')}")
        out += ["At a realistic rate (decided cells that flip or are left undecided, per seed): " +
                "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(by_mode.items())) + ".", ""]
    return out


def summary_rows(gs: list[Group]) -> list[str]:
    out = ["| system | release | protocol | setup | decided cells | plumbing | model-dependent | "
           "undecided under every mode | modes that flip cells (how many) |", "|---|---|---|---|---|---|---|---|---|"]
    for g in gs:
        plumbing, dependent, never = g.kinds()
        flips = ", ".join(f"{m} {len(g.flipped(m))}" for m in g.full if g.flipped(m))
        out.append(f"| {g.system} | {g.version} | {g.protocol} | `{g.setup}` | {len(g.decided)} | {len(plumbing)} | "
                   f"{len(dependent)} | {len(never)} | {flips or 'none'} |")
    return out


def markdown(results: list[tuple[Path, dict]], base: str = "") -> str:
    gs = groups(results)
    if not gs:
        return "No result has been measured both with the perfect oracle and under an error mode.\n"
    out = summary_rows(gs) + [""]
    for g in gs:
        out += group_markdown(g, base)
    return "\n".join(out).rstrip() + "\n"
