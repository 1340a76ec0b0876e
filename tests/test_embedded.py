"""The embedded runtime: one environment per (system, version, lock hash), built once and reused."""

import pytest

from conftest import ROOT
from memmatrix.cli import main


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_a_second_run_reuses_the_environment(env, capsys):
    args = ["run", "--system", "notes", "--protocol", "deletion", "--out", str(env / "out")]
    assert main(args) == 0
    first = capsys.readouterr().err
    assert "building the environment for notes 1.0" in first
    envs = sorted((env / "cache" / "envs").iterdir())
    ready = [p / ".memmatrix-ready" for p in envs if p.is_dir()]
    assert len(ready) == 1 and ready[0].exists()
    stamp = ready[0].stat().st_mtime_ns
    assert main(args) == 0
    assert "building the environment" not in capsys.readouterr().err
    assert ready[0].stat().st_mtime_ns == stamp
    assert sorted((env / "cache" / "envs").iterdir()) == envs


def test_an_interrupted_build_is_rebuilt_not_used(env, capsys):
    args = ["run", "--system", "notes", "--protocol", "deletion", "--out", str(env / "out")]
    assert main(args) == 0
    folder = next(p for p in (env / "cache" / "envs").iterdir() if p.is_dir())
    (folder / ".memmatrix-ready").unlink()  # as if the install had been killed before the marker
    capsys.readouterr()
    assert main(args) == 0
    assert "building the environment for notes 1.0" in capsys.readouterr().err
    assert (folder / ".memmatrix-ready").exists()
