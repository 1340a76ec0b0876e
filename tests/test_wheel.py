"""pip install of the package is a working tool: the wheel carries schemas/, cases/, systems/ and claims/, and
memmatrix runs and verifies from any folder with no checkout and no MEMMATRIX_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

pytestmark = pytest.mark.heavy


def test_the_wheel_runs_the_reference_system_from_any_folder(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=600)
    (wheel,) = (tmp_path / "dist").glob("memmatrix-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for folder in ("schemas", "cases", "systems", "claims"):
        assert any(n.startswith(f"memmatrix/home/{folder}/") for n in names), folder
    assert not any("__pycache__" in n for n in names)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    subprocess.run([str(tmp_path / "venv" / "bin" / "pip"), "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMMATRIX_", "PYTHON"))}
    tool = str(tmp_path / "venv" / "bin" / "memmatrix")

    def mm(*args):
        return subprocess.run([tool, *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)

    ran = mm("run", "--system", "reference", "--protocol", "deletion", "--runtime", "inprocess", "--out", "out")
    assert ran.returncode == 0, ran.stderr
    assert mm("verify", "out").returncode == 0
    claims = mm("claims", "out")
    assert claims.returncode == 0 and "## Vendor claims" in claims.stdout, claims.stderr
