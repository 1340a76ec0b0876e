"""Benchmark: what checking and publishing the matrix costs as it grows (issue 40).

    python benchmarks/growth.py                          # the committed tree, 1x 3x 10x
    python benchmarks/growth.py --sample 10 --plot benchmarks/growth.svg
    python benchmarks/growth.py --factors 1,2 --steps verify results/deletion

The result folders under PATH (every ``--sample``-th one, in path order) are copied N times into a scratch folder,
each copy under its own root (``copy-03/deletion/mem0/2.2.1/embedded``: the layout verify checks), and each step
runs on the whole copy in a child process, as a user runs it:

- ``verify``: ``memmatrix verify --fresh --cache 0`` (the oracle asked for every request: a copy is answered
  afresh, not from the replies of the copy before it nor from the marks of transcripts re-asked before, so the
  figures are what N times as many distinct results cost);
- ``rescore``: ``memmatrix rescore`` (a result already scored by this memmatrix is only read);
- ``report``: ``memmatrix report`` (the Markdown matrix);
- ``site``: ``memmatrix report --html`` (the static site).

verify and rescore read copies that are byte for byte the same; the report and the site read copies whose stamps
name another release of the system (``2.2.1+copy03``): they hold once what repeats from run to run, and N
identical copies would be held as one.

For each: wall and CPU time, and peak memory (the process tree's proportional set size sampled ten times a second,
as ``site.py`` measures it), with the CPU per result and per transcript record they imply. Time should grow with
N and memory should not.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = {"verify": ["verify", "--fresh", "--cache", "0", "{tree}"], "rescore": ["rescore", "{tree}"],
         "report": ["report", "{tree}", "--output", "{scratch}/matrix.md"],
         "site": ["report", "{tree}", "--html", "{scratch}/site"]}


def _site_module():
    spec = importlib.util.spec_from_file_location("memmatrix_bench_site", HERE / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def result_folders(paths: list[Path], sample: int) -> list[Path]:
    found = sorted({p.parent for root in paths for p in Path(root).rglob("result.json")})
    return found[::sample]


def make_copies(folders: list[Path], base: Path, n: int, into: Path, releases: bool = False) -> int:
    """``n`` copies of the folders under ``into`` (hard links where the file system allows); the records they hold.
    With ``releases``, copy k > 0 of a result is another release of its system: the version in its stamp gets the
    local label ``+copyK`` (``2.2.1+copy03``), so the report and the site, which hold what repeats from run to run
    once, hold each copy's system as they would a real new release's (its result no longer verifies: the
    fingerprint covers the version)."""
    records = 0
    for k in range(n):
        for folder in folders:
            target = into / f"copy-{k:02d}" / folder.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copytree(folder, target, copy_function=os.link)
            except OSError:
                shutil.copytree(folder, target)
            if releases and k:
                r = json.loads((folder / "result.json").read_text(encoding="utf-8"))
                r["stamp"]["system"]["version"] += f"+copy{k:02d}"
                (target / "result.json").unlink()  # a hard link to the committed file: never written through
                (target / "result.json").write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
            if k == 0:
                r = json.loads((folder / "result.json").read_text(encoding="utf-8"))
                records += r["transcript"]["records"] + (r.get("model_transcript") or {}).get("records", 0)
    return records * n


def measure(step: str, tree: Path, scratch: Path, site) -> dict:
    return site.measured([a.format(tree=tree, scratch=scratch) for a in STEPS[step]])


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.hashsalt": "memmatrix", "svg.fonttype": "none", "font.size": 9})
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(8, 3.4))
    for step in sorted({r["step"] for r in rows}, key=list(STEPS).index):
        mine = [r for r in rows if r["step"] == step]
        a.plot([r["results"] for r in mine], [r["cpu s"] for r in mine], marker="o", label=step)
        b.plot([r["results"] for r in mine], [r["peak MB"] for r in mine], marker="o", label=step)
    a.set(xlabel="results", ylabel="CPU s", title="time grows with the results")
    b.set(xlabel="results", ylabel="peak MB", title="memory does not", ylim=(0, None))
    a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": "benchmarks/growth.py"})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=[Path("results")], type=Path)
    ap.add_argument("--factors", default="1,3,10", help="how many copies, comma-separated (default 1,3,10)")
    ap.add_argument("--sample", type=int, default=1, help="take every K-th result folder (default: all)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    ap.add_argument("--plot", type=Path, help="also draw CPU time and peak memory against results into this SVG")
    ns = ap.parse_args()
    steps = [s for s in ns.steps.split(",") if s]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        ap.error(f"--steps {','.join(unknown)}: not one of {', '.join(STEPS)}")
    common = Path(os.path.commonpath([p.resolve() for p in ns.paths]))
    base = next((a for a in (common, *common.parents) if a.name == "results"), common)  # keep the layout below it
    folders = result_folders([p.resolve() for p in ns.paths], ns.sample)
    if not folders:
        ap.error(f"no result.json under {' '.join(map(str, ns.paths))}")
    site = _site_module()
    rows = []
    print(f"{len(folders)} result folder(s) of {' '.join(map(str, ns.paths))} (every {ns.sample}), "
          f"{os.cpu_count()} cores")
    print("| copies | results | records | step | wall s | CPU s | peak MB | CPU ms per result | CPU µs per record |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in ns.factors.split(",")]:
        with tempfile.TemporaryDirectory(prefix=f"growth-{n}x-") as tmp:
            tree, scratch = Path(tmp) / "tree", Path(tmp) / "scratch"
            scratch.mkdir()
            records = make_copies(folders, base, n, tree)
            if {"report", "site"} & set(steps):
                make_copies(folders, base, n, Path(tmp) / "releases", releases=True)
            for step in steps:
                row = {"copies": n, "results": len(folders) * n, "records": records, "step": step,
                       **measure(step, Path(tmp) / "releases" if step in ("report", "site") else tree, scratch,
                                 site)}
                rows.append(row)
                print(f"| {n} | {row['results']} | {records:,} | {step} | {row['wall s']} | {row['cpu s']} | "
                      f"{row['peak MB']} | {1000 * row['cpu s'] / row['results']:.0f} | "
                      f"{1e6 * row['cpu s'] / max(records, 1):.0f} |", flush=True)
                shutil.rmtree(scratch)
                scratch.mkdir()
    if ns.plot:
        plot(rows, ns.plot)
        print(f"plot: {ns.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
