"""The reference memory is the positive control every double is compared with: it must read ordinary wording."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "systems" / "reference"))
sys.modules.setdefault("adapterkit", __import__("memmatrix.adapterkit", fromlist=["adapterkit"]))

from refmemory import RefMemory  # noqa: E402


@pytest.fixture
def memory(tmp_path):
    m = RefMemory(tmp_path, 0)
    m.remember("s", "2026-03-02T09:00:00Z", [{"subject": "user", "attribute": "weekend sport",
                                              "value": "Fenwick tennis club",
                                              "statement": "On Saturday I play at the Fenwick tennis club."}])
    return m


@pytest.mark.parametrize("query", ["What do I play on Saturdays?", "Where do I go on Saturday's match day?",
                                   "What sport do I play at Fenwick on Sundays?"])
def test_a_capitalised_word_it_has_heard_of_or_a_calendar_word_is_not_an_unknown_name(memory, query):
    assert memory.unknown_names(query, "s") == []
    assert [f["value"] for f in memory.rank(query, "s", 5)] == ["Fenwick tennis club"]


def test_a_name_it_never_heard_of_still_makes_it_abstain(memory):
    assert memory.unknown_names("Where does Professor Tolliver play on Saturdays?", "s") == ["Professor", "Tolliver"]
    assert memory.rank("Where does Professor Tolliver play on Saturdays?", "s", 5) == []
