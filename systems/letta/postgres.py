"""Postgres 16 + pgvector from the pgserver wheel, run from the adapter's state folder.

The binaries (and the libraries beside the package their RPATH names) are copied out of the installed pgserver package into the state folder (the environment
may sit under a home directory an unprivileged user cannot enter). Postgres refuses to run as root:
when this process is root, initdb and postgres run as the ``postgres`` user (or ``nobody`` where
there is none) through ``setpriv`` (exec, no extra process), the cluster folder is owned by that user,
and the state folder's temporary ancestors get the search bit (o+x, never read) so that user can
reach it. Not root: everything runs as this user. The server is a direct child (the adapter server
is a subreaper), started on a free loopback port (TCP only, no unix socket), trust auth on loopback
only.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from adapterkit import grant_search, unprivileged_user

DATABASE, ROLE = "letta", "letta"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(ready, proc: subprocess.Popen | None, what: str, log: Path, timeout_s: float, error: type,
               interval: float = 0.2) -> None:
    """Return once ``ready()`` holds; raise ``error`` naming ``what`` and its log if the process exits or time runs out."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if proc is not None and proc.poll() is not None:
            raise error(f"{what} exited with code {proc.returncode} before it was ready; see {log}")
        if time.monotonic() > deadline:
            raise error(f"{what} was not ready within {timeout_s:g} s; see {log}")
        time.sleep(interval)


class PostgresError(RuntimeError):
    pass


class Postgres:
    def __init__(self, root: Path, log):
        self.root = root                      # <state>/postgres
        self.install = root / "dist" / "pgserver" / "pginstall"  # the wheel's layout: its RPATH is relative
        self.data = root / "cluster"
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.user = self._user()

    # ------------------------------------------------------------------ identity
    @staticmethod
    def _user() -> pwd.struct_passwd | None:
        """None when this process may run Postgres itself; else the unprivileged user it runs as."""
        try:
            return unprivileged_user("Postgres")
        except PermissionError as exc:
            raise PostgresError(str(exc)) from None

    def _as_user(self, cmd: list[str]) -> list[str]:
        if self.user is None:
            return cmd
        setpriv = shutil.which("setpriv")
        if setpriv:
            return [setpriv, f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups", "--", *cmd]
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", self.user.pw_name, "--", *cmd]
        raise PostgresError("running as root, Postgres must run as an unprivileged user, and neither setpriv nor "
                            "runuser (util-linux) is installed; install util-linux or run memmatrix as a non-root user")

    def _env(self) -> dict:
        return {"PATH": f"{self.install / 'bin'}:/usr/bin:/bin", "LC_ALL": "C", "LANG": "C",
                "HOME": str(self.root), "TZ": "UTC"}

    def _reachable(self) -> None:
        try:
            grant_search(self.root, self.user.pw_name, "Postgres")
        except PermissionError as exc:
            raise PostgresError(str(exc)) from None

    # ------------------------------------------------------------------ lifecycle
    def _prepare(self) -> bool:
        """Binaries in place, cluster initialised; True when the cluster is new."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not (self.install / "bin" / "postgres").exists():
            import pgserver  # the wheel's binaries: pgserver/pginstall/{bin,lib,share}
            pkg = Path(pgserver.__file__).parent
            shutil.copytree(pkg / "pginstall", self.install, symlinks=True, dirs_exist_ok=True)
            shutil.copytree(pkg.parent / "pgserver.libs", self.install.parent.parent / "pgserver.libs",
                            symlinks=True, dirs_exist_ok=True)
        if self.user is not None:
            self._reachable()
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        if (self.data / "PG_VERSION").exists():
            return False
        self._run([str(self.install / "bin" / "initdb"), "-D", str(self.data), "-U", ROLE, "--auth=trust",
                   "-E", "UTF8", "--no-locale", "--no-sync"], "initdb")
        return True

    def _run(self, cmd: list[str], what: str) -> None:
        out = subprocess.run(self._as_user(cmd), env=self._env(), stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=120, cwd=self.root)
        self.log.write(f"$ {' '.join(cmd)}\n{out.stdout}{out.stderr}\n")
        self.log.flush()
        if out.returncode != 0:
            raise PostgresError(f"Postgres {what} failed (exit {out.returncode}): {(out.stderr or out.stdout)[-800:]}")

    def start(self, timeout_s: float = 60) -> str:
        """Start (initialising on first use) and return the connection URI for Letta."""
        new = self._prepare()
        (self.data / "postmaster.pid").unlink(missing_ok=True) if not self._pid_alive() else None
        self.port = free_port()
        cmd = [str(self.install / "bin" / "postgres"), "-D", str(self.data), "-p", str(self.port),
               "-h", "127.0.0.1", "-k", "", "-c", "fsync=off", "-c", "max_connections=100"]  # TCP only: a socket
        # path under a deep state folder passes the 107 bytes of sun_path
        self.proc = subprocess.Popen(self._as_user(cmd), env=self._env(), stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, cwd=self.root)
        wait_ready(self._accepts, self.proc, "postgres", self.root.parent / "postgres.log", timeout_s, PostgresError)
        if new:
            psql = [str(self.install / "bin" / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE,
                    "-v", "ON_ERROR_STOP=1", "-q"]
            self._run([*psql, "-d", "postgres", "-c", f"CREATE DATABASE {DATABASE}"], "create database")
            self._run([*psql, "-d", DATABASE, "-c", "CREATE EXTENSION IF NOT EXISTS vector"], "create extension")
        return self.uri

    @property
    def uri(self) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{DATABASE}"

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                pass
        except OSError:
            return False
        out = subprocess.run([str(self.install / "bin" / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-U", ROLE],
                             env=self._env(), capture_output=True)
        return out.returncode == 0

    def _pid_alive(self) -> bool:
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 0)
            return True
        except (OSError, ValueError, IndexError):
            return False

    def stop(self, timeout_s: float = 2.5) -> None:
        """Fast shutdown (SIGINT: roll back, disconnect, checkpoint), then SIGKILL; never leaves a process."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGINT, timeout_s), (signal.SIGQUIT, 0.5), (signal.SIGKILL, 1.0)):
            try:
                proc.send_signal(sig)
            except OSError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
