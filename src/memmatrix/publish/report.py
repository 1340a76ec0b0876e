"""``memmatrix report``: the matrix, in Markdown, for a terminal and for $GITHUB_STEP_SUMMARY.

Rows are runs (system, version, runtime), columns are the protocol's steps. A cell shows
the verdicts of the cases in that step; it is never collapsed into one number. Below the
matrix every FAIL and ERROR is listed with its reason. The sections and cells come from
``reportmodel``, as the static site's (``site.py``) do.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .costreport import cost_table
from ..common.config import Config
from ..protocols import VERDICTS
from .markdown import code, md
from .reportmodel import SHORT, cell_text, sections, setup_label, slim, step_name, unmatched
from ..evidence.verify import find_results, load_result

__all__ = ["SHORT", "brief", "cell_text", "render", "setup_label", "stream"]

def _escape(text: str) -> str:
    return md(text)


def unmatched_mark(result: dict) -> str:
    """How many model calls the oracle did not answer (those cells measure the oracle, not the system)."""
    n = unmatched(result)
    return f" ⚠ {n} unanswered model call(s)" if n else ""


SIGNED = {"attested": "yes", "unattested": "no", "invalid": "**invalid**", "unchecked": "not checked"}


def render(paths: list[Path], title: str = "memmatrix report", config=None) -> str:
    return "".join(stream(paths, title, config))


def stream(paths: list[Path], title: str = "memmatrix report", config=None):
    """The report as pieces of text, a section at a time (what ``render`` joins): a writer holds one section's text,
    not the whole report, which lists every case of every run. Every result is read and checked before the first
    piece is made."""
    pending = ""  # whitespace held back: the report ends in exactly one blank line
    for i, lines in enumerate(_sections(paths, title, config)):
        text = pending + ("\n" if i else "") + "\n".join(lines)
        kept = text.rstrip()
        pending = text[len(kept):]
        if kept:
            yield kept
    # a blank line last: Markdown appended after the report (a job summary's next step) starts a block of its own
    yield "\n\n"


def _sections(paths: list[Path], title: str, config):
    """The report's lines: the title's, then each section's (one list each)."""
    # each result checked, then kept slim; its reasons and findings are read again where they are listed
    results = [(p, slim(load_result(p, config))) for p in find_results(paths)]
    home = (config or Config.from_env()).home
    yield [f"# {title}", ""]
    legends = set()  # each protocol's columns are named once, in the legend under its first section
    secs = sections(results)
    for sec in secs:
        steps = sec.steps
        out = [f"## {sec.title}", "",
                f"Dataset `{sec.dataset['path']}` ({sec.dataset['version']}). Each cell counts the cases per verdict; "
                "`n/a` means the system does not support the step.", ""]
        heads = [s["key"] for s in steps]
        out.append("| system | version | runtime (+variant) | signed | " + " | ".join(heads) + " |")
        out.append("|---|---|---|---|" + "---|" * len(steps))
        for row in sec.rows:
            cells = [c.text + (" (judged)" if c.judged else "") for c in row.cells]
            out.append(f"| {md(row.system)} | {md(row.version)} | {md(row.label)}{unmatched_mark(row.result)} | "
                       f"{SIGNED[row.attestation(home).status]} | " + " | ".join(cells) + " |")
        if (sec.protocol, sec.version) not in legends:
            legends.add((sec.protocol, sec.version))
            out += ["", "Columns: " + "; ".join(f"**{s['key']}** {s['name']}: {s['title']}" for s in steps) + "."]
        if sec is secs[0]:
            out += ["", "signed: whether CI's Sigstore attestation beside the result verifies offline (`memmatrix "
                        "verify --attested-by` names the workflow that must have signed it); an unsigned result is "
                        "re-derived from its transcripts, which a consistent relabel also passes."]
        if sec.judged:
            judge = sec.judge
            out += ["", f"(judged): at least one case in that cell was decided by the pinned judge "
                        f"`{judge.get('model')}` (prompt `{judge.get('prompt')}`, temperature 0), because the system "
                        "exposes no qualifier on what it injects (ʲ in the case tables); every other cell is mechanical."]
        if any(row.unmatched for row in sec.rows):
            out += ["", "⚠: the oracle answered some of that run's model calls with an empty default (it could not "
                        "tell what a careful model would answer); the cells those calls touched measure the oracle, "
                        "not the system. The result's findings list the calls; the README explains each."]
        runs = sec.runs
        ranked, public = ranking(runs)
        out += (measures_table(runs, steps) + pooled_table(runs, steps) + ranked
                + private_table(paths, sec.protocol, public) + lag_table(runs) + stage_table(runs)
                + cost_table(runs, setup_label))
        out.append("")
        for row in sec.rows:
            out += [f"<details><summary>Cases: {md(row.system)} {md(row.version)} ({md(row.label)})</summary>", "",
                    "| case | shape | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(steps)]
            for case in row.result["cases"]:
                by_step = {c["step"]: c for c in case["cells"]}
                marks = [SHORT[c["verdict"]] + ("ʲ" if c.get("method") == "judged" else "") if c else "—"
                         for c in (by_step.get(st["key"]) for st in steps)]
                out.append(f"| {md(case['id'])} | {md(case['shape'])} | " + " | ".join(marks) + " |")
            out += ["", "</details>", ""]
        for row in sec.rows:
            lines = []
            whole = load_result(row.path)
            for case in whole["cases"]:
                for cell in case["cells"]:
                    if cell["verdict"] in ("FAIL", "ERROR"):
                        stage = f" [{cell['stage']}]" if cell.get("stage") else ""
                        lines.append(f"- {code(case['id'])} · step {md(cell['step'])} "
                                     f"{md(step_name(steps, cell['step']))}: **{cell['verdict']}**{md(stage)}: "
                                     f"{_escape(cell['reason'])}")
            lines += [f"- finding: {_escape(f)}" for f in whole.get("findings", [])]
            if lines:
                counts = {v: sum(c["verdict"] == v for case in whole["cases"] for c in case["cells"])
                          for v in ("FAIL", "ERROR")}
                out += [f"<details><summary>Why: {md(row.system)} {md(row.version)} ({md(row.label)}): "
                        f"{counts['FAIL']} FAIL, {counts['ERROR']} ERROR</summary>", "", *lines, "",
                        f"Artifact: {code(row.path.parent)}", "",
                        "</details>", ""]
        yield out


def _measure(m: dict) -> str:
    if "points" in m:  # a section's points (door protocol); None: not measured (SKIP, or a Core over partial coverage)
        if m["points"] is None:
            return f"— (coverage {m['coverage']}/{m['weight']})" if "coverage" in m else "SKIP"
        return f"{m['points']:g}/{m['weight']}" + (f" ({m['passed']}/{m['of']})" if "of" in m else "")
    if not m.get("of"):
        return "—"
    lo, hi = m["wilson95"]
    text = f"{m['passed']}/{m['of']} ({m['rate']:.2f}, {lo:.2f}–{hi:.2f})"
    if "outcomes" in m:
        text += " · " + ", ".join(f"{n} {o}" for o, n in m["outcomes"].items() if n)
    return text


def measures_table(runs: list[tuple[Path, dict]], steps: list[dict]) -> list[str]:
    """Rates over facts (passed/measured, the rate, its Wilson 95% interval), for protocols that define them."""
    rows = [(p, r) for p, r in runs if r.get("measures")]
    if not rows:
        return []
    keys = [s["key"] for s in steps] + [k for k in rows[0][1]["measures"] if k not in {s["key"] for s in steps}]
    points = any("points" in m for m in rows[0][1]["measures"].values())
    out = ["", "Points per section (checks passed / measured); the Core only when every section was measured."
           if points else "Facts passed out of facts measured per column (rate, Wilson 95% interval); every row of "
           "every rate is a check in the result's cells.", "",
           "| system | version | runtime (+variant) | " + " | ".join(keys) + " |", "|---|---|---|" + "---|" * len(keys)]
    for path, r in rows:
        s = r["stamp"]
        out.append(f"| {s['system']['name']} | {s['system']['version']} | {setup_label(path, r)} | "
                   + " | ".join(_measure(r["measures"].get(k, {})) for k in keys) + " |")
    return out


def pooled_table(runs: list[tuple[Path, dict]], steps: list[dict]) -> list[str]:
    """For a setup run more than once (a repeated protocol), each column's facts added up over its runs, with the
    Wilson 95% interval of the pooled rate: a race is measured by every draw, not by one."""
    from ..protocols.writepath import wilson
    groups: dict[tuple, list] = defaultdict(list)
    for path, r in runs:
        s = r["stamp"]
        if r.get("measures") and "core" not in r["measures"]:  # a Core (door) is ranked over its repeats instead
            groups[(s["system"]["name"], s["system"]["version"], _repeat_free(setup_label(path, r)))].append(r)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    if not groups:
        return []
    keys = [s["key"] for s in steps]
    out = ["", "Pooled over every run of a setup: facts passed out of facts measured per column, added up over its "
               "runs (rate, Wilson 95% interval, upper bound of the failure rate).", "",
           "| system | version | runtime (+variant) | runs | " + " | ".join(keys) + " |",
           "|---|---|---|---|" + "---|" * len(keys)]
    for (name, version, label), results in sorted(groups.items()):
        cells = []
        for k in keys:
            passed = sum(r["measures"].get(k, {}).get("passed") or 0 for r in results)
            n = sum(r["measures"].get(k, {}).get("of") or 0 for r in results)
            if not n:
                cells.append("—")
                continue
            interval = wilson(passed, n)
            cells.append(_measure({"passed": passed, "of": n, "rate": passed / n, "wilson95": interval})
                         + f" · fail ≤ {1 - interval[0]:.2%}")
        out.append(f"| {name} | {version} | {label} | {len(results)} | " + " | ".join(cells) + " |")
    return out


def _repeat_free(label: str) -> str:
    return "+".join(p for p in label.split("+") if not p.startswith("repeat-"))


def rank(rows: list[dict]) -> list[dict]:
    """Order by mean, highest first; a system whose mean is within the wider of its own and the previous system's
    range of that system (never less than one check's points, ``probe``) shares its rank, and no system ranks
    above one with a higher mean."""
    rows = sorted(rows, key=lambda r: -r["mean"])
    for i, r in enumerate(rows):
        prev = rows[i - 1] if i else None
        band = max(prev["max"] - prev["min"], r["max"] - r["min"], prev.get("probe", 0), r.get("probe", 0)) \
            if prev else 0
        close = prev is not None and prev["mean"] - r["mean"] <= band + 1e-9
        r["rank"] = prev["rank"] if close else i + 1
    return rows


def private_table(paths: list[Path], protocol: str, public: list[dict]) -> list[str]:
    from .privatesets import comparison, records_in
    return comparison([f for f in records_in(paths) if f.stem == protocol], public)


def ranking(runs: list[tuple[Path, dict]]) -> tuple[list[str], list[dict]]:
    """For a protocol with a Core (door): each setup's repeats as mean and range, and shared ranks (the table, and
    its rows)."""
    groups: dict[tuple, list] = defaultdict(list)
    for path, r in runs:
        m = r.get("measures") or {}
        if m.get("core") is not None:
            s = r["stamp"]
            probe = min((v["weight"] / v["of"] for k, v in m.items() if k != "core" and v.get("of")), default=0)
            groups[(s["system"]["name"], s["system"]["version"], _repeat_free(setup_label(path, r)))].append(
                {**m["core"], "probe": round(probe, 2)})
    if not groups:
        return [], []
    scored, partial = [], []
    for (name, version, label), cores in sorted(groups.items()):
        points = [c["points"] for c in cores if c["points"] is not None]
        if len(points) == len(cores):
            scored.append({"name": name, "version": version, "label": label, "runs": len(points),
                           "mean": round(sum(points) / len(points), 2), "min": min(points), "max": max(points),
                           "probe": min(c["probe"] for c in cores)})
        else:
            partial.append((name, version, label, cores[0]["coverage"], cores[0]["weight"]))
    out = ["", "Core points over every run of each setup (mean, range); systems closer than the wider of their ranges "
               "(never less than one check's points) share a rank. A system measured on fewer sections has no Core "
               "and is not ranked.", "",
           "| rank | system | version | runtime (+variant) | Core (mean) | range | runs |", "|---|---|---|---|---|---|---|"]
    for r in rank(scored):
        spread = "same" if r["min"] == r["max"] and r["runs"] > 1 else ("—" if r["runs"] == 1 else f"{r['min']:g}–{r['max']:g}")
        out.append(f"| {r['rank']} | {r['name']} | {r['version']} | {r['label']} | {r['mean']:g} | {spread} | {r['runs']} |")
    out += [f"| — | {n} | {v} | {lab} | not ranked: coverage {c}/{w} | | |" for n, v, lab, c, w in partial]
    return out, scored


def lag_table(runs: list[tuple[Path, dict]]) -> list[str]:
    """How long after a write returned its value first reached the door (polled, never slept on): wall time."""
    rows = [(p, r, r["timings"]["lag_ms"]) for p, r in runs if r.get("timings", {}).get("lag_ms")]
    if not rows:
        return []
    out = ["", "Write-to-door lag: the door polled right after each write until the value was in its text (wall "
               "time, ms; `never`: not within the settle timeout).", "",
           "| system | version | runtime (+variant) | writes | p50 | p95 | max | never |", "|---|---|---|---|---|---|---|---|"]
    for path, r, lag in rows:
        s = r["stamp"]
        out.append(f"| {s['system']['name']} | {s['system']['version']} | {setup_label(path, r)} | {lag['writes']} | "
                   + " | ".join("—" if lag[k] is None else f"{lag[k]:g}" for k in ("p50", "p95", "max"))
                   + f" | {lag['never']} |")
    return out


def stage_table(runs: list[tuple[Path, dict]]) -> list[str]:
    """FAIL cells per stage, per run: where each failure happened (protocols/stages.py)."""
    from ..protocols.stages import STAGES
    counts = []
    for path, r in runs:
        stages = [c.get("stage") for case in r["cases"] for c in case["cells"] if c["verdict"] == "FAIL"]
        if stages:
            counts.append((path, r, {st: stages.count(st) for st in STAGES}))
    if not counts:
        return []
    used = [st for st in STAGES if any(c[st] for _, _, c in counts)]
    out = ["", "Where the failures happened: FAIL cells per stage (see the README, \"a stage on every FAIL\").", "",
           "| system | version | runtime (+variant) | " + " | ".join(used) + " |", "|---|---|---|" + "---|" * len(used)]
    for path, r, c in counts:
        s = r["stamp"]
        out.append(f"| {s['system']['name']} | {s['system']['version']} | {setup_label(path, r)} | "
                   + " | ".join(str(c[st] or "") for st in used) + " |")
    return out


def brief(paths: list[Path], config=None) -> str:
    """One line per run, for a terminal: what ran and how its cells came out (the full matrix is ``render``)."""
    lines = []
    for path in find_results(paths):
        r = load_result(path, config)
        s = r["stamp"]
        verdicts = [cell["verdict"] for case in r["cases"] for cell in case["cells"]]
        counts = " · ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS if verdicts.count(v))
        lines.append(f"  {s['system']['name']} {s['system']['version']} {setup_label(path, r)} {s['protocol']['name']}: "
                     f"{len(r['cases'])} cases, {counts}{unmatched_mark(r)}")
    return "\n".join(lines)
