"""Benchmark: what a cold verify cannot go below, and what is left for memmatrix's own checks (issue 40).

    python benchmarks/floor.py                            # the committed tree
    python benchmarks/floor.py results/letta --sample 2   # every 2nd result folder under results/letta
    python benchmarks/floor.py --list FILE                # the result.json paths FILE names, one a line

In one process, one step after the other, over the same results:

1. ``read``: every transcript and model transcript decompressed a line at a time and each line hashed (what
   checking the stamp's hashes alone costs; ``common.canon.iter_raw_lines``, as verify reads them);
2. ``parse``: the same, each line also parsed as verify parses it (``common.canon.loads_line``);
3. ``verify``: ``memmatrix verify --fresh`` of the same results, in this process, its output discarded, with the
   CPU time of every call into a system's own oracle dialects (the ``oracle:`` module its system.yaml names, loaded
   at the run's commit and hashed into the result's stamp) counted apart, and within it the gold index's look-ups
   they call (memmatrix's code, ``GOLD``). Those modules change only when the results are run again; the small
   helpers they import from ``memmatrix.model.dialects.common`` (``norm``, ``message_text`` ...) count as theirs.

Prints each figure in CPU seconds and as a share of verify, and what is left for memmatrix's own checks (re-asking
with its own dialects and the hygiene judge, re-scoring, the case-file bindings, the costs): with ``--target``, how
many times faster those checks would have to be for verify to take that long, the floor kept as it is. Exit 1 when
verify reports a problem (the figures would not be those of a passing verify).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import sys
import time
from pathlib import Path


def result_folders(paths: list[Path], sample: int, listed: Path | None) -> list[Path]:
    if listed is not None:
        return [Path(line.strip()).parent for line in listed.read_text().splitlines() if line.strip()]
    found = sorted({p.parent for root in paths for p in Path(root).rglob("result.json")})
    return found[::sample]


def transcripts(folders: list[Path]) -> list[Path]:
    return [p for d in folders for p in sorted(d.iterdir()) if p.is_file() and p.suffix in (".gz", ".xz", ".jsonl")]


def read_floor(files: list[Path], parse: bool) -> dict:
    from memmatrix.common.canon import iter_raw_lines, loads_line
    start, lines, size = time.process_time(), 0, 0
    for path in files:
        digest = hashlib.sha256()
        for line in iter_raw_lines(path):
            digest.update(line)
            lines += 1
            size += len(line)
            if parse:
                loads_line(line)
    return {"cpu": time.process_time() - start, "lines": lines, "bytes": size}


#: the gold index's look-ups a system's dialects call (memmatrix's code, counted apart from the dialects' own)
GOLD = ("writes_in", "facts_in", "withheld_in", "facts_for_statement", "fact_for_statement", "statements_in")


def verify_split(folders: list[Path]) -> dict:
    """``memmatrix verify --fresh`` of the folders in this process; its CPU and the part in systems' dialects."""
    from memmatrix import cli
    from memmatrix.model import oracle
    from memmatrix.model.gold import GoldIndex
    inside = {"cpu": 0.0, "calls": 0, "depth": 0, "gold": 0.0}
    ask = oracle._ask
    kept = {name: getattr(GoldIndex, name) for name in GOLD}

    def gold_timed(method):
        def call(self, *args, **kwargs):
            if not inside["depth"]:
                return method(self, *args, **kwargs)
            start = time.process_time()
            try:
                return method(self, *args, **kwargs)
            finally:
                inside["gold"] += time.process_time() - start
        return call

    def timed(dialect, method, *args):
        if dialect in oracle.GENERIC or inside["depth"]:
            return ask(dialect, method, *args)
        inside["depth"] += 1
        start = time.process_time()
        try:
            return ask(dialect, method, *args)
        finally:
            inside["cpu"] += time.process_time() - start
            inside["calls"] += 1
            inside["depth"] -= 1

    out = io.StringIO()
    oracle._ask = timed
    for name, method in kept.items():
        setattr(GoldIndex, name, gold_timed(method))
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = cli.main(["verify", "--fresh", *(str(d / "result.json") for d in folders)])
    finally:
        oracle._ask = ask
        for name, method in kept.items():
            setattr(GoldIndex, name, method)
    return {"cpu": time.process_time() - start, "rc": rc, "systems": inside["cpu"], "calls": inside["calls"],
            "gold": inside["gold"],
            "failed": [line for line in out.getvalue().splitlines() if line.startswith("FAIL")]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", default=["results"])
    p.add_argument("--sample", type=int, default=1, help="every Nth result folder, in path order (default 1)")
    p.add_argument("--list", type=Path, help="a file naming result.json paths, one a line (instead of PATHS)")
    p.add_argument("--target", type=float, default=60.0, help="CPU seconds a cold verify should take (default 60)")
    ns = p.parse_args(argv)
    if ns.sample < 1:
        p.error(f"--sample {ns.sample}: it must be at least 1")
    folders = result_folders([Path(x) for x in ns.paths], ns.sample, ns.list)
    missing = [d for d in folders if not (d / "result.json").is_file()]
    if not folders or missing:
        p.error(f"no result.json in {missing[0]}" if missing else f"no result.json under {' '.join(ns.paths)}")
    files = transcripts(folders)
    read, parsed, checked = read_floor(files, False), read_floor(files, True), verify_split(folders)
    if checked["rc"] != 0:
        print(f"verify reported {len(checked['failed'])} problem(s), first: {(checked['failed'] or ['?'])[0]}",
              file=sys.stderr)
        return 1
    total = checked["cpu"]
    dialects = checked["systems"] - checked["gold"]
    floor = parsed["cpu"] + dialects
    own = total - floor
    rows = [("read and hash every line", read["cpu"]), ("... and parse every line", parsed["cpu"]),
            (f"systems' own oracle dialects ({checked['calls']:,} calls)", checked["systems"]),
            ("... of it, memmatrix's gold index they call", checked["gold"]),
            ("floor: parse + the dialects' own code", floor), ("memmatrix's own checks (the rest)", own),
            ("verify --fresh, all of it", total)]
    print(f"{len(folders)} results, {len(files)} transcripts, {parsed['lines']:,} lines, "
          f"{parsed['bytes'] / 1e6:,.0f} MB uncompressed\n")
    print("| step | CPU s | share of verify |\n|---|---|---|")
    for name, cpu in rows:
        print(f"| {name} | {cpu:.2f} | {100 * cpu / total:.0f} % |")
    left = ns.target - floor
    print(f"\nfor verify to take {ns.target:g} s: " + (
        f"it does already ({total:.1f} s)" if total <= ns.target else
        f"memmatrix's own checks in {left:.1f} s, {own / left:.1f} times faster than now" if left > 0 else
        f"impossible without lowering the floor (it is {floor:.1f} s by itself)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
