"""Helpers for tests: run a system and read its verdicts back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memmatrix.cases import default_case_file, load_cases
from memmatrix.common.config import Config
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system


def run(config: Config, system: str, out: Path, runtime: str = "inprocess", protocol: str = "deletion",
        cases: Path | None = None) -> Path:
    p = get_protocol(protocol)
    cf = load_cases(cases or default_case_file(config, protocol), config, p)
    where = execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cf, runtime=runtime, out=out),
                    config)
    if isinstance(where, Path) and (where / "result.json").is_file():  # every SKIP any test run gives is documented
        undocumented = p.undocumented_skips(json.loads((where / "result.json").read_text())["cases"])
        assert not undocumented, f"SKIP reasons no StepDef.skips documents: {undocumented[:3]}"
    return where


def run_one_case(tmp_path: Path, system: str, protocol: str, case: str, runtime: str = "embedded") -> tuple[dict, dict]:
    """Run one case of the newest case file of ``protocol`` on ``system``: (its cells by step, the result's cost)."""
    data = json.loads(newest_cases(protocol).read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] == case]
    path = tmp_path / f"{protocol}.json"
    path.write_text(json.dumps(data))
    config = Config.from_env({**os.environ, "MEMMATRIX_HOME": str(Path(__file__).resolve().parents[1])})
    out = run(config, system, tmp_path / protocol, runtime=runtime, protocol=protocol, cases=path)
    result = json.loads((out / "result.json").read_text())
    return {x["step"]: x for x in result["cases"][0]["cells"]}, result["cost"]


def verdicts(run_dir: Path) -> dict[str, dict[str, str]]:
    """case id -> step -> verdict"""
    result = json.loads((run_dir / "result.json").read_text())
    return {c["id"]: {cell["step"]: cell["verdict"] for cell in c["cells"]} for c in result["cases"]}


def row(run_dir: Path) -> dict[str, str]:
    """step -> verdict, asserting every case agrees (our cases share one structure)."""
    per_case = verdicts(run_dir)
    steps = next(iter(per_case.values()))
    for case, cells in per_case.items():
        assert cells == steps, f"case {case} differs from the others: {cells} vs {steps}"
    return steps


def text_of(run_dir: Path, name: str = "transcript") -> str:
    """The canonical text of a run's transcript (``transcript`` or ``model-transcript``), stored compressed."""
    from memmatrix.common.canon import read_text, stored_transcript
    return read_text(stored_transcript(run_dir, name))


def exchanges(run_dir: Path) -> str:
    """The transcript without its run header (which names the runtime): what every runtime must agree on."""
    return text_of(run_dir).split("\n", 1)[1]


# ---------------------------------------------------------------- the scenario the request fixtures were recorded with
def W(*users, gold):
    """A write op of a case file, for building an oracle's gold in a test."""
    return {"op": "write", "messages": [{"role": "user", "content": u} for u in users], "gold": gold}


def G(subject, attribute, value, statement, **kw):
    """A gold fact."""
    return {"subject": subject, "attribute": attribute, "value": value, "statement": statement, **kw}


#: tests/fixtures/requests/README.md: Alice lives in Berlin and loves coffee, then moves to Lisbon and quits coffee
ALICE_OPS = [
    W("Hi, I'm Alice. I live in Berlin. I love coffee.", "I work as a nurse at the Charite hospital.",
      gold=[G("user", "name", "Alice", "User's name is Alice"), G("user", "lives in", "Berlin", "User lives in Berlin"),
            G("user", "likes", "coffee", "User loves coffee"),
            G("user", "works at", "Charite hospital", "User works as a nurse at the Charite hospital")]),
    W("I moved to Lisbon last month. I no longer drink coffee.",
      gold=[G("user", "lives in", "Lisbon", "User moved to Lisbon last month", intent="supersede", replaces="Berlin"),
            G("user", "likes", "coffee", "User no longer drinks coffee", intent="retract")]),
]


def newest_cases(protocol: str) -> Path:
    """The newest case file of ``protocol`` in this checkout."""
    from memmatrix.common.config import Config
    return default_case_file(Config.from_env(), protocol)


def one_case(tmp_path: Path, protocol: str = "deletion", index: int = 0,
             rename: tuple[str, str] | None = None) -> Path:
    """A case file holding one case of the newest set (optionally with a value renamed throughout):
    for tests that poll a system without a quiescence signal, where every case costs seconds."""
    from memmatrix.common.config import Config
    config = Config.from_env()
    data = json.loads(default_case_file(config, protocol).read_text(encoding="utf-8"))
    data["cases"] = [data["cases"][index]]
    text = json.dumps(data, ensure_ascii=False)
    if rename:
        text = text.replace(*rename)
    f = tmp_path / f"one-{protocol}-{index}.json"
    f.write_text(text, encoding="utf-8")
    return f


SYSTEMS_ROOT = Path(__file__).resolve().parents[1] / "systems"


def system_dialects(name: str) -> tuple:
    """systems/<name>/oracle.py's DIALECTS, loaded as the gateway loads them (from the module's text)."""
    from memmatrix.model.dialectsource import load_dialects
    return load_dialects(system_source(name))


def system_module(name: str):
    """The loaded module behind systems/<name>/oracle.py, for its helpers."""
    import sys
    return sys.modules[system_dialects(name)[0].__module__]


def system_oracle(name: str, gold):
    """The oracle a run of system ``name`` gets: memmatrix's own dialects, then the folder's."""
    from memmatrix.model.oracle import Oracle
    return Oracle(gold, system_dialects(name))


def system_source(name: str):
    """systems/<name>/oracle.py as the harness hands it to a gateway (a DialectSource)."""
    from memmatrix.model.dialectsource import read_dialect_source
    return read_dialect_source(name, SYSTEMS_ROOT / name, "oracle.py:DIALECTS", f"systems/{name}")


def processes_under(root: Path) -> list[str]:
    """Live processes (zombies excluded) whose command line or working directory is under ``root``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if str(root) in cmd or cwd.startswith(str(root)):
            found.append(f"{proc.name}: {cmd} (cwd {cwd})")
    return found
