"""Processes and environments of the things a runtime starts.

- The environment: an adapter (and the compose CLI) gets an allow-list of memmatrix's environment
  plus the variables its system declares (system.yaml ``env``), never the rest: the provider key,
  cloud and forge tokens stay in memmatrix (the model gateway holds the key).
- Dying with memmatrix: an adapter server gets SIGTERM when memmatrix dies (PR_SET_PDEATHSIG, which
  adapterkit asks for first thing given ``--parent-pid``, so the server starts without a ``preexec_fn``;
  the compose CLI gets it set in the child before exec, ``die_with_this_process``) and watches for being
  re-parented; it then stops its descendants.
- Leftovers of killed runs: scratch folders carry the owning pid, and a later run removes those
  whose pid is dead.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Mapping

from .. import adapterkit
from ..common.errors import RuntimeFailure

#: Passed from memmatrix's environment to every adapter process: locale, paths and certificate
#: locations, nothing that authenticates. Anything else must be declared by the system.
SAFE_VARIABLES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
})
SAFE_PREFIXES = ("LC_",)
#: What the docker CLI needs to find its engine and configuration (compose runtime only).
DOCKER_VARIABLES = frozenset({
    "DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "DOCKER_TLS",
    "DOCKER_API_VERSION", "DOCKER_BUILDKIT", "DOCKER_DEFAULT_PLATFORM", "BUILDKIT_PROGRESS", "BUILDX_BUILDER",
    "COMPOSE_BAKE", "COMPOSE_PARALLEL_LIMIT", "COMPOSE_ANSI", "COMPOSE_STATUS_STDOUT", "COMPOSE_MENU",
})
#: Never passed, even when declared: the provider key and the gateway's upstream stay with memmatrix.
RESERVED_PREFIX = "MEMMATRIX_MODEL_"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def declared_env(spec) -> list[str]:
    """The variables a system declares it needs (system.yaml ``env: [NAME, ...]``), checked."""
    names = list(spec.meta.get("env") or [])
    bad = [n for n in names if not isinstance(n, str) or not _NAME.match(n)]
    if bad:
        raise RuntimeFailure(f"system {spec.name!r} declares env {bad}: each entry must be a variable name")
    reserved = [n for n in names if n.startswith(RESERVED_PREFIX)]
    if reserved:
        raise RuntimeFailure(f"system {spec.name!r} declares env {reserved}: {RESERVED_PREFIX}* variables stay with "
                             "memmatrix (the model gateway holds the key, adapters get its URL); remove them from "
                             "system.yaml env")
    return names


def passed_env(declared: Iterable[str] = (), environ: Mapping[str, str] | None = None,
               extra: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed part of ``environ`` plus ``declared`` and ``extra`` names, with loopback exempt from
    any proxy (a system that declares HTTPS_PROXY still reaches the gateway directly)."""
    environ = os.environ if environ is None else environ
    wanted = SAFE_VARIABLES | set(declared) | set(extra)
    env = {k: v for k, v in environ.items()
           if (k in wanted or k.startswith(SAFE_PREFIXES)) and not k.startswith(RESERVED_PREFIX)}
    no_proxy = [h for h in (environ.get("NO_PROXY") or environ.get("no_proxy") or "").split(",") if h.strip()]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(dict.fromkeys([*no_proxy, *LOOPBACK]))
    return env


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot): a pid with another start time is another process."""
    stat = adapterkit.proc_stat(pid)
    return stat[2] if stat else None


def die_with_this_process(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A Popen ``preexec_fn`` that makes the child receive ``sig`` when this process dies (Linux), or None.

    libc is resolved here, in the parent: the child between fork and exec only makes the call.
    """
    if not os.path.isdir("/proc"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(adapterkit.PR_SET_PDEATHSIG, ctypes.c_ulong(sig), ctypes.c_ulong(0), ctypes.c_ulong(0),
              ctypes.c_ulong(0))
        if os.getppid() != parent:  # this process died before the call: the signal will never come
            os._exit(1)
    return preexec


def snapshot_tree(pid: int) -> list[tuple[int, int]]:
    """``pid`` and its descendants as (pid, start time), to be killed after ``pid`` itself is gone."""
    table = adapterkit.proc_table()
    return [(p, table[p][2]) for p in [pid, *adapterkit.descendants(pid, table)] if p in table]


def kill_snapshot(snapshot: list[tuple[int, int]], sig: int = signal.SIGKILL) -> None:
    """Signal every process of a snapshot that is still the same process (pids are reused)."""
    for pid, started in snapshot:
        if start_time(pid) == started:
            try:
                os.kill(pid, sig)
            except OSError:
                pass


# ------------------------------------------------------------------------------- scratch folders

SCRATCH = re.compile(r"^memmatrix-.+-(\d+)-[a-z0-9_]{8}$")


def make_scratch(name: str) -> Path:
    """A private folder ``memmatrix-<name>-<pid>-XXXXXXXX`` in the temp dir; stale ones are removed first."""
    clean_stale_scratch()
    return Path(tempfile.mkdtemp(prefix=f"memmatrix-{name}-{os.getpid()}-"))


def clean_stale_scratch(root: Path | None = None) -> list[Path]:
    """Remove scratch folders whose owning memmatrix process is dead; a live run's are kept."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        m = SCRATCH.match(entry.name)
        if not m or int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1))):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed
