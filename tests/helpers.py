"""Helpers for tests: run a system and read its verdicts back."""

from __future__ import annotations

import json
from pathlib import Path

from memmatrix.cases import default_case_file, load_cases
from memmatrix.config import Config
from memmatrix.protocols import get_protocol
from memmatrix.run import RunRequest, execute
from memmatrix.systems import resolve_system


def run(config: Config, system: str, out: Path, runtime: str = "inprocess", protocol: str = "deletion",
        cases: Path | None = None) -> Path:
    p = get_protocol(protocol)
    cf = load_cases(cases or default_case_file(config, protocol), config, p)
    return execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cf, runtime=runtime, out=out),
                   config)


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
    from memmatrix.canon import read_text
    return read_text(run_dir / f"{name}.jsonl.gz")


def exchanges(run_dir: Path) -> str:
    """The transcript without its run header (which names the runtime): what every runtime must agree on."""
    return text_of(run_dir).split("\n", 1)[1]
