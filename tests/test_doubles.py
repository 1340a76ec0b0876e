"""Seed 002's property: a correct system scores everything, and each single-defect double moves exactly
its own cells. A protocol column that a defect cannot move, or that moves with the wrong defect,
measures nothing; these tests make that visible."""

import json
import sys
from pathlib import Path

import pytest

from helpers import run

DOUBLES = Path(__file__).parent / "doubles"
sys.path.insert(0, str(DOUBLES))
sys.modules.setdefault("adapterkit", __import__("memmatrix.adapterkit", fromlist=["adapterkit"]))  # as the runtime does

import contradiction as cdoubles  # noqa: E402
import deletion as ddoubles  # noqa: E402
import writepath as wdoubles  # noqa: E402
import door as odoubles  # noqa: E402
import boundaries as bdoubles  # noqa: E402
import concurrency as ccdoubles  # noqa: E402


def cells(run_dir: Path) -> dict[str, dict[str, str]]:
    r = json.loads((run_dir / "result.json").read_text())
    return {c["id"]: {"shape": c["shape"], **{x["step"]: x["verdict"] for x in c["cells"]}} for c in r["cases"]}


def fast_config(tmp: Path):
    """The checkout's config with short timeouts and its own cache, for a module-scoped reference run."""
    from memmatrix.common.config import Config
    from conftest import ROOT
    return Config.from_env({"MEMMATRIX_HOME": str(ROOT), "MEMMATRIX_CACHE_DIR": str(tmp / "cache"),
                            "MEMMATRIX_CALL_TIMEOUT": "5", "MEMMATRIX_SETTLE_TIMEOUT": "2"})


