"""``memmatrix report --html DIR``: the matrix as a static site that opens from the file system.

No server and no CDN: every page, the stylesheet and the plots are files in DIR, linked relatively, so the site
works from a downloaded artifact and on GitHub Pages alike, and every page forbids loading anything from
elsewhere (a Content-Security-Policy of 'self'). Pages (Jinja2 templates in ``templates/``, autoescaped):

- ``index.html``: the scorecard (``frontpage``): a row per system at its newest release and default setup, each
  protocol's headline, its costs and its claims, and what changed since a baseline;
- ``<protocol>.html``: a grid per protocol, each system's newest plain setups first, the rest folded;
- ``runs/<run>/index.html``: a run's stamp, capabilities (every UNSUPPORTED and emulated operation with its
  reason), findings, costs, and its cases against the steps;
- ``runs/<run>/<case>.html``: each cell's verdict, reason and checks, and the transcript lines behind it by their
  numbers in the committed file (the records of the ops its checks name, and the model calls made during them):
  quoted behind a finding (what each call got back, what the model answered), named elsewhere;
- ``timeline.html``: every setup measured at several releases, its cells release by release;
- ``claims.html``: the vendor claims and their status; ``plots.html``: the cost plots.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from .quotes import HEAD, TAIL, check_line, evidence, findings, index_transcript, text_node, transcript_lines
from .reportmodel import SHORT, cells_of, sections, setup_label, slim, step_name, unmatched
from ..evidence.verify import find_results, load_result


def _env() -> Environment:
    env = Environment(loader=PackageLoader("memmatrix.publish", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["short"] = lambda v: SHORT.get(v, v)
    env.filters["id"] = id  # a result dict to its run's slug
    env.filters["text"] = text_node
    env.filters["check"] = check_line
    return env


def run_slug(path: Path, result: dict) -> str:
    """A file name for a run: protocol, system, version, folder, and a hash of its path (two results folders may
    hold the same setup)."""
    s = result["stamp"]
    raw = f"{s['protocol']['name']}-{s['system']['name']}-{s['system']['version']}-{path.parent.name}"
    digest = hashlib.sha256(str(path.parent).encode()).hexdigest()[:6]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", raw) + f"-{digest}"


def case_slug(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", case_id)


def grid(table: dict) -> tuple[list[str], list[tuple[str, list]]]:
    """A dict of dicts (operation -> figures) as columns and rows, one level of nesting flattened ("chars p50")."""
    rows, columns = [], []
    for name, figures in table.items():
        if not isinstance(figures, dict):
            continue
        flat = {}
        for k, v in figures.items():
            if isinstance(v, dict):
                flat.update({f"{k} {kk}": vv for kk, vv in v.items() if not isinstance(vv, (dict, list))})
            elif not isinstance(v, list):
                flat[k] = v
        columns += [c for c in flat if c not in columns]
        rows.append((name, flat))
    return columns, [(name, [flat.get(c, "") for c in columns]) for name, flat in rows]


def cost_tables(result: dict) -> list[tuple[str, list[str], list]]:
    """The run's cost columns as tables: latency per operation, the model's calls and tokens per operation, what
    the door handed over, and the stores' size."""
    costs, timings = result.get("costs") or {}, result.get("timings") or {}
    out = []
    for title, table in (("latency per adapter operation (ms)", timings.get("adapter_ms")),
                         ("model calls and tokens per operation", costs.get("model")),
                         ("what the door handed over", {"door": costs["door"]} if costs.get("door") else None),
                         ("write-to-door lag (ms)", {"lag": timings["lag_ms"]} if timings.get("lag_ms") else None),
                         ("the stores on disk (bytes)", {"disk": {k: v for k, v in timings["disk"].items()
                                                                 if k != "per_case"}} if timings.get("disk") else None)):
        if table:
            columns, rows = grid(table)
            if rows:
                out.append((title, columns, rows))
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _claims(results: list[tuple[Path, dict]], config) -> list[dict]:
    from .claims import evaluate, load_claims, measured
    folder = config.home / "claims"
    if not folder.is_dir():
        return []
    return evaluate(load_claims(folder, config), measured([p for p, _ in results], config), config.home)


def _timeline(results: list[tuple[Path, dict]], slugs: dict) -> list[dict]:
    """Every setup measured at more than one release (same system, protocol, runtime and variant, case file): its
    cells release by release, oldest first, so a cell's history reads down a column."""
    from ..common.releases import version_key
    groups: dict[tuple, dict] = {}
    for p, r in results:
        s = r["stamp"]
        key = (s["system"]["name"], s["protocol"]["name"], setup_label(p, r), Path(s["dataset"]["path"]).stem)
        groups.setdefault(key, {})[s["system"]["version"]] = r
    out = []
    for (system, protocol, setup, cases), by_version in sorted(groups.items()):
        if len(by_version) < 2:
            continue
        order = sorted(by_version, key=version_key)
        steps = by_version[order[-1]]["steps"]
        out.append({"system": system, "protocol": protocol, "setup": setup, "cases": cases, "steps": steps,
                    "rows": [{"version": v, "slug": slugs[id(by_version[v])], "cells": cells_of(by_version[v], steps),
                              "unmatched": unmatched(by_version[v])} for v in order]})
    return out


def _plots(paths: list[Path], out: Path) -> list[str]:
    from .plots import write_plots
    return [p.name for p in write_plots(paths, out / "plots")]  # matplotlib is a dependency: never left out


