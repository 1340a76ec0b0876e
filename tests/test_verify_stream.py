"""verify reads each transcript once, as a stream, shares the oracle's answers across results and runs in processes:
none of that may change what it finds."""

import json
import shutil

from helpers import run
from memmatrix.common import canon
from memmatrix.common.canon import compress_bytes, sha256_bytes, stored_transcript
from memmatrix.evidence import stream
from memmatrix.evidence.reask import Answers
from memmatrix.evidence.verify import verify_all, verify_result


def test_verify_never_holds_a_transcript_whole(config, tmp_path, monkeypatch):
    """Reading a whole transcript (``read_text``) is refused during verify: a result still verifies, from streams."""
    d = run(config, "reference", tmp_path / "ref")

    def whole(path):
        raise AssertionError(f"{path} read whole")
    monkeypatch.setattr(canon, "read_text", whole)
    assert verify_result(d / "result.json", config) == []


def test_a_stream_reports_the_hash_and_count_of_its_lines(config, tmp_path):
    d = run(config, "reference", tmp_path / "ref")
    entry = json.loads((d / "result.json").read_text())["transcript"]
    art = stream.Artifact(d, entry, "transcript")
    assert sum(1 for _ in art) == entry["records"] and art.problems == []
    art = stream.Artifact(d, {**entry, "sha256": "0" * 64, "records": entry["records"] + 1}, "transcript")
    list(art)
    assert len(art.problems) == 2 and "sha256 of its canonical lines" in art.problems[0]


def test_a_slim_record_keeps_what_whole_run_checks_read(config):
    door = {"kind": "call", "call": "door", "case": "c", "args": {"q": "x" * 100}, "result": {"text": "y" * 100}}
    settle = {"kind": "call", "call": "settle", "result": {"quiescent": True}}
    failed = {"kind": "call", "call": "write", "error": {"kind": "adapter", "message": "boom"}}
    assert stream.slim_call(door) == {"kind": "call", "call": "door", "result": None}
    assert stream.slim_call(door) is stream.slim_call({**door, "case": "d"}), "one shared dict per kind of call"
    assert stream.slim_call(settle) == settle and stream.slim_call(failed) == failed
    unavailable = {"kind": "unavailable", "message": "the adapter stopped answering"}
    assert stream.slim_call(unavailable) == unavailable
    chat = {"kind": "chat", "request": {"messages": []}, "response": {"choices": []}, "usage": {"prompt_tokens": 3}}
    assert stream.slim_model(chat) == {"kind": "chat", "response": None, "usage": {"prompt_tokens": 3}}
    suite = {**chat, "context": {"call": "judge-suite"}}
    assert stream.slim_model(suite) is suite


def test_the_shared_answers_are_reused_and_still_catch_an_edited_answer(config, tmp_path):
    """A second copy of a result asks the shared cache, not the oracle; an answer edited in that copy is still
    compared with the oracle's reply and caught."""
    d = run(config, "reference", tmp_path / "ref")
    twin = tmp_path / "twin"
    shutil.copytree(d, twin)
    answers = Answers()
    assert verify_result(d / "result.json", config, [], answers) == []
    asked, hits = answers.asked, answers.hits  # a run can ask the same request twice
    assert asked > hits
    lines = canon.read_text(stored_transcript(twin, "model-transcript")).splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '"dialect":"memmatrix-extract"' in ln and '"matched":true' in ln)
    rec = json.loads(lines[k])
    msg = rec["response"]["choices"][0]["message"]
    msg["content"] = msg["content"].replace('"value": "', '"value": "X', 1)
    lines[k] = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    text = "".join(lines)
    stored_transcript(twin, "model-transcript").write_bytes(compress_bytes(text.encode()))
    result = json.loads((twin / "result.json").read_text())
    result["model_transcript"]["sha256"] = sha256_bytes(text.encode())
    (twin / "result.json").write_text(json.dumps(result))
    found = verify_result(twin / "result.json", config, [], answers)
    assert answers.asked == 2 * asked and answers.hits == hits + asked, "the copy was answered from the cache"
    assert any("1 of" in p and "oracle answers differ" in p for p in found), found


def test_jobs_give_the_same_output_in_the_same_order(config, tmp_path):
    """Two systems' results in two processes: the same (path, problems) as one process, in the order given; a
    broken result is reported at its place."""
    ref = run(config, "reference", tmp_path / "r" / "deletion" / "reference" / "1.0" / "inprocess")
    app = run(config, "append", tmp_path / "r" / "deletion" / "append" / "1.0" / "inprocess")
    broken = app.parent / "inprocess+copy"  # another result of the same system folder: one process checks both
    shutil.copytree(app, broken)
    (broken / "result.json").write_text("{")
    paths = [ref / "result.json", broken / "result.json", app / "result.json"]
    serial = [(p, probs) for p, probs, _ in verify_all(paths, config, jobs=1)]
    heard: list[str] = []
    parallel = [(p, probs) for p, probs, _ in verify_all(paths, config, jobs=2, progress=heard.append)]
    assert [p for p, _ in parallel] == paths
    assert parallel == serial
    # the plan before any work, then each system folder once, as it is done, with the count so far
    assert heard[0].startswith("3 result(s) of 2 system folder(s) in 2 processes"), heard
    folders = {str(ref.parent.parent): "1 result(s)", str(app.parent.parent): "2 result(s)"}
    assert sorted(h.split(": ")[0] for h in heard[1:]) == sorted(folders), heard
    assert all(f"{folders[h.split(': ')[0]]} checked" in h for h in heard[1:]), heard
    assert "(3 of 3, 2 of 2 system folders)" in heard[-1], heard
    assert [p for p, _, _ in verify_all(paths, config, jobs=1, progress=heard.append)] == paths and len(heard) == 3
    assert serial[0][1] == [] and serial[2][1] == [] and "cannot be read as JSON" in serial[1][1][0]
