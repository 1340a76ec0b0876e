"""Resolve ``--system`` into a SystemSpec: a folder under systems/ or any ``adapter.py:Class``."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from ..common import schemas
from ..adapterkit import AdapterLoadError, split_spec
from ..common.canon import sha256_file
from ..common.config import Config
from ..common.errors import SystemNotFound, SystemSpecError
from ..model.dialectsource import DialectSource, load_dialects, read_dialect_source
from ..common.releases import Ranges


@dataclass(frozen=True)
class SystemSpec:
    name: str                 # folder name, or the adapter class name for an ad-hoc adapter
    version: str              # pinned version asked for ("" for an ad-hoc adapter until it declares one)
    adapter: str              # absolute path/to/adapter.py:Class
    folder: Path | None       # systems/<name>/, None for an ad-hoc adapter
    meta: dict = field(default_factory=dict)   # the parsed system.yaml
    lock: Path | None = None
    python: str | None = None  # interpreter for an ad-hoc adapter (--python)
    oracle: DialectSource | None = None  # the system's own oracle dialects (system.yaml ``oracle``), checked
    requirements: str | None = None  # a release not pinned in system.yaml: its lock's input (ensure_lock)

    @property
    def version_meta(self) -> dict:
        return self.meta.get("versions", {}).get(self.version, {})

    @property
    def lock_sha256(self) -> str | None:
        return sha256_file(self.lock) if self.lock else None

    @property
    def adapter_file(self) -> Path:
        return split_spec(self.adapter)[0]

    @property
    def runtimes(self) -> list[str]:
        return self.meta.get("runtimes", ["inprocess", "embedded"])


def known_systems(config: Config) -> list[str]:
    """The system folders (those holding a system.yaml) of every root in MEMMATRIX_SYSTEMS, by name."""
    return sorted({p.name for root in config.systems_roots if root.is_dir() for p in root.iterdir()
                   if (p / "system.yaml").is_file()})


def main_job_systems(config: Config) -> tuple[list[str], list[str]]:
    """The systems a run without --system makes (the main job), and those whose system.yaml opts out of it
    (``main_job: false``: a system too slow to install or run for the main job's time budget); "all" runs both."""
    names = known_systems(config)
    out = [n for n in names if load_system_yaml(system_folder(config, n), config).get("main_job", True) is False]
    return [n for n in names if n not in out], out


def system_folder(config: Config, name: str) -> Path | None:
    """The folder of system ``name``: the first root in MEMMATRIX_SYSTEMS that holds one."""
    return next((root / name for root in config.systems_roots if (root / name / "system.yaml").is_file()), None)


def shown(folder: Path, config: Config) -> str:
    """How messages name a system folder: relative to the checkout when inside it."""
    try:
        return folder.resolve().relative_to(config.home.resolve()).as_posix()
    except ValueError:
        return str(folder)


def load_system_yaml(folder: Path, config: Config) -> dict:
    """A folder's system.yaml, validated (one clear error if not); read once per content and schema, and a fresh
    copy handed out each time, so a caller that changes it changes nothing for the next."""
    path = folder / "system.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemSpecError(f"{path} cannot be read ({exc.strerror}); a system folder holds a system.yaml") from None
    return copy.deepcopy(_validated(folder, text, config.schemas_dir))


@lru_cache(maxsize=64)
def _validated(folder: Path, text: str, schemas_dir: Path) -> dict:
    path = folder / "system.yaml"
    try:
        meta = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SystemSpecError(f"{path} is not valid YAML: {exc}") from None
    problems = schemas.errors(schemas_dir, "system", meta)
    if not problems:
        if meta["name"] != folder.name:
            problems.append(f"at /name: {meta['name']!r} must equal the folder name {folder.name!r}")
        if meta["default_version"] not in meta["versions"]:
            problems.append(f"at /default_version: {meta['default_version']!r} is not one of {sorted(meta['versions'])}")
        for version, v in meta["versions"].items():
            if v.get("lock") and not (folder / v["lock"]).is_file():
                problems.append(f"at /versions/{version}/lock: file {v['lock']!r} does not exist in {folder.name}/")
        adapter_file = meta["adapter"].rpartition(":")[0]
        if not (folder / adapter_file).is_file():
            problems.append(f"at /adapter: file {adapter_file!r} does not exist in {folder.name}/")
    if problems:
        raise SystemSpecError(f"{path} does not fit schemas/system.schema.json:\n  - " + "\n  - ".join(problems))
    return meta


def resolve_system(text: str, config: Config, python: str | None = None) -> SystemSpec:
    """``name``, ``name@version`` (a folder under systems/) or ``path/to/adapter.py:Class``."""
    if ".py:" in text:
        try:
            path, cls = split_spec(text)
        except AdapterLoadError as exc:
            raise SystemNotFound(str(exc)) from None
        if not path.is_file():
            raise SystemNotFound(f"adapter file {str(path)!r} does not exist; give path/to/adapter.py:ClassName")
        if python and not Path(python).is_file():
            raise SystemNotFound(f"--python {python} does not exist; give the interpreter of your system's environment")
        return SystemSpec(name=cls.lower(), version="", adapter=f"{path.resolve()}:{cls}", folder=None, python=python)
    if python:
        raise SystemNotFound(f"--python applies to an adapter given as path.py:Class; {text!r} brings its own environment")
    name, _, version = text.partition("@")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        raise SystemNotFound(f"--system {text!r} is neither a system name (a folder under systems/: lowercase letters, "
                             "digits, - and _) nor path/to/adapter.py:ClassName")
    folder = system_folder(config, name)
    if folder is None:
        known = known_systems(config)
        raise SystemNotFound(f"unknown system {name!r}; known systems: {', '.join(known) or 'none'} "
                             f"(or pass path/to/adapter.py:ClassName)")
    meta = load_system_yaml(folder, config)
    version = version or meta["default_version"]
    requirements = None
    if version not in meta["versions"]:
        meta, requirements = _release(name, version, meta, folder)
    file, _, cls = meta["adapter"].rpartition(":")
    lock = meta["versions"][version].get("lock")
    oracle = None
    if meta.get("oracle"):  # checked here, before any run starts: a broken module is the user's to fix
        oracle = read_dialect_source(name, folder, meta["oracle"], shown(folder, config))
        load_dialects(oracle)
    return SystemSpec(name=name, version=version, adapter=f"{(folder / file).resolve()}:{cls}", folder=folder,
                      meta=meta, lock=(folder / lock) if lock else None, oracle=oracle, requirements=requirements)


def recorded_system(recorded: dict, config: Config) -> SystemSpec:
    """The system a stamp names (its ``system`` block), for ``verify`` and ``rerun``: a system folder (under
    systems/, or any MEMMATRIX_SYSTEMS root, whose adapter the stamp names by file name only) at the recorded
    version, else the adapter file the stamp names, relative to this checkout."""
    adapter_file = recorded["adapter"].rpartition(":")[0]
    if adapter_file.startswith("systems/") or "/" not in adapter_file and system_folder(config, recorded["name"]):
        return resolve_system(f"{recorded['name']}@{recorded['version']}", config)
    return resolve_system(str(config.home / recorded["adapter"]), config)


def _release(name: str, version: str, meta: dict, folder: Path) -> tuple[dict, str | None]:
    """A release system.yaml does not pin but its ``releases`` block lets the adapter drive: its lock is the
    folder's ``locks/<version>.txt`` when committed, otherwise generated from the block (see ``ensure_lock``)."""
    ranges = Ranges.of(meta)
    if ranges is None:
        raise SystemNotFound(f"system {name!r} pins no version {version!r}; pinned: {', '.join(meta['versions'])}")
    why = ranges.refusal(version)
    if why:
        raise SystemNotFound(f"system {name!r}: the adapter cannot drive {version} ({why}); see the releases "
                             f"block of {name}/system.yaml")
    entry: dict = {"python": ranges.python} if ranges.python else {}
    committed = folder / "locks" / f"{version}.txt"
    requirements = None
    if committed.is_file():
        entry["lock"] = f"locks/{version}.txt"
    else:
        requirements = "".join(line + "\n" for line in ranges.requirements_for(version))
    return {**meta, "versions": {**meta["versions"], version: entry}}, requirements


def ensure_lock(spec: SystemSpec, config: Config) -> SystemSpec:
    """The spec with its lock in place: a generated release's lock is made once (uv) and cached."""
    if spec.lock is not None or not spec.requirements:
        return spec
    from dataclasses import replace
    from .locking import cached_lock_path, generate_lock
    from ..common.releases import index_url
    from .python import base_python, python_version
    full = python_version(base_python(spec))
    index = index_url()
    path = cached_lock_path(config, spec.name, spec.version, spec.requirements, full, index)
    generate_lock(config, path, spec.requirements, full, index, f"{spec.name} {spec.version}", spec.version)
    return replace(spec, lock=path)
