"""The pinned hygiene judge: its accuracy on the labelled suite, and the rules behind it.

The oracle judge is called the way a run calls it (a request built by memmatrix.judge.Judge,
answered by the oracle's dialect), never over the network. Targeted cases use values that
are not in the suite, and every group has a control that the opposite verdict would fail.
"""

import json

import pytest

from conftest import ROOT
from memmatrix.common.errors import CaseFileError
from memmatrix.protocols.judge import SYSTEM, Judge as JudgeClient
from memmatrix.protocols.judgesuite import default_suite, load_suite, score, suite_requests
from memmatrix.model.dialects.memmatrix import JUDGE_MARKER, Judge
from memmatrix.model.gold import GoldIndex
from memmatrix.model.oracle import Oracle

SUITE = ROOT / "cases" / "judge" / "1.0.0.json"
CLIENT = JudgeClient("http://judge.invalid/v1", "oracle")  # builds requests only; nothing is posted
Q, U, A = "qualified", "unqualified", "absent"

#: Items the oracle judge gets wrong, in suite order, and why (all from the last batch, written and
#: labelled after the rules were frozen; the rules were not tuned to them).
KNOWN_WRONG = {
    "z-bait-until-loop": "'until I'm tired' bounds the laps, but an until-clause is read as the bound of the "
                         "nearest value before it",
    "z-bait-past-tense-event": "'had a play at X' is an event; 'had' is read as a past state of X",
    "z-bound-term-ends": "'his last day there is 18 July' is a paraphrased end; no bound keyword, and ';' blocks",
    "z-both-downgrade": "'moved off X onto Y': only moved from/away from/out of are known",
    "z-neg-not-at-school-today": "a temporary negation ('not at X today') is read as a denial of X",
    "z-struct-yaml-block": "a YAML record spans lines; only JSON objects and table rows are read as records",
    "z-struct-md-strikethrough": "markdown ~~strikethrough~~ is not read as a qualifier",
}


def answer(stale: str, text: str, current: str | None = None, question: str = "What is it?") -> dict:
    reply = Judge.answer(CLIENT.request(question, stale, current, text))
    assert reply.matched and reply.dialect == "memmatrix-judge"
    out = json.loads(reply.content)
    assert set(out) == {"verdict", "reason"} and isinstance(out["reason"], str) and out["reason"]
    return out


def verdict(stale: str, text: str, current: str | None = None) -> str:
    return answer(stale, text, current)["verdict"]


# ----------------------------------------------------------------------------- the suite

def test_oracle_judge_accuracy_on_the_suite(config):
    suite = load_suite(SUITE, config.schemas_dir)
    answers = {}
    for item_id, body in suite_requests(suite, CLIENT):
        answers[item_id] = json.loads(Judge.answer(body).content)["verdict"]
    result = score(suite, answers)
    assert result["suite"] == {"version": "1.0.0", "sha256": suite["sha256"]}
    assert result["items"] == 307
    assert result["wrong"] == list(KNOWN_WRONG), "a fixed item: remove it from KNOWN_WRONG; a new miss: a regression"
    assert result["correct"] == 300 and result["accuracy"] == 0.9772
    assert result["accuracy"] >= 0.97


def test_the_suite_covers_every_category_and_verdict(config):
    items = load_suite(SUITE, config.schemas_dir)["items"]
    assert len(items) >= 80
    by_category = {}
    for it in items:
        by_category.setdefault(it["category"], set()).add(it["expected"])
    assert set(by_category) == {"bait", "bound", "other-sentence", "attached-to-new", "both-values", "negation",
                                "structured", "multiple", "past-state", "retraction", "absent", "plain"}
    for category in ("bound", "both-values", "negation", "structured", "multiple", "past-state"):
        assert {Q, U} <= by_category[category], category  # each has items both ways


def test_the_oracle_answers_judge_requests_through_its_dialects():
    body = CLIENT.request("Where do I live?", "Velmoor", "Dunhallow", "I moved from Velmoor to Dunhallow.")
    reply = Oracle(GoldIndex([])).chat(body)
    assert reply.dialect == "memmatrix-judge" and json.loads(reply.content)["verdict"] == Q


# ----------------------------------------------------------------------------- markers are whole words

@pytest.mark.parametrize("text", [
    "Recommended: the café in Velmoor, two doors from my flat.",
    "My dog in Velmoor is a natural performer.",
    "Velmoor is a trendy town and I have my flat there.",
    "My parking permit for Velmoor was extended.",
    "I attended the Velmoor street fair; I live on that street.",
    "I live in Velmoor, next to Exmoor Road.",
    "My blended family lives in Velmoor.",
])
def test_a_marker_inside_a_word_qualifies_nothing(text):
    assert verdict("Velmoor", text) == U


