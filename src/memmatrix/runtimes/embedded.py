"""The embedded runtime: the adapter server as a subprocess on a free loopback port.

The server is ``adapterkit.py`` run by the system's own interpreter, so the system's
dependencies never meet memmatrix's. It gets an allow-listed environment (runtimes/procs.py),
its own session, and SIGTERM when memmatrix dies. It is a subreaper and stops every process
below it, daemons included, when it stops; stopping it here kills what is left of its tree,
on success, failure and Ctrl-C.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from .. import adapterkit
from ..common.errors import AdapterError
from ..exchange.wire import HttpEndpoint
from .base import Runtime
from .procs import declared_env, die_with_this_process, kill_snapshot, passed_env, snapshot_tree

#: seconds an adapter gets to stop after POST /shutdown: its close(), then its descendants' SIGTERM grace
SHUTDOWN_WAIT_S = adapterkit.CLOSE_TIMEOUT_S + adapterkit.TERM_GRACE_S + 2


def exited(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for ``proc`` to exit, woken the moment it does (a pidfd), not at Popen.wait's next 50 ms poll;
    raises subprocess.TimeoutExpired like Popen.wait."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux 5.3+), or it has already been reaped
        proc.wait(timeout=timeout)
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    proc.wait(timeout=0.5)


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:]) or "    (empty log)"


class EmbeddedRuntime(Runtime):
    name = "embedded"

    def __init__(self, *args):
        super().__init__(*args)
        self.proc: subprocess.Popen | None = None
        self.python = sys.executable
        self.found = False
        self.log_path: Path | None = None

    def data_dir(self) -> Path | None:
        return self.scratch() / "data"

    def interpreter(self) -> str:
        """The Python that runs the adapter: the system's own environment (see runtimes/venv.py)."""
        from .venv import environment_python
        return environment_python(self.spec, self.config)

    def start(self) -> None:
        if not self.found:  # found (and the environment checked) once; a restart reuses it
            with self.install_time():
                self.python, self.found = self.interpreter(), True
        started = time.monotonic()
        scratch = self.scratch()
        self.log_path = scratch / "adapter.log"
        port_file = scratch / "port"
        cmd = [self.python, "-u", adapterkit.__file__, "--adapter", self.spec.adapter,
               "--data-dir", str(scratch / "data"), "--port", "0", "--port-file", str(port_file),
               "--runtime-config", json.dumps(self.runtime_config), "--parent-pid", str(os.getpid())]
        env = self._env()
        with self.system_time():  # the system's interpreter, its imports and the adapter server coming up
            self._launch(cmd, env, port_file)
        took = time.monotonic() - started
        if took > 2:  # a slow start (a heavy import) is worth saying; a fast one is not
            print(f"memmatrix: adapter for {self.spec.name} answering on {self.endpoint.base_url} after {took:.1f} s",
                  file=sys.stderr, flush=True)

    def _launch(self, cmd: list[str], env: dict, port_file: Path) -> None:
        log = open(self.log_path, "a", encoding="utf-8")
        try:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env, preexec_fn=die_with_this_process())
        finally:
            log.close()
        deadline = time.monotonic() + self.config.start_timeout_s
        while not port_file.exists():
            if self.proc.poll() is not None:  # polled every 5 ms: a restart should cost the start, not the wait
                raise AdapterError(self._failure(f"exited with code {self.proc.returncode} before it listened"))
            if time.monotonic() > deadline:
                raise AdapterError(self._failure(f"did not listen within {self.config.start_timeout_s:g} s "
                                                 "(MEMMATRIX_START_TIMEOUT)"))
            time.sleep(0.005)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        endpoint = HttpEndpoint(url)
        try:
            health = endpoint.health(timeout=5)
        except (requests.RequestException, ValueError) as exc:
            raise AdapterError(self._failure(f"listens at {url} but /health does not answer ({exc})")) from None
        if health.get("wire_version") != adapterkit.WIRE_VERSION:
            raise AdapterError(self._failure(f"speaks wire version {health.get('wire_version')}, "
                                             f"memmatrix speaks {adapterkit.WIRE_VERSION}"))
        self.endpoint = endpoint

    def _env(self) -> dict:
        """The allow-list and the system's declared variables; the system's temporary files go to the scratch
        folder (removed with it), unless that path is too long for the unix sockets some systems put there."""
        env = {k: v for k, v in passed_env(declared_env(self.spec)).items() if not k.startswith("PYTHON")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        tmp = self.scratch() / "tmp"
        if len(str(tmp)) <= 64:  # + "/tmpXXXXXXXX/redis.socket" stays below the 108 bytes of sun_path
            tmp.mkdir(exist_ok=True)
            env["TMPDIR"] = str(tmp)
        return env

    def _failure(self, what: str) -> str:
        return (f"the adapter server for {self.spec.name!r} ({self.spec.adapter}) {what}.\n"
                f"  log: {self.log_path}\n{log_tail(self.log_path)}")

    def restart(self) -> None:
        self._halt()
        if self.endpoint is not None:
            self.endpoint.close()
        (self.scratch() / "port").unlink(missing_ok=True)
        self.start()

    def stop(self) -> None:
        self._halt()
        self._keep_log()
        super().stop()

    def _keep_log(self) -> None:
        """A log holding a traceback (a call raised inside the adapter) outlives the scratch folder: it is copied
        under the cache's logs/ and its path said, since the result records only the traceback's last frames."""
        log = self.log_path
        if log is None or not log.is_file() or "Traceback (most recent call last)" not in log.read_text(errors="replace"):
            return
        kept = self.config.cache_dir / "logs" / f"{self.spec.name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, kept)
        print(f"memmatrix: a call raised inside the adapter for {self.spec.name}; its log, with each traceback: "
              f"{kept}", file=sys.stderr, flush=True)

    def _halt(self) -> None:
        with self.system_time():
            self._halt_tree()

    def _halt_tree(self) -> None:
        """POST /shutdown (the server closes the adapter and stops its descendants), then SIGTERM (it stops
        them at once), then SIGKILL to its process group and to every descendant it had."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        tree: list = []
        if proc.poll() is None:
            if self.endpoint is not None:  # else it never answered (a hanging import): no shutdown to wait for
                try:
                    self.endpoint.session.post(f"{self.endpoint.base_url}/shutdown", timeout=2)
                    exited(proc, SHUTDOWN_WAIT_S)
                except (requests.RequestException, subprocess.TimeoutExpired):
                    pass
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if proc.poll() is not None:
                    break
                tree = snapshot_tree(proc.pid) or tree  # its daemons are not in its process group
                try:
                    os.kill(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    continue
        try:  # children the adapter started in its session outlive a clean exit otherwise
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        kill_snapshot(tree)

    def describe(self) -> dict:
        from .venv import python_version
        return {"name": self.name, "python": python_version(self.python)}
