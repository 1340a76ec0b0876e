"""Benchmark: what the harness costs per case on the reference's breadth sets (issue 40), in one invocation.

    python benchmarks/harness.py                  # deletion (200 cases) and contradiction (100 cases), embedded
    python benchmarks/harness.py --budget         # exit 1 over 50 ms (deletion) or 150 ms (contradiction) of
                                                  # harness time per case
    python benchmarks/harness.py --profile 12     # and the top 12 harness functions of each run (cProfile)

Each run records ``timings.harness`` (src/memmatrix/exchange/overhead.py): the wall time split into the system's own
time (inside each adapter call as the adapter server measured it, and its process starting, restarting and
stopping) and the harness's (everything else). Per case here is that split divided by the run's cases: ``wall``
is what a user waits, ``harness`` what memmatrix adds to it; the budget applies to the harness's share, the part
memmatrix controls (the reference's own restarts and calls are system time). The ratio is harness / system of the
same run. Figures are of one machine at one moment: compare runs made together. The transcripts' sha256 are
printed beside the committed results' (they must be the same: performance work never changes a record).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
from pathlib import Path

from memmatrix.cases import load_cases
from memmatrix.common.config import Config
from memmatrix.protocols import get_protocol
from memmatrix.run.runner import RunRequest, execute
from memmatrix.systems import resolve_system

#: protocol -> (case file, committed result folder, harness ms per case allowed)
RUNS = {
    "deletion": ("cases/deletion/breadth-2.0.0.json",
                 "results/deletion/reference/1.0/embedded+cases=breadth-2.0.0-1a0edcf4", 50.0),
    "contradiction": ("cases/contradiction/breadth-2.0.0.json",
                      "results/contradiction/reference/1.0/embedded+cases=breadth-2.0.0-af6126c3", 150.0),
}


def run_one(protocol: str, config: Config, out: Path, jobs: int, profile: int) -> dict:
    case_file, committed, budget = RUNS[protocol]
    p = get_protocol(protocol)
    cases = load_cases(config.home / case_file, config, p)
    req = RunRequest(spec=resolve_system("reference", config), protocol=p, cases=cases, runtime="embedded", out=out,
                     default_cases=False, jobs=jobs)
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    run_dir = execute(req, config)
    if prof:
        prof.disable()
        print(f"\n{protocol}: top {profile} memmatrix functions by cumulative time")
        stats = pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative")
        stats.print_stats(r"memmatrix/(run|exchange|runtimes|protocols|result|model)/", profile)
    r = json.loads((run_dir / "result.json").read_text())
    h = r["timings"]["harness"]
    parts = h["instances"] if "instances" in h else [h]
    n = len(r["cases"])
    overhead, system = sum(x["overhead_ms"] for x in parts), sum(x["system_ms"] for x in parts)
    wall = r["timings"]["wall_s"] * 1000
    mine = (r["transcript"]["sha256"], r["model_transcript"]["sha256"])
    try:
        ref = json.loads((config.home / committed / "result.json").read_text())
        same = mine == (ref["transcript"]["sha256"], ref["model_transcript"]["sha256"])
    except OSError:
        same = None
    return {"protocol": protocol, "cases": n, "jobs": jobs, "wall_ms": wall, "system_ms": system,
            "harness_ms": overhead, "wall_per_case": wall / n, "system_per_case": system / n,
            "harness_per_case": overhead / n, "ratio": overhead / system if system else float("inf"),
            "budget": budget, "transcript": mine[0], "model_transcript": mine[1], "same_as_committed": same}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", action="append", choices=sorted(RUNS), help="only this set (repeatable)")
    ap.add_argument("--jobs", type=int, default=1, help="instances for the deletion set (contradiction asks the "
                                                         "judge: always one)")
    ap.add_argument("--budget", action="store_true", help="exit 1 when a set's harness time per case is over budget")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print each run's top N harness functions")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ns = ap.parse_args()
    config = Config.from_env()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for protocol in ns.protocol or list(RUNS):
            rows.append(run_one(protocol, config, Path(tmp) / protocol, ns.jobs if protocol == "deletion" else 1,
                                ns.profile))
    print("\nreference, embedded, breadth sets: per case (ms), and the harness's time against the system's\n")
    print(f"{'set':15}{'cases':>6}{'wall':>10}{'system':>10}{'harness':>10}{'wall/case':>11}{'system/case':>13}"
          f"{'harness/case':>14}{'ratio':>8}{'budget':>8}  transcripts")
    over = []
    for r in rows:
        same = {True: "same as committed", False: "DIFFERENT from committed", None: "no committed result"}
        print(f"{r['protocol']:15}{r['cases']:6}{r['wall_ms']:10.0f}{r['system_ms']:10.0f}{r['harness_ms']:10.0f}"
              f"{r['wall_per_case']:11.1f}{r['system_per_case']:13.1f}{r['harness_per_case']:14.1f}"
              f"{r['ratio']:8.3f}{r['budget']:8.0f}  {same[r['same_as_committed']]} ({r['transcript'][:12]}, "
              f"model {r['model_transcript'][:12]})")
        if r["harness_per_case"] > r["budget"]:
            over.append(f"{r['protocol']}: {r['harness_per_case']:.1f} ms of harness time per case > {r['budget']:g}")
    if ns.json:
        ns.json.write_text(json.dumps(rows, indent=1) + "\n")
    if any(r["same_as_committed"] is False for r in rows):
        print("\na transcript differs from the committed result's", file=sys.stderr)
        return 1
    if ns.budget and over:
        print("\nover budget: " + "; ".join(over), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
