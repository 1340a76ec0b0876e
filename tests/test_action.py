"""The composite action as a runner runs it: action.yml's steps in order, with its `if:` conditions, every input
reaching shell through `env:`, and the runner's files (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH,
GITHUB_STEP_SUMMARY) carried between steps. `uses:` steps are emulated: setup-python and cache do nothing
here, upload-artifact copies the folder under its name and refuses a name already uploaded in the workflow
run (as v4 and later do). Installs the action into a fresh virtualenv per job, like a runner."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

pytestmark = pytest.mark.heavy

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
PAGES = yaml.safe_load((ROOT / "pages" / "action.yml").read_text())
DEFAULTS = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}


class Workflow:
    """One workflow run: its artifacts, shared by its jobs."""

    def __init__(self, root: Path):
        self.root = root
        self.artifacts = root / "artifacts"
        self.artifacts.mkdir(parents=True)
        self.jobs = 0

    def job(self, action: dict = ACTION, action_path: Path = ROOT, **inputs) -> "Job":
        self.jobs += 1
        defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
        return Job(self, self.root / f"job{self.jobs}", {**defaults, **{k.replace("_", "-"): v for k, v in inputs.items()}},
                   action, action_path)


class Job:
    def __init__(self, run: Workflow, workspace: Path, inputs: dict, action: dict = ACTION, action_path: Path = ROOT):
        self.run, self.workspace, self.inputs, self.action = run, workspace, inputs, action
        workspace.mkdir(parents=True)
        self.temp = workspace / ".runner-temp"
        self.temp.mkdir()
        self.files = {k: workspace / f".{k.lower()}" for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH",
                                                                "GITHUB_STEP_SUMMARY")}
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMMATRIX_", "GITHUB_", "PYTHON"))}
        self.env.update(GITHUB_ACTION_PATH=str(action_path), RUNNER_TEMP=str(self.temp), RUNNER_OS="Linux",
                        GITHUB_WORKSPACE=str(workspace), MEMMATRIX_CACHE_DIR=os.environ.get("MEMMATRIX_CACHE_DIR", ""),
                        **{k: str(p) for k, p in self.files.items()})
        if not self.env["MEMMATRIX_CACHE_DIR"]:
            del self.env["MEMMATRIX_CACHE_DIR"]
        self.outputs: dict[str, dict[str, str]] = {}
        self.log: list[tuple[str, int, str]] = []   # (step name, exit code, output)

    # -- expressions: the forms action.yml uses
    def expr(self, text: str) -> str:
        def value(m):
            parts = m.group(1).strip().split(".")
            if parts[0] == "inputs":
                return self.inputs[parts[1]]
            if parts[0] == "steps":
                return self.outputs.get(parts[1], {}).get(parts[3], "")
            if parts[:2] == ["runner", "os"]:
                return "Linux"
            raise AssertionError(f"the emulation does not know {m.group(0)}")
        return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", value, str(text))

    def condition(self, cond: str | None, failed: bool) -> bool:
        if cond is None:
            return not failed
        src = cond.replace("&&", " and ").replace("||", " or ")
        src = re.sub(r"always\(\)", "True", src)
        src = re.sub(r"inputs\.([\w-]+)", lambda m: repr(self.inputs[m.group(1)]), src)
        src = re.sub(r"steps\.([\w-]+)\.outputs\.([\w-]+)",
                     lambda m: repr(self.outputs.get(m.group(1), {}).get(m.group(2), "")), src)
        return bool(eval(src, {"__builtins__": {}}, {}))  # noqa: S307 (the action's own conditions only)

    def _take(self, key: str) -> list[str]:
        f = self.files[key]
        lines = f.read_text().splitlines() if f.exists() else []
        f.write_text("") if key != "GITHUB_STEP_SUMMARY" else None
        return lines

    def go(self) -> "Job":
        failed = False
        for step in self.action["runs"]["steps"]:
            if not self.condition(step.get("if"), failed):
                continue
            name = step["name"]
            if "uses" in step:
                rc, out = self.uses(step)
            else:
                env = {**self.env, **{k: self.expr(v) for k, v in (step.get("env") or {}).items()}}
                assert "${{" not in step["run"], f"{name}: an expression reaches shell directly"
                proc = subprocess.run(["bash", "-c", step["run"]], cwd=self.workspace, env=env, capture_output=True,
                                      text=True, timeout=900)
                rc, out = proc.returncode, proc.stdout + proc.stderr
            self.outputs[step.get("id", name)] = dict(line.split("=", 1) for line in self._take("GITHUB_OUTPUT") if "=" in line)
            for line in self._take("GITHUB_ENV"):
                k, _, v = line.partition("=")
                self.env[k] = v
            for line in self._take("GITHUB_PATH"):
                self.env["PATH"] = f"{line}{os.pathsep}{self.env['PATH']}"
            self.log.append((name, rc, out))
            failed = failed or rc != 0
        self.failed = failed
        return self

    def uses(self, step) -> tuple[int, str]:
        action = step["uses"].split("@")[0]
        assert re.fullmatch(r"[0-9a-f]{40}", step["uses"].split("@")[1]), f"{step['uses']} is not pinned by SHA"
        if action == "actions/upload-artifact":
            name = self.expr(step["with"]["name"])
            target = self.run.artifacts / name
            if not name or target.exists():
                return 1, f"an artifact named {name!r} was already uploaded in this workflow run"
            shutil.copytree(self.workspace / self.expr(step["with"]["path"]), target)
            return 0, f"uploaded {name}"
        if action == "actions/upload-pages-artifact":   # one per workflow run, named github-pages
            site = self.workspace / self.expr(step["with"]["path"])
            if not (site / "index.html").is_file():
                return 1, f"{site} holds no index.html"
            shutil.copytree(site, self.run.artifacts / "github-pages")
            return 0, "uploaded github-pages"
        return 0, f"{action}: emulated as a no-op"

    def failures(self) -> list[str]:
        return [f"{name} (exit {rc}): {out[-1500:]}" for name, rc, out in self.log if rc]

    def rc(self, step: str) -> int:
        return next(rc for name, rc, _ in self.log if name == step)

    def out(self, step: str) -> str:
        return next(out for name, _, out in self.log if name == step)

    def summary(self) -> str:
        f = self.files["GITHUB_STEP_SUMMARY"]
        return f.read_text() if f.exists() else ""


def memmatrix(job: Job, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["memmatrix", *args], cwd=job.workspace, env=job.env, capture_output=True, text=True,
                          timeout=600)


def planted(root: Path, broken: bool) -> Path:
    """A system folder `planted` 1.0: the reference memory, or (broken) the append-only one under its name."""
    folder = root / "planted"
    shutil.copytree(ROOT / "systems" / ("append" if broken else "reference"), folder)
    text = (folder / "system.yaml").read_text()
    (folder / "system.yaml").write_text(re.sub(r"^name: \w+", "name: planted", text, flags=re.M))
    adapter = (folder / "adapter.py").read_text()
    (folder / "adapter.py").write_text(re.sub(r'"system": \{"name": "\w+"', '"system": {"name": "planted"', adapter))
    return root


def test_a_planned_matrix_runs_as_jobs_with_distinct_artifacts_and_an_aggregate_merges_them(tmp_path):
    wf = Workflow(tmp_path)
    plan = subprocess.run([sys.executable, "-m", "memmatrix", "plan", "--system", "reference\nnotes",
                           "--protocol", "deletion", "--runtime", "inprocess"], capture_output=True, text=True, check=True)
    entries = json.loads(plan.stdout)["include"]
    assert [e["system"] for e in entries] == ["reference@1.0", "notes@1.0"]
    jobs = [wf.job(systems=e["system"], protocols=e["protocol"], runtime=e["runtime"], artifact_name=e["artifact"],
                   results="out").go() for e in entries]
    assert [j.failed for j in jobs] == [False, False], [j.failures() for j in jobs]
    assert sorted(p.name for p in wf.artifacts.iterdir()) == sorted(e["artifact"] for e in entries)
    # a block list and a comma-and-space list are each two systems; the default artifact name is this job's own
    both = wf.job(systems="reference,\n  notes\n", protocols="deletion", runtime="inprocess", results="out").go()
    assert not both.failed, both.failures()
    assert {p.parts[-4] for p in (both.workspace / "out").rglob("result.json")} == {"reference", "notes"}
    assert len(list(wf.artifacts.iterdir())) == 3
    again = wf.job(systems="reference, notes", protocols="deletion", runtime="inprocess", results="out").go()
    assert again.failed and "already uploaded" in again.out("Upload results")  # same inputs, same default name
    # the aggregate: merge the jobs' artifacts (each verified), then verify and report the merged folder
    agg = jobs[0]
    merged = agg.workspace / "merged"
    done = memmatrix(agg, "merge", str(merged), *(str(wf.artifacts / e["artifact"]) for e in entries))
    assert done.returncode == 0, done.stderr
    assert memmatrix(agg, "verify", str(merged)).returncode == 0
    report = memmatrix(agg, "report", str(merged))
    assert "reference" in report.stdout and "notes" in report.stdout
    assert "## " in jobs[0].summary() and Path(jobs[0].outputs["claims"]["claims"]).is_file()


def test_the_gate_fails_on_a_planted_regression_on_nothing_comparable_and_refuses_results_in_the_baseline(tmp_path):
    wf = Workflow(tmp_path)
    good, bad = planted(tmp_path / "good", broken=False), planted(tmp_path / "bad", broken=True)
    base = wf.job(systems="planted", protocols="deletion", runtime="inprocess", systems_dir=str(good),
                  results="base", upload="false").go()
    assert not base.failed, base.failures()
    baseline = str(base.workspace / "base")
    first = wf.job(systems="planted", protocols="deletion", runtime="inprocess", systems_dir=str(good),
                   results="first", baseline="memmatrix-baseline", upload="false").go()  # as minimal.yml, run first
    assert not first.failed and first.rc("Diff against the baseline") == 0, first.failures()
    assert "No baseline yet" in first.summary() and "memmatrix-baseline" in first.summary()
    before = sorted((p.relative_to(baseline), p.read_bytes()) for p in Path(baseline).rglob("*") if p.is_file())

    worse = wf.job(systems="planted", protocols="deletion", runtime="inprocess", systems_dir=str(bad),
                   results="new", baseline=baseline, upload="false").go()
    assert worse.failed and worse.rc("Run") == 0 and worse.rc("Diff against the baseline") == 1
    regressions = json.loads(Path(worse.outputs["diff"]["regressions"]).read_text())
    assert regressions["regressions"], regressions
    assert "regress" in worse.summary().lower()
    tolerated = wf.job(systems="planted", protocols="deletion", runtime="inprocess", systems_dir=str(bad),
                       results="new", baseline=baseline, fail_on="none", upload="false").go()
    assert not tolerated.failed, tolerated.failures()   # the same regression, reported but not gating

    unrelated = wf.job(systems="notes", protocols="deletion", runtime="inprocess", results="new",
                       baseline=baseline, upload="false").go()
    assert unrelated.failed and unrelated.rc("Diff against the baseline") == 3   # nothing comparable never passes

    inside = wf.job(systems="planted", protocols="deletion", runtime="inprocess", systems_dir=str(bad),
                    results=baseline, baseline=baseline, upload="false").go()
    assert inside.failed and inside.rc("Run") == 2 and "overlap" in inside.out("Run")
    assert "wrote no result" in inside.summary() or inside.rc("Report") != 0
    after = sorted((p.relative_to(baseline), p.read_bytes()) for p in Path(baseline).rglob("*") if p.is_file())
    assert after == before   # the baseline was not touched


def example_inputs(name: str) -> dict:
    """The `with:` of the memmatrix step of examples/workflows/NAME, as written."""
    doc = yaml.safe_load((ROOT / "examples" / "workflows" / name).read_text())
    steps = [s for job in doc["jobs"].values() for s in job.get("steps", [])]
    step = next(s for s in steps if str(s.get("uses", "")).startswith("memmatrix/action@"))
    return {k.replace("-", "_"): str(v) for k, v in step["with"].items()}


def test_the_pull_request_example_first_run_then_a_planted_regression_comments_once_in_place(tmp_path):
    """pull-request.yml as written, but for the system (the planted one, in-process, so the test stays minutes): a
    first run with no baseline passes and comments so; a run with a planted regression fails, and the comment, a
    body GitHub's API accepts, is updated in place with the regressed cells."""
    from github_fake import FakeGitHub
    wf = Workflow(tmp_path)
    good, bad = planted(tmp_path / "good", broken=False), planted(tmp_path / "bad", broken=True)
    fake = FakeGitHub()
    try:
        inputs = {**example_inputs("pull-request.yml"), "systems": "planted", "protocols": "deletion",
                  "runtime": "inprocess", "upload": "false"}
        assert inputs["comment"] == "pull-request" and inputs["baseline"] == "memmatrix-baseline"

        def job(folder: Path, baseline: Path | None = None) -> Job:
            j = wf.job(systems_dir=str(folder), **inputs)
            event = j.workspace / ".event.json"
            event.write_text(json.dumps({"pull_request": {"number": 5}}))
            j.env.update(GITHUB_API_URL=fake.url, GITHUB_REPOSITORY=fake.repo, GITHUB_EVENT_PATH=str(event),
                         GITHUB_EVENT_NAME="pull_request", GITHUB_SHA="ab" * 20, GITHUB_SERVER_URL="https://github.com",
                         GITHUB_RUN_ID="42")
            if baseline:
                shutil.copytree(baseline, j.workspace / "memmatrix-baseline")
            return j.go()

        first = job(good)
        assert not first.failed, first.failures()
        assert "No baseline yet" in first.summary() and "No claims baseline" in first.summary()
        thread = fake.threads["issues/5"]
        assert len(thread) == 1 and "first run" in thread[0]["body"].split("\n")[1]
        # the user commits the first run's results and claims as the baseline
        baseline = tmp_path / "committed"
        shutil.copytree(first.workspace / "memmatrix-results", baseline)
        shutil.copy(first.outputs["claims"]["claims"], baseline / "claims.json")

        worse = job(bad, baseline)
        assert worse.failed and worse.rc("Diff against the baseline") == 1 and worse.rc("Comment") == 0
        assert len(thread) == 1, "a second comment instead of the first one updated"
        text = thread[0]["body"]
        assert text == Path(worse.outputs["comment"]["comment"]).read_text()
        assert "| regression | planted |" in text and "PASS → FAIL" in text
        assert [m for m, _, _ in fake.requests if m != "GET"] == ["POST", "PATCH"]
    finally:
        fake.close()


def test_the_pages_action_builds_the_site_with_the_nightly_history(tmp_path):
    wf = Workflow(tmp_path)
    results = tmp_path / "results"   # runs of a folder unchanged since (an installed action has no git history)
    for part in ("deletion/reference/1.0/embedded", "contradiction/reference/1.0/embedded"):
        shutil.copytree(ROOT / "results" / part, results / part)
    history = tmp_path / "history"
    done = subprocess.run([sys.executable, "-m", "memmatrix", "nightly", "add", str(results),
                           "--into", str(history), "--date", "2026-12-01"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    site = wf.job(action=PAGES, action_path=ROOT / "pages", results=str(results), history=str(history)).go()
    assert not site.failed, site.failures()
    pages = wf.artifacts / "github-pages"
    assert (pages / "index.html").is_file() and (pages / "history" / "trend.svg").is_file()
    assert "Nightly history" in (pages / "history" / "index.html").read_text()
    missing = wf.job(action=PAGES, action_path=ROOT / "pages", results=str(results),
                     history=str(tmp_path / "nowhere")).go()
    assert missing.failed and "holds no index.json" in missing.out("Verify and build the site")
