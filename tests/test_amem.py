"""A-MEM for real: a-mem 0.2.6 embedded (its own environment from the lock: CPU torch, the MiniLM wheel, ChromaDB;
the analysis and evolution calls answered by the oracle through the gateway): one deletion case and one
contradiction case, with their findings, and one case whose correction is made through the update API.

Heavy (a 1.6 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import json
import os

import pytest

from conftest import ROOT
from helpers import run, run_one_case
from memmatrix.common.config import Config

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


def test_an_update_rewrites_the_note_but_not_what_was_derived_from_it(tmp_path):
    data = json.loads((ROOT / "cases" / "contradiction" / "update-1.0.0.json").read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == "upd-replacement-home-city"]
    cases = tmp_path / "update.json"
    cases.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(ROOT)})
    out = run(config, "amem", tmp_path / "out", runtime="embedded", protocol="contradiction", cases=cases)
    result = json.loads((out / "result.json").read_text())
    assert result["cost"]["total"]["unmatched"] == 0, result["cost"]
    cells = {x["step"]: x for x in result["cases"][0]["cells"]}
    assert cells["A"]["verdict"] == "PASS", cells["A"]  # update_memory_note wrote the new words
    # AgenticMemorySystem.update neither analyses nor evolves: the note's context still states the old value
    assert cells["E"]["verdict"] == "FAIL" and "I live in Quillmere." in cells["E"]["reason"], cells["E"]
