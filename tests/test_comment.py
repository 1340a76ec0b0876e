"""The Action's opt-in comment: its body says what changed, validates against what GitHub's REST API accepts, and
one comment per job is created once and then updated in place (against a loopback stand-in for the API)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT
from github_fake import SCHEMA, FakeGitHub
from memmatrix.ci.action import step_comment
from memmatrix.ci.comment import MAX_BODY, GitHub, body, marker, publish, worth_saying
from memmatrix.common.config import Config
from memmatrix.common.errors import ConfigError

SCHEMAS = ROOT / "schemas"
CHANGE = {"system": "mem0", "old_version": "2.2.1", "new_version": "2.2.1", "runtime": "embedded", "case": "del-01",
          "step": "3", "old": "PASS", "new": "FAIL", "reason": "the canary came back after re-ingest", "kind": "regression"}
DIFF = {"kind": "memmatrix.diff", "compared": [{"old": "a", "new": "b"}], "not_compared": [], "regressions": 1,
        "changes": [CHANGE], "thresholds": {"cost": 1.5}, "over_threshold": [
            {"system": "mem0", "old_version": "2.2.1", "new_version": "2.2.1", "runtime": "embedded", "kind": "cost",
             "metric": "model tokens", "old": 100.0, "new": 400.0, "threshold": 1.5, "ratio": 4.0}]}


@pytest.fixture
def github():
    fake = FakeGitHub()
    yield fake
    fake.close()


def test_the_body_names_each_changed_cell_the_figures_over_threshold_and_the_moved_claims():
    text = body("job-a", DIFF, ["mem0-delete (mem0): reproduced -> contradicted"], "https://example.invalid/run/1")
    assert text.startswith(marker("job-a") + "\n")
    assert "1 regression(s), 1 cell(s) changed state in 1 compared run(s)" in text
    assert "| regression | mem0 | 2.2.1 → 2.2.1 | embedded | del-01 | 3 | PASS → FAIL |" in text
    assert "cost: model tokens | 100 | 400 |" in text
    assert "mem0-delete (mem0): reproduced -&gt; contradicted" in text   # renders as ->
    assert list(SCHEMA.iter_errors({"body": text})) == []
    quiet = body("job-a", {**DIFF, "changes": [], "over_threshold": []}, [])
    assert "No cell changed state." in quiet and "regression" not in quiet.split("\n", 2)[1]
    first = body("job-a", {"kind": "memmatrix.diff", "compared": [], "changes": [], "baseline_missing": "base"}, [])
    assert "first run" in first and "`base`" in first


def test_a_huge_body_is_cut_to_what_github_accepts():
    many = {**DIFF, "changes": [{**CHANGE, "case": f"c{i}", "reason": "x" * 150} for i in range(5000)]}
    text = body("k", many, [f"claim-{i} (s): a -> b " + "y" * 200 for i in range(400)])
    assert len(text) <= MAX_BODY and list(SCHEMA.iter_errors({"body": text})) == []
    assert "more change(s)" in text


def test_worth_saying_is_a_change_a_figure_or_a_claim():
    assert not worth_saying({**DIFF, "changes": [], "over_threshold": []}, [])
    assert worth_saying({**DIFF, "over_threshold": []}, [])
    assert worth_saying({**DIFF, "changes": []}, [])
    assert worth_saying(None, ["x"]) and not worth_saying(None, [])


def test_one_comment_is_created_then_updated_in_place_per_job(github):
    gh = GitHub(github.url, github.repo, "t0ken")
    assert publish(gh, "pull-request", "7", body("job-a", DIFF, []), SCHEMAS).startswith("created")
    assert publish(gh, "pull-request", "7", body("job-b", DIFF, []), SCHEMAS).startswith("created")  # another job
    again = body("job-a", {**DIFF, "changes": [], "over_threshold": []}, [])
    assert publish(gh, "pull-request", "7", again, SCHEMAS).startswith("updated")
    thread = github.threads["issues/7"]
    assert len(thread) == 2 and thread[0]["body"] == again and "job-b" in thread[1]["body"]
    methods = [m for m, path, _ in github.requests if m != "GET"]
    assert methods == ["POST", "POST", "PATCH"]
    assert any(path.endswith(f"/issues/comments/{thread[0]['id']}") for m, path, _ in github.requests if m == "PATCH")


def test_the_comment_is_found_past_the_first_page_and_on_a_commit(github):
    github.threads["issues/9"] = [{"id": i, "body": f"someone else {i}"} for i in range(150)]
    gh = GitHub(github.url, github.repo, "t0ken")
    github.threads["issues/9"].append({"id": 999, "body": body("job-a", DIFF, [])})
    assert publish(gh, "pull-request", "9", body("job-a", DIFF, ["x"]), SCHEMAS) == "updated 999"
    sha = "0123456789abcdef0123456789abcdef01234567"
    quiet = body("job-a", {**DIFF, "changes": [], "over_threshold": []}, [])
    assert publish(gh, "commit", sha, quiet, SCHEMAS, create=False) == "nothing to say"
    assert publish(gh, "commit", sha, body("job-a", DIFF, []), SCHEMAS).startswith("created")
    assert publish(gh, "commit", sha, quiet, SCHEMAS, create=False).startswith("updated")   # says it is fixed now
    assert github.threads[f"commits/{sha}"][0]["body"] == quiet


def test_a_token_without_the_permission_names_the_permission(github):
    github.deny = True
    with pytest.raises(ConfigError, match="pull-requests: write"):
        publish(GitHub(github.url, github.repo, "t0ken"), "pull-request", "7", body("k", DIFF, []), SCHEMAS)
    with pytest.raises(ConfigError, match="github-token is empty"):
        GitHub(github.url, github.repo, "")


def _step_env(monkeypatch, tmp_path, github, **extra):
    diff = tmp_path / "diff.json"
    diff.write_text(json.dumps(DIFF))
    env = {"MM_COMMENT": "pull-request", "MM_GITHUB_TOKEN": "t0ken", "MM_ARTIFACT": "memmatrix-job",
           "MM_REGRESSIONS": str(diff), "MM_CLAIMS": "", "MM_CLAIMS_BASELINE": "", "RUNNER_TEMP": str(tmp_path),
           "GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": github.repo,
           "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567", **extra}
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def test_the_step_comments_on_the_pull_request_of_the_event_and_nowhere_else(monkeypatch, tmp_path, github):
    config = Config.from_env({"MEMMATRIX_HOME": str(ROOT)})
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"schedule": "0 4 * * *"}))
    _step_env(monkeypatch, tmp_path, github, GITHUB_EVENT_PATH=str(event), GITHUB_EVENT_NAME="schedule")
    assert step_comment(config, cli=None) == 0 and github.requests == []       # no pull request: nothing sent
    assert (tmp_path / "memmatrix-comment.md").read_text().startswith(marker("memmatrix-job"))
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    assert step_comment(config, cli=None) == 0
    assert step_comment(config, cli=None) == 0
    assert len(github.threads["issues/12"]) == 1 and "PASS → FAIL" in github.threads["issues/12"][0]["body"]
    monkeypatch.setenv("MM_COMMENT", "issue")
    with pytest.raises(ConfigError, match="not none, pull-request or commit"):
        step_comment(config, cli=None)
