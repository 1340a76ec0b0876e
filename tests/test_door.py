"""The door protocol (seed 004): token-matched sections, repeats with shared ranks, private case sets."""

import json
from pathlib import Path

import pytest

from conftest import ROOT
from memmatrix.cli import main
from memmatrix.protocols.door import DoorProtocol, dated
from memmatrix.publish.report import rank


@pytest.mark.parametrize("text", ["- planted [since 2026-03-02T10:00:00Z]", "on 2 March 2026", "March 2, 2026",
                                  "Mar 2nd 2026", "2026/03/02", "the 2nd of March 2026"])
def test_a_date_is_found_in_its_common_renderings(text):
    assert dated(text, "2026-03-02")


@pytest.mark.parametrize("text", ["2026-03-20", "12 March 2026", "March 2, 2025", "2026-03-021", "no date at all",
                                  "March 22, 2026"])
def test_another_day_is_not_the_date(text):
    assert not dated(text, "2026-03-02")


def test_the_core_needs_every_section_and_an_error_earns_nothing():
    cases = [{"cells": [{"step": "door", "verdict": "PASS", "checks": [{"ok": True}, {"ok": True}]}]},
             {"cells": [{"step": "updates", "verdict": "ERROR", "checks": []}]},
             {"cells": [{"step": "time", "verdict": "SKIP", "checks": [{"ok": None}]}]},
             {"cells": [{"step": "abstention", "verdict": "FAIL", "checks": [{"ok": True}, {"ok": False}]}]}]
    m = DoorProtocol().measures(cases)
    assert (m["door"]["points"], m["updates"]["points"], m["time"]["points"], m["abstention"]["points"]) == \
        (25.0, 0.0, None, 5.0)
    assert m["core"] == {"weight": 55, "coverage": 45, "points": None}


def test_systems_closer_than_their_ranges_share_a_rank_and_none_ranks_above_a_higher_mean():
    rows = [{"name": "a", "mean": 40.5, "min": 38.1, "max": 43.0}, {"name": "b", "mean": 41.8, "min": 41.8, "max": 41.8},
            {"name": "c", "mean": 34.2, "min": 34.2, "max": 34.2}, {"name": "d", "mean": 34.0, "min": 34.0, "max": 34.0}]
    assert [(r["name"], r["rank"]) for r in rank(rows)] == [("b", 1), ("a", 1), ("c", 3), ("d", 4)]
    # never closer than one check's points: single runs 0.01 apart are not ranked apart
    rows = [{**r, "probe": 2.5} for r in rows]
    assert [(r["name"], r["rank"]) for r in rank(rows)] == [("b", 1), ("a", 1), ("c", 3), ("d", 3)]


def test_repeats_make_one_folder_per_run_and_a_system_without_a_model_runs_once(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--system", "reference", "--protocol", "door", "--repeats", "2", "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "door" / "reference" / "1.0").iterdir() if p.is_dir()) == ["embedded", "embedded+repeat-2"]
    assert json.loads((out / "door/reference/1.0/embedded+repeat-2/result.json").read_text())["stamp"]["repeat"] == 2
    assert main(["run", "--system", "append", "--protocol", "door", "--out", str(out)]) == 0
    assert [p.name for p in (out / "door" / "append" / "1.0").iterdir() if p.is_dir()] == ["embedded"]
    assert "made no model call" in capsys.readouterr().err
    assert main(["report", str(out), "--output", str(tmp_path / "r.md")]) == 0
    assert "| 1 | reference | 1.0 | embedded | 55 | same | 2 |" in (tmp_path / "r.md").read_text()


def test_a_private_set_is_run_outside_the_checkout_and_only_its_scores_are_recorded(tmp_path, monkeypatch, capsys):
    import secrets
    text = (ROOT / "cases" / "door" / "1.0.0.json").read_text()
    public = json.loads(text)
    values = {t["token"] for c in public["cases"] for t in c["targets"].values()
              if t["token"].isalpha() and len(t["token"]) >= 5}  # the names: dates and ports keep their meaning
    fresh = {v: "Zq" + "".join(chr(97 + int(c, 16)) for c in secrets.token_hex(5)) for v in values}
    for old, new in fresh.items():
        text = text.replace(old, new)
    data = json.loads(text)
    data["private"] = True
    data["cases"][0]["targets"]["sister"]["queries"] = ["In which town does my sister live?"]
    sets = tmp_path / "sets"
    sets.mkdir()
    (sets / "holdout.json").write_text(json.dumps(data))
    inside = ROOT / "results" / "private-test-never-written"
    assert main(["run", "--system", "reference", "--protocol", "door", "--cases", str(sets / "holdout.json"),
                 "--out", str(inside)]) == 2
    assert "is a private case set" in capsys.readouterr().err and not inside.exists()
    out = tmp_path / "private-runs"
    assert main(["run", "--system", "reference", "--protocol", "door", "--cases", str(sets / "holdout.json"),
                 "--repeats", "1", "--out", str(out)]) == 0
    record = tmp_path / "committed" / "private" / "door.json"
    assert main(["private", "record", str(out), "--into", str(record)]) == 2  # the set is not findable: no verify
    monkeypatch.setenv("MEMMATRIX_PRIVATE_CASES", str(sets))
    assert main(["private", "record", str(out), "--into", str(record)]) == 0
    text = record.read_text()
    assert "sister" not in text and "In which town" not in text  # nothing of the set, only its hash and scores
    import subprocess
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True).stdout.split(b"\0")
    committed = [record] + [ROOT / f.decode() for f in tracked if f and (ROOT / f.decode()).is_file()]
    leaks = [(str(f), v) for f in committed for v in fresh.values() if v.encode() in f.read_bytes()]
    assert leaks == []  # no file that is or would be committed holds a private case's target value
    entry = json.loads(text)["runs"][0]
    assert entry["measures"]["core"]["points"] == 55 and len(entry["cases"]["sha256"]) == 64
    assert main(["private", "record", str(ROOT / "results" / "deletion" / "reference"), "--into", str(record)]) == 2
