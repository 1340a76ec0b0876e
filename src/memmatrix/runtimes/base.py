"""What every runtime provides."""

from __future__ import annotations

import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from ..common.config import Config
from ..systems import SystemSpec
from ..exchange.wire import Endpoint
from .procs import make_scratch


class Runtime:
    name = ""

    def __init__(self, spec: SystemSpec, config: Config, runtime_config: dict):
        self.spec = spec
        self.config = config
        self.runtime_config = dict(runtime_config)
        self.endpoint: Endpoint | None = None
        self.gateway = None        # set by runtimes that host the model gateway themselves (compose)
        self.gateway_spec = None   # (GatewaySettings, case files, system dialects) handed over by start_runtime
        self._scratch: Path | None = None
        self.ledger = None         # overhead.Ledger: the system's own start and stop times go there

    @contextmanager
    def _spent(self, kind: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            if self.ledger is not None:
                getattr(self.ledger, kind)(t0, time.perf_counter())

    def system_time(self):
        """Time the system spends starting or stopping (its imports, its servers), not the harness."""
        return self._spent("system_span")

    def install_time(self):
        """Time spent finding or building the system's environment (once per machine)."""
        return self._spent("install_span")

    def scratch(self) -> Path:
        """A private folder for this run's stores, removed when the runtime stops. Its name carries this
        process's pid: the next run removes it if this one is killed before it can."""
        if self._scratch is None:
            self._scratch = make_scratch(self.spec.name)
        return self._scratch

    def data_dir(self) -> Path | None:
        """The folder that holds the system's stores (for their size on disk), or None where it is not ours."""
        return None

    def start(self) -> None:
        raise NotImplementedError

    def restart(self) -> None:
        """Stop the system and start it again on the same stores (durability across restarts)."""
        raise NotImplementedError

    def stop(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def describe(self) -> dict:
        """Runtime facts for the stamp (never part of the transcript)."""
        return {"name": self.name}
