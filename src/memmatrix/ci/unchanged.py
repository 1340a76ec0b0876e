"""Which planned runs need not run again: those whose inputs are what produced their committed result.

A run's inputs are what its result's stamp records of them: the system folder (``code_sha256``, every file of it,
the adapter and oracle module included), its lock (``lock_sha256``), the case file (``dataset.sha256``), the
protocol's scoring version, the model (mode and oracle version, or the upstream model) and the options. When every
one equals the committed result's, running again would measure the same thing with the same harness inputs: the
nightly re-verifies that result instead (``verify`` re-derives it and re-asks the oracle), and runs only what
changed. Anything not recorded (a wholly new system, version, protocol or runtime) runs.

A nondeterministic system (one whose transcripts differ between runs of the same inputs) is still worth re-running
to see its variance; `plan --skip-unchanged` is for the nightly's default setups, which are deterministic under the
oracle (the determinism test pins that).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from ..common.canon import sha256_tree
from ..common.config import Config
from ..model.oracle import ORACLE_VERSION
from ..protocols import get_protocol
from ..systems import resolve_system
from .batch import Batch


def current_inputs(config: Config, system: str, protocol: str, runtime: str) -> tuple[dict, Path]:
    """What a run of ``system`` (NAME@VERSION) under ``protocol`` and ``runtime`` would record, and where its result
    would be written inside a results tree (relative)."""
    spec = resolve_system(system, config)
    with tempfile.TemporaryDirectory() as out:  # Batch checks its output folder; nothing is written there
        batch = Batch.from_args(config, protocol=[protocol], cases=None, runtime=runtime, out=out)
        req = batch.request(spec, get_protocol(protocol))
        where = req.target().relative_to(Path(out))
    gateway = req.gateway
    inputs = {"system folder": sha256_tree(spec.folder) if spec.folder is not None else None,
              "lock": spec.lock_sha256,
              "case file": req.cases.sha256,
              "protocol": req.protocol.version,
              "model": [gateway.mode, ORACLE_VERSION if gateway.mode == "oracle" else gateway.upstream_model],
              "options": req.recorded_options}
    return inputs, where


def recorded_inputs(result: dict) -> dict:
    s = result["stamp"]
    model = s.get("model") or {}
    return {"system folder": s["system"].get("code_sha256"),
            "lock": s["system"].get("lock_sha256"),
            "case file": s["dataset"].get("sha256"),
            "protocol": s["protocol"].get("version"),
            "model": [model.get("mode"), model.get("oracle_version") if model.get("mode") == "oracle"
                      else model.get("id")],
            "options": s["system"].get("options") or {}}


def changed_inputs(config: Config, entry: dict, results: Path) -> tuple[list[str], Path, dict]:
    """The inputs that differ from the committed result's (every one when there is none, or it cannot be read),
    the result's path, and the current inputs."""
    inputs, where = current_inputs(config, entry["system"], entry["protocol"], entry["runtime"])
    path = results / where / "result.json"
    try:
        recorded = recorded_inputs(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError):
        return list(inputs), path, inputs  # none, or unreadable: it runs (and verify says what is wrong with it)
    return [k for k in inputs if inputs[k] != recorded[k] or (k == "system folder" and inputs[k] is None)], path, inputs
