"""A matrix across CI jobs: ``plan`` lists its entries (one job each), ``merge`` puts the jobs' results back together.

An entry is one system version x protocol x runtime, with an artifact name of its own (upload-artifact v4
refuses a second artifact of the same name in a workflow run). Merging checks every result before it is
copied: a result that does not re-derive from its transcripts, or two different results for the same
run folder, stop the merge with the paths named.
"""

from __future__ import annotations

import filecmp
import re
import shutil
from pathlib import Path

from ..common.config import Config
from ..common.errors import ConfigError
from ..protocols import get_protocol, protocol_names
from ..runtimes import RUNTIMES
from ..systems import known_systems, load_system_yaml, system_folder


def split_list(values: list[str] | None) -> list[str]:
    """Items given as repeated options, or separated by commas, spaces or newlines, in order, once each."""
    out: list[str] = []
    for value in values or []:
        for item in re.split(r"[,\s]+", value):
            if item and item not in out:
                out.append(item)
    return out


def artifact_name(system: str, protocol: str, runtime: str) -> str:
    """A name upload-artifact accepts ("/" and characters like ":" are not allowed), unique per entry."""
    return "memmatrix-" + re.sub(r"[^A-Za-z0-9._-]+", "_", f"{system}-{protocol}-{runtime}")


def plan(config: Config, systems: list[str], protocols: list[str], runtimes: list[str],
         every_version: bool = False) -> list[dict]:
    """The matrix entries, checked before any job starts: unknown systems, versions, protocols or runtimes are
    one error naming them."""
    protocols = split_list(protocols) or ["deletion"]
    for p in protocols:
        get_protocol(p)
    runtimes = split_list(runtimes) or ["embedded"]
    bad = [r for r in runtimes if r not in RUNTIMES]
    if bad:
        raise ConfigError(f"runtime {bad[0]!r} is not one of {', '.join(RUNTIMES)}")
    wanted = split_list(systems)
    names = known_systems(config) if not wanted or wanted == ["all"] else wanted
    entries = []
    for item in names:
        name, _, version = item.partition("@")
        folder = system_folder(config, name)
        if folder is None:
            raise ConfigError(f"no system {name!r} in the systems folders; known: {', '.join(known_systems(config))}")
        meta = load_system_yaml(folder, config)
        versions = [version] if version else (list(meta["versions"]) if every_version else [meta["default_version"]])
        supported = meta.get("runtimes", ["inprocess", "embedded"])
        for runtime in runtimes:
            if runtime not in supported:
                if wanted and wanted != ["all"]:
                    raise ConfigError(f"system {name} has no {runtime} runtime; its runtimes: {', '.join(supported)}")
                continue  # "all": each system in the runtimes it has
            for v in versions:
                for protocol in protocols:
                    system = f"{name}@{v}"
                    entries.append({"system": system, "protocol": protocol, "runtime": runtime,
                                    "artifact": artifact_name(system, protocol, runtime)})
    if not entries:
        raise ConfigError(f"no system has the runtime(s) {', '.join(runtimes)}; nothing to plan")
    return entries


def _relative(run: Path) -> Path:
    """A run folder's place in a results tree: <protocol>/<system>/<version>/<setup>."""
    parts = run.parts[-4:]
    if len(parts) != 4 or parts[0] not in protocol_names():
        raise ConfigError(f"{run} is not laid out as <protocol>/<system>/<version>/<setup>/result.json; pass the "
                          "folder a run wrote (its --out)")
    return Path(*parts)


def _same(a: Path, b: Path) -> bool:
    left = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    right = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    return left == right and all(filecmp.cmp(a / p, b / p, shallow=False) for p in left)


def merge(dest: Path, sources: list[Path], config: Config) -> list[Path]:
    """Copy every verified run of ``sources`` into ``dest``; the run folders merged, in order."""
    from ..evidence.verify import find_results, verify_result
    dest = dest.resolve()
    runs: list[tuple[Path, Path]] = []
    for src in sources:
        if not src.is_dir():
            raise ConfigError(f"{src} is not a folder of results (a downloaded artifact); pass the folder")
        if src.resolve() == dest or dest in src.resolve().parents or src.resolve() in dest.parents:
            raise ConfigError(f"{src} and the destination {dest} overlap; merge into a folder of its own")
        runs += [(path.parent, _relative(path.parent)) for path in find_results([src])]  # none: one error
    problems = []
    for run, rel in runs:
        problems += [f"{run}: {p}" for p in verify_result(run / "result.json", config)]
    if problems:
        raise ConfigError(f"{len(problems)} problem(s), nothing merged; the first: {problems[0]}")
    seen: dict[Path, Path] = {}
    for run, rel in runs:
        other = seen.get(rel) or (dest / rel if (dest / rel / "result.json").exists() else None)
        if other is not None and not _same(other, run):
            raise ConfigError(f"{run} and {other} are two different results of {rel.as_posix()}; nothing merged"
                              "; keep one of them")
        seen[rel] = run
    merged = []
    for rel, run in seen.items():
        target = dest / rel
        if not (target / "result.json").exists():
            shutil.copytree(run, target)
            merged.append(target)
    return merged
