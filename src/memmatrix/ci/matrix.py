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
from ..protocols import get_protocol, main_job_protocols, protocol_names
from ..result.artifacts import LOCK_NAME
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
    protocols = split_list(protocols) or main_job_protocols()  # as `memmatrix run` defaults
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


#: jobs one workflow run's matrix may generate (GitHub Actions)
GITHUB_MATRIX_LIMIT = 256


def fit_jobs(entries: list[dict], limit: int) -> list[dict]:
    """At most ``limit`` entries: over it, the entries of one system version and runtime become one job running
    their protocols in turn (``protocol`` then names them, comma-separated, as ``run --protocol`` takes them). Still
    over it is an error naming how many jobs are left and what to narrow."""
    if len(entries) <= limit:
        return entries
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in entries:
        grouped.setdefault((e["system"], e["runtime"]), []).append(e["protocol"])
    out = [{"system": system, "protocol": ",".join(protocols), "runtime": runtime,
            "artifact": artifact_name(system, "+".join(protocols), runtime)}
           for (system, runtime), protocols in grouped.items()]
    if len(out) > limit:
        raise ConfigError(f"the plan needs {len(out)} jobs even with each system version's protocols in one job, over "
                          f"--max-jobs {limit}: plan fewer systems or versions per workflow run (--system), or split "
                          "the night into several workflow runs")
    return out


def _relative(run: Path) -> Path:
    """A run folder's place in a results tree: <protocol>/<system>/<version>/<setup>."""
    parts = run.parts[-4:]
    if len(parts) != 4 or parts[0] not in protocol_names():
        raise ConfigError(f"{run} is not laid out as <protocol>/<system>/<version>/<setup>/result.json; pass the "
                          "folder a run wrote (its --out)")
    return Path(*parts)


ALLOWED = ("result.json", "attestation.sigstore.json")


def _artifacts(run: Path) -> set[str]:
    """The files a run folder may hold: its result.json, the transcripts it names, its attestation."""
    import json
    try:
        result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"result.json"}
    named = {(result.get(k) or {}).get("file") for k in ("transcript", "model_transcript")}
    return {*ALLOWED, *(n for n in named if isinstance(n, str) and "/" not in n and n not in (".", ".."))}


def refusals(src: Path) -> list[str]:
    """Everything under ``src`` that is not a regular, singly linked artifact file of a run folder laid out as
    <protocol>/<system>/<version>/<setup>/: each one line naming the path and why."""
    import os
    import stat
    out = []
    root = Path(src)
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(here) / name
            rel = path.relative_to(root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out.append(f"{rel}: a symbolic link (merge copies only regular files)")
                if name in dirs:
                    dirs.remove(name)
                continue
            if stat.S_ISDIR(st.st_mode):
                if len(rel.parts) == 1 and name not in protocol_names():
                    out.append(f"{rel}: not a protocol's folder (a results tree is <protocol>/<system>/<version>/"
                               "<setup>/)")
                    dirs.remove(name)
                elif len(rel.parts) > 4:
                    out.append(f"{rel}: deeper than <protocol>/<system>/<version>/<setup>/")
                    dirs.remove(name)
                continue
            if name == LOCK_NAME and len(rel.parts) == 4 and stat.S_ISREG(st.st_mode) and st.st_size == 0:
                continue  # the runner's own lock beside a version's setups (artifacts.out_lock): empty, never copied
            if not stat.S_ISREG(st.st_mode):
                out.append(f"{rel}: not a regular file (a device, socket or pipe)")
            elif st.st_nlink > 1:
                out.append(f"{rel}: a hard link ({st.st_nlink} names for one file)")
            elif len(rel.parts) != 5 or rel.parts[0] not in protocol_names():
                out.append(f"{rel}: outside the <protocol>/<system>/<version>/<setup>/ layout")
            elif name not in _artifacts(path.parent):
                out.append(f"{rel}: not an artifact its result names (result.json, its transcripts, its attestation)")
    return out


def _same(a: Path, b: Path) -> bool:
    left = sorted(_artifacts(a) & {p.name for p in a.iterdir()})
    right = sorted(_artifacts(b) & {p.name for p in b.iterdir()})
    return left == right and all(filecmp.cmp(a / p, b / p, shallow=False) for p in left)


def merge(dest: Path, sources: list[Path], config: Config) -> list[Path]:
    """Copy every verified run of ``sources`` into ``dest``, its artifacts only, as regular files; anything else
    under a source (a link, a file no result names, a path outside the layout) stops the merge before any copy."""
    import sys
    from ..evidence.verify import find_results, verify_result
    dest = dest.resolve()
    runs: list[tuple[Path, Path]] = []
    refused = []
    for src in sources:
        if not src.is_dir() or src.is_symlink():
            raise ConfigError(f"{src} is not a folder of results (a downloaded artifact); pass the folder")
        if src.resolve() == dest or dest in src.resolve().parents or src.resolve() in dest.parents:
            raise ConfigError(f"{src} and the destination {dest} overlap; merge into a folder of its own")
        refused += [f"{src}/{r}" for r in refusals(src)]
        runs += [(path.parent, _relative(path.parent)) for path in find_results([src])]  # none: one error
    for line in refused:
        print(f"memmatrix merge: refused {line}", file=sys.stderr)
    if refused:
        raise ConfigError(f"{len(refused)} path(s) refused, nothing merged: a results artifact holds run folders of "
                          "artifacts only")
    problems = []
    for run, rel in runs:
        problems += [f"{run}: {p}" for p in verify_result(run / "result.json", config)]
        if (run / "attestation.sigstore.json").is_file():  # a signature beside a result must be one of it
            from ..evidence.attest import ATTESTED, attestation
            signed = attestation(run / "result.json", config.home)
            if signed.status != ATTESTED:
                problems.append(f"{run}: {signed.status}: {signed.detail}")
    if problems:
        for p in problems:
            print(f"memmatrix merge: refused {p}", file=sys.stderr)
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
            target.mkdir(parents=True)
            for name in sorted(_artifacts(run) & {p.name for p in run.iterdir()}):
                shutil.copyfile(run / name, target / name, follow_symlinks=False)
            merged.append(target)
    return merged
