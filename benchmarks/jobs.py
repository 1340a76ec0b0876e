"""Benchmark: --jobs N against one instance, in one invocation: the wall-time ratio, and whether both transcripts are
byte for byte the same (they must be; tests/test_parallel.py fails when they are not).

    python benchmarks/jobs.py --system mem0@2.2.1 --protocol writepath --jobs 4
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", default="mem0@2.2.1")
    ap.add_argument("--protocol", default="writepath")
    ap.add_argument("--runtime", default="embedded")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--cases", type=Path, help="a case file (default: the protocol's newest)")
    ns = ap.parse_args()
    config = Config.from_env()
    p = get_protocol(ns.protocol)
    cases = load_cases(ns.cases or default_case_file(config, ns.protocol), config, p)
    spec = resolve_system(ns.system, config)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (1, ns.jobs):
            run_dir = execute(RunRequest(spec=spec, protocol=p, cases=cases, runtime=ns.runtime, out=Path(tmp) / str(jobs),
                                         jobs=jobs, default_cases=ns.cases is None), config)
            r = json.loads((run_dir / "result.json").read_text())
            out[jobs] = (r["timings"]["wall_s"], r["transcript"]["sha256"], (r.get("model_transcript") or {}).get("sha256"),
                         r["stamp"]["runtime"].get("instances", 1))
    (w1, t1, m1, _), (wn, tn, mn, inst) = out[1], out[ns.jobs]
    same = t1 == tn and m1 == mn
    print(f"{ns.system} {ns.protocol} ({len(cases.cases)} cases, {ns.runtime}): one instance {w1:.1f} s, "
          f"{inst} instances {wn:.1f} s ({w1 / wn:.2f}x); transcripts {'identical' if same else 'DIFFERENT'} "
          f"(sha256 {t1[:12]}, model {str(m1)[:12]})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
