"""One virtualenv per (system, version, interpreter, lock-file hash), built once and reused.

The environment lives in the user cache (MEMMATRIX_CACHE_DIR). A changed lock file makes
a new one. An environment counts as built only once its ready-marker is written, so an
interrupted install is rebuilt, never half-used. A failed install names its log.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..common.config import Config
from ..common.errors import RuntimeFailure
from ..systems import SystemSpec
from ..systems.python import base_python, python_version  # noqa: F401  (base_python: runtimes ask it here)

READY = ".memmatrix-ready"


def _progress(msg: str) -> None:
    print(f"memmatrix: {msg}", file=sys.stderr, flush=True)


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
