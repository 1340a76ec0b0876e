"""A first run has no baseline yet: the Action's diff step reports that and how to make one, and passes."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from memmatrix.ci.action import step_diff
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError


def test_a_missing_baseline_is_reported_with_how_to_make_one_and_never_fails_the_job(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs"
    for key, value in {"MM_RESULTS": str(tmp_path / "results"), "MM_BASELINE": str(tmp_path / "memmatrix-baseline"),
                       "MM_FAIL_ON": "regression", "RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary),
                       "GITHUB_OUTPUT": str(outputs)}.items():
        monkeypatch.setenv(key, value)
    assert step_diff(Config.from_env({"MEMMATRIX_HOME": str(ROOT)}), cli=None) == 0
    text = summary.read_text()
    assert "No baseline yet" in text and "git add" in text and str(tmp_path / "memmatrix-baseline") in text
    report = json.loads((tmp_path / "memmatrix-regressions.json").read_text())
    assert report["regressions"] == 0 and report["baseline_missing"] == str(tmp_path / "memmatrix-baseline")


def test_an_existing_baseline_without_results_is_still_something_to_fix(tmp_path, monkeypatch):
    (tmp_path / "base").mkdir()  # it exists, so it was meant: holding no result is an error the user fixes
    for key, value in {"MM_RESULTS": str(ROOT / "results" / "writepath"), "MM_BASELINE": str(tmp_path / "base"),
                       "MM_FAIL_ON": "regression", "RUNNER_TEMP": str(tmp_path),
                       "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"), "GITHUB_OUTPUT": str(tmp_path / "o")}.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match="base"):
        step_diff(Config.from_env({"MEMMATRIX_HOME": str(ROOT)}), cli=None)