@pytest.mark.parametrize("text", ["My stay in Velmoor ended on 3 May.", "Velmoor (former home)",
                                  "I used to live in Velmoor."])
def test_whole_word_markers_still_qualify(text):
    assert verdict("Velmoor", text) == Q


@pytest.mark.parametrize("text", [
    "I sleep in cabin Velmoor-3, second bunk on the left.",
    "Left-handed, lives in Velmoor.",
    "Turn left at the station to reach my flat in Velmoor.",
    "My flat in Velmoor is the one on the left.",
])
def test_left_as_a_direction_is_no_departure(text):
    assert verdict("Velmoor", text) == U


@pytest.mark.parametrize("text", ["I left Velmoor in June.", "Velmoor: left in June.", "We left Velmoor for good."])
def test_left_as_a_verb_of_leaving_qualifies(text):
    assert verdict("Velmoor", text) == Q


# ----------------------------------------------------------------------------- bounds in any wording

BOUNDED = [
    "I am renting a room in Velmoor until 9 April.",
    "I am renting a room in Velmoor till 9 April.",
    "I am renting a room in Velmoor through 9 April.",
    "I am renting a room in Velmoor thru Apr 9.",
    "I am renting a room in Velmoor up to 9 April.",
    "Room in Velmoor: from 1 April to 9 April.",
    "Room in Velmoor, 1–9 April.",
    "Room in Velmoor (2019–2024)",
    "Room in Velmoor, valid to 09/04/2026.",
    "My lease in Velmoor, ending 9 April.",
    "My Velmoor permit expired on 9 April.",
    "Velmoor permit (valid until 2026-04-09)",
    "Until 9 April, my room is in Velmoor.",
    "Velmoor room; end date: 2026-04-09",
]


@pytest.mark.parametrize("text", BOUNDED)
def test_a_bound_qualifies_in_every_wording(text):
    assert verdict("Velmoor", text) == Q


def test_the_wording_of_a_bound_does_not_change_the_verdict():
    assert {verdict("Velmoor", t) for t in BOUNDED} == {Q}
    assert verdict("Velmoor", "I am renting a room in Velmoor.") == U  # the same sentence without its bound


@pytest.mark.parametrize("text", [
    "Room in Velmoor (2019–present)",
    "I have rented a room in Velmoor since 2019.",
    "I keep my room in Velmoor until further notice.",
    "I cycle through Velmoor every day.",
    "The hall in Velmoor holds up to 300 people.",
    "I drive to Velmoor every day.",
])
def test_open_ended_look_alikes_are_no_bound(text):
    assert verdict("Velmoor", text) == U


# ----------------------------------------------------------------------------- attachment

@pytest.mark.parametrize("text", [
    "- I rent a flat in Velmoor.\n- I no longer rent in Ashby.",
    "I rent a flat in Velmoor. Formerly I rented in Ashby.",
    "My flat is in Velmoor.\nThat was wrong, sorry.",
    "I rent a flat in Velmoor. Until last year I rented in Ashby.",
])
def test_a_qualifier_in_another_sentence_or_line_does_not_qualify(text):
    assert verdict("Velmoor", text) == U


@pytest.mark.parametrize("text", ["I formerly rented a flat in Velmoor.",
                                  "My flat was in Velmoor, but that was wrong."])
def test_the_same_qualifier_in_the_mentions_sentence_does(text):
    assert verdict("Velmoor", text) == Q


@pytest.mark.parametrize("text, expected", [
    ("Home: Velmoor. Dunhallow (superseded).", U),
    ("Home: Velmoor, Dunhallow (former)", U),
    ("Velmoor, formerly Dunhallow, is home.", U),
    ("I live in Velmoor; Dunhallow is my former home.", U),
    ("Previously Dunhallow, now Velmoor.", U),
    ("Home: Dunhallow (formerly Velmoor).", Q),
    ("Velmoor (superseded by Dunhallow)", Q),
    ("Dunhallow, formerly Velmoor, is home.", Q),
])
def test_a_qualifier_attaches_to_its_own_value_not_to_the_other(text, expected):
    assert verdict("Velmoor", text, current="Dunhallow") == expected


