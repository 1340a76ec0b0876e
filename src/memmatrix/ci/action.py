"""The steps of the composite action: action.yml runs ``memmatrix action STEP`` for each.

Inputs arrive only as ``MM_*`` environment variables (action.yml maps every ``${{ inputs.* }}`` through
``env:``, never into shell text); what a step hands on goes through the runner's files: GITHUB_OUTPUT,
GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY. tests/test_action.py runs action.yml in a runner emulation.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from ..common.config import Config
from ..publish.diff import diff
from ..common.errors import ConfigError
from .matrix import artifact_name, split_list

FAIL_ON = ("regression", "claims", "threshold", "none")


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def _append(var: str, line: str) -> None:
    path = os.environ.get(var)
    if not path:
        raise ConfigError(f"{var} is not set: `memmatrix action` runs inside a GitHub Actions step")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line if line.endswith("\n") else line + "\n")


def output(key: str, value: str) -> None:
    """An output for the next steps; a value with a line break in it uses GitHub's delimiter form, with a delimiter
    the value does not hold, so nothing in it can set another output."""
    if "\n" not in value and "\r" not in value:
        _append("GITHUB_OUTPUT", f"{key}={value}")
        return
    import secrets
    delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
    _append("GITHUB_OUTPUT", f"{key}<<{delimiter}\n{value}\n{delimiter}")


def fail_on() -> set[str]:
    words = set(split_list([_env("MM_FAIL_ON", "regression")]))
    bad = sorted(words - set(FAIL_ON))
    if bad:
        raise ConfigError(f"fail-on names {bad[0]!r}; use regression, claims, threshold (several: \"regression, "
                          "claims\") or none")
    if "threshold" in words and not thresholds():
        raise ConfigError("fail-on names threshold but cost-threshold and latency-threshold are empty; set one "
                          "(e.g. cost-threshold: 150%)")
    return words


def thresholds() -> dict[str, float]:
    from ..publish.thresholds import parse
    limits = {"cost": parse(_env("MM_COST_THRESHOLD"), "cost-threshold"),
              "latency": parse(_env("MM_LATENCY_THRESHOLD"), "latency-threshold")}
    return {k: v for k, v in limits.items() if v}


def comment_target() -> str:
    from .comment import TARGETS
    target = _env("MM_COMMENT", "none").strip() or "none"
    if target not in TARGETS:
        raise ConfigError(f"comment {target!r} is not none, pull-request or commit")
    return target


def _started(results: str) -> bool:
    """Did this job's run step get past the action's checks and leave results?"""
    return _env("MM_STARTED") == "true" and any(Path(results).rglob("result.json"))


def step_install(config: Config, cli) -> int:
    """After pip installed memmatrix into its virtualenv: put it on PATH, and key the cache by the locks."""
    _append("GITHUB_PATH", str(Path(sys.executable).parent))
    _append("GITHUB_ENV", f"MEMMATRIX_HOME={config.home}")
    digest = hashlib.sha256()
    for path in sorted((config.home / "systems").rglob("*")):
        if path.is_file() and (path.name == "system.yaml" or path.parent.name == "locks"):
            digest.update(f"{path.relative_to(config.home).as_posix()}\0".encode() + path.read_bytes())
    output("locks", digest.hexdigest()[:16])
    return 0


def step_run(config: Config, cli) -> int:
    systems, protocols = split_list([_env("MM_SYSTEMS")]), split_list([_env("MM_PROTOCOLS")])
    runtime, results, baseline = _env("MM_RUNTIME", "embedded"), _env("MM_RESULTS"), _env("MM_BASELINE")
    # first: the upload step names its artifact by it even when this step stops at a wrong input
    output("artifact", _env("MM_ARTIFACT") or artifact_name("+".join(systems), "+".join(protocols), runtime))
    if not systems:
        raise ConfigError('the systems input is empty; give system names or "all"')
    if not protocols:
        raise ConfigError("the protocols input is empty; give e.g. deletion")
    if not results:
        raise ConfigError("the results input is empty; name the folder results are written to")
    output("results", results)
    if baseline:  # the run must never write into what it is compared with
        res, base = Path(results).resolve(), Path(baseline).resolve()
        if res == base or base in res.parents or res in base.parents:
            raise ConfigError(f"results ({results}) and baseline ({baseline}) overlap: the run would overwrite what "
                              "it is compared with; set results to another folder")
    own = _env("MM_SYSTEMS_DIR")
    if own:
        if not Path(own).is_dir():
            raise ConfigError(f"systems-dir {own} is not a folder; point it at the folder holding your system folders")
        roots = os.pathsep.join([str(Path(own).resolve()), str(config.home / "systems")])
        os.environ["MEMMATRIX_SYSTEMS"] = roots
        _append("GITHUB_ENV", f"MEMMATRIX_SYSTEMS={roots}")
    model = _env("MM_MODEL", "oracle")
    if model in ("oracle", "proxy"):
        os.environ["MEMMATRIX_MODEL_MODE"] = model
    elif model.startswith("replay:") and len(model) > len("replay:"):
        os.environ.update(MEMMATRIX_MODEL_MODE="replay", MEMMATRIX_MODEL_REPLAY=model[len("replay:"):])
    else:
        raise ConfigError(f"model {model!r} is not oracle, proxy or replay:PATH")
    fail_on()  # a wrong fail-on, threshold or comment is found before anything runs
    comment_target()
    output("started", "true")  # past the action's own checks: what is in results is this run's
    args = [a for s in systems for a in ("--system", s)] + [a for p in protocols for a in ("--protocol", p)]
    return cli_run(cli, "run", *args, "--runtime", runtime, "--out", results)


#: the Action's verify asks the oracle for every answer: the runner's cache folder is restored from caches other
#: workflow runs wrote (the systems' environments), so a mark there is not this machine's own (evidence/reasked.py)
VERIFY = ("verify", "--fresh")


def step_verify(config: Config, cli) -> int:
    return cli_run(cli, *VERIFY, "--jobs", str(os.cpu_count() or 1), _env("MM_RESULTS"))


def step_report(config: Config, cli) -> int:
    results = _env("MM_RESULTS")
    if not _started(results):
        _append("GITHUB_STEP_SUMMARY", f"## memmatrix\n\nThe run step wrote no result into `{results}`: its log "
                                       "above says why.\n")
        print(f"memmatrix action: the run step wrote no result into {results}; its log says why", file=sys.stderr)
        return 1
    out = Path(_env("RUNNER_TEMP", ".")) / "memmatrix-report.md"
    rc = cli_run(cli, "report", results, "--output", str(out))
    _append("GITHUB_STEP_SUMMARY", out.read_text(encoding="utf-8"))
    output("summary", str(out))
    return rc


def step_claims(config: Config, cli) -> int:
    results, baseline = _env("MM_RESULTS"), _env("MM_CLAIMS_BASELINE")
    gate = "claims" in fail_on()
    if gate and not baseline:
        raise ConfigError("fail-on names claims but claims-baseline is empty; give the claims JSON of an earlier run")
    if not _started(results):
        return 0  # the report step said why
    temp = Path(_env("RUNNER_TEMP", "."))
    args = [results, "--json", str(temp / "memmatrix-claims.json"), "--output", str(temp / "memmatrix-claims.md")]
    if baseline and not Path(baseline).exists():  # a first run: no earlier statuses yet, which is no failure
        _append("GITHUB_STEP_SUMMARY", f"No claims baseline at `{baseline}` yet: no status compared. Commit this "
                                       "run's claims JSON (the step's claims output) there to compare the next run.\n")
        baseline = ""
        args += ["--baseline", baseline] + (["--fail-on-change"] if gate else [])
    output("claims", str(temp / "memmatrix-claims.json"))
    rc = cli_run(cli, "claims", *args)
    if (temp / "memmatrix-claims.md").exists():
        _append("GITHUB_STEP_SUMMARY", (temp / "memmatrix-claims.md").read_text(encoding="utf-8"))
    return rc


def step_diff(config: Config, cli) -> int:
    results, baseline = _env("MM_RESULTS"), _env("MM_BASELINE")
    gate = "regression" in fail_on()
    temp = Path(_env("RUNNER_TEMP", "."))
    output("regressions", str(temp / "memmatrix-regressions.json"))
    if not Path(baseline).exists():  # a first run: nothing to compare with yet, which is no failure
        (temp / "memmatrix-regressions.json").write_text(json.dumps(
            {"kind": "memmatrix.diff", "compared": [], "not_compared": [], "regressions": 0, "changes": [],
             "baseline_missing": baseline}, indent=2) + "\n", encoding="utf-8")
        _append("GITHUB_STEP_SUMMARY", first_run_note(baseline, results))
        print(f"memmatrix: no baseline at {baseline} yet: nothing compared (see the job summary to make one)")
        return 0
    report = diff([Path(baseline)], [Path(results)], config, thresholds=thresholds())  # an error: exit 2
    (temp / "memmatrix-regressions.json").write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    _append("GITHUB_STEP_SUMMARY", report.render())
    rc = report.exit_code if gate else 0  # 1: a regression; 3: nothing was comparable, which never passes a gate
    if rc == 0 and report.over and "threshold" in fail_on():
        print(f"memmatrix: {len(report.over)} figure(s) over a cost or latency threshold (the job summary lists "
              "them)", file=sys.stderr)
        return 1
    return rc


def first_run_note(baseline: str, results: str) -> str:
    """The job summary's paragraph when the baseline folder does not exist yet: what happened, and how to make one."""
    return (f"## No baseline yet\n\nThe baseline folder `{baseline}` does not exist in this checkout, so nothing was "
            f"compared and no cell can have regressed. This run's results are in `{results}` (and its uploaded "
            f"artifact). To make them the baseline, download the artifact into `{baseline}/` and commit it:\n\n"
            f"```\ngh run download <run-id> --dir {baseline}\ngit add {baseline} && git commit -m "
            f"\"memmatrix baseline\"\n```\n\nThe next run compares against it.\n")


