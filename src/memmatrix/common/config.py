"""Configuration, built from MEMMATRIX_* environment variables when asked for, never at import."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from .errors import ConfigError

#: Every variable memmatrix reads, with its meaning (the README's table is generated from this).
VARIABLES = {
    "MEMMATRIX_HOME": "checkout holding systems/, schemas/, cases/ and claims/ (default: the one memmatrix runs from; "
                      "installed from a wheel, the copies it ships)",
    "MEMMATRIX_SYSTEMS": "folders holding system folders, a path list like PATH (default: the checkout's systems/)",
    "MEMMATRIX_CACHE_DIR": "where environments and images are cached (default: $XDG_CACHE_HOME/memmatrix)",
    "MEMMATRIX_PRIVATE_CASES": "a folder outside the checkout holding private case sets, where verify finds the one "
                               "a private run names (default: none)",
    "MEMMATRIX_CALL_TIMEOUT": "seconds one adapter call may take before it is an ERROR (default 120)",
    "MEMMATRIX_SETTLE_TIMEOUT": "seconds to wait for quiescence, or to poll a system without a signal (default 30)",
    "MEMMATRIX_START_TIMEOUT": "seconds an adapter server may take to start answering (default 120)",
    "MEMMATRIX_BASE_IMAGE": "compose runtime: the image every Dockerfile starts FROM (default python:3.11-slim)",
    "MEMMATRIX_INDEX_URL": "sweep/bisect: the package index releases are listed and locked from (default https://pypi.org/simple)",
}


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number of seconds; set it to e.g. {default:g}") from None
    if value <= 0:
        raise ConfigError(f"{name}={raw!r} must be positive; set it to e.g. {default:g}")
    return value


def _default_home() -> Path:
    """The checkout memmatrix runs from; installed from a wheel, the schemas/, cases/, systems/ and claims/ it
    ships as package data (memmatrix/home, see setup.py)."""
    checkout = Path(__file__).resolve().parents[3]  # src/memmatrix/common/config.py
    if (checkout / "schemas").is_dir():
        return checkout
    from importlib.resources import files
    return Path(str(files("memmatrix") / "home"))


@dataclass(frozen=True)
class Config:
    home: Path = field(default_factory=_default_home)
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "memmatrix")
    call_timeout_s: float = 120.0
    settle_timeout_s: float = 30.0
    start_timeout_s: float = 120.0
    systems: tuple[Path, ...] = ()  # MEMMATRIX_SYSTEMS; empty: the checkout's systems/
    private_cases: Path | None = None  # MEMMATRIX_PRIVATE_CASES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Config":
        env = os.environ if env is None else env
        home = Path(env["MEMMATRIX_HOME"]) if env.get("MEMMATRIX_HOME") else _default_home()
        if not (home / "schemas").is_dir():
            raise ConfigError(
                f"{home} holds no schemas/ folder; point MEMMATRIX_HOME at a memmatrix checkout"
            )
        xdg = env.get("XDG_CACHE_HOME")
        default_cache = (Path(xdg) if xdg else Path.home() / ".cache") / "memmatrix"
        cache = Path(env["MEMMATRIX_CACHE_DIR"]) if env.get("MEMMATRIX_CACHE_DIR") else default_cache
        roots = tuple(Path(p) for p in (env.get("MEMMATRIX_SYSTEMS") or "").split(os.pathsep) if p)
        missing = [str(p) for p in roots if not p.is_dir()]
        if missing:
            raise ConfigError(f"MEMMATRIX_SYSTEMS names {', '.join(missing)}, which is not a folder; list folders "
                              f"that hold system folders, separated by {os.pathsep!r}")
        return cls(
            home=home,
            cache_dir=cache,
            call_timeout_s=_float(env, "MEMMATRIX_CALL_TIMEOUT", cls.call_timeout_s),
            settle_timeout_s=_float(env, "MEMMATRIX_SETTLE_TIMEOUT", cls.settle_timeout_s),
            start_timeout_s=_float(env, "MEMMATRIX_START_TIMEOUT", cls.start_timeout_s),
            systems=roots,
            private_cases=Path(env["MEMMATRIX_PRIVATE_CASES"]) if env.get("MEMMATRIX_PRIVATE_CASES") else None,
        )

    def with_(self, **changes) -> "Config":
        return replace(self, **changes)

    @property
    def schemas_dir(self) -> Path:
        return self.home / "schemas"

    @property
    def systems_roots(self) -> tuple[Path, ...]:
        """Where system folders are looked up, in order (the first folder of a name wins)."""
        return self.systems or (self.home / "systems",)

    @property
    def cases_dir(self) -> Path:
        return self.home / "cases"
