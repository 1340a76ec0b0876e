"""Docs, CLI and tests kept in step (the sqlite-utils discipline)."""

import json
import re
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from conftest import ROOT
from helpers import run
from memmatrix.cli import parser
from memmatrix.common.config import VARIABLES
from memmatrix.model.settings import VARIABLES as MODEL_VARIABLES
from memmatrix.systems import known_systems, load_system_yaml
from memmatrix.evidence.verify import verify_result

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
    """docs/cli.md and docs/configuration.md are generated from the parser and the variables: every command and
    variable is in them while `memmatrix docs --check` passes (test_the_generated_docs_are_current)."""
    cli, conf = (ROOT / "docs" / "cli.md").read_text(), (ROOT / "docs" / "configuration.md").read_text()
    commands = parser()._subparsers._group_actions[0].choices
    for name, sub in commands.items():
        assert f"`memmatrix {name}`" in cli, f"docs/cli.md does not document `memmatrix {name}`"
        assert sub.format_help()
    for var in {**VARIABLES, **MODEL_VARIABLES}:
        assert f"`{var}`" in conf, f"docs/configuration.md does not document {var}"


DOC_PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "research" not in p.parts)]


def test_the_generated_docs_are_current(config):
    from memmatrix.publish.docs import update
    stale = update(config, parser(), check=True)
    assert stale == [], f"stale generated docs: {[str(p.relative_to(ROOT)) for p in stale]}; run `memmatrix docs`"


def test_the_readme_is_a_front_door():
    assert len(README.splitlines()) < 250
    linked = set(re.findall(r"\]\((docs/[^)#]+)", README))
    pages = {p.relative_to(ROOT).as_posix() for p in DOC_PAGES if p.parent.name != "research" and p.name != "README.md"}
    assert pages - linked - {"docs/evidence"} <= set(), f"pages the README does not link: {sorted(pages - linked)}"


def test_every_relative_link_resolves():
    broken = []
    for page in DOC_PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


COMMAND = re.compile(r"^\s*(?:\$ )?(?:memmatrix|\.venv/|python3? |pip |bash |git |docker |pytest|MEMMATRIX_\w+=)", re.M)


def fences(text: str) -> list[tuple[int, str, str]]:
    """(line, info string, body) of every fenced block."""
    return [(text[:m.start()].count("\n") + 1, m.group(1).strip(), m.group(2))
            for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, flags=re.S | re.M)]


def test_every_command_block_is_run_here_or_marked_illustrative():
    """A block of commands in the docs either runs in test_the_runnable_doc_blocks_run (```sh) or says it is
    illustrative (```console illustrative, ```yaml illustrative): nothing is shown as runnable that is not run."""
    unmarked = []
    for page in DOC_PAGES:
        text = page.read_text()
        head_end = text.index("\n## ") if page.name == "README.md" and "\n## " in text else 0
        for line, info, body in fences(text):
            if page.name == "README.md" and text.count("\n", 0, head_end) >= line:
                continue  # the README's two commands: .ci/run runs the second, the fresh-clone check the first
            if "illustrative" in info or info.split()[:1] == ["sh"]:
                continue
            if COMMAND.search(body):
                unmarked.append(f"{page.relative_to(ROOT)}:{line}")
    assert unmarked == [], "command blocks neither run (```sh) nor marked illustrative: " + ", ".join(unmarked)


