"""Tear a compose project down once the memmatrix process that started it is gone (standard library only).

The compose runtime starts this in a session of its own, holding the read end of a pipe whose write
end only memmatrix has. When the run ends normally, memmatrix tears the project down itself and
writes ``done``: the reaper exits without doing anything. When memmatrix dies without saying so
(``kill -9``, a crash, an OOM kill), the pipe reaches end-of-file (or, should the write end have
leaked, the pid disappears) and the reaper runs ``docker compose -p PROJECT down --volumes`` until
no container, network or volume of the project is left.

    python reaper.py --watch-fd FD --pid PID --start-time TICKS --project NAME
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
import time

SETTLE_CHECKS = 3      # consecutive empty checks before the project counts as gone (an `up` may be racing)
CHECK_EVERY_S = 2.0
GIVE_UP_AFTER_S = 180.0


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2:].split()[19])


def _alive(pid: int, start_time: int | None) -> bool:
    if os.path.isdir("/proc"):
        return _start_time(pid) == start_time
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_for_owner(fd: int, pid: int, start_time: int | None) -> bool:
    """Block until the owner ends; True when it said ``done`` (it tore the project down itself)."""
    said = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 64)
            said += chunk
            if b"done" in said:
                return True
            if not chunk:  # end of file: the owner is gone without a word
                return False
        elif not _alive(pid, start_time):
            return False


def leftovers(project: str) -> bool:
    label = f"label=com.docker.compose.project={project}"
    for cmd in (["docker", "ps", "-aq", "--filter", label], ["docker", "network", "ls", "-q", "--filter", label],
                ["docker", "volume", "ls", "-q", "--filter", label]):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0 or out.stdout.strip():
            return True
    return False


def teardown(project: str, check_every: float = CHECK_EVERY_S) -> None:
    deadline, empty = time.monotonic() + GIVE_UP_AFTER_S, 0
    while time.monotonic() < deadline:
        if leftovers(project):
            empty = 0
            # no compose file (cwd /): compose finds the project's resources by its label
            subprocess.run(["docker", "compose", "-p", project, "down", "--volumes", "--remove-orphans",
                            "--timeout", "10"], cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        else:
            empty += 1
            if empty >= SETTLE_CHECKS:
                return
        time.sleep(check_every)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watch-fd", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--start-time", type=int)
    parser.add_argument("--project", required=True)
    parser.add_argument("--check-every", type=float, default=CHECK_EVERY_S, help=argparse.SUPPRESS)  # tests
    ns = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    if wait_for_owner(ns.watch_fd, ns.pid, ns.start_time):
        return 0
    teardown(ns.project, ns.check_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
