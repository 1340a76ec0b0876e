"""Release lists, --versions SPEC, and bisect's search: which releases run, and how many."""

from __future__ import annotations

import math
import re

import pytest

from memmatrix.ci.sweep import bisect_protocol
from memmatrix.result.history import change_points
from memmatrix.common.releases import Ranges, ReleaseError, _version_of_file, select

RELEASES = [f"1.{i}.0" for i in range(20)]  # 1.0.0 .. 1.19.0


def ranges(*entries, requirements=("pkg=={version}",)):
    return Ranges.of({"name": "x", "releases": {"requirements": list(requirements), "ranges": list(entries)}})


def test_spec_list_range_every_and_spread():
    r = ranges({"versions": "<1.3", "drivable": False, "reason": "no API"})
    assert select("1.5.0,1.7.0", RELEASES, r) == ["1.5.0", "1.7.0"]
    assert select("1.10.0..1.12.0", RELEASES, r) == ["1.10.0", "1.11.0", "1.12.0"]
    assert select("every:5", RELEASES, r) == ["1.3.0", "1.8.0", "1.13.0", "1.18.0", "1.19.0"]  # newest always in
    assert select("1.3.0..1.9.0:every:3", RELEASES, r) == ["1.3.0", "1.6.0", "1.9.0"]
    assert select("spread:3", RELEASES, r) == ["1.3.0", "1.11.0", "1.19.0"]
    assert select("..1.4.0", RELEASES, r) == ["1.3.0", "1.4.0"]  # a range takes only drivable releases


@pytest.mark.parametrize("spec,says", [
    ("1.1.0", "cannot drive 1.1.0 (releases <1.3: no API)"),
    ("9.9.9", "the index lists no release '9.9.9'"),
    ("1.0.0..1.2.0", "holds no release the adapter can drive"),
    ("every:0", "is not a positive whole number"),
    ("x..1.2.0", "'x' is not a release version"),
    (",", "names no release"),
])
def test_a_bad_spec_is_named(spec, says):
    r = ranges({"versions": "<1.3", "drivable": False, "reason": "no API"})
    with pytest.raises(ReleaseError) as err:
        select(spec, RELEASES, r)
    assert says in str(err.value)


def test_requirements_by_range_and_a_bad_specifier():
    r = ranges({"versions": ">=1.10,<1.15", "requirements": ["extra==1"]})
    assert r.requirements_for("1.12.0") == ["pkg==1.12.0", "extra==1"]
    assert r.requirements_for("1.15.0") == ["pkg==1.15.0"]
    with pytest.raises(ReleaseError, match="is not a PEP 440 specifier"):
        ranges({"versions": "1.x"})


def test_version_of_a_file_name():
    assert _version_of_file("mem0ai-1.0.11-py3-none-any.whl", "mem0ai") == "1.0.11"
    assert _version_of_file("graphiti_core-0.31.2.tar.gz", "graphiti-core") == "0.31.2"
    assert _version_of_file("other-1.0.tar.gz", "mem0ai") is None


def _system(flip_at: dict[tuple[str, str], str]):
    """Verdicts of a system whose cells each flip from PASS to FAIL at a given release."""
    def cells(v):
        return {cell: ("FAIL" if RELEASES.index(v) >= RELEASES.index(at) else "PASS") for cell, at in flip_at.items()}
    return cells


@pytest.mark.parametrize("flip", ["1.1.0", "1.7.0", "1.11.0", "1.18.0", "1.19.0"])
def test_bisect_pins_one_change_exactly_in_logarithmic_runs(flip):
    truth = _system({("case-a", "6"): flip})
    measured = {"1.0.0": truth("1.0.0"), "1.19.0": truth("1.19.0")}  # the sweep's two samples
    ran = []

    def run(v):
        ran.append(v)
        measured[v] = truth(v)

    log = bisect_protocol(RELEASES, measured.get, run)
    assert [e["version"] for e in log] == ran
    assert len(ran) <= math.ceil(math.log2(len(RELEASES) - 1))  # 18 releases between: at most 5 runs
    points = change_points(measured, RELEASES)
    assert [(p["before"]["version"], p["after"]["version"], p["exact"]) for p in points] == \
           [(RELEASES[RELEASES.index(flip) - 1], flip, True)]


def test_bisect_splits_cells_that_change_at_different_releases_and_skips_a_release_that_cannot_run():
    truth = _system({("a", "1"): "1.4.0", ("b", "2"): "1.15.0"})
    measured = {"1.0.0": truth("1.0.0"), "1.19.0": truth("1.19.0")}

    def run(v):
        if v == "1.10.0":
            return "install failed"  # a release that cannot run is skipped, never guessed
        measured[v] = truth(v)

    log = bisect_protocol(RELEASES, measured.get, run)
    assert {"version": "1.10.0", "between": ["1.0.0", "1.19.0"], "cells_differing": 2, "error": "install failed"} in log
    exact = {(p["case"], p["before"]["version"], p["after"]["version"]) for p in change_points(measured, RELEASES)
             if p["exact"]}
    assert exact == {("a", "1.3.0", "1.4.0"), ("b", "1.14.0", "1.15.0")}


def test_nothing_to_bisect_when_the_samples_agree():
    truth = _system({("a", "1"): "1.19.0"})
    measured = {"1.0.0": truth("1.0.0"), "1.18.0": truth("1.18.0")}
    assert bisect_protocol(RELEASES, measured.get, lambda v: pytest.fail(f"ran {v}")) == []
    assert change_points(measured, RELEASES) == []


def test_no_committed_lock_names_a_package_index_or_a_local_path():
    """A lock is portable: pip's own configuration decides where files come from, never this machine's index."""
    from conftest import ROOT
    locks = sorted(ROOT.glob("systems/*/locks/*.txt")) + sorted(ROOT.glob("systems/*/requirements/*.in"))
    assert len(locks) > 20
    for lock in locks:
        for n, line in enumerate(lock.read_text().splitlines(), 1):
            option = line.strip().split(" ", 1)[0]
            assert option not in ("--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--trusted-host"), \
                f"{lock.relative_to(ROOT)}:{n}: {line}"
            assert "file://" not in line and not re.search(r"(^|[\s=@])/[\w.-]+/", line), \
                f"{lock.relative_to(ROOT)}:{n} names an absolute path: {line}"
