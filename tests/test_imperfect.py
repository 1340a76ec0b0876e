"""Imperfect oracles (model/imperfect.py): each error mode makes one mistake, at its rate, the same on every run.

The reference system is the double: it passes every step with the perfect oracle, so every cell a mode moves on it
is that mode's doing. Each mode must move exactly the cases whose gold gives it a chance to make its mistake."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memmatrix.adapterkit import token_tuple
from memmatrix.cases import default_case_file, load_cases
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError
from memmatrix.model import GatewaySettings
from memmatrix.model.dialects.common import Reply
from memmatrix.model.gold import GoldIndex
from memmatrix.model.imperfect import MODES, Imperfection, paraphrase, problem
from memmatrix.model.oracle import Oracle
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system

from helpers import text_of

ROOT = Path(__file__).resolve().parents[1]


def _gold_of(case: dict) -> list[dict]:
    out = []
    for op in case["ops"]:
        out += op.get("gold") or []
        for w in op.get("writes") or []:
            out += w.get("gold") or []
    return out


def _run(config, tmp_path: Path, protocol: str, ablation: str, system: str = "reference") -> Path:
    p = get_protocol(protocol)
    cf = load_cases(default_case_file(config, protocol), config, p)
    return execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cf, runtime="inprocess",
                              out=tmp_path / (ablation or "perfect"), gateway=GatewaySettings(ablation=ablation)),
                   config)


def _cells(where: Path) -> tuple[dict, dict]:
    result = json.loads((where / "result.json").read_text())
    return {(c["id"], x["step"]): x["verdict"] for c in result["cases"] for x in c["cells"]}, result["cost"]


@pytest.fixture(scope="module")
def perfect(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("perfect")
    config = Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp / "cache")})
    return {p: _cells(_run(config, tmp, p, ""))[0] for p in ("deletion", "contradiction")}


# what gives each fact mode its chance, read from a case's gold: the cases it must move, and only those
CHANCE = {
    "nocorrection": lambda g: g.get("intent") in ("supersede", "retract"),
    "duplicate": lambda g: g.get("intent") == "supersede",
    "undated": lambda g: bool(g.get("valid_from") or g.get("valid_to")),
}


@pytest.mark.parametrize("protocol", ["deletion", "contradiction"])
@pytest.mark.parametrize("mode", sorted(CHANCE))
def test_a_fact_mode_moves_exactly_the_cases_that_give_it_a_chance(config, tmp_path, perfect, protocol, mode):
    where = _run(config, tmp_path, protocol, mode)
    assert where.name == f"inprocess+oracle-{mode}"
    cells, cost = _cells(where)
    assert not cost.get("unmatched"), cost  # a withheld fact is the mistake, not a prompt the oracle missed
    moved = {case for (case, _), v in cells.items() if perfect[protocol][(case, _)] != v}
    cases = json.loads(default_case_file(config, protocol).read_text())["cases"]
    chance = {c["id"] for c in cases if any(CHANCE[mode](g) for g in _gold_of(c))}
    assert moved == chance
    stamp = json.loads((where / "result.json").read_text())["stamp"]["model"]
    assert stamp["oracle_version"].endswith(f"+{mode}") and "imperfect on purpose" in stamp["note"]


def test_paraphrase_and_invent_reach_the_store_and_move_nothing_on_the_reference(config, tmp_path, perfect):
    """The reference matches values by their words, so another surface form of one is the same value to it; an
    invented fact is stored beside the rest and no protocol step asks about it."""
    for mode, seen in (("paraphrase", r"qx.4471.trv"), ("invent", r"Velmorran-[0-9A-F]{5}")):
        where = _run(config, tmp_path, "deletion", mode)
        cells, cost = _cells(where)
        assert cells == perfect["deletion"] and not cost.get("unmatched")
        forms = set(re.findall(seen, text_of(where), re.IGNORECASE))  # the store holds what the model said
        assert forms - {"QX-4471-TRV"}, forms


def test_malformed_json_is_an_error_of_every_write_never_a_pass(config, tmp_path, perfect):
    cells, _ = _cells(_run(config, tmp_path, "deletion", "malformed"))
    assert set(cells) == set(perfect["deletion"]) and set(cells.values()) == {"ERROR"}


def test_a_rate_below_one_makes_some_of_the_mistakes_the_same_ones_every_time():
    cases = json.loads((ROOT / "cases/contradiction/1.3.0.json").read_text())
    supersede = sum(g.get("intent") == "supersede" for c in cases["cases"] for g in _gold_of(c))

    def kept(ablation):
        gold = GoldIndex([cases], ablation)
        return sum(f.get("intent") == "supersede" for w in gold.writes for f in w.facts)

    assert kept("nocorrection") == 0 and kept("") == supersede
    runs = {kept("nocorrection-0.5-s1") for _ in range(3)}
    assert len(runs) == 1 and 0 < runs.pop() < supersede
    assert kept("nocorrection-0.5-s1") != kept("nocorrection-0.5-s2") or kept("nocorrection-0.5-s3") != kept(
        "nocorrection-0.5-s1")
    im = Imperfection.parse("paraphrase-0.2-s7")
    share = sum(im.hits("case", i) for i in range(2000)) / 2000
    assert 0.17 < share < 0.23


def test_a_paraphrase_keeps_the_words_and_changes_the_form():
    for value in ("QX-4471-TRV", "Quillmere", "a storage locker downtown", "ZR 3318"):
        for chance in (0.1, 0.9):
            f = paraphrase({"subject": "user", "attribute": "code", "value": value,
                            "statement": f"My code is {value}."}, chance)
            assert f["value"] != value and token_tuple(f["value"]) == token_tuple(value)
            assert f["value"] in f["statement"] and value not in f["statement"]


def test_reply_modes_break_the_answer_as_they_say():
    calls = Reply.tools("d", True, [("update_memory", {"memory_id": "7", "text": "I live in Harbourton now"})])
    wrong = Imperfection.parse("wrongarg").reply("k", calls)
    args = json.loads(wrong.tool_calls[0]["function"]["arguments"])
    assert args["memory_id"] != "7" and args["memory_id"].isdigit() and args["text"] == "I live in Harbourton now"
    text_only = Reply.tools("d", True, [("add_memory", {"content": "I live in Harbourton now"})])
    args = json.loads(Imperfection.parse("wrongarg").reply("k", text_only).tool_calls[0]["function"]["arguments"])
    assert args == {"content": "I live"}  # its second half cut
    structured = Reply.json("d", True, {"memory": [{"id": "3", "event": "UPDATE", "text": "x"}]})
    assert json.loads(Imperfection.parse("wrongarg").reply("k", structured).content)["memory"][0]["id"] != "3"
    broken = Imperfection.parse("malformed").reply("k", structured)
    with pytest.raises(ValueError):
        json.loads(broken.content)
    with pytest.raises(ValueError):
        json.loads(Imperfection.parse("malformed").reply("k", calls).tool_calls[0]["function"]["arguments"])
    assert Imperfection.parse("malformed").reply("k", Reply("d", True, content="plain words")).content == "plain words"
    for mode in MODES:  # a fact mode leaves answers alone; a reply mode leaves gold alone
        im = Imperfection.parse(mode)
        assert (im.reply("k", structured) is structured) == (mode not in ("wrongarg", "malformed"))


def test_an_unknown_mode_or_rate_is_refused_before_anything_runs():
    assert problem("paraphrase") is None and problem("paraphrase-0.2-s1") is None and problem("flaky") is None
    for bad in ("typo", "paraphrase-1.0-s1", "paraphrase-0-s1", "paraphrase-0.2"):
        assert problem(bad) and bad in problem(bad)
        with pytest.raises(ConfigError, match="MEMMATRIX_MODEL_ORACLE_ABLATION"):
            GatewaySettings.from_env({"MEMMATRIX_MODEL_ORACLE_ABLATION": bad})


def test_the_oracle_with_a_withheld_correction_still_counts_the_prompt_as_recognised():
    cases = json.loads((ROOT / "cases/contradiction/1.3.0.json").read_text())
    oracle = Oracle(GoldIndex([cases], "nocorrection"))
    case = next(c for c in cases["cases"] if c["id"] == "retraction-sister")
    op = next(o for o in case["ops"] if any(g.get("intent") == "retract" for g in o.get("gold") or []))
    user = "\n".join(m["content"] for m in op["messages"] if m["role"] == "user")
    request = {"messages": [{"role": "system", "content": "memmatrix-extract/v1"}, {"role": "user", "content": user}]}
    reply = oracle.chat(request)
    assert reply.matched and all(f["intent"] != "retract" for f in json.loads(reply.content)["facts"])
    assert Oracle(GoldIndex([cases])).chat(request).matched




def test_a_wrong_tool_argument_moves_the_cells_of_the_facts_it_garbles(config, tmp_path, perfect):
    """The reference extracting through one tool call per fact: with the perfect oracle it is the reference, cell
    for cell; under wrongarg the first call of each extraction loses half its first text argument (a subject of
    several words). The reference finds a write's facts by their words, so what moves is the forget: its request's
    fact no longer names the stored one, and only the cells that check a value is gone (absent, stores, audit)
    move, never one that checks a value is still there."""
    adapter = f"{ROOT / 'tests/adapters/tool_extract.py'}:ToolExtract"
    where = _run(config, tmp_path, "deletion", "", adapter)
    same, cost = _cells(where)
    assert same == perfect["deletion"] and not cost.get("unmatched")
    result = json.loads((where / "result.json").read_text())
    gone = {(c["id"], x["step"]) for c in result["cases"] for x in c["cells"]
            if {k.get("check") for k in x["checks"]} & {"absent", "store", "stores", "audit"}}
    where = _run(config, tmp_path / "tools", "deletion", "wrongarg", adapter)
    cells, cost = _cells(where)
    moved = {k for k, v in cells.items() if perfect["deletion"][k] != v}
    assert moved and moved <= gone and not cost.get("unmatched")
    assert "record_fact" in text_of(where, "model-transcript")
