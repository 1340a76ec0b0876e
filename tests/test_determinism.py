"""Two runs of a deterministic system give the same transcript hash, whatever the runtime."""

import json

from helpers import exchanges, run, text_of


def transcript_sha(run_dir):
    return json.loads((run_dir / "result.json").read_text())["transcript"]["sha256"]


def test_same_system_twice_same_hash(config, tmp_path):
    a = run(config, "reference", tmp_path / "a")
    b = run(config, "reference", tmp_path / "b")
    assert transcript_sha(a) == transcript_sha(b)
    assert text_of(a) == text_of(b)


def test_inprocess_and_embedded_give_the_same_transcript(config, tmp_path):
    a = run(config, "reference", tmp_path / "a", runtime="inprocess")
    b = run(config, "reference", tmp_path / "b", runtime="embedded")
    assert exchanges(a) == exchanges(b)  # only the run header differs: it names the runtime
    assert '"runtime":"inprocess"' in text_of(a).split("\n", 1)[0] and '"runtime":"embedded"' in text_of(b).split("\n", 1)[0]


def test_the_transcript_names_no_path_of_this_machine(config, tmp_path):
    out = run(config, "reference", tmp_path / "a", runtime="embedded")
    text = text_of(out) + text_of(out, "model-transcript") + (out / "result.json").read_text()
    assert str(tmp_path) not in text
    assert str(config.home) not in text
    assert str(config.cache_dir) not in text


def test_two_real_dates_give_the_same_hashes(config, tmp_path):
    """A system that puts today's date in its prompts and wall-clock stamps in its answers, run on two dates."""
    import time_machine
    from conftest import ADAPTERS
    hashes = []
    for day in ("2026-12-01 09:30", "2027-07-19 23:45"):
        with time_machine.travel(day + " +0000", tick=True):
            out = run(config, f"{ADAPTERS / 'wallclock.py'}:WallClock", tmp_path / day[:10], protocol="contradiction")
        r = json.loads((out / "result.json").read_text())
        assert r["stamp"]["started_at"].startswith(day[:10])  # the clock really was moved
        hashes.append((r["transcript"]["sha256"], r["model_transcript"]["sha256"]))
        assert "~wallclock" in text_of(out) and "~today" in text_of(out, "model-transcript")
    assert hashes[0] == hashes[1]