def step_comment(config: Config, cli) -> int:
    """The opt-in comment (see ci/comment.py): on the pull request the event is about, or on the commit."""
    from ..publish.claims import changes, load_json
    from .comment import GitHub, body, publish, worth_saying
    target = comment_target()
    if target == "none":
        return 0
    regressions, claims, before = _env("MM_REGRESSIONS"), _env("MM_CLAIMS"), _env("MM_CLAIMS_BASELINE")
    report = json.loads(Path(regressions).read_text(encoding="utf-8")) if regressions and Path(regressions).is_file() else None
    moves = changes(load_json(Path(before)), load_json(Path(claims))) if before and Path(before).is_file() and claims and Path(claims).is_file() else []
    server, repo, run = _env("GITHUB_SERVER_URL"), _env("GITHUB_REPOSITORY"), _env("GITHUB_RUN_ID")
    text = body(_env("MM_ARTIFACT"), report, moves, f"{server}/{repo}/actions/runs/{run}" if server and repo and run else "")
    out = Path(_env("RUNNER_TEMP", ".")) / "memmatrix-comment.md"
    out.write_text(text, encoding="utf-8")
    output("comment", str(out))
    if target == "pull-request":
        event = json.loads(Path(_env("GITHUB_EVENT_PATH")).read_text(encoding="utf-8")) if _env("GITHUB_EVENT_PATH") else {}
        number = (event.get("pull_request") or {}).get("number")
        if not number:
            print(f"memmatrix: comment is pull-request but this {_env('GITHUB_EVENT_NAME', 'event')} is not about a "
                  "pull request: nothing commented (the body is in the step's comment output)")
            return 0
        where, create = str(number), True
    else:
        where, create = _env("GITHUB_SHA"), worth_saying(report, moves)
    gh = GitHub(_env("GITHUB_API_URL", "https://api.github.com"), repo, _env("MM_GITHUB_TOKEN"))
    done = publish(gh, target, where, text, config.home / "schemas", create=create)
    print(f"memmatrix: comment on {target} {where}: {done}")
    return 0


