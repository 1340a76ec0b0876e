"""Cognee for real: cognee 1.6.5 embedded (its own environment from the lock; SQLite, LanceDB and Ladybug in the
run's data directory; cognify's model calls answered by the oracle through the gateway): one deletion case.

Heavy (a 1.6 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import newest_cases, run
from memmatrix.common.config import Config

pytestmark = pytest.mark.heavy


def test_forget_cascades_but_run_info_and_search_history_keep_the_text(tmp_path):
    data = json.loads(newest_cases("deletion").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "identifier-locker-code"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "cognee", tmp_path / "out", runtime="embedded", protocol="deletion", cases=cases)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0 and result["cost"]["total"]["llm_calls"] > 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    assert cells["2"]["verdict"] == "PASS" and cells["4"]["verdict"] == "PASS", (cells["2"], cells["4"])
    # forget takes the document's graph, vectors and file; the relational store keeps the text
    assert "right after the forget by ['relational']" in cells["9"]["reason"], cells["9"]
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # cognify extracts the re-fed document again