def test_the_runnable_doc_blocks_run(tmp_path):
    """Every ```sh block runs as written, line by line, from a folder of its own, with this checkout's memmatrix."""
    import os
    import shlex
    import subprocess
    import sys
    env = {**os.environ, "MEMMATRIX_HOME": str(ROOT), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = 0
    for page in DOC_PAGES:
        for line, info, body in fences(page.read_text()):
            if info.split()[:1] != ["sh"]:
                continue
            work = tmp_path / f"{page.stem}-{line}"
            work.mkdir()
            (work / "examples").symlink_to(ROOT / "examples")  # a folder beside the checkout's examples
            for command in filter(str.strip, body.splitlines()):
                done = subprocess.run(shlex.split(command), cwd=work, env=env, capture_output=True, text=True,
                                      timeout=300)
                assert done.returncode == 0, f"{page.relative_to(ROOT)}:{line}: {command}: {done.stderr[-500:]}"
                ran += 1
    assert ran >= 2, "no runnable block in the docs"


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
    """Every line a step runs is the CLI (its own virtualenv's, or on PATH), or the venv and pip that install it."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    runs = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert runs
    for text in runs:
        for line in filter(str.strip, text.splitlines()):
            tool = line.split()[0].strip('"').rsplit("/", 1)[-1]
            assert tool in {"memmatrix", "python3", "pip"}, line
            if tool == "memmatrix":
                assert line.split()[1] == "action", line


def test_committed_results_verify(config):
    results = ROOT / "results"
    runs = sorted(results.rglob("result.json"))
    assert runs, "no committed results"
    for r in runs:
        assert verify_result(r, config) == [], r


def test_the_committed_timeline_is_current_and_its_histories_verify(config):
    """docs/timeline.md is what `memmatrix timeline results --output docs/timeline.md` writes today."""
    from memmatrix.result.history import check_history, find_histories
    from memmatrix.publish.timeline import render
    histories = find_histories([ROOT / "results"])
    assert {h.stem for h in histories} >= {"mem0", "graphiti"}
    for h in histories:
        assert check_history(h, config) == [], h
    assert (ROOT / "docs" / "timeline.md").read_text() == render(ROOT / "results", config, base=ROOT / "docs"), \
        "docs/timeline.md is stale: run `memmatrix timeline results --output docs/timeline.md`"


def test_the_committed_claims_table_is_current_and_has_a_dozen_claims_with_sources_and_cells(config):
    """docs/claims.md is what `memmatrix claims results --output docs/claims.md` writes today."""
    from memmatrix.publish.claims import UNTESTABLE, evaluate, load_claims, measured
    from memmatrix.publish.claimsview import markdown
    from memmatrix.evidence.verify import find_results
    rows = evaluate(load_claims(ROOT / "claims", config), measured(find_results([ROOT / "results"]), config), ROOT)
    assert (ROOT / "docs" / "claims.md").read_text() == markdown(rows, "../"), \
        "docs/claims.md is stale: run `memmatrix claims results --output docs/claims.md`"
    computed = [r for r in rows if r["status"] != UNTESTABLE and r["measured"]]
    assert len(rows) >= 12 and len(computed) >= 12, (len(rows), len(computed))
    assert all(r["source"]["url"].startswith("https://") for r in rows)
    assert all(c["result"] and (ROOT / c["result"]).is_file() for r in computed for m in r["measured"] for c in m["cells"]
               if c["status"] != "not measured")


def test_every_change_point_in_the_history_page_is_two_results_one_release_apart(config):
    """Each row of docs/history.md's table links the last result before a change and the first after it:
    two results of one system, protocol and setup, of releases adjacent among those the adapter drives."""
    from memmatrix.common.releases import Ranges, between
    section = (ROOT / "docs" / "history.md").read_text()
    rows = [ln.replace("](../results/", "](results/") for ln in section.splitlines()
            if ln.startswith("| ") and "](../results/" in ln]
    assert len(rows) >= 3, "the History section lists no change point"
    for row in rows:
        links = re.findall(r"\]\((results/[^)]+/result\.json)\)", row)
        assert len(links) == 2, row
        before, after = (json.loads((ROOT / link).read_text()) for link in links)
        a, b = (Path(link).parts for link in links)
        assert a[1:3] == b[1:3] and a[4] == b[4], f"not one protocol, system and setup: {links}"
        system = before["stamp"]["system"]["name"]
        history = json.loads((ROOT / "results" / "history" / f"{system}.json").read_text())
        ranges = Ranges.of(load_system_yaml(ROOT / "systems" / system, config))
        usable = [r["version"] for r in history["releases"] if ranges.refusal(r["version"]) is None]
        v1, v2 = before["stamp"]["system"]["version"], after["stamp"]["system"]["version"]
        assert v1 in usable and v2 in usable and between(usable, v1, v2) == [], f"{v1} → {v2} are not adjacent"
        cells = lambda r: {(c["id"], x["step"]): x["verdict"] for c in r["cases"] for x in c["cells"]}  # noqa: E731
        assert cells(before) != cells(after), f"{v1} → {v2}: no cell changed"


def test_the_complete_system_yaml_in_the_adapter_guide_fits_the_schema():
    """docs/adapters.md shows every key of system.yaml: the example must stay valid as the schema grows."""
    from memmatrix.common import schemas
    text = (ROOT / "docs" / "adapters.md").read_text()
    block = re.search(r"### system\.yaml.*?```yaml\n(.*?)```", text, re.S).group(1)
    example = yaml.safe_load(block)
    assert schemas.errors(ROOT / "schemas", "system", example) == []
    keys = set(json.loads((ROOT / "schemas" / "system.schema.json").read_text())["properties"])
    assert keys - set(example) <= {"releases"}, f"keys the guide does not show: {sorted(keys - set(example))}"
