"""One virtualenv per (system, version, interpreter, lock-file hash), built once and reused.

The environment lives in the user cache (MEMMATRIX_CACHE_DIR). A changed lock file makes
a new one. An environment counts as built only once its ready-marker is written, so an
interrupted install is rebuilt, never half-used. A failed install names its log.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

from ..config import Config
from ..errors import RuntimeFailure
from ..systems import SystemSpec

READY = ".memmatrix-ready"


def _progress(msg: str) -> None:
    print(f"memmatrix: {msg}", file=sys.stderr, flush=True)


@lru_cache(maxsize=None)
def python_version(python: str) -> str:
    if python == sys.executable:
        return platform.python_version()
    cfg = Path(python).parent.parent / "pyvenv.cfg"  # an environment says its version: no interpreter to start
    try:
        for line in cfg.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "version" and value.strip():
                return value.strip()
    except OSError:
        pass
    out = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True, timeout=30)
    return out.stdout.strip() or "unknown"


@lru_cache(maxsize=None)  # asked again on every restart otherwise: a subprocess each time
def _works(python: str) -> bool:
    if python == sys.executable:  # the running interpreter: asked here, not in a subprocess
        return importlib.util.find_spec("venv") is not None
    try:
        return subprocess.run([python, "-c", "import venv"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def base_python(spec: SystemSpec) -> str:
    """The interpreter a system's environment is built with: its pinned ``python`` X.Y, found and tried.

    Looked for, in order: MEMMATRIX_PYTHON_X_Y, the running interpreter when it is X.Y, pythonX.Y on
    PATH, and pyenv's installed X.Y (a pyenv shim on PATH fails when that version is not activated).
    """
    wanted = spec.version_meta.get("python")
    if not wanted:
        return sys.executable
    candidates = [os.environ.get(f"MEMMATRIX_PYTHON_{wanted.replace('.', '_')}")]
    if f"{sys.version_info.major}.{sys.version_info.minor}" == wanted:
        candidates.append(sys.executable)  # before PATH: it needs no subprocess to try (a pyenv shim takes 0.1 s)
    candidates.append(shutil.which(f"python{wanted}"))
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{wanted}.*/bin/python{wanted}")), reverse=True)
    for python in filter(None, candidates):
        if _works(python):
            return python
    raise RuntimeFailure(f"system {spec.name} {spec.version} needs Python {wanted}, and no working python{wanted} "
                         f"was found; install it (apt install python{wanted}-venv, or pyenv install {wanted}) or set "
                         f"MEMMATRIX_PYTHON_{wanted.replace('.', '_')} to its path")


def env_key(spec: SystemSpec, python: str) -> str:
    h = hashlib.sha256()
    h.update(python_version(python).encode())
    h.update((spec.lock_sha256 or "no-lock").encode())
    return h.hexdigest()[:12]


def environment_python(spec: SystemSpec, config: Config) -> str:
    """The interpreter of the system's environment, creating the environment on first use."""
    if spec.folder is None:
        return spec.python or sys.executable  # an ad-hoc adapter runs with the interpreter it was given
    python = base_python(spec)
    root = config.cache_dir / "envs"
    root.mkdir(parents=True, exist_ok=True)
    env = root / f"{spec.name}-{spec.version}-{env_key(spec, python)}"
    with open(root / f"{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs never build the same environment at once
        if not (env / READY).exists():
            _build(spec, python, env, root / f"{env.name}.install.log")
    return str(env / "bin" / "python")


def _build(spec: SystemSpec, python: str, env: Path, log_path: Path) -> None:
    shutil.rmtree(env, ignore_errors=True)
    started = time.monotonic()
    what = f"{spec.name} {spec.version}"
    _progress(f"building the environment for {what} in {env} (once; later runs reuse it)")
    steps = [[python, "-m", "venv", *([] if spec.lock else ["--without-pip"]), str(env)]]
    if spec.lock:
        steps.append([str(env / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                      "--no-input", "--require-hashes", "--no-deps", "-r", str(spec.lock)])
    with open(log_path, "w", encoding="utf-8") as log:
        for cmd in steps:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            if len(steps) > 1 and cmd is steps[-1]:
                _progress(f"installing {what} from {spec.lock.name} (log: {log_path})")
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            if rc != 0:
                tail = "\n".join("    " + ln for ln in log_path.read_text(errors="replace").splitlines()[-20:])
                shutil.rmtree(env, ignore_errors=True)
                hint = spec.version_meta.get("install_hint")
                raise RuntimeFailure(f"building the environment for {what} failed (exit {rc}).\n"
                                     + (f"  hint: {hint}\n" if hint else "") + f"  log: {log_path}\n{tail}")
    (env / READY).write_text(f"{spec.lock_sha256 or 'no-lock'}\n")
    _progress(f"environment for {what} ready in {time.monotonic() - started:.1f} s")
