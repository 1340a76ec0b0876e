"""MemPalace for real: mempalace 3.11.0 embedded (its own environment from the lock, ChromaDB palace, embeddings
through the gateway), the whole deletion protocol and one contradiction case.

Heavy (a 400 MB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import newest_cases, run
from memmatrix.common.config import Config

pytestmark = pytest.mark.heavy


def _cells(result: dict) -> dict:
    return {(c["id"], x["step"]): x for c in result["cases"] for x in c["cells"]}


def test_deletion_findings(tmp_path):
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "mempalace", tmp_path / "out", runtime="embedded", protocol="deletion")
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0 and result["cost"]["total"]["llm_calls"] == 0, result["cost"]
    cells = _cells(result)
    ids = [c["id"] for c in result["cases"]]
    assert len(ids) == 4, ids
    for case in ids:
        # the drawer is gone from search, and mining the same conversation again does not file it again
        assert {cells[(case, s)]["verdict"] for s in ("2", "4", "6", "8", "10")} == {"PASS"}, case
        # chroma's own tables keep the text right after the delete; the sweeper files it again, with no wing
        reason = cells[(case, "9")]["reason"]
        assert cells[(case, "9")]["verdict"] == "FAIL", cells[(case, "9")]
        assert "right after the forget by ['chroma-sqlite']" in reason and "'drawers'" in reason, reason
        assert cells[(case, "11")]["verdict"] == "UNSUPPORTED", cells[(case, "11")]


def test_a_verbatim_store_keeps_both_values(tmp_path):
    data = json.loads(newest_cases("contradiction").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "replacement-home-city"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "mempalace", tmp_path / "out", runtime="embedded", protocol="contradiction", cases=cases)
    result = json.loads((out / "result.json").read_text())
    cells = _cells(result)
    case = "replacement-home-city"
    assert cells[(case, "A")]["verdict"] == "PASS" and cells[(case, "S")]["verdict"] == "PASS", cells
    # both drawers reach the model with nothing saying which is current
    assert cells[(case, "B")]["verdict"] == "FAIL", cells[(case, "B")]
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