def _shown(folder: Path, home: Path) -> str:
    """A result folder as the site names it: relative to the project, or from its ``results`` folder on; never a
    path of the machine that built the site."""
    try:
        return folder.resolve().relative_to(home.resolve()).as_posix()
    except ValueError:
        parts = folder.parts
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("results"):]) if "results" in parts else folder.name


def _grid_groups(secs: list, protocol: str) -> list[dict]:
    """A protocol's sections, each split into each system's newest release at its plain setups (embedded,
    compose: first) and the rest, other releases and variants (folded)."""
    from .scorecard import newest_versions
    out = []
    for sec in (s for s in secs if s.protocol == protocol):
        newest = newest_versions((row.system, row.version) for row in sec.rows)
        lead = [r for r in sec.rows if r.version == newest[r.system] and "+" not in r.label]  # its default setups
        lead = lead or [r for r in sec.rows if r.version == newest[r.system]]
        first = {id(r) for r in lead}
        out.append({"section": sec, "lead": lead, "rest": [r for r in sec.rows if id(r) not in first]})
    return out


def _write_run(env: Environment, out: Path, sec, row, slug: str, config) -> None:
    """A run's page and its case pages, from its whole result and transcripts, read here and dropped after."""
    from .reportmodel import Row
    folder = row.path.parent
    row = Row(row.path, load_result(row.path), row.cells)  # checked against its schema when the build began
    lines, mlines = transcript_lines(folder, "transcript"), transcript_lines(folder, "model-transcript")
    cited, step_of = findings(row.result), {}
    by_op, step_ops = index_transcript(lines, cited, step_of)
    model_by_op, _ = index_transcript(mlines, cited, step_of, model=True)
    files = {"transcript": row.result["transcript"]["file"],
             "model": (row.result.get("model_transcript") or {}).get("file")}
    common = {"sec": sec, "row": row, "slug": slug, "root": "../../", "files": files,
              "artifact": _shown(folder, config.home), "home": config.home}
    _write(out / "runs" / slug / "index.html", env.get_template("run.html.j2").render(
        **common, case_slug=case_slug, step_name=step_name, costs=cost_tables(row.result), quote_chars=HEAD + TAIL))
    for case in row.result["cases"]:
        cid = case["id"]
        cells, ops = evidence(case, by_op.get(cid, {}), model_by_op.get(cid, {}), step_ops.get(cid, {}))
        _write(out / "runs" / slug / f"{case_slug(cid)}.html", env.get_template("case.html.j2").render(
            **common, case=case, cells=cells, ops=ops, step_name=step_name))


_RUNS: list = []  # the runs a forked worker writes pages for, set before the workers fork


def _write_one(i: int) -> None:
    env, out, config, (sec, row, slug) = _RUNS[i]
    _write_run(env, out, sec, row, slug, config)


def _write_runs(env: Environment, out: Path, runs: list, config) -> None:
    """Each run's pages, by one forked worker per core, each holding one run at a time (where the platform cannot
    fork, or there is one core, one after another). A worker's error stops the build as the same error."""
    import multiprocessing
    workers = min(len(runs), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for sec, row, slug in runs:
            _write_run(env, out, sec, row, slug, config)
        return
    import gc
    _RUNS[:] = [(env, out, config, run) for run in runs]
    gc.freeze()  # the collector in a worker would touch, and so copy, every page of what the parent holds
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for _ in pool.imap_unordered(_write_one, range(len(runs))):
                pass
    finally:
        _RUNS.clear()
        gc.unfreeze()


def write_site(paths: list[Path], out: Path, config, baseline: Path | None = None) -> Path:
    """Write the site for the results under ``paths`` into ``out``; returns its front page. With ``baseline`` (a
    previous matrix), the front page says what changed since it."""
    from . import frontpage
    env = _env()
    since = frontpage.since_baseline(baseline, paths, config)  # a baseline to fix fails before any page is written
    results = [(p, slim(load_result(p, config))) for p in find_results(paths)]  # each checked, then kept small
    secs = sections(results)
    out.mkdir(parents=True, exist_ok=True)
    for asset in ("site.css", "sort.js"):
        shutil.copyfile(Path(__file__).parent / "templates" / asset, out / asset)
    slugs = {id(r): run_slug(p, r) for p, r in results}
    _write_runs(env, out, [(sec, row, slugs[id(row.result)]) for sec in secs for row in sec.rows], config)
    claims = _claims(results, config)
    plots = _plots(paths, out)
    timeline = _timeline(results, slugs)
    protocols = frontpage.protocols(results)
    grids = {p: f"{p}.html" for p in protocols}
    nav = {"claims": bool(claims), "plots": bool(plots), "timeline": bool(timeline), "grids": grids}
    for p in protocols:
        _write(out / grids[p], env.get_template("grid.html.j2").render(
            protocol=p, groups=_grid_groups(secs, p), slugs=slugs, root="", nav=nav, home=config.home))
    if timeline:
        _write(out / "timeline.html", env.get_template("timeline.html.j2").render(timeline=timeline, root="", nav=nav))
    if claims:
        from .claims import STATUSES
        _write(out / "claims.html", env.get_template("claims.html.j2").render(claims=claims, statuses=STATUSES, root="",
                                                                               nav=nav))
    if plots:
        _write(out / "plots.html", env.get_template("plots.html.j2").render(plots=plots, root="", nav=nav))
    index = out / "index.html"
    _write(index, env.get_template("index.html.j2").render(
        card=frontpage.scorecard(results, claims, slugs), points=frontpage.change_points(timeline),
        since=since, grid_pages=grids, runs=len(results), root="",
        nav=nav, scripts=["sort.js"]))
    return index
