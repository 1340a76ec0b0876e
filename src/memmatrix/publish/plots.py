"""``memmatrix plots``: the cost columns where people would rather look, drawn from committed results.

Three SVG figures, each from fields every result carries (so a plot is as re-checkable as the numbers):

- ``lag-cdf.svg``: the write-to-readable lag (``timings.lag_ms.samples``) of each system's door run, as a
  cumulative distribution: how long after a write returned its value first reached the door;
- ``size-growth.svg``: the stores' size at the end of a case (``timings.disk``) against the bytes the case
  wrote, over the deletion breadth and scale sets: how the stores grow with the store;
- ``accuracy-chars.svg``: what a door hands the model per call (``costs.door.chars.p50``) against how often
  its answers were right (the door protocol's door section): accuracy against injected characters.

Drawn with matplotlib (the plots extra: ``pip install 'memmatrix[plots]'``), text kept as text and the SVG
ids salted with a fixed string, so the same results give the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.errors import ConfigError

FIGURES = ("lag-cdf.svg", "size-growth.svg", "accuracy-chars.svg")


def _results(roots: list[Path]) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(p for root in roots for p in Path(root).rglob("result.json")):
        try:
            r = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and r.get("kind") == "memmatrix.result" and "+oracle-" not in path.parent.name \
                and (r.get("stamp") or {}).get("model", {}).get("mode") == "oracle":
            out.append((path, r))  # the perfect oracle's runs: an imperfect or a real model's costs are its own
    return out


def _newest(runs: list[tuple[Path, dict]], protocol: str, folder: str) -> dict[str, dict]:
    """Per system, the newest version's result of ``protocol`` in the runtime folder named exactly ``folder``."""
    from ..common.releases import version_key

    def key(r: dict):
        return version_key(r["stamp"]["system"]["version"])
    best: dict[str, dict] = {}
    for path, r in runs:
        s = r["stamp"]
        if s["protocol"]["name"] != protocol or path.parent.name != folder:
            continue
        name = s["system"]["name"]
        if name not in best or key(r) > key(best[name]):
            best[name] = r
    return dict(sorted(best.items()))


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ConfigError("memmatrix plots needs matplotlib, a dependency of memmatrix: reinstall it (pip install -e .)") from None
    matplotlib.use("Agg")
    from cycler import cycler
    matplotlib.rcParams.update({"svg.hashsalt": "memmatrix", "svg.fonttype": "none", "font.size": 9,
                                "figure.figsize": (6.4, 4.0), "axes.titlesize": 9,
                                "axes.prop_cycle": cycler(color=matplotlib.colormaps["tab20"].colors)})
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "memmatrix plots"})


def lag_cdf(plt, runs, out: Path) -> bool:
    fig, ax = plt.subplots()
    drawn = False
    for name, r in _newest(runs, "door", "embedded").items():
        samples = sorted(x["ms"] for x in ((r.get("timings") or {}).get("lag_ms") or {}).get("samples", []) if x["seen"])
        if not samples:
            continue
        ys = [(i + 1) / len(samples) for i in range(len(samples))]
        ax.step(samples, ys, where="post", label=f"{name} {r['stamp']['system']['version']}")
        drawn = True
    ax.set(xscale="log", xlabel="write-to-readable lag, ms (wall time, log scale)", ylabel="share of writes seen",
           title="Write-to-readable lag (door protocol, embedded)", ylim=(0, 1.02))
    if drawn:
        ax.legend(fontsize=7, loc="lower right")
        _save(fig, out)
    plt.close(fig)
    return drawn


def size_growth(plt, runs, out: Path) -> bool:
    lines: dict[str, list[tuple[int, int]]] = {}
    for path, r in runs:
        disk = (r.get("timings") or {}).get("disk") or {}
        cases = disk.get("per_case") or []
        if r["stamp"]["protocol"]["name"] != "deletion" or not cases:
            continue
        wrote = sorted(c["source_bytes"] for c in cases)[len(cases) // 2]
        label = f"{r['stamp']['system']['name']} {r['stamp']['system']['version']}"
        lines.setdefault(label, []).append((wrote, disk["at_end_p50"]))
    fig, ax = plt.subplots()
    for label, pts in sorted(lines.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="bytes a case wrote (p50, log)", ylabel="stores at the end of a case, "
           "bytes (p50, log)", title="Store size against bytes written (deletion breadth, scale10, scale100)")
    if lines:
        ax.legend(fontsize=7)
        _save(fig, out)
    plt.close(fig)
    return bool(lines)


def accuracy_chars(plt, runs, out: Path) -> bool:
    fig, ax = plt.subplots()
    drawn = False
    for n, (name, r) in enumerate(_newest(runs, "door", "embedded").items()):
        door, m = (r.get("costs") or {}).get("door") or {}, (r.get("measures") or {}).get("door") or {}
        if not door.get("calls") or not m.get("of"):
            continue
        x, y = door["chars"]["p50"], 100 * m["passed"] / m["of"]
        ax.scatter([x], [y], marker="os^D"[n % 4], label=f"{name}: {x:,} chars, {y:.0f} %")
        drawn = True
    ax.set(xscale="log", xlabel="characters a door call hands the model (p50, log)",
           ylabel="door answers right, % (door section)", ylim=(-5, 105),
           title="Accuracy against injected characters (door protocol, embedded)")
    if drawn:
        ax.legend(fontsize=7, loc="lower left")
        _save(fig, out)
    plt.close(fig)
    return drawn


def write_plots(roots: list[Path], out: Path) -> list[Path]:
    """Draw every figure the results under ``roots`` have data for into ``out``; returns the files written."""
    plt = _pyplot()
    runs = _results(roots)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in zip(FIGURES, (lag_cdf, size_growth, accuracy_chars)):
        if draw(plt, runs, out / name):
            written.append(out / name)
    return written
