"""Docs, CLI and tests kept in step (the sqlite-utils discipline)."""

import json
import re

import yaml
from jsonschema import Draft202012Validator

from conftest import ROOT
from helpers import run
from memmatrix.cli import parser
from memmatrix.config import VARIABLES
from memmatrix.model.settings import VARIABLES as MODEL_VARIABLES
from memmatrix.systems import known_systems, load_system_yaml
from memmatrix.verify import verify_result

README = (ROOT / "README.md").read_text()


def fenced_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)]


def test_readme_opens_with_exactly_two_commands():
    head = README.split("\n## ", 1)[0]
    blocks = fenced_blocks(head)
    assert len(blocks) == 2 and all("\n" not in b for b in blocks), blocks
    assert "memmatrix run" in blocks[0] and "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = fenced_blocks(README.split("\n## ", 1)[0])[1]
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_every_command_and_variable_is_documented():
    commands = parser()._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        assert f"`memmatrix {name}" in README, f"README does not document `memmatrix {name}`"
        assert sub.description or sub.format_help()
    for var in {**VARIABLES, **MODEL_VARIABLES}:
        assert f"`{var}`" in README, f"README does not document {var}"


def test_every_system_folder_is_valid(config):
    names = known_systems(config)
    assert {"notes", "append", "reference"} <= set(names)
    for name in names:
        meta = load_system_yaml(ROOT / "systems" / name, config)
        assert meta["name"] == name


def test_every_schema_is_a_valid_2020_12_schema():
    files = sorted((ROOT / "schemas").glob("*.schema.json"))
    assert len(files) >= 4
    for f in files:
        Draft202012Validator.check_schema(json.loads(f.read_text()))


def test_the_example_adapter_runs_and_verifies(config, tmp_path):
    out = run(config, f"{ROOT / 'examples' / 'minimal_adapter.py'}:MinimalAdapter", tmp_path)
    assert out.name == "inprocess" and out.parent.parent.name == "minimal"
    assert verify_result(out / "result.json", config) == []


def test_the_action_only_calls_the_cli():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for step in action["runs"]["steps"]:
        if "run" in step:
            tools = {line.split()[0] for line in step["run"].splitlines()
                     if line.strip() and not line.strip().startswith(("args", "IFS", "for ", "echo"))}
            assert tools <= {"memmatrix", "python3"}, tools


def test_committed_results_verify(config):
    results = ROOT / "results"
    runs = sorted(results.rglob("result.json"))
    assert runs, "no committed results"
    for r in runs:
        assert verify_result(r, config) == [], r
