"""The pieces a case page is built from: how a line is quoted or named, a check written as one line, a transcript
read in blocks, and the run pages written by forked workers exactly as one after another."""

from __future__ import annotations

import gzip
import json
import lzma
import os

import pytest

from conftest import ROOT
from memmatrix.common.canon import iter_lines, read_text
from memmatrix.common.config import Config
from memmatrix.publish import quotes, site

CONFIG = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})


def test_a_long_quote_keeps_its_start_and_end_and_says_how_much_it_left_out():
    assert quotes._cut("x" * 10, 4, 4) == ("xxxx", 2, "xxxx")
    assert quotes._cut("short", 4, 4) == ("short", 0, "")
    li = str(quotes._item(7, "what", quotes._cut("a" * 5 + "b" * 5 + "c" * 5, 5, 5)))
    assert li == '<li value="7"><b>what</b><code>aaaaa<em> …5 characters… </em>ccccc</code></li>'


def test_a_call_answering_items_is_quoted_by_their_texts_and_any_other_answer_by_its_record_after_the_args():
    rec = {"args": {"query": "q"}, "call": "recall", "case": "c", "index": 3, "kind": "call",
           "result": {"items": [{"id": "~1", "score": 0.5, "text": "My dentist is Dr Vane."},
                                {"id": "~2", "text": "I live in Velmoor."}]}, "step": "4"}
    line = json.dumps(rec, separators=(",", ":"), sort_keys=True)
    assert quotes._outcome(line, rec) == ("[1] My dentist is Dr Vane. [2] I live in Velmoor.", 0, "")
    rec = {**rec, "result": {"items": []}}
    assert quotes._outcome(json.dumps(rec), rec) == ("", 0, "")  # its summary says it got nothing back
    rec = {**rec, "result": {"ok": True}}
    line = json.dumps(rec, separators=(",", ":"), sort_keys=True)
    assert quotes._outcome(line, rec)[0] == '{"call":"recall","case":"c","index":3,"kind":"call","result":{"ok":true},"step":"4"}'
    op = {"case": "c", "index": 3, "kind": "op", "spec": {"op": "expect"}, "step": "4"}
    assert quotes._outcome(json.dumps(op), op) == ("", 0, "")  # an op's record is named, not quoted


def test_a_model_call_is_quoted_by_what_the_model_answered_and_an_embedding_not_at_all():
    record = {"context": {"call": "write", "case": "c", "index": 0}, "dialect": "d", "endpoint": "/v1/chat/completions",
              "kind": "chat", "matched": True, "request": {"messages": [{"content": "a long prompt " * 50}]},
              "response": {"choices": [{"message": {"content": "{\"facts\": [\"I moved to Velmoor.\"]}"}}]},
              "seq": 1, "status": 200, "usage": {"in": 5, "out": 3}}
    line = json.dumps(record, separators=(",", ":"), sort_keys=True)
    tail = quotes._tail(line)
    assert "a long prompt" not in tail
    assert quotes._answer(tail) == ('{"facts": ["I moved to Velmoor."]}', 0, "")
    failed = {**record, "response": {"error": {"message": "overloaded"}}}
    assert "overloaded" in quotes._answer(quotes._tail(json.dumps(failed, separators=(",", ":"), sort_keys=True)))[0]
    assert quotes._answer("") == ("", 0, "")


def test_a_check_is_one_line_and_a_long_text_its_reason_already_says_is_pointed_to():
    check = {"check": "absent", "detail": "door 'search' answering 'What is my locker code?'", "ok": False, "op": 8,
             "trail": {"door": True, "stores": ["vector-store"]}}
    assert quotes.check_line(check) == ("absent: not ok · detail door 'search' answering 'What is my locker code?' · "
                                      'op 8 · trail {"door":true,"stores":["vector-store"]}')
    said = quotes.check_line(check, reason="canary still reachable: door 'search' answering 'What is my locker code?'")
    assert "detail (as the reason says)" in said and "answering" not in said
    assert quotes.check_line({"check": "store", "held": True}) == "store · held true"  # values as JSON writes them


def test_lines_named_not_quoted_are_ranges_and_counts_of_each_kind():
    entries = [(10, "op", None, ""), (11, "door", None, ""), (12, "door", None, ""), (15, "recall", None, "")]
    assert quotes._brief(entries) == {"count": 4, "ranges": "10–12, 15", "kinds": "op ×1, door ×2, recall ×1"}
    assert quotes._brief([]) is None


