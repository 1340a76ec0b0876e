"""Mechanical hygiene: which injected items assert a stale value, read from the qualifiers a system exposes."""

from memmatrix.protocols.hygiene import hygiene, stale_mentions

STALE = {"token": "Mirda Farrowelle", "queries": ["What is my sister called?"]}
AT = "2026-03-03T09:00:00Z"


def _item(text, **fields):
    return {"id": "1", "text": text, "status": "current", **fields}


def test_a_current_fact_holding_the_stale_value_asserts_it():
    bare, unknown = stale_mentions({"items": [_item("My sister is called Mirda Farrowelle.", kind="fact")]},
                                   STALE, None, AT)
    assert len(bare) == 1 and not unknown


def test_an_item_the_system_labels_a_retraction_asserts_nothing():
    answer = {"items": [_item("I do not have a sister, so there is no Mirda Farrowelle.", kind="retraction")]}
    assert stale_mentions(answer, STALE, None, AT) == ([], False)
    h = hygiene([({"door": "prompt"}, answer)], STALE, None, AT, True, [], True, "the door")
    assert h.verdict == "PASS", h


def test_a_retraction_beside_a_fact_still_fails_on_the_fact():
    answer = {"items": [_item("I do not have a sister, so there is no Mirda Farrowelle.", kind="retraction"),
                        _item("My sister is called Mirda Farrowelle.", kind="fact")]}
    h = hygiene([({"door": "prompt"}, answer)], STALE, None, AT, True, [], True, "the door")
    assert h.verdict == "FAIL" and "My sister is called" in h.reason
