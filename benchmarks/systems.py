"""Benchmark: per-operation latency of a system under a protocol, and the harness's own overhead.

    python benchmarks/systems.py --system mem0@2.2.1 --system mem0@1.0.11 [--protocol deletion] [--runtime embedded]
    python benchmarks/systems.py --result results/deletion/letta/0.16.8/embedded --result ...

Runs each system once per protocol into a scratch folder (or reads the timings a committed result
recorded, so every figure points to an artifact) and prints, side by side, the p50/p95 of start
(``init``: the adapter server up, a system's own server and database included), write, door and forget
(the adapter call, model calls included) and the share of the run's wall time the harness spent outside
adapter calls and system restarts (interpreting, validating, scoring, normalising, writing artifacts,
starting the first adapter process). Compare figures only between runs on the same machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from memmatrix.cases import default_case_file, load_cases
from memmatrix.common.config import Config
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system

OPS = ("init", "write", "door", "forget", "recall", "probe", "restart")  # init: the system started (server start)


def measure(system: str, protocol: str, runtime: str, config: Config, out: Path) -> dict:
    p = get_protocol(protocol)
    cases = load_cases(default_case_file(config, protocol), config, p)
    run_dir = execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cases, runtime=runtime,
                                 out=out), config)
    return timings(run_dir)


def timings(run_dir: Path) -> dict:
    t = json.loads((run_dir / "result.json").read_text())["timings"]
    adapter_ms = sum(v["total_ms"] for v in t["adapter_ms"].values())
    return {"ops": t["adapter_ms"], "wall_s": t["wall_s"], "adapter_s": adapter_ms / 1000,
            "harness_share": 1 - adapter_ms / 1000 / t["wall_s"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--system", action="append", help="run this system (repeatable)")
    what.add_argument("--result", action="append", type=Path, help="read this result folder's timings (repeatable)")
    ap.add_argument("--protocol", default="deletion")
    ap.add_argument("--runtime", default="embedded")
    ns = ap.parse_args()
    rows = {}
    if ns.result:
        for folder in ns.result:
            if not (folder / "result.json").is_file():
                ap.error(f"{folder} holds no result.json; give a result folder such as results/deletion/mem0/2.2.1/embedded")
            stamp = json.loads((folder / "result.json").read_text())["stamp"]
            rows[f"{stamp['system']['name']}@{stamp['system']['version']}"] = timings(folder)
        print("timings recorded by " + ", ".join(str(f) for f in ns.result))
    else:
        config = Config.from_env()
        with tempfile.TemporaryDirectory() as tmp:
            for system in ns.system:
                rows[system] = measure(system, ns.protocol, ns.runtime, config, Path(tmp))
        print(f"{ns.protocol} protocol, {ns.runtime} runtime")
    width = max(len(s) for s in rows) + 2
    print("latency per adapter call in ms (p50 / p95, calls)\n")
    print(f"{'operation':12}" + "".join(f"{s:>{width + 16}}" for s in rows))
    for op in OPS:
        cells = []
        for r in rows.values():
            v = r["ops"].get(op)
            cells.append(f"{v['p50_ms']:9.1f} /{v['p95_ms']:8.1f} ({v['calls']:3})" if v else "-")
        print(f"{op:12}" + "".join(f"{c:>{width + 16}}" for c in cells))
    print()
    for name, r in rows.items():
        print(f"{name}: wall {r['wall_s']:.1f} s, in adapter calls {r['adapter_s']:.1f} s, "
              f"harness overhead {100 * r['harness_share']:.1f} % of the wall time")


if __name__ == "__main__":
    main()
