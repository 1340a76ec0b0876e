"""The embedded runtime: the adapter server as a subprocess on a free loopback port.

The server is ``adapterkit.py`` run by the system's own interpreter, so the system's
dependencies never meet memmatrix's. It gets an allow-listed environment (runtimes/procs.py),
its own session, and SIGTERM when memmatrix dies. It is a subreaper and stops every process
below it, daemons included, when it stops; stopping it here kills what is left of its tree,
on success, failure and Ctrl-C. After a restart the next restart's server is started at once and waits for
its go (``--wait-go``) before importing the adapter: a restart costs the old process's exit and the system's
own imports, not a whole new interpreter.
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
from typing import NamedTuple

from .. import adapterkit
from ..common.errors import AdapterError
from ..exchange.wire import HttpEndpoint
from .base import Runtime
from .procs import declared_env, kill_snapshot, passed_env, snapshot_tree

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


class Server(NamedTuple):
    proc: subprocess.Popen
    ready: int  # the read end of its ready pipe


class EmbeddedRuntime(Runtime):
    name = "embedded"

    def __init__(self, *args):
        super().__init__(*args)
        self.proc: subprocess.Popen | None = None
        self.python = sys.executable
        self.found = False
        self.log_path: Path | None = None
        self.spare: Server | None = None  # the next restart's server, waiting for its go
        self._environ: dict | None = None

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
        self.log_path = self.scratch() / "adapter.log"
        with self.system_time():  # the system's interpreter, its imports and the adapter server coming up
            server, self.spare = self.spare or self._spawn(), None
            self._launch(server)
        took = time.monotonic() - started
        if took > 2:  # a slow start (a heavy import) is worth saying; a fast one is not
            print(f"memmatrix: adapter for {self.spec.name} answering on {self.endpoint.base_url} after {took:.1f} s",
                  file=sys.stderr, flush=True)

    def _spawn(self) -> Server:
        """An adapter server process that has started its interpreter and read adapterkit, and waits for its go
        (``--wait-go``) before it imports the adapter: the system's own code runs only once it is told to."""
        scratch = self.scratch()
        cmd = [self.python, "-u", "-c", adapterkit.BOOT, adapterkit.__file__, "--adapter", self.spec.adapter,
               "--data-dir", str(scratch / "data"), "--port", "0", "--port-file", str(scratch / "port"),
               "--runtime-config", json.dumps(self.runtime_config), "--parent-pid", str(os.getpid()),
               "--wait-go"]
        read, write = os.pipe()
        cmd[-1:-1] = ["--ready-fd", str(write)]
        if self._environ is None:
            self._environ = self._env()
        log = open(self.log_path, "a", encoding="utf-8")
        try:  # no preexec_fn (the server asks for SIGTERM on the harness's death itself): vfork, not fork
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                    start_new_session=True, env=self._environ, pass_fds=(write,))
        except BaseException:
            os.close(read)
            raise
        finally:
            log.close()
            os.close(write)
        return Server(proc, read)

    def _launch(self, server: Server) -> None:
        """Tell ``server`` to go and wait, woken by its ready pipe (or by its exit: the pipe's end), until it
        listens and says which wire version it speaks."""
        self.proc = server.proc
        try:
            server.proc.stdin.write(b"go\n")
            server.proc.stdin.close()
        except OSError:
            pass  # it has exited: the pipe says so below
        deadline = time.monotonic() + self.config.start_timeout_s
        ready = b""
        try:
            while not ready.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AdapterError(self._failure(f"did not listen within {self.config.start_timeout_s:g} s "
                                                     "(MEMMATRIX_START_TIMEOUT)"))
                if select.select([server.ready], [], [], min(left, 1.0))[0]:
                    got = os.read(server.ready, 64)
                    if not got:  # the write end closed: the server exited (or closed it) before it listened
                        break
                    ready += got
                elif server.proc.poll() is not None:  # the pipe held open by a descendant it left behind
                    break
        finally:
            os.close(server.ready)
        port, _, wire = ready.decode(errors="replace").strip().partition(" ")
        if not port.isdigit():
            code = server.proc.poll()
            if code is None:
                try:
                    server.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
                code = server.proc.returncode
            raise AdapterError(self._failure(f"exited with code {code} before it listened"))
        endpoint = HttpEndpoint(f"http://127.0.0.1:{int(port)}")
        if wire != str(adapterkit.WIRE_VERSION):
            raise AdapterError(self._failure(f"speaks wire version {wire}, memmatrix speaks {adapterkit.WIRE_VERSION}"))
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
        with self.system_time():
            if self.spare is None:  # the first restart: later ones find a server started during the case before
                self.spare = self._spawn()
            self._halt_tree()
        if self.endpoint is not None:
            self.endpoint.close()
        (self.scratch() / "port").unlink(missing_ok=True)
        self.start()
        with self.system_time():
            self.spare = self._spawn()  # the next restart's interpreter starts now, beside the next case

    def stop(self) -> None:
        self._halt()
        self._drop_spare()
        self._keep_log()
        super().stop()

    def _drop_spare(self) -> None:
        """A spare server never told to go has loaded no adapter: closing its stdin ends it (EOF, exit 0)."""
        spare, self.spare = self.spare, None
        if spare is None:
            return
        os.close(spare.ready)
        try:
            spare.proc.stdin.close()
            spare.proc.wait(timeout=SHUTDOWN_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            spare.proc.kill()
            spare.proc.wait()

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
                    self.endpoint.shutdown(timeout=2)
                    exited(proc, SHUTDOWN_WAIT_S)
                except (OSError, subprocess.TimeoutExpired):
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
