"""The README and docs/ name only files that exist: every path in backticks that starts at one of the project's
folders resolves from the checkout (or, as docs/layout.md names modules, from the package)."""

from __future__ import annotations

import re

from conftest import ROOT

FOLDERS = ("scripts/", "src/", "examples/", "docs/", "systems/", "cases/", "schemas/", "benchmarks/", ".github/",
           "tests/", "claims/", "results/", ".ci/")


def named_paths(text: str) -> list[str]:
    """Paths in backticks that start at a project folder; patterns and placeholders (<name>, *, {a,b}, …) left out."""
    out = []
    for token in re.findall(r"`([^`\s]+)`", text):
        path = token.rstrip(".,:;)").split("#")[0].split(":")[0]
        if path.startswith(FOLDERS) and not re.search(r"[<>*{}$\[\]|…]|\.\.", path):
            out.append(path)
    return out


def test_named_paths_are_found_in_backticks_and_patterns_are_left_out():
    text = "run `scripts/lock-system.sh`, see `docs/site.md#budgets`, `systems/<name>/system.yaml`, `cases/*.json`"
    assert named_paths(text) == ["scripts/lock-system.sh", "docs/site.md"]


def test_every_path_the_readme_and_docs_name_exists():
    missing = [(page.name, path) for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
               for path in named_paths(page.read_text(encoding="utf-8"))
               if not (ROOT / path).exists() and not (ROOT / "src" / "memmatrix" / path).exists()]
    assert missing == []
