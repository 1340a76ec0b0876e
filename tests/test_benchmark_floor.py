"""benchmarks/floor.py splits a cold verify into what it cannot go below and memmatrix's own checks: the split is
only worth reading while the hook that counts the systems' own oracle dialects still catches their calls."""

import importlib.util
import json
import shutil

from conftest import ROOT

RESULT = ROOT / "results" / "door" / "agno" / "3.1.10" / "embedded"  # small, and its system brings oracle dialects


def _floor():
    spec = importlib.util.spec_from_file_location("memmatrix_bench_floor", ROOT / "benchmarks" / "floor.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _env(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))


def test_the_systems_dialects_are_counted_apart_and_the_rows_add_up(monkeypatch, tmp_path, capsys):
    _env(monkeypatch, tmp_path)
    floor = _floor()
    split = floor.verify_split([RESULT])
    assert split["rc"] == 0 and split["failed"] == []
    assert split["calls"] > 0 and 0 < split["systems"] < split["cpu"]  # the hook on the oracle's _ask still catches them
    assert 0 < split["gold"] < split["systems"]  # agno's dialects look facts up in the gold index
    from memmatrix.model.gold import GoldIndex
    assert all(getattr(GoldIndex, name).__name__ == name for name in floor.GOLD)  # put back as they were
    read, parsed = (floor.read_floor(floor.transcripts([RESULT]), p) for p in (False, True))
    assert read["lines"] == parsed["lines"] > 0 and read["bytes"] == parsed["bytes"] > 0
    assert floor.main([str(RESULT), "--target", "1000"]) == 0
    out = capsys.readouterr().out
    assert "1 results, 2 transcripts" in out and "systems' own oracle dialects (" in out
    assert "for verify to take 1000 s: it does already" in out


def test_a_result_that_does_not_verify_gives_no_figures(monkeypatch, tmp_path, capsys):
    _env(monkeypatch, tmp_path)
    twin = tmp_path / "results" / "door" / "agno" / "3.1.10" / "embedded"
    shutil.copytree(RESULT, twin)
    result = json.loads((twin / "result.json").read_text())
    result["cases"][0]["cells"][0]["verdict"] = "FAIL" if result["cases"][0]["cells"][0]["verdict"] != "FAIL" else "PASS"
    (twin / "result.json").write_text(json.dumps(result))
    assert _floor().main([str(twin)]) == 1
    assert "verify reported 1 problem(s), first: FAIL" in capsys.readouterr().err
