from itertools import product

import pytest

from memmatrix.adapterkit import holds_run
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


def test_norm_collapses_what_a_whitespace_pattern_collapses():
    """``norm`` splits at ``str.isspace`` characters (quicker than a ``\\s+`` substitution and the same: Python's
    ``\\s`` is ``str.isspace``) and remembers short texts: on random texts of every kind of whitespace, escapes and
    characters that fold to several, short and long, it is the substitution's answer, asked twice."""
    import random
    import re

    from memmatrix.common.tokens import norm

    def plain(text: str) -> str:
        for a, b in (("\\\"", '"'), ("\\'", "'"), ("\\n", " "), ("\\t", " ")):
            text = text.replace(a, b)
        return re.sub(r"\s+", " ", text).strip().casefold()

    rng = random.Random(3)
    alphabet = list("ab \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\\\"'ntßİΣ")
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30 if rng.random() < 0.9 else 700)))
        assert norm(text) == plain(text) == norm(text), repr(text)


def test_word_count_is_the_count_of_words_and_marks():
    """``word_count`` (the oracle's token estimate and the door sizes in ``costs``) is how many matches
    ``\\w+|[^\\w\\s]`` finds, on random texts of words, digits, underscores, marks and every kind of whitespace."""
    import random
    import re

    from memmatrix.common.tokens import word_count

    rng = random.Random(8)
    alphabet = list("ab9_ .,;-\t\n\x0b\x1c\x85\xa0\u2028\u3000ßİ’…") + ["->", "é", "\U0001F600"]
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert word_count(text) == len(re.findall(r"\w+|[^\w\s]", text)), repr(text)


def test_holds_run_is_a_contiguous_occurrence_anywhere():
    """Every run of up to six tokens over three, against every needle of up to three: the same answer as comparing
    the needle at each position (the definition), first token repeated, at either end, or longer than the run."""
    def plain(have, want):
        n = len(want)
        return n > 0 and any(have[i:i + n] == want for i in range(len(have) - n + 1))
    checked = 0
    for length in range(7):
        for have in product("abc", repeat=length):
            for size in range(4):
                for want in product("abc", repeat=size):
                    assert holds_run(have, want) is plain(have, want), (have, want)
                    checked += 1
    assert checked == 1093 * 40
