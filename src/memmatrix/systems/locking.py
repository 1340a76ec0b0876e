"""Hashed lock files for releases a system.yaml does not pin, generated once and cached.

uv (``uv pip compile --generate-hashes``) resolves against the package index for the exact interpreter
version the environment will use; it reads each file's hash from the index instead of downloading every
wheel as pip-tools does, which makes a sweep over a dozen releases minutes instead of an hour. uv runs
from its own pinned tool environment in the cache, never from memmatrix's. A lock is keyed by its input
(requirements, interpreter version, index), so a rerun finds it and builds nothing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..common.config import Config
from ..common.errors import RuntimeFailure

UV = "uv==0.13.9"
#: lines a lock must never carry: they name one machine's package indexes
MACHINE_LINES = ("--index-url", "--extra-index-url", "--find-links", "-f ", "-i ", "--trusted-host")


def _progress(msg: str) -> None:
    print(f"memmatrix: {msg}", file=sys.stderr, flush=True)


def uv_binary(config: Config) -> Path:
    """uv in its own environment under the cache, installed once."""
    root = config.cache_dir / "tools" / UV.replace("==", "-")
    uv = root / "bin" / "uv"
    if uv.is_file():
        return uv
    _progress(f"installing {UV} (lock generation) into {root}")
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
    done = subprocess.run([str(root / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", UV],
                          capture_output=True, text=True)
    if done.returncode != 0 or not uv.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeFailure(f"could not install {UV} for lock generation ({last}); check that pip can reach the "
                             "package index")
    return uv


def strip_machine_lines(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not line.lstrip().startswith(MACHINE_LINES))


def lock_key(requirements: str, python_full: str, index: str) -> str:
    return hashlib.sha256(f"{requirements}\0{python_full}\0{index}".encode()).hexdigest()[:12]


def cached_lock_path(config: Config, name: str, version: str, requirements: str, python_full: str, index: str) -> Path:
    return config.cache_dir / "locks" / name / f"{version}-{lock_key(requirements, python_full, index)}.txt"


def generate_lock(config: Config, out: Path, requirements: str, python_full: str, index: str, label: str,
                  version: str) -> Path:
    """Write a hashed lock for ``requirements`` at ``out`` (atomic); a lock already there is reused."""
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".in").write_text(requirements, encoding="utf-8")
    log = out.with_suffix(".log")
    _progress(f"locking {label} for Python {python_full} against {index} (uv)")
    with tempfile.TemporaryDirectory(prefix="memmatrix-lock-") as tmp:
        # uv names its input in the lock's "# via -r" lines: a path relative to a scratch folder, the one a
        # system folder uses (requirements/<version>.in), so a committed lock names no path of this machine
        source = Path("requirements") / f"{version}.in"
        (Path(tmp) / source).parent.mkdir()
        (Path(tmp) / source).write_text(requirements, encoding="utf-8")
        cmd = [str(uv_binary(config)), "pip", "compile", source.as_posix(), "--generate-hashes", "--no-header",
               "--python-version", python_full, "--default-index", index, "--output-file", str(out) + ".part"]
        env = {**os.environ, "UV_NO_PROGRESS": "1"}
        with open(log, "w", encoding="utf-8") as fh:
            done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=1800, cwd=tmp)
    part = Path(str(out) + ".part")
    if done.returncode != 0 or not part.is_file():
        part.unlink(missing_ok=True)
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeFailure(f"could not lock {label}: {tail[0]} (full log: {log})")
    part.write_text(strip_machine_lines(part.read_text(encoding="utf-8")), encoding="utf-8")
    part.replace(out)
    return out
