"""The harness's own cost is measured, not guessed (timings.harness), and a hang is recognised within the time
budget its system declares, as an ERROR that says where it came from."""

import json
import shutil
import time

import pytest

from conftest import ROOT
from helpers import run

from memmatrix.common import schemas
from memmatrix.common.stats import percentiles
from memmatrix.exchange.overhead import Ledger
from memmatrix.run.runner import budgets_for
from memmatrix.exchange.wire import CallError, InProcessEndpoint


def test_the_ledger_charges_the_system_only_for_its_own_time():
    led = Ledger(t0=0.0)
    led.system_span(0.010, 0.110)          # the system's process starting: 100 ms
    led.call(0.120, 0.150, 20.0)           # 30 ms round trip, 20 ms inside the system: 10 ms of wire
    led.call(0.160, 0.200, None)           # an endpoint that cannot say: the whole call is the system's
    led.system_span(0.210, 0.260)          # the system stopping: 50 ms
    s = led.summary(end=0.300)
    assert s["wall_ms"] == 300.0 and s["exchanges"] == 2 and s["wire_ms"] == 10.0
    assert s["start_ms"] == 20.0                    # 120 ms before the first call, 100 of them the system's
    assert s["per_exchange_ms"] == 10.0             # 80 ms between first start and last end, 60 inside calls
    assert s["stop_ms"] == 50.0                     # 100 ms after the last call, 50 of them the system's
    assert s["overhead_ms"] == 90.0 and s["system_ms"] == 210.0 and s["install_ms"] == 0 and s["share"] == round(90 / 300, 5)


def test_building_the_environment_is_neither_the_systems_time_nor_the_harnesss():
    led = Ledger(t0=0.0)
    led.install_span(0.0, 10.0)            # a first run builds the environment: 10 s
    led.system_span(10.0, 10.5)
    led.call(10.5, 11.0, 500.0)
    s = led.summary(end=11.0)
    assert s["install_ms"] == 10000.0 and s["overhead_ms"] == 0.0 and s["system_ms"] == 1000.0 and s["share"] == 0.0


def test_percentiles_are_nearest_rank():
    assert percentiles(list(range(1, 101))) == {"p50_ms": 51, "p95_ms": 96, "p99_ms": 100}
    assert percentiles([]) == {}


def test_a_budget_applies_to_the_oracle_and_gives_way_to_a_real_models_longer_timeout():
    declared = {"run_background_jobs": {"seconds": 20, "why": "w"}, "write": {"seconds": 500, "why": "w"}}
    assert budgets_for(declared, "oracle", 120) == {"run_background_jobs": {"seconds": 20, "why": "w"}}
    assert budgets_for(declared, "proxy", 120) == {}


def test_the_fast_schema_check_and_the_explaining_one_agree():
    """A valid answer is confirmed by jsonschema-rs alone; an invalid one is named by jsonschema's messages."""
    d = ROOT / "schemas"
    assert schemas.errors(d, "wire", {"ids": ["a"]}, definition="write") == []
    assert schemas.errors(d, "wire", {"ids": "a"}, definition="write") == ["at /ids: 'a' is not of type 'array'"]
    result = json.loads((ROOT / "results/deletion/reference/1.0/embedded/result.json").read_text())
    assert schemas.errors(d, "result", result) == []
    broken = {**result, "cases": [{**result["cases"][0], "cells": [{"step": "1", "verdict": "MAYBE"}]}]}
    found = schemas.errors(d, "result", broken)
    assert found and all(f.startswith("at /cases/0/cells/0") for f in found)


class _Sleepy:
    def __init__(self, config):
        pass

    def write(self, scope, at, messages):
        time.sleep(float(messages[0]["content"]))
        return {"ids": []}


def test_an_in_process_call_past_its_timeout_leaves_the_worker_wedged_until_it_returns():
    ep = InProcessEndpoint(_Sleepy, {})
    ep.call("init", {"config": {}}, 5)
    with pytest.raises(CallError) as err:
        ep.call("write", {"scope": "s", "at": "t", "messages": [{"content": "0.5"}]}, 0.05)
    assert err.value.kind == "timeout" and ep.wedged()
    time.sleep(0.6)
    assert not ep.wedged()
    assert ep.call("write", {"scope": "s", "at": "t", "messages": [{"content": "0"}]}, 5) == {"ids": []}
    assert ep.system_ms is not None and ep.system_ms < 50
    ep.close()


def _slow_jobs_system(root, seconds_slept: float, budget: float):
    folder = root / "slowjobs"
    shutil.copytree(ROOT / "systems" / "reference", folder)
    yaml_text = (folder / "system.yaml").read_text().replace("name: reference", "name: slowjobs")
    yaml_text = yaml_text.replace("runtimes: [inprocess, embedded, compose]", (
        "runtimes: [inprocess, embedded]\nbudgets:\n  run_background_jobs:\n"
        f"    seconds: {budget}\n    why: the jobs take milliseconds\n"
        "    known: [https://example.org/upstream/issues/1]"))
    (folder / "system.yaml").write_text(yaml_text)
    adapter = (folder / "adapter.py").read_text()
    adapter = adapter.replace('    def run_background_jobs(self, at: str) -> dict:\n',
                              f'    def run_background_jobs(self, at: str) -> dict:\n        import time; time.sleep({seconds_slept})\n')
    (folder / "adapter.py").write_text(adapter.replace('"name": "reference"', '"name": "slowjobs"'))
    return folder


def test_a_hang_past_the_declared_budget_is_an_error_of_the_system_naming_the_budget_and_the_upstream_issue(
        tmp_path, monkeypatch):
    from memmatrix.common.config import Config
    systems = tmp_path / "systems"
    _slow_jobs_system(systems, seconds_slept=3, budget=0.3)
    cases = json.loads((ROOT / "cases/deletion/1.2.0.json").read_text())
    cases["cases"] = cases["cases"][:1]
    (tmp_path / "one.json").write_text(json.dumps(cases))
    config = Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_SYSTEMS": str(systems),
                              "MEMMATRIX_CACHE_DIR": str(tmp_path / "cache"), "MEMMATRIX_CALL_TIMEOUT": "60",
                              "MEMMATRIX_SETTLE_TIMEOUT": "2"})
    t0 = time.monotonic()
    out = run(config, "slowjobs", tmp_path / "out", cases=tmp_path / "one.json")
    assert time.monotonic() - t0 < 30  # the budget, not the 60 s call timeout
    result = json.loads((out / "result.json").read_text())
    cell = next(c for c in result["cases"][0]["cells"] if c["step"] == "7")
    assert cell["verdict"] == "ERROR"
    assert "within its budget of 0.3 s" in cell["reason"] and "origin system" in cell["reason"]
    assert "https://example.org/upstream/issues/1" in cell["reason"]
    assert result["stamp"]["limits"]["budgets_s"] == {"run_background_jobs": 0.3}
    assert any(f.startswith("1 call(s) failed: 1 of origin system (1 timeout); known upstream: "
                            "https://example.org/upstream/issues/1") for f in result["findings"])
    h = result["timings"]["harness"]
    assert h["exchanges"] > 0 and h["system_ms"] + h["overhead_ms"] == pytest.approx(h["wall_ms"], abs=0.01)
