"""The stamp: everything needed to say what produced a result and which results are comparable."""

from __future__ import annotations

import platform
import subprocess
import threading
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from .. import __version__
from ..common.canon import sha256_json

#: Fields of the stamp that decide comparability; the system version is left out on purpose,
#: so that two pinned versions of one system under one setup can be diffed.
FINGERPRINT_FIELDS = ("system.name", "system.options", "protocol.name", "protocol.version", "dataset.sha256",
                      "model.mode", "model.id", "model.oracle_version", "judge.model", "judge.prompt",
                      "clock.mode", "seed")


_git_lock = threading.Lock()


def prefetch_git_sha(path: str) -> None:
    """Ask git now, on a thread, so that a run's stop finds the answer waiting (two git processes, a few
    milliseconds that would otherwise come after the system's last call)."""
    threading.Thread(target=git_sha, args=(path,), daemon=True, name="memmatrix-git-sha").start()


def git_sha(path: str) -> str:
    with _git_lock:  # a prefetch still running is waited for, not repeated
        return _git_sha(path)


@lru_cache(maxsize=None)
def _git_sha(path: str) -> str:
    try:
        out = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    sha = out.stdout.strip()
    if out.returncode != 0 or not sha:
        return "unknown"
    # results/ is where runs are written: regenerating them must not make the code look modified
    dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no", "--", ".",
                            ":(exclude)results"], capture_output=True, text=True, timeout=10).stdout.strip()
    return sha + ("-dirty" if dirty else "")


def harness(home: Path) -> dict:
    return {"name": "memmatrix", "version": __version__, "git_sha": git_sha(str(home)),
            "python": platform.python_version(), "platform": f"{platform.system()}-{platform.machine()}"}


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _get(stamp: dict, dotted: str):
    value = stamp
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def scoring_version(stamp: dict) -> str:
    """The protocol version whose scorer produced the cells: the one that ran, or a later one that re-derived
    them from the unchanged transcript (``memmatrix rescore``)."""
    return (stamp.get("rescored") or {}).get("protocol_version") or stamp["protocol"]["version"]


def fingerprint(stamp: dict) -> str:
    """Runs with equal fingerprints measured the same thing the same way (system version aside)."""
    fields = {f: _get(stamp, f) for f in FINGERPRINT_FIELDS}
    fields["protocol.version"] = scoring_version(stamp)
    return sha256_json(fields)[:16]
