"""The core's shape: packages in the stages of a result's journey, none importing a higher one, no import circle.

``LAYERS`` lists the packages from the bottom up (a package may import those before it and itself); ``cli`` and
``commands`` sit on top and no package imports them. The test reads every ``import`` of src/memmatrix with ast, so
a lazy import inside a function counts too; a self-test shows it fails on an upward import and on a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LAYERS = ["adapterkit", "common", "cases", "model", "protocols", "systems", "exchange", "runtimes", "result", "run",
          "evidence", "publish", "ci", "commands", "cli"]
TOP = {"__init__": "common", "__main__": "cli"}  # the package's own modules: its version and its entry point


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The memmatrix modules ``name`` imports (a ``from x import y`` of a module y counts as y)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "memmatrix"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "memmatrix":
                continue
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
            out |= subs or {target}
            if subs and len(subs) < len(node.names):
                out.add(target)
    return {m for m in out if m in known and m != name}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "common"
    return TOP.get(parts[1], parts[1])


def problems(src: Path) -> list[str]:
    known = modules(src)
    graph = {m: imports(m, p, known) for m, p in known.items()}
    out = []
    for m, deps in sorted(graph.items()):
        if layer(m) not in LAYERS:
            out.append(f"{m}: package {layer(m)!r} is in no layer of LAYERS")
            continue
        for d in sorted(deps):
            if layer(d) in LAYERS and LAYERS.index(layer(d)) > LAYERS.index(layer(m)):
                out.append(f"{m} imports {d}: {layer(m)} may not import {layer(d)}, which is above it")
    # circles among modules
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                out.append("import circle: " + " -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return out


def test_no_package_imports_a_higher_one_and_there_is_no_circle():
    assert problems(ROOT / "src" / "memmatrix") == []


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "memmatrix" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "memmatrix"


@pytest.mark.parametrize("files, says", [
    ({"__init__.py": "", "common/__init__.py": "", "common/errors.py": "from ..publish import site\n",
      "publish/__init__.py": "", "publish/site.py": ""},
     "memmatrix.common.errors imports memmatrix.publish.site: common may not import publish, which is above it"),
    ({"__init__.py": "", "run/__init__.py": "", "run/a.py": "def f():\n    from . import b\n",
      "run/b.py": "from .a import f\n"},
     "import circle: memmatrix.run.a -> memmatrix.run.b -> memmatrix.run.a"),
    ({"__init__.py": "", "odd/__init__.py": "", "odd/x.py": ""}, "package 'odd' is in no layer of LAYERS"),
])
def test_the_layout_check_fails_on_an_upward_import_a_circle_and_an_unplaced_package(tmp_path, files, says):
    assert any(says in p for p in problems(write(tmp_path, files))), problems(write(tmp_path, files))


def stale_imports(files: list[Path]) -> list[str]:
    """Every ``from memmatrix... import name`` (a lazy one inside a function too) whose module or name does not
    exist: a test, benchmark or adapter still naming a module the layout moved."""
    import importlib
    out = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "memmatrix":
                try:
                    module = importlib.import_module(node.module)
                except ImportError:
                    out.append(f"{path.name}:{node.lineno}: no module {node.module}")
                    continue
                for alias in node.names:
                    if alias.name != "*" and not hasattr(module, alias.name):
                        try:
                            importlib.import_module(f"{node.module}.{alias.name}")
                        except ImportError:
                            out.append(f"{path.name}:{node.lineno}: {node.module} has no {alias.name}")
    return out


def test_every_import_of_the_core_outside_it_names_a_module_that_exists():
    files = [*ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py"), *ROOT.glob("systems/*/*.py")]
    assert stale_imports(files) == []


def test_the_stale_import_check_fails_on_a_moved_module(tmp_path):
    f = tmp_path / "t.py"
    f.write_text("def f():\n    from memmatrix.run import execute\n    from memmatrix.common.config import Nothing\n")
    assert stale_imports([f]) == ["t.py:2: memmatrix.run has no execute", "t.py:3: memmatrix.common.config has no Nothing"]
