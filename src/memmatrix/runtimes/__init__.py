"""Runtimes: where an adapter runs. Each yields an Endpoint and describes itself for the stamp.

- ``inprocess``: the adapter class inside this process (unit tests; no isolation).
- ``embedded``: an adapter server in a subprocess on a free loopback port (the default).
- ``compose``: the system's docker compose services (see runtimes/compose.py).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..common.config import Config
from ..common.errors import ConfigError
from ..systems import SystemSpec
from .base import Runtime

RUNTIMES = ("inprocess", "embedded", "compose")


def require(kind: str) -> None:
    """Refuse, before any work, a runtime whose libraries are not installed: compose needs the [compose] extra
    (testcontainers and the Docker SDK), which users of the embedded runtime never install."""
    if kind == "compose":
        import importlib.util
        missing = [m for m in ("testcontainers", "docker") if importlib.util.find_spec(m) is None]
        if missing:
            raise ConfigError(f"the compose runtime needs {' and '.join(missing)}: pip install 'memmatrix[compose]'")


@contextmanager
def start_runtime(kind: str, spec: SystemSpec, config: Config, runtime_config: dict | None = None,
                  gateway: tuple | None = None, ledger=None) -> Iterator[Runtime]:
    """Start ``spec`` under runtime ``kind``; always stops it, on success, failure and Ctrl-C."""
    if kind == "inprocess":
        from .inprocess import InProcessRuntime as cls
    elif kind == "embedded":
        from .embedded import EmbeddedRuntime as cls
    elif kind == "compose":
        require(kind)
        from .compose import ComposeRuntime as cls
    else:
        raise ConfigError(f"unknown runtime {kind!r}; choose one of {', '.join(RUNTIMES)}")
    if spec.folder is not None and kind not in spec.runtimes:
        raise ConfigError(f"system {spec.name!r} does not offer the {kind!r} runtime; it offers {spec.runtimes}")
    runtime = cls(spec, config, runtime_config or {})
    runtime.gateway_spec = gateway  # (settings, case files, dialects): a runtime that hosts its own gateway uses it
    runtime.ledger = ledger  # overhead.Ledger, or None
    try:
        runtime.start()
        yield runtime
    finally:
        runtime.stop()