def step_history(config: Config, cli) -> int:
    """Add this run's results as tonight's entry of the history folder, and redraw its chart."""
    results, history = _env("MM_RESULTS"), _env("MM_HISTORY")
    if not _started(results):
        return 0
    output("history", history)
    return cli_run(cli, "nightly", "add", results, "--into", history)


def step_pages(config: Config, cli) -> int:
    """pages/action.yml: verify the results, build the site, and put the nightly history's chart under history/."""
    from ..publish.nightly import publish_history
    results, baseline, history, site = _env("MM_RESULTS"), _env("MM_BASELINE"), _env("MM_HISTORY"), _env("MM_SITE")
    if not site:
        raise ConfigError("the site input is empty; name the folder the site is written to")
    if not Path(results).is_dir():
        raise ConfigError(f"results {results!r} is not a folder; point it at the results the site shows")
    if history and not (Path(history) / "index.json").is_file():
        raise ConfigError(f"history {history!r} holds no index.json; give a folder `memmatrix nightly add` wrote, "
                          "or leave history empty")
    output("site", site)
    rc = cli_run(cli, *VERIFY, "--jobs", str(os.cpu_count() or 1), results)
    if rc:
        return rc  # a site is never built from results that do not verify
    rc = cli_run(cli, "report", results, "--html", site, *(["--baseline", baseline] if baseline else []))
    if rc == 0 and history:
        publish_history(Path(history), Path(site) / "history")
    return rc


def cli_run(cli, *args: str) -> int:
    """Run another memmatrix subcommand in this process (``cli``: the CLI's main, handed in by ``memmatrix action``)."""
    return cli(list(args))


STEPS = {"install": step_install, "run": step_run, "verify": step_verify, "report": step_report,
         "claims": step_claims, "diff": step_diff, "comment": step_comment, "history": step_history,
         "pages": step_pages}