@pytest.fixture(scope="module")
def reference(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("reference")
    config = fast_config(tmp)
    return {p: cells(run(config, "reference", tmp / p, protocol=p)) for p in ("deletion", "contradiction")}


def moved(base: dict, now: dict) -> dict[str, dict[str, str]]:
    return {case: {k: v for k, v in row.items() if base[case][k] != v} for case, row in now.items()}


@pytest.mark.parametrize("double", ddoubles.DOUBLES, ids=lambda d: d.__name__)
def test_each_deletion_double_moves_exactly_its_own_steps(config, tmp_path, reference, double):
    now = cells(run(config, f"{DOUBLES / 'deletion.py'}:{double.__name__}", tmp_path))
    assert moved(reference["deletion"], now) == {case: double.MOVES for case in now}


@pytest.mark.parametrize("double", cdoubles.DOUBLES, ids=lambda d: d.__name__)
def test_each_contradiction_double_moves_exactly_its_own_columns(config, tmp_path, reference, double):
    now = cells(run(config, f"{DOUBLES / 'contradiction.py'}:{double.__name__}", tmp_path, protocol="contradiction"))
    assert moved(reference["contradiction"], now) == {case: double.MOVES[row["shape"]] for case, row in now.items()}


def test_the_reference_row_is_the_positive_control(reference):
    for row in reference["deletion"].values():
        assert {v for k, v in row.items() if k != "shape"} == {"PASS"}
    for row in reference["contradiction"].values():
        expected = {"PASS", "SKIP"} if row["shape"] == "bounded" else {"PASS"}  # bounded: nothing to undo
        assert {v for k, v in row.items() if k != "shape"} == expected


def test_every_step_and_column_has_its_double():
    from memmatrix.protocols import get_protocol
    for module, protocol in ((ddoubles, "deletion"), (cdoubles, "contradiction")):
        covered = set()
        for d in module.DOUBLES:
            rows = d.MOVES.values() if protocol == "contradiction" else [d.MOVES]
            covered |= {k for row in rows for k, v in row.items() if v in ("FAIL", "ERROR")}
        assert covered == {s.key for s in get_protocol(protocol).steps}, protocol





def measures(run_dir: Path) -> dict[str, tuple[int, int]]:
    m = json.loads((run_dir / "result.json").read_text())["measures"]
    return {k: (v["passed"], v["of"]) for k, v in m.items() if "of" in v}


@pytest.fixture(scope="module")
def writepath_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wp-reference")
    return measures(run(fast_config(tmp), "reference", tmp / "out", protocol="writepath"))


def test_the_reference_scores_every_write_path_measure_in_full(writepath_reference):
    """Seed 002's counts: write success 40/40, staleness 8/8, contradiction 6/6, deletion 8/8, provenance 20/20,
    out-of-scope 6/6."""
    assert writepath_reference == {"W": (40, 40), "S": (8, 8), "C": (6, 6), "D": (8, 8), "P": (20, 20), "A": (6, 6)}


@pytest.mark.parametrize("double", wdoubles.DOUBLES, ids=lambda d: d.__name__)
def test_each_write_path_double_drops_exactly_its_own_measure(config, tmp_path, writepath_reference, double):
    now = measures(run(config, f"{DOUBLES / 'writepath.py'}:{double.__name__}", tmp_path, protocol="writepath"))
    assert now[double.MEASURE] == double.EXPECT
    rates = {k: p / n for k, (p, n) in now.items() if k != double.MEASURE}
    assert rates == {k: 1.0 for k in writepath_reference if k != double.MEASURE}


def test_every_write_path_measure_has_its_double():
    from memmatrix.protocols import get_protocol
    assert {d.MEASURE for d in wdoubles.DOUBLES} == {s.key for s in get_protocol("writepath").steps}


@pytest.fixture(scope="module")
def door_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("door-reference")
    return measures(run(fast_config(tmp), "reference", tmp / "out", protocol="door"))


def test_the_reference_earns_every_door_point(door_reference):
    assert door_reference == {"door": (8, 8), "updates": (3, 3), "time": (3, 3), "abstention": (4, 4)}


def moves_only_its_own(config, tmp_path, protocol: str, double, reference: dict) -> None:
    """The double's own measure is what it declares, and every other measure is the reference's."""
    now = measures(run(config, f"{DOUBLES / (protocol + '.py')}:{double.__name__}", tmp_path, protocol=protocol))
    only_its_own_moved(now, double, reference)


def only_its_own_moved(now: dict, double, reference: dict) -> None:
    assert now[double.MEASURE] == double.EXPECT
    assert {k: v for k, v in now.items() if k != double.MEASURE} == \
        {k: v for k, v in reference.items() if k != double.MEASURE}


@pytest.mark.parametrize("double", odoubles.DOUBLES, ids=lambda d: d.__name__)
def test_each_door_double_moves_exactly_its_own_section(config, tmp_path, door_reference, double):
    moves_only_its_own(config, tmp_path, "door", double, door_reference)


def test_every_door_section_has_its_double():
    from memmatrix.protocols import get_protocol
    assert {d.MEASURE for d in odoubles.DOUBLES} == {s.key for s in get_protocol("door").steps}


def test_a_case_that_cannot_start_errors_only_its_own_measures_and_earns_nothing(config, tmp_path):
    out = run(config, f"{DOUBLES / 'writepath.py'}:ResetFailsOnce", tmp_path, protocol="writepath")
    r = json.loads((out / "result.json").read_text())
    assert {c["step"]: c["verdict"] for c in r["cases"][0]["cells"]} == {"W": "ERROR", "P": "ERROR"}
    m = r["measures"]
    assert (m["W"]["passed"], m["W"]["of"], m["W"]["errors"]) == (39, 40, 1)  # a broken case is not left out
    assert (m["P"]["passed"], m["P"]["of"], m["P"]["errors"]) == (19, 20, 1)
    assert "errors" not in m["S"] and m["S"]["rate"] == 1.0


POISON = Path(__file__).resolve().parents[1] / "cases/boundaries/poison-1.1.0.json"


def boundaries_measures(config, system: str, out) -> dict:
    """X and E from the default case file, P from the poison set."""
    default = measures(run(config, system, out / "default", protocol="boundaries"))
    poison = measures(run(config, system, out / "poison", protocol="boundaries", cases=POISON))
    return {**default, **poison}


@pytest.fixture(scope="module")
def boundaries_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bd-reference")
    return boundaries_measures(fast_config(tmp), "reference", tmp / "out")


def test_the_reference_keeps_every_boundary(boundaries_reference):
    assert boundaries_reference == {"X": (18, 18), "E": (18, 18), "P": (18, 18)}


@pytest.mark.parametrize("double", bdoubles.DOUBLES, ids=lambda d: d.__name__)
def test_each_boundaries_double_moves_exactly_its_own_column(config, tmp_path, boundaries_reference, double):
    now = boundaries_measures(config, f"{DOUBLES / 'boundaries.py'}:{double.__name__}", tmp_path)
    only_its_own_moved(now, double, boundaries_reference)


def test_every_boundaries_column_has_its_double():
    from memmatrix.protocols import get_protocol
    assert {d.MEASURE for d in bdoubles.DOUBLES} == {s.key for s in get_protocol("boundaries").steps}



@pytest.fixture(scope="module")
def concurrency_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cc-reference")
    return measures(run(fast_config(tmp), "reference", tmp / "out", protocol="concurrency"))


def test_the_reference_loses_no_concurrent_write(concurrency_reference):
    assert concurrency_reference == {"S": (80, 80), "W": (64, 64), "T": (16, 16)}


@pytest.mark.parametrize("double", [*ccdoubles.DOUBLES, ccdoubles.RefusesTheSecondWriter], ids=lambda d: d.__name__)
def test_each_concurrency_double_moves_exactly_its_own_column(config, tmp_path, concurrency_reference, double):
    moves_only_its_own(config, tmp_path, "concurrency", double, concurrency_reference)


def test_every_concurrency_column_but_the_control_has_its_double():
    from memmatrix.protocols import get_protocol
    assert {d.MEASURE for d in ccdoubles.DOUBLES} == {s.key for s in get_protocol("concurrency").steps} - {"S"}


def test_a_refused_writer_writes_again_alone_and_is_not_lost(config, tmp_path):
    out = run(config, f"{DOUBLES / 'concurrency.py'}:RefusesTheSecondWriter", tmp_path, protocol="concurrency")
    from memmatrix.exchange.transcript import read_lines
    records = read_lines(out / "transcript.jsonl.xz")
    retries = [r for r in records if r.get("kind") == "call" and r.get("retry") == 1]
    assert len(retries) == 24 and all(r["call"] == "write" for r in retries)
    r = json.loads((out / "result.json").read_text())
    w = [c for case in r["cases"] for c in case["cells"] if c["step"] == "W"]
    assert all(c["verdict"] == "PASS" and "refused, not lost" in c["reason"] for c in w)


def test_without_concurrent_writes_only_the_control_is_measured(config, tmp_path):
    out = run(config, f"{DOUBLES / 'concurrency.py'}:NoConcurrentWrites", tmp_path, protocol="concurrency")
    got = {(c["step"], c["verdict"]) for case in json.loads((out / "result.json").read_text())["cases"]
           for c in case["cells"]}
    assert got == {("S", "PASS"), ("W", "UNSUPPORTED"), ("T", "UNSUPPORTED")}


def test_an_adapter_that_answers_fewer_writers_than_wrote_is_an_error_not_a_verdict(config, tmp_path):
    out = run(config, f"{DOUBLES / 'concurrency.py'}:AnswersOneWriter", tmp_path, protocol="concurrency")
    cells = [c for case in json.loads((out / "result.json").read_text())["cases"] for c in case["cells"]]
    assert {c["verdict"] for c in cells} == {"ERROR"}
    assert all("answered 1 writer(s) of 2" in c["reason"] for c in cells)


def test_a_race_runs_every_repeat_and_the_report_pools_them(tmp_path, monkeypatch):
    """Concurrency is repeated for timing, not for a model: a system that made no model call runs every repeat, and
    the report adds each column's facts up over the runs (two runs of the lost update: W 80/128)."""
    from conftest import ROOT
    from memmatrix.cli import main
    monkeypatch.setenv("MEMMATRIX_HOME", str(ROOT))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert main(["run", "--system", f"{DOUBLES / 'concurrency.py'}:LastWriterLost", "--protocol", "concurrency",
                 "--runtime", "inprocess", "--repeats", "2", "--out", str(out)]) == 0
    runs = sorted((out / "concurrency").glob("*/*/*/result.json"))
    assert [p.parent.name for p in runs] == ["inprocess", "inprocess+repeat-2"]
    assert main(["run", "--system", "append", "--protocol", "concurrency", "--runtime", "inprocess", "--repeats", "2",
                 "--out", str(tmp_path / "modelless")]) == 0
    modelless = sorted((tmp_path / "modelless" / "concurrency").glob("*/*/*/result.json"))
    assert [p.parent.name for p in modelless] == ["inprocess", "inprocess+repeat-2"]
    assert not any(json.loads(p.read_text())["cost"]["total"]["llm_calls"] for p in modelless)
    assert main(["report", str(out), "--output", str(tmp_path / "r.md")]) == 0
    row = next(line for line in (tmp_path / "r.md").read_text().splitlines() if "| 2 | " in line)
    assert "| 80/128 (0.62, " in row and "| 160/160 (1.00, " in row and "| 32/32 (1.00, " in row
