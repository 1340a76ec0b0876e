"""--jobs N runs independent cases on N instances at once, and the transcripts are the ones one instance writes."""

import json

import pytest

from conftest import ROOT
from helpers import text_of

from memmatrix.cases import default_case_file, load_cases
from memmatrix.cli import main
from memmatrix.run.parallel import merge_models, merge_transcripts
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system
from memmatrix.exchange.transcript import Transcript


def _run(config, system, out, protocol, jobs, runtime="inprocess", judge=True):
    p = get_protocol(protocol)
    cases = load_cases(default_case_file(config, protocol), config, p)
    return execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cases, runtime=runtime,
                              out=out, jobs=jobs, judge=judge), config)


@pytest.mark.parametrize("system,protocol,runtime", [
    ("reference", "deletion", "inprocess"), ("reference", "writepath", "inprocess"),
    ("notes", "door", "inprocess"), ("reference", "deletion", "embedded")])
def test_jobs_give_the_transcripts_of_one_instance_byte_for_byte(config, tmp_path, system, protocol, runtime):
    one = _run(config, system, tmp_path / "one", protocol, 1, runtime)
    three = _run(config, system, tmp_path / "three", protocol, 3, runtime)
    assert text_of(three) == text_of(one)
    a, b = (json.loads((d / "result.json").read_text()) for d in (one, three))
    assert a["transcript"]["sha256"] == b["transcript"]["sha256"] and a["cases"] == b["cases"]
    assert b["stamp"]["runtime"]["instances"] == 3 and "instances" not in a["stamp"]["runtime"]
    assert len(b["timings"]["harness"]["instances"]) == 3
    assert main(["verify", str(three)]) == 0


def _worker(k: int, cases: list[tuple[str, list[str]]]) -> Transcript:
    """A transcript of instance ``k`` holding ``cases``: (case id, the raw ids each of its answers carries)."""
    tr = Transcript(worker=k)
    if k == 0:
        tr.add({"kind": "call", "call": "init", "result": {}})
    for case, ids in cases:
        tr.add({"kind": "case", "case": case})
        for raw in ids:
            tr.add(tr.normalize({"kind": "call", "call": "write", "result": {"ids": [raw], "text": f"made {raw}"}}))
    return tr


def test_ids_are_numbered_in_merged_order_as_one_instance_numbers_them():
    # one instance: case a meets x then y, case b meets y again (ids that survive a reset) then z
    single = Transcript()
    single.add({"kind": "call", "call": "init", "result": {}})
    for case, ids in (("a", ["x", "y"]), ("b", ["y", "z"])):
        single.add({"kind": "case", "case": case})
        for raw in ids:
            single.add(single.normalize({"kind": "call", "call": "write", "result": {"ids": [raw], "text": f"made {raw}"}}))
    # two instances: b ran on instance 1, which met y first and so labelled it n1
    merged = merge_transcripts([_worker(0, [("a", ["x", "y"])]), _worker(1, [("b", ["y", "z"])])], ["a", "b"])
    assert merged == single.records
    assert [r["result"]["ids"] for r in merged if r.get("call") == "write"] == [["~1"], ["~2"], ["~2"], ["~3"]]


class _Recorder:
    def __init__(self, rows):
        import threading
        self.lock, self.records, self.latency_ms = threading.Lock(), rows, [1.0] * len(rows)


def test_model_calls_are_ordered_by_case_then_operation_and_the_other_instances_start_stays_out():
    def row(ctx, case, n):
        return {"ctx": ctx, "context": {"case": case, "index": 0, "call": "write"}, "kind": "chat",
                "request": {"n": n}, "response": {"n": n}, "usage": {"in": 1, "out": 1}}
    first = _Recorder([row(1, None, "setup"), row(2, "b", "b1"), row(3, "b", "b2")])
    other = _Recorder([row(1, None, "setup of instance 1"), row(2, "a", "a1")])
    out = merge_models([first, other], ["a", "b"], "oracle")
    assert [r["request"]["n"] for r in out["records"]] == ["setup", "a1", "b1", "b2"]
    assert [r["seq"] for r in out["records"]] == [0, 1, 2, 3] and out["cost"]["total"]["llm_calls"] == 4


def test_a_judged_protocol_and_an_undeclared_system_run_on_one_instance(config, tmp_path, capsys):
    out = _run(config, "reference", tmp_path / "c", "contradiction", 3)
    assert "instances" not in json.loads((out / "result.json").read_text())["stamp"]["runtime"]
    assert "asks the judge" in capsys.readouterr().err
    no_judge = _run(config, "reference", tmp_path / "n", "contradiction", 3, judge=False)
    assert json.loads((no_judge / "result.json").read_text())["stamp"]["runtime"]["instances"] == 3


def test_jobs_on_compose_or_below_one_are_refused_before_anything_runs(tmp_path, capsys):
    assert main(["run", "--system", "reference", "--runtime", "compose", "--jobs", "2", "--out", str(tmp_path)]) == 2
    assert "--jobs runs several instances" in capsys.readouterr().err
    assert main(["run", "--system", "reference", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert not any(tmp_path.iterdir())
