"""LangMem for real: langmem 0.0.30 embedded (its own environment from the lock, LangGraph's SqliteStore, the
manager's model calls answered by the oracle through the gateway): one deletion case and one contradiction case.

Heavy (a 200 MB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import pytest

from helpers import run_one_case

pytestmark = pytest.mark.heavy


def _one(tmp_path, protocol: str, case: str):
    cells, cost = run_one_case(tmp_path, "langmem", protocol, case)
    assert cost["total"]["unmatched"] == 0 and cost["total"]["llm_calls"] > 0, cost
    return cells


def test_deletion_leaves_the_vector_and_refeed_recreates(tmp_path):
    cells = _one(tmp_path, "deletion", "identifier-locker-code")
    assert cells["4"]["verdict"] == "PASS", cells["4"]  # the manage tool's delete takes the item out of search
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # the manager extracts the re-fed conversation again
    # SqliteStore keeps the deleted item's vector (foreign keys are off on the connection)
    assert "right after the forget by ['store-vectors']" in cells["9"]["reason"], cells["9"]
    assert cells["7"]["verdict"] == "UNSUPPORTED", cells["7"]


def test_a_correction_patches_the_memory_and_loses_the_past(tmp_path):
    cells = _one(tmp_path, "contradiction", "replacement-home-city")
    assert cells["A"]["verdict"] == "PASS" and cells["B"]["verdict"] == "PASS", (cells["A"], cells["B"])
    assert cells["D"]["verdict"] == "FAIL", cells["D"]  # PatchDoc replaced the old statement: no history