@pytest.mark.parametrize("text, expected", [
    ("I moved from Velmoor to Dunhallow.", Q),
    ("I moved from Dunhallow to Velmoor.", U),
    ("Dunhallow replaced Velmoor as my home.", Q),
    ("Velmoor replaced Dunhallow as my home.", U),
    ("I live in Dunhallow now instead of Velmoor.", Q),
])
def test_both_values_in_one_sentence(text, expected):
    assert verdict("Velmoor", text, current="Dunhallow") == expected


@pytest.mark.parametrize("text, expected", [
    ("Ended up in Velmoor after the move, and I love it here.", U),
    ("I work at the formerly-famous Velmoor mill.", U),
    ("Formerly Velmoor.", Q),
    ("My former employer, Velmoor Mills, still writes to me.", Q),
])
def test_prefix_bait(text, expected):
    assert verdict("Velmoor", text) == expected


def test_one_bare_mention_among_qualified_ones_is_unqualified():
    assert verdict("Velmoor", "I used to live in Velmoor. I left Velmoor in 2024.") == Q
    assert verdict("Velmoor", "I used to live in Velmoor. Velmoor is home now.") == U


# ----------------------------------------------------------------------------- negation

@pytest.mark.parametrize("stale, text, expected", [
    ("Velmoor Ash", "I have no brother called Velmoor Ash.", Q),
    ("Velmoor Ltd", "Velmoor Ltd is not my employer anymore.", Q),
    ("Velmoor", "I don't live in Velmoor any more.", Q),
    ("Velmoor", "I never left Velmoor.", U),
    ("Velmoor Ltd", "I didn't quit Velmoor Ltd after all.", U),
    ("Velmoor", "It is not true that I no longer live in Velmoor.", U),
    ("Velmoor", "Don't forget that I live in Velmoor.", U),
    ("Velmoor", "Velmoor is not far from the sea, and I live there.", U),
])
def test_negation(stale, text, expected):
    assert verdict(stale, text) == expected


def test_a_denial_attaches_to_the_value_it_denies():
    assert verdict("Velmoor", "My cat is called Dunhallow, not Velmoor.", current="Dunhallow") == Q
    assert verdict("Velmoor", "My cat is called Velmoor, not Dunhallow.", current="Dunhallow") == U


# ----------------------------------------------------------------------------- structured text

@pytest.mark.parametrize("text, expected", [
    ('{"fact": "I live in Velmoor.", "status": "former"}', Q),
    ('{"fact": "I live in Velmoor.", "invalid_at": "2026-03-02T09:00:00Z"}', Q),
    ('{"fact": "I live in Velmoor.", "invalid_at": "Present"}', U),
    ('[{"v": "Velmoor", "status": "current"}, {"v": "Dunhallow", "status": "former"}]', U),
    ("- [superseded, no longer true since 2026-03-02] I live in Velmoor.", Q),
    ("- I live in Velmoor. [since 2026-03-02]", U),
    ("- **Former:** Velmoor\n- **Current:** Dunhallow", Q),
    ("| town | until |\n|---|---|\n| Velmoor | 2025 |", Q),
    ("| town | until |\n|---|---|\n| Velmoor | |", U),
])
def test_records_tags_labels_and_tables(text, expected):
    assert verdict("Velmoor", text, current="Dunhallow") == expected


# ----------------------------------------------------------------------------- absent and the wire contract

@pytest.mark.parametrize("text, current", [("I live in Velmoorby.", None), ("I live in Upper Velmoor.", "Upper Velmoor"),
                                           ("", None), ("I live in Dunhallow.", "Dunhallow")])
def test_absent_means_no_whole_token_mention(text, current):
    assert verdict("Velmoor", text, current) == A


def test_a_case_folded_mention_is_a_mention():
    assert verdict("Velmoor", "I LIVE IN VELMOOR.") == U


def test_the_prompt_version_changed_with_the_rules():
    assert JUDGE_MARKER == "memmatrix-judge/hygiene-v2"
    assert SYSTEM.startswith(JUDGE_MARKER + "\n") and "hygiene-v1" not in SYSTEM
    assert CLIENT.identity() == {"prompt": JUDGE_MARKER, "model": "oracle", "temperature": 0}
    body = CLIENT.request("q", "Velmoor", None, "t")
    assert Judge.match(body)
    old = {**body, "messages": [{"role": "system", "content": "memmatrix-judge/hygiene-v1\n..."}, body["messages"][1]]}
    assert not Judge.match(old)
    assert json.loads(body["messages"][1]["content"]) == {"question": "q", "stale": "Velmoor", "current": None,
                                                          "text": "t"}


