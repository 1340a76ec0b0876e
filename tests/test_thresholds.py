"""Cost and latency thresholds (off by default): a comparable run over its baseline's figure by more than the ratio
is listed, only what the threshold names is compared, and a gate fails on it only when asked."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError
from memmatrix.publish.diff import diff
from memmatrix.publish.thresholds import LATENCY_FLOOR_MS, compare, figures, parse

RUN = ROOT / "results" / "deletion" / "mem0"


def _one() -> dict:
    path = sorted(RUN.rglob("embedded/result.json"))[0]
    return json.loads(path.read_text())


def test_a_threshold_is_a_percentage_or_a_ratio_above_one():
    assert parse("150%", "x") == 1.5 and parse(" 2 ", "x") == 2.0 and parse("", "x") is None
    for bad in ("90%", "1", "fast", "-3"):
        with pytest.raises(ConfigError, match="not a ratio above 1"):
            parse(bad, "cost-threshold")


def test_only_figures_past_the_ratio_are_over_each_kind_alone():
    old = _one()
    assert figures(old, "cost")["model tokens"] > 0 and "write p50 ms" in figures(old, "latency")
    new = json.loads(json.dumps(old))
    new["cost"]["total"]["tokens_in"] *= 3
    over = compare(old, new, {"cost": 1.5})
    assert [o.metric for o in over] == ["model tokens"] and over[0].ratio > 1.5
    assert compare(old, new, {"cost": 10.0}) == []            # under a looser threshold
    assert compare(old, new, {"latency": 1.5}) == []          # latency did not move
    new["timings"]["adapter_ms"]["write"]["p50_ms"] = old["timings"]["adapter_ms"]["write"]["p50_ms"] * 4
    assert [o.metric for o in compare(old, new, {"latency": 2.0})] == ["write p50 ms"]


def test_latency_under_the_floor_in_both_runs_is_timer_noise():
    old = _one()
    new = json.loads(json.dumps(old))
    for run in (old, new):
        run["timings"]["adapter_ms"] = {"reset": {"calls": 3, "p50_ms": 0.5, "p95_ms": 1, "total_ms": 2}}
    new["timings"]["adapter_ms"]["reset"]["p50_ms"] = LATENCY_FLOOR_MS - 0.1   # ×9.8, but under the floor
    assert compare(old, new, {"latency": 2.0}) == []
    new["timings"]["adapter_ms"]["reset"]["p50_ms"] = LATENCY_FLOOR_MS + 1
    assert len(compare(old, new, {"latency": 2.0})) == 1


def test_diff_and_its_cli_list_and_gate_on_a_planted_cost_increase(tmp_path):
    src = sorted(RUN.rglob("embedded/result.json"))[0].parent
    old, new = tmp_path / "old" / "run", tmp_path / "new" / "run"
    shutil.copytree(src, old)
    shutil.copytree(src, new)
    result = json.loads((new / "result.json").read_text())
    result["cost"]["total"]["llm_calls"] *= 2
    (new / "result.json").write_text(json.dumps(result))
    config = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})
    report = diff([tmp_path / "old"], [tmp_path / "new"], config, thresholds={"cost": 1.5})
    assert [o.metric for o in report.over] == ["model calls"] and report.exit_code == 0
    assert "Over threshold" in report.render() and report.to_json()["over_threshold"][0]["ratio"] == 2.0
    assert diff([tmp_path / "old"], [tmp_path / "new"], config).over == []   # off by default
    cli = [sys.executable, "-m", "memmatrix", "diff", str(tmp_path / "old"), str(tmp_path / "new")]
    env_run = lambda *a: subprocess.run([*cli, *a], capture_output=True, text=True, timeout=120)  # noqa: E731
    assert env_run("--cost-threshold", "150%").returncode == 0
    gated = env_run("--cost-threshold", "150%", "--fail-on-threshold")
    assert gated.returncode == 1 and "model calls" in gated.stdout
    assert env_run("--cost-threshold", "250%", "--fail-on-threshold").returncode == 0
    refused = env_run("--fail-on-threshold")
    assert refused.returncode == 2 and "--cost-threshold" in refused.stderr
