"""Benchmark: the static site of a results tree, against its budgets (docs/site.md).

    python benchmarks/site.py                   # the committed matrix
    python benchmarks/site.py results/deletion  # a part of it

Builds the site in a child process (``memmatrix report --html``) and prints its pages, its size on disk, the
wall and CPU time of the build and its peak resident memory (the child's, as the kernel counted it), each beside
its budget: 100 MB, 30 s and 500 MB for the committed matrix. Exit 1 when a figure is over its budget.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET = {"size MB": 100, "wall s": 30, "peak MB": 500}


def build(paths: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "memmatrix", "report", *paths, "--html", str(out)], check=True,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        files = [p for p in out.rglob("*") if p.is_file()]
        return {"pages": sum(p.suffix == ".html" for p in files),
                "size MB": round(sum(p.stat().st_size for p in files) / 1e6, 1),
                "wall s": round(wall, 1),
                "cpu s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
                "peak MB": round(after.ru_maxrss / 1024)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=["results"])
    ns = ap.parse_args()
    figures = build(ns.paths)
    over = [k for k, limit in BUDGET.items() if figures[k] > limit]
    print(f"site of {' '.join(ns.paths)} on {os.cpu_count()} cores:")
    for k, v in figures.items():
        print(f"  {k:8} {v:>8}" + (f"   (budget {BUDGET[k]}{' — over' if k in over else ''})" if k in BUDGET else ""))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