@pytest.mark.parametrize("content", ["not json", '{"stale": "Velmoor"}', '{"stale": 3, "text": "x"}', "[]"])
def test_an_unreadable_request_is_answered_unclear_not_guessed(content):
    body = CLIENT.request("q", "Velmoor", None, "t")
    body["messages"][1]["content"] = content
    reply = Judge.answer(body)
    assert not reply.matched and json.loads(reply.content)["verdict"] == "unclear"


def test_the_judge_is_deterministic():
    text = "Relevant memories:\n- I lived in Velmoor until May.\n- I live in Dunhallow."
    first = answer("Velmoor", text, "Dunhallow")
    assert first == answer("Velmoor", text, "Dunhallow") and first["verdict"] == Q
    assert "until May" in first["reason"]


def test_an_unqualified_reason_quotes_the_bare_mention():
    out = answer("Velmoor", "- I left Velmoor in May.\n- I rent a flat in Velmoor.", "Dunhallow")
    assert out["verdict"] == U and "I rent a flat in Velmoor" in out["reason"]


# ----------------------------------------------------------------------------- the suite loader and score

def test_default_suite_is_the_newest_file(config):
    assert default_suite(config.cases_dir) == SUITE


def _write(tmp_path, doc) -> str:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return str(path)


def _item(**kw) -> dict:
    return {"id": "a", "category": "plain", "question": "q", "stale": "Velmoor", "current": None,
            "text": "I live in Velmoor.", "expected": U, "note": "bare", **kw}


@pytest.mark.parametrize("doc, problem", [
    ("{not json", "is not JSON"),
    ({"kind": "memmatrix.judge-suite", "version": "1.0.0", "items": [_item(expected="maybe")]}, "/items/0/expected"),
    ({"kind": "memmatrix.judge-suite", "version": "1", "items": [_item()]}, "/version"),
    ({"kind": "memmatrix.judge-suite", "version": "1.0.0", "items": []}, "/items"),
    ({"kind": "memmatrix.judge-suite", "version": "1.0.0", "items": [_item(), _item()]}, "duplicate item id"),
    ({"kind": "memmatrix.judge-suite", "version": "1.0.0", "items": [_item(text="I live in Dunhallow.")]},
     "no whole-token mention"),
    ({"kind": "memmatrix.judge-suite", "version": "1.0.0", "items": [_item(stale="—")]}, "has no letters or digits"),
])
def test_an_invalid_suite_is_refused_naming_the_file_and_problem(tmp_path, config, doc, problem):
    path = _write(tmp_path, doc)
    with pytest.raises(CaseFileError) as exc:
        load_suite(path, config.schemas_dir)
    assert path in str(exc.value) and problem in str(exc.value)


def test_a_missing_suite_is_refused(tmp_path, config):
    with pytest.raises(CaseFileError, match="cannot be read"):
        load_suite(tmp_path / "nope.json", config.schemas_dir)


def test_score_counts_unanswered_as_wrong(tmp_path, config):
    doc = {"kind": "memmatrix.judge-suite", "version": "2.1.0",
           "items": [_item(id="one"), _item(id="two", expected=A, text="Nothing here."),
                     _item(id="three", expected=Q, text="I used to live in Velmoor.")]}
    suite = load_suite(_write(tmp_path, doc), config.schemas_dir)
    result = score(suite, {"one": U, "two": None, "three": U})
    assert result == {"suite": {"version": "2.1.0", "sha256": suite["sha256"]}, "items": 3, "correct": 1,
                      "accuracy": 0.3333, "wrong": ["two", "three"]}
    assert score(suite, {"one": U, "two": A, "three": Q})["accuracy"] == 1.0
    with pytest.raises(ValueError, match="four"):
        score(suite, {"four": U})


def test_suite_requests_are_the_runs_own_requests(config):
    suite = load_suite(SUITE, config.schemas_dir)
    pairs = suite_requests(suite, CLIENT)
    assert [i for i, _ in pairs] == [it["id"] for it in suite["items"]]
    first = suite["items"][0]
    assert pairs[0][1] == CLIENT.request(first["question"], first["stale"], first["current"], first["text"])


@pytest.mark.parametrize("text,expected", [
    ("I have no nickname; nobody calls me Zanzibrook.", Q),
    ("Nobody calls me Zanzibrook anymore.", Q),
    ("Nobody but my mother calls me Zanzibrook.", U),
    ("My friends call me Zanzibrook; nobody else does.", U),
])
def test_nobody_denies_what_follows_it_and_nothing_before(text, expected):
    assert verdict("Zanzibrook", text) == expected
