"""Benchmark: the static site of a results tree, against its budgets (docs/site.md).

    python benchmarks/site.py                   # the committed matrix
    python benchmarks/site.py results/deletion  # a part of it

Builds the site in a child process (``memmatrix report --html``) and prints its pages, its size on disk, the
wall and CPU time of the build and its peak memory, each beside its budget: 100 MB, 30 s and 500 MB for the
committed matrix. The build writes run pages from one forked worker per core, so its memory is the whole process
tree's: the sum of each process's proportional set size (pages shared after the fork counted once), sampled ten
times a second from /proc (Linux); elsewhere the largest process's peak, as the kernel counted it. Exit 1 when a
figure is over its budget.
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
        figures = measured(["report", *paths, "--html", str(out)])
        files = [p for p in out.rglob("*") if p.is_file()]
        return {"pages": sum(p.suffix == ".html" for p in files),
                "size MB": round(sum(p.stat().st_size for p in files) / 1e6, 1), **figures}


def measured(argv: list[str]) -> dict:
    """``memmatrix ARGV`` in a child process: its wall and CPU time and the peak memory of its process tree
    (benchmarks/growth.py measures its steps with this too). Exits naming the command when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "memmatrix", *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    tree_peak = 0
    while child.poll() is None:
        tree_peak = max(tree_peak, _tree_pss(child.pid))
        time.sleep(0.1)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode(errors="replace")
    if child.returncode:
        raise SystemExit(f"memmatrix {' '.join(argv)} failed (exit {child.returncode}): {err[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall s": round(wall, 1),
            "cpu s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "peak MB": round(tree_peak / 1024) if tree_peak else round(after.ru_maxrss / 1024)}


def _tree_pss(pid: int) -> int:
    """The memory of a process and its descendants in KiB: each one's proportional set size (0 off Linux)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


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
