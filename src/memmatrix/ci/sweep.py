"""A system's behaviour across its releases: ``sweep`` measures sampled releases, ``bisect`` pins each change.

Every measurement is an ordinary result (``<out>/<protocol>/<system>/<version>/<runtime+variant>/``), so each
verifies on its own. ``<out>/history/<system>.json`` records what a result cannot: the release list the package
index gave at sweep time, the releases each sweep sampled, and every run bisect made (or could not make).
Change points are never stored: they are computed from the results (``change_points``), so the timeline can
only say what the verified results say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .batch import Batch
from ..common.config import Config
from ..common.errors import MemmatrixError
from ..common.releases import Ranges, between, drivable, fetch_releases
from ..result.stamp import now_utc
from ..systems import ensure_lock, load_system_yaml, resolve_system, system_folder
from ..evidence.verify import load_result
from ..result.history import Cells, _differing, history_file, load_history, verdicts

def package_of(meta: dict) -> str:
    package = (meta.get("releases") or {}).get("package") or (meta.get("upstream") or {}).get("package")
    if not package:
        raise MemmatrixError(f"system {meta['name']} names no package (upstream.package or releases.package in its "
                             "system.yaml): its releases cannot be listed")
    return package


def start_history(system: str, config: Config, out: Path) -> tuple[dict, Ranges]:
    """The system's history file, its release list refreshed from the package index."""
    folder = system_folder(config, system)
    if folder is None:
        resolve_system(system, config)  # raises the usual "unknown system" error
    meta = load_system_yaml(folder, config)
    ranges = Ranges.of(meta)
    if ranges is None:
        raise MemmatrixError(f"system {system} declares no releases block in its system.yaml, so only its pinned "
                             f"versions ({', '.join(meta['versions'])}) can run; add one (see docs/adapters.md)")
    listing = fetch_releases(package_of(meta))
    history = load_history(history_file(out, system), config) or {
        "kind": "memmatrix.history", "schema_version": 1, "system": system, "sweeps": [], "bisections": []}
    history.update(package=listing["package"], index=listing["index"], listed_at=now_utc(),
                   releases=listing["releases"],
                   not_drivable=[{"versions": r["versions"], "reason": r.get("reason", "")}
                                 for r in ranges.ranges if r.get("drivable") is False])
    return history, ranges


def drivable_releases(history: dict, ranges: Ranges) -> list[str]:
    return drivable([r["version"] for r in history["releases"]], ranges)


@dataclass
class Measurer:
    """Measures one release of one system with a batch's setup, reusing any result already there."""
    system: str
    batch: Batch
    config: Config
    runs: int = 0  # releases actually run (not found already measured)

    def __post_init__(self):
        self._targets: dict[tuple[str, str], Path] = {}
        self._cells: dict[Path, tuple[float, Cells]] = {}

    def target(self, version: str, protocol) -> Path:
        key = (version, protocol.name)
        if key not in self._targets:
            spec = resolve_system(f"{self.system}@{version}", self.config)
            self._targets[key] = self.batch.request(spec, protocol).target()
        return self._targets[key]

    def cells(self, version: str, protocol) -> Cells | None:
        path = self.target(version, protocol) / "result.json"
        if not path.is_file():
            return None
        stamp = path.stat().st_mtime
        if path not in self._cells or self._cells[path][0] != stamp:
            result = load_result(path, self.config)
            self._cells[path] = (stamp, verdicts(result))
        return self._cells[path][1]

    def measure(self, version: str, protocol, again: bool = False) -> str | None:
        """Run the release unless measured; None when a result is there, else why there is none."""
        if not again and self.cells(version, protocol) is not None:
            return None
        try:
            spec = ensure_lock(resolve_system(f"{self.system}@{version}", self.config), self.config)
        except MemmatrixError as exc:
            return str(exc)
        self.runs += 1
        where = self.batch.execute(self.batch.request(spec, protocol), self.config)
        return where if isinstance(where, str) else None


def sweep(measurer: Measurer, versions: list[str], again: bool = False) -> list[dict]:
    """Measure every release with every protocol of the batch; each failure is reported, never fatal."""
    failures = []
    for version in versions:
        for protocol in measurer.batch.protocols:
            why = measurer.measure(version, protocol, again=again)
            if why:
                failures.append({"version": version, "protocol": protocol.name, "error": why})
    return failures


def bisect_protocol(releases: list[str], cells_of: Callable[[str], Cells | None],
                    run: Callable[[str], str | None]) -> list[dict]:
    """Run releases until every cell that differs between two measured releases changes between two *adjacent*
    ones. ``cells_of(v)`` is a release's verdicts (None: not measured), ``run(v)`` measures it (None on success,
    else why not). Returns the log of runs: each release tried, for which interval, and how it went."""
    log: list[dict] = []
    failed: set[str] = set()
    while True:
        measured = [v for v in releases if v not in failed and cells_of(v) is not None]
        work = None
        for lo, hi in zip(measured, measured[1:]):
            changed = _differing(cells_of(lo), cells_of(hi))
            inside = [v for v in between(releases, lo, hi) if v not in failed]
            if changed and inside:
                work = (lo, hi, inside, len(changed))
                break
        if work is None:
            return log
        lo, hi, inside, n = work
        mid = inside[len(inside) // 2]
        why = run(mid)
        log.append({"version": mid, "between": [lo, hi], "cells_differing": n, **({"error": why} if why else {})})
        if why or cells_of(mid) is None:
            failed.add(mid)


def bisect(measurer: Measurer, history: dict, ranges: Ranges) -> list[dict]:
    releases = drivable_releases(history, ranges)
    entries = []
    for protocol in measurer.batch.protocols:
        log = bisect_protocol(releases, lambda v: measurer.cells(v, protocol), lambda v: measurer.measure(v, protocol))
        entries.append({"protocol": protocol.name, "runtime": measurer.batch.runtime,
                        "variant": measurer.target(releases[-1], protocol).name, "at": now_utc(), "runs": log})
    return entries
