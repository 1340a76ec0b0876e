"""The Action and every workflow pass the linters users' CI would run: actionlint, zizmor (no finding above low;
each suppression carries its reason in the file) and check-jsonschema's GitHub schemas."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted((ROOT / "examples" / "workflows").glob("*.yml"))
ACTIONS = [ROOT / "action.yml", ROOT / "pages" / "action.yml"]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]' installs it"
    return found


def lint(*cmd) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_there_are_workflows_to_lint():
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "nightly.yml", "minimal.yml", "own-system.yml"} <= names, names


def test_actionlint_finds_nothing():
    out = lint(tool("actionlint"), "-no-color", *WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_zizmor_finds_nothing_above_low():
    out = lint(tool("zizmor"), "--offline", "--min-severity", "medium", "--no-progress", *ACTIONS, *WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_zizmor_suppression_says_why():
    for path in [*ACTIONS, *WORKFLOWS]:
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if "zizmor: ignore" in line:
                assert n and lines[n - 1].strip().startswith("#"), f"{path.name}:{n + 1}: a suppression without a reason above it"


@pytest.mark.parametrize("schema, files", [("vendor.github-workflows", WORKFLOWS), ("vendor.github-actions", ACTIONS)])
def test_github_schemas_accept_them(schema, files):
    out = lint(tool("check-jsonschema"), "--builtin-schema", schema, *files)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_expression_reaches_a_shell_and_every_action_is_pinned_by_sha():
    for path in [*ACTIONS, *WORKFLOWS]:
        doc = yaml.safe_load(path.read_text())
        steps = doc["runs"]["steps"] if "runs" in doc else [s for j in doc["jobs"].values() for s in j.get("steps", [])]
        for step in steps:
            assert "${{" not in step.get("run", ""), f"{path.name}: step {step.get('name')!r} interpolates into shell"
            uses = step.get("uses", "")
            if uses and not uses.startswith("./") and not re.match(r"memmatrix/action(/pages)?@", uses):
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{path.name}: {uses} is not pinned by SHA"
        if "jobs" in doc:
            assert "permissions" in doc, f"{path.name} declares no permissions"