@pytest.mark.parametrize("opener", [lzma.open, gzip.open, open])
@pytest.mark.parametrize("text", ["a\nb\n", "a\n\nb", "é" * 7 + "\nz\n", ""])
def test_a_transcript_read_in_blocks_gives_the_lines_of_its_canonical_text(tmp_path, opener, text):
    path = tmp_path / "t.jsonl"
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    expected = read_text(path).split("\n")
    if expected[-1] == "":
        expected.pop()
    assert list(iter_lines(path, block=3)) == expected  # blocks cut lines and characters apart


def test_a_transcript_that_is_not_one_fails_with_its_name(tmp_path):
    path = tmp_path / "t.jsonl.xz"
    path.write_bytes(b"\xfd7zXZ\x00broken")
    with pytest.raises(ValueError, match="t.jsonl.xz is not a readable transcript"):
        list(iter_lines(path))


def test_run_pages_written_by_forked_workers_are_the_pages_written_one_after_another(tmp_path, monkeypatch):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: the build writes its run pages one after another")
    folder = [ROOT / "results" / "writepath"]
    site.write_site(folder, tmp_path / "forked", CONFIG)
    monkeypatch.setattr(site.os, "sched_getaffinity", lambda _: {0}, raising=False)  # one core: no workers
    site.write_site(folder, tmp_path / "serial", CONFIG)
    forked = {p.relative_to(tmp_path / "forked"): p.read_bytes() for p in (tmp_path / "forked").rglob("*.html")}
    serial = {p.relative_to(tmp_path / "serial"): p.read_bytes() for p in (tmp_path / "serial").rglob("*.html")}
    assert len(forked) > 20 and forked == serial


def test_the_scorecard_cost_reads_disk_from_the_run_and_the_lag_from_the_door_run_saying_what_was_never_served():
    from memmatrix.publish.frontpage import _cost
    run = {"costs": {"model": {"write": {"llm_calls_per_call": 2, "tokens_in_per_call": 1500}}},
           "timings": {"adapter_ms": {"write": {"p50_ms": 40.5}}, "disk": {"multiple_p50": 181.91}}}
    door = {"timings": {"lag_ms": {"p50": 6.5, "never": 2}}}
    cost = _cost(run, "runs/a/index.html#costs", door, "runs/b/index.html#costs")
    assert (cost["disk bytes / byte fed"].text, cost["disk bytes / byte fed"].href) == ("182", "runs/a/index.html#costs")  # whole above 100
    assert cost["write-to-door lag p50"].text == "6.5 ms (2 never served)"
    assert cost["write-to-door lag p50"].href == "runs/b/index.html#costs"
    assert cost["door p50"].text == "—" and cost["door p50"].sort == -1.0  # not measured: said, sorted last
    assert _cost(run, "x")["write-to-door lag p50"].text == "—"  # no door run at this release


def test_the_releases_page_draws_a_strip_per_step_coloured_by_each_release_s_worst_verdict(tmp_path):
    import re
    from memmatrix.publish.reportmodel import cells_of
    from memmatrix.common.releases import version_key
    from memmatrix.evidence.verify import find_results
    folder = ROOT / "results" / "deletion" / "graphiti"
    site.write_site([folder], tmp_path, CONFIG)
    runs = {p.parent.parent.name: json.loads(p.read_text()) for p in find_results([folder])
            if p.parent.name == "embedded"}
    order = sorted(runs, key=version_key)
    steps = runs[order[-1]]["steps"]
    page = (tmp_path / "timeline.html").read_text()
    section = page.split('<section id="graphiti-deletion-embedded-')[1].split("</svg>")[0]
    fills = re.findall(r'<rect [^>]*fill="(#[0-9a-f]{6})"[^>]*><title>step (\S+) at (\S+):', section)
    assert len(fills) == len(steps) * len(order) > 0
    colour = {"PASS": "#2da44e", "FAIL": "#cf222e", "ERROR": "#82071e", "SKIP": "#afb8c1", "UNSUPPORTED": "#eaeef2"}
    worst = {(c.step, v): colour.get(c.worst, "#ffffff") for v in order for c in cells_of(runs[v], steps)}
    assert {(step, version): fill for fill, step, version in fills} == worst
