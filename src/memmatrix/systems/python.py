"""The interpreter a system's environment is built with, found and tried (its pinned ``python`` X.Y)."""

from __future__ import annotations

import glob
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from ..common.errors import RuntimeFailure


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


def base_python(spec) -> str:
    """The interpreter a system's environment is built with (``spec``: a SystemSpec): its pinned ``python`` X.Y,
    found and tried.

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
