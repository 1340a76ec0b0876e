"""A-MEM for real: a-mem 0.2.6 embedded (its own environment from the lock: CPU torch, the MiniLM wheel, ChromaDB;
the analysis and evolution calls answered by the oracle through the gateway): one deletion case and one
contradiction case, with their findings.

Heavy (a 1.6 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import pytest

from helpers import run_one_case

pytestmark = pytest.mark.heavy


def _one(tmp_path, protocol: str, case: str):
    cells, cost = run_one_case(tmp_path, "amem", protocol, case)
    assert cost["total"]["unmatched"] == 0 and cost["total"]["llm_calls"] > 0, cost
    return cells


def test_deletion_leaves_chroma_rows_and_refeed_stores_again(tmp_path):
    cells = _one(tmp_path, "deletion", "identifier-locker-code")
    assert cells["4"]["verdict"] == "PASS", cells["4"]  # delete_memory_note takes the note out of search
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # add_note stores the re-fed conversation again
    # chromadb's embeddings queue keeps the deleted document's text
    assert "right after the forget by ['chroma-sqlite']" in cells["9"]["reason"], cells["9"]
    assert cells["7"]["verdict"] == "UNSUPPORTED", cells["7"]


def test_a_correction_qualifies_the_old_note_through_its_context_only(tmp_path):
    cells = _one(tmp_path, "contradiction", "replacement-home-city")
    # evolution writes "Since corrected: ..." into the old note's context: the door qualifies the old value
    assert cells["B"]["verdict"] == "PASS" and cells["D"]["verdict"] == "PASS", (cells["B"], cells["D"])
    # the old note's content and chroma's full-text index keep it unqualified
    assert cells["E"]["verdict"] == "FAIL" and "embedding_fulltext_search" in cells["E"]["reason"], cells["E"]
    assert cells["C"]["verdict"] == "UNSUPPORTED", cells["C"]
