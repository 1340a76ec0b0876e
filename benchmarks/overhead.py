"""Benchmark: what the harness itself costs, as ratios of one run's wall time.

    python benchmarks/overhead.py                       # the reference, in-process and embedded
    python benchmarks/overhead.py --system mem0@2.2.1   # and a real system (its environment is built once)
    python benchmarks/overhead.py --system mem0@2.2.1 --max-share 0.05   # exit 1 above 5 % (a regression check)

Each run records ``timings.harness`` (src/memmatrix/overhead.py): the wall time split into the system's own
time (inside each adapter call as the adapter server measured it, and its process starting, restarting and
stopping) and the harness's (start before the first call, the work between calls including the wire's JSON and
HTTP, stop after the last call). The figures are ratios of one run on one machine; compare runs made together.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from memmatrix.cases import default_case_file, load_cases
from memmatrix.common.config import Config
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system


def harness_of(system: str, runtime: str, protocol: str, config: Config, out: Path) -> dict:
    p = get_protocol(protocol)
    cases = load_cases(default_case_file(config, protocol), config, p)
    run_dir = execute(RunRequest(spec=resolve_system(system, config), protocol=p, cases=cases, runtime=runtime,
                                 out=out), config)
    return json.loads((run_dir / "result.json").read_text())["timings"]["harness"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", action="append", default=[], help="also run this system, embedded (repeatable)")
    ap.add_argument("--protocol", default="deletion")
    ap.add_argument("--max-share", type=float, help="exit 1 when a --system run's harness share exceeds this ratio")
    ns = ap.parse_args()
    config = Config.from_env()
    runs = [("reference", "inprocess"), ("reference", "embedded")] + [(s, "embedded") for s in ns.system]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (system, runtime) in enumerate(runs):
            rows[f"{system} {runtime}"] = harness_of(system, runtime, ns.protocol, config, Path(tmp) / str(i))
    print(f"{ns.protocol} protocol; harness cost per run (ms, and its share of the run's wall time)\n")
    print(f"{'run':28}{'wall':>10}{'system':>10}{'harness':>10}{'share':>8}{'start':>8}{'stop':>8}"
          f"{'calls':>7}{'per call':>10}{'wire':>8}")
    for name, h in rows.items():
        print(f"{name:28}{h['wall_ms']:10.0f}{h['system_ms']:10.0f}{h['overhead_ms']:10.0f}{100 * h['share']:7.1f}%"
              f"{h['start_ms']:8.1f}{h['stop_ms']:8.1f}{h['exchanges']:7}{h['per_exchange_ms']:10.3f}"
              f"{h['wire_ms']:8.0f}")
    if ns.max_share is not None:
        over = [f"{n}: {100 * h['share']:.1f} %" for n, h in rows.items()
                if not n.startswith("reference ") and h["share"] > ns.max_share]
        if over:
            print(f"\nharness share above {100 * ns.max_share:.1f} %: {', '.join(over)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
