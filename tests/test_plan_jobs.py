"""plan --max-jobs: a matrix over GitHub's job limit runs each system version's protocols in one job."""

import json
import subprocess
import sys

import pytest

from memmatrix.ci.matrix import artifact_name, fit_jobs
from memmatrix.common.errors import ConfigError


def _entries(systems: int, protocols=("deletion", "contradiction")) -> list[dict]:
    return [{"system": f"s{i}@1.0", "protocol": p, "runtime": "embedded",
             "artifact": artifact_name(f"s{i}@1.0", p, "embedded")} for i in range(systems) for p in protocols]


def test_under_the_limit_nothing_changes():
    entries = _entries(3)
    assert fit_jobs(entries, 6) == entries


def test_over_the_limit_each_system_versions_protocols_share_a_job():
    jobs = fit_jobs(_entries(3), 5)
    assert [j["protocol"] for j in jobs] == ["deletion,contradiction"] * 3
    assert [j["system"] for j in jobs] == ["s0@1.0", "s1@1.0", "s2@1.0"]
    assert len({j["artifact"] for j in jobs}) == 3


def test_still_over_the_limit_is_an_error_naming_it():
    with pytest.raises(ConfigError, match="needs 3 jobs .* over --max-jobs 2"):
        fit_jobs(_entries(3), 2)


def test_the_cli_says_so(config):
    done = subprocess.run([sys.executable, "-m", "memmatrix", "plan", "--system", "reference,append",
                           "--protocol", "deletion,contradiction", "--max-jobs", "3"],
                          capture_output=True, text=True, cwd=config.home)
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["include"]
    assert len(jobs) == 2 and all(j["protocol"] == "deletion,contradiction" for j in jobs)
    assert "4 entries over --max-jobs 3" in done.stderr
