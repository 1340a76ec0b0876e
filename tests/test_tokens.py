import pytest

from memmatrix.common.tokens import contains, found_in


@pytest.mark.parametrize("haystack,needle,expected", [
    ("port 8766 is open", "8766", True),
    ("port 18766 is open", "8766", False),
    ("version 10.2.4", "0.2.4", False),
    ("version 0.2.4 shipped", "0.2.4", True),
    ("the dog is Vantablack-7's friend", "Vantablack-7", True),
    ("the dog is Vantablack-77", "Vantablack-7", False),
    ("CODE QX-4471-TRV", "qx-4471-trv", True),
    ("called Ferelith  Okonkwo-Thale.", "Ferelith Okonkwo-Thale", True),
    ("called Ferelith Okonkwo", "Ferelith Okonkwo-Thale", False),
    ('passphrase "amber kettles whistle backwards"', "amber kettles whistle backwards", True),
    ("amber kettles whistle", "amber kettles whistle backwards", False),
    ("ÉCOLE", "école", True),
])
def test_whole_token_case_folded(haystack, needle, expected):
    assert contains(haystack, needle) is expected


def test_a_needle_without_letters_or_digits_is_refused():
    with pytest.raises(ValueError, match="no letters or digits"):
        contains("anything", "--")


def test_found_in_walks_values_and_keys():
    assert found_in({"a": [{"b": "x 8766 y"}]}, "8766")
    assert found_in({"8766": "nothing"}, "8766")  # a value moved into a key is still held
    assert not found_in({"a": [{"b": "x 18766 y"}]}, "8766")


@pytest.mark.parametrize("haystack", [
    '{"name": "Ysa\\u00eblle"}',          # a JSON log keeps the escape
    "Ysae\u0308lle",                         # decomposed (NFD) form
    "Ysa%C3%ABlle",                          # percent-encoded
    "Ysa&#235;lle",                          # an HTML entity
    "YSAËLLE",
])
def test_escapes_and_unicode_forms_are_the_same_value(haystack):
    assert contains(haystack, "Ysaëlle")
    assert not contains(haystack, "Ysaëllen")
