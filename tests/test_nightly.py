"""The nightly history: a dated file per night (replaced, never dropped), an index and a chart rebuilt from all of
them, every file valid against schemas/nightly.schema.json, and the site's copy of it."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from conftest import ROOT
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError
from memmatrix.publish.nightly import add, night, publish_history

SCHEMA = Draft202012Validator(json.loads((ROOT / "schemas" / "nightly.schema.json").read_text()))
REF, APPEND = ROOT / "results" / "deletion" / "reference" / "1.0" / "embedded", ROOT / "results" / "deletion" / "append"


@pytest.fixture
def config():
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT)})


def test_nights_accumulate_and_the_index_and_chart_follow(tmp_path, config):
    history = tmp_path / "history"
    add(history, night([REF], "2026-12-01", config), config)
    add(history, night([REF, APPEND], "2026-12-02", config), config)
    index = json.loads((history / "index.json").read_text())
    assert [n["date"] for n in index["nights"]] == ["2026-12-01", "2026-12-02"]
    assert index["nights"][0]["runs"] == 1 and index["nights"][1]["runs"] > 1
    assert index["nights"][1]["cells"]["FAIL"] > index["nights"][0]["cells"]["FAIL"] == 0   # append forgets nothing
    for path in [history / "index.json", history / "2026-12-01.json", history / "2026-12-02.json"]:
        assert list(SCHEMA.iter_errors(json.loads(path.read_text()))) == [], path
    table = (history / "trend.md").read_text()
    assert "| reference · deletion 1.2.0 · embedded · oracle | 0/52 | 0/52 |" in table
    assert "| append · deletion 1.2.0 · embedded · oracle | — |" in table
    svg = (history / "trend.svg").read_text()
    assert svg.startswith("<?xml") and "failing cells" in svg
    add(history, night([REF], "2026-12-02", config), config)        # the same night again replaces itself
    index = json.loads((history / "index.json").read_text())
    assert [n["runs"] for n in index["nights"]] == [1, 1]
    site = publish_history(history, tmp_path / "site" / "history")
    assert {"index.json", "trend.svg", "2026-12-01.json", "index.html"} <= {p.name for p in site.parent.iterdir()}
    assert 'src="trend.svg"' in site.read_text()


def test_a_broken_night_or_date_is_named(tmp_path, config):
    history = tmp_path / "history"
    with pytest.raises(ConfigError, match="YYYY-MM-DD"):
        add(history, night([REF], "1 Dec", config), config)
    history.mkdir(parents=True, exist_ok=True)
    (history / "2026-11-30.json").write_text(json.dumps({"kind": "memmatrix.nightly", "date": "2026-11-30"}))
    with pytest.raises(ConfigError, match="2026-11-30.json is not a memmatrix nightly file"):
        add(history, night([REF], "2026-12-01", config), config)
