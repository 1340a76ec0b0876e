"""``memmatrix verify``: a number that cannot be re-derived from its artifact is a bug.

For every result.json: validate it against its schema; recompute the hashes of its transcripts
(over their canonical uncompressed lines); check that the transcript's run header names exactly
what the stamp says (system, version, adapter, runtime, options, model, judge, limits); that its
steps are the protocol's; that the case file it names is in this checkout at that sha256 and the
transcript holds exactly its cases and ops, in order; then re-score every case from the transcript
alone and re-derive the summary, findings, cost, the judge's accuracy and the fingerprint. Every
difference is reported, naming the file and what disagrees; none is forgiven.

What it cannot prove: that the system behaves as recorded. A self-consistent transcript written
by hand re-derives. ``memmatrix verify --rerun`` re-executes a deterministic run and compares
hashes; that is the only proof of behaviour.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..result import derive
from ..common import schemas
from ..common.tokens import forget as forget_texts
from ..model.oracle import forget as forget_readings
from .bindings import CaseCheck, check_bindings, find_case_file
from ..common.config import Config
from ..result.costs import derive_costs
from ..common.errors import ConfigError, MemmatrixError
from ..protocols import get_protocol
from ..protocols.scoring import recorded_capabilities, summarize
from ..result.stamp import fingerprint, scoring_version
from .identity import identity_problems
from .reask import Answers, Reask
from .reasked import Marks
from .stream import Artifact, RunRead, read_model


def find_results(paths: list[Path], allow_none: bool = False) -> list[Path]:
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_file() and p.name == "result.json":
            found.append(p)
        elif p.is_dir():
            found.extend(sorted(q for q in p.rglob("result.json") if not any(part.startswith(".") for part in q.parts)))
        else:
            raise ConfigError(f"{p} is neither a result.json nor a folder holding results")
    if not found and not allow_none:
        raise ConfigError(f"no result.json under {', '.join(map(str, paths))}; run `memmatrix run` first")
    return found


def load_result(path: Path, config: Config | None = None) -> dict:
    """A result.json, parsed; with ``config``, also checked against its schema (one clear error if not)."""
    try:
        result = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON: {exc}") from None
    if config is not None:
        problems = schemas.errors(config.schemas_dir, "result", result)
        if problems:
            raise ConfigError(f"{path} is not a memmatrix result (schemas/result.schema.json {problems[0]}); "
                              "regenerate it with `memmatrix run`")
    return result


def verify_result(path: Path, config: Config, remarks: list[str] | None = None,
                  answers: Answers | None = None, marks: Marks | None = None) -> list[str]:
    """Every problem with one run directory; an empty list means it re-derives exactly. What could not be checked
    (a system folder outside the checkout, no git history) is added to ``remarks``. The transcripts are read once,
    as streams (``stream``); ``answers`` is the oracle's cache shared by the results of one verify (``reask``),
    ``marks`` the model transcripts this machine re-asked before (``reasked``)."""
    path = Path(path)
    try:
        result = load_result(path)
    except ConfigError as exc:
        return [str(exc)]
    problems = schemas.errors(config.schemas_dir, "result", result)
    if problems:
        return [f"does not fit schemas/result.schema.json {p}" for p in problems]
    stamp = result["stamp"]
    run = Artifact(path.parent, result["transcript"], "transcript")
    model = Artifact(path.parent, result["model_transcript"], "model transcript") \
        if result.get("model_transcript") is not None else None
    try:
        protocol = get_protocol(stamp["protocol"]["name"])
    except MemmatrixError as exc:
        return run.drain() + (model.drain() if model else []) + [str(exc)]
    if protocol.version != scoring_version(stamp):
        return run.drain() + (model.drain() if model else []) + [
            f"scored by {protocol.name} protocol {scoring_version(stamp)}; this memmatrix implements "
            f"{protocol.version}: verify with the memmatrix version in the stamp, or re-derive the "
            "cells with `memmatrix rescore` (which refuses if any verdict would change)"]
    if not run.file.is_file():
        return run.drain()
    case_file = find_case_file(stamp, config)
    asking = Reask(stamp, case_file, config, answers, marks, (result.get("model_transcript") or {}).get("sha256"))
    checking = CaseCheck(stamp, protocol, case_file)
    reading = RunRead(protocol, checking, result["cases"])
    try:
        model_records = read_model(model, asking) if model is not None else []
        forget_readings()  # the judge's readings serve the re-asking only: not held while the cases are scored
        reading.read(iter(run), lambda: recorded_capabilities(run_records(run)))
        records = reading.slim
        caps = reading.caps or recorded_capabilities(records)  # no case read: the transcript's, or why not
    except (MemmatrixError, ValueError, OSError) as exc:
        return run.problems + (model.problems if model else []) + ([] if run.unreadable else [str(exc)])
    problems = run.problems + (model.problems if model else [])
    asking.done(model is not None and not model.problems and not model.unreadable)
    if run.unreadable:
        return problems
    problems += check_bindings(path, result, records, model_records, protocol, caps, config,
                               checking.problems(reading.seen), asking.problems())
    more, said = identity_problems(path, result, records, model_records, config)
    problems += more
    if remarks is not None:
        remarks += said
    rescored = reading.cases
    problems += compare_cases(result["cases"], rescored)
    if summarize(protocol, rescored) != result["summary"]:
        problems.append("the summary differs from the one recomputed from the transcript")
    if protocol.measures(rescored) != result.get("measures"):
        problems.append("the measures differ from those recomputed from the transcript's cells")
    cost = derive.model_cost(model_records, stamp["model"]["mode"])
    if cost != result.get("cost"):
        problems.append("the cost differs from the one derived from the model transcript "
                        f"(derived totals {cost['total']}, recorded {result.get('cost', {}).get('total')})")
    if "costs" in result and derive_costs(records, cost, reading.door) != result["costs"]:
        problems.append("the costs differ from those derived from the transcripts")
    findings = derive.run_findings(records, caps, stamp.get("limits", {})) + derive.model_findings(model_records, cost)
    if findings != result["findings"]:
        missing = [f for f in findings if f not in result["findings"]]
        extra = [f for f in result["findings"] if f not in findings]
        problems.append(f"the findings differ from those derived from the transcripts: missing {missing}, "
                        f"not derivable {extra}")
    if fingerprint(stamp) != stamp["fingerprint"]:
        problems.append(f"the fingerprint {stamp['fingerprint']} does not match the stamp (recomputed {fingerprint(stamp)})")
    return problems


def run_records(run: Artifact):
    """The transcript read again from its start (the capabilities answer came after the first case)."""
    return iter(Artifact(run.file.parent, run.entry, run.what))


def compare_cases(stored: list[dict], rescored: list[dict]) -> list[str]:
    problems = []
    if [c["id"] for c in stored] != [c["id"] for c in rescored]:
        return [f"cases differ: result has {[c['id'] for c in stored]}, transcript has {[c['id'] for c in rescored]}"]
    for old, new in zip(stored, rescored):
        if old == new:
            continue
        cells_new = {c["step"]: c for c in new["cells"]}
        for cell in old["cells"]:
            fresh = cells_new.get(cell["step"])
            if fresh is None:
                problems.append(f"case {old['id']} step {cell['step']}: not in the transcript's scoring")
            elif fresh["verdict"] != cell["verdict"]:
                problems.append(f"case {old['id']} step {cell['step']}: stored {cell['verdict']}, "
                                f"the transcript gives {fresh['verdict']} ({fresh['reason'] or 'no reason'})")
            elif fresh != cell:
                problems.append(f"case {old['id']} step {cell['step']}: stored reason or checks differ from the transcript's")
        if len(old["cells"]) != len(new["cells"]) or old["shape"] != new["shape"]:
            problems.append(f"case {old['id']}: its cells or shape differ from the transcript's")
    return problems


def _verify_group(paths: list[Path], config: Config, cache: int, marks: Marks | None = None):
    """(path, problems, remarks) for results sharing one oracle cache, one at a time."""
    answers = Answers(cache)
    for path in paths:
        remarks: list[str] = []
        problems = verify_result(path, config, remarks, answers, marks)
        forget_texts()  # the oracle's replies are shared across results; the scorer's and judge's texts are not
        forget_readings()
        yield path, problems, remarks


def _verify_group_list(paths: list[Path], config: Config, cache: int,
                       marks: Marks | None) -> list[tuple[Path, list[str], list[str]]]:
    return list(_verify_group(paths, config, cache, marks))  # what a worker process sends back


def verify_all(paths: list[Path], config: Config, jobs: int = 1, cache: int = 20_000, marks: Marks | None = None,
               progress=None):
    """(path, problems, remarks) for each result, in the order given. The results of one system share an oracle
    cache (``reask.Answers``) and a process: with ``jobs`` > 1 the systems are spread over that many processes,
    the largest first, and each result is yielded as soon as it and every result before it are done; ``progress``
    (a function of one line of text) then hears the plan before any work and each system folder as it is done,
    since a small result given first may wait for the largest system. With ``marks``, a model transcript this
    machine re-asked before with the same inputs is not re-asked (``reasked``)."""
    groups: dict[Path, list[Path]] = {}
    for p in paths:
        groups.setdefault(_system_of(p), []).append(p)
    if jobs <= 1 or len(groups) <= 1:
        yield from _verify_group(paths, config, cache, marks)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    say = progress or (lambda text: None)
    size = {g: sum(_bytes(p) for p in ps) for g, ps in groups.items()}
    order = sorted(groups, key=lambda g: -size[g])
    say(f"{len(paths)} result(s) of {len(groups)} system folder(s) in {min(jobs, len(groups))} processes, the "
        f"largest first; each result is printed in the order given, once it and every result before it are checked")
    done: dict[Path, tuple] = {}
    checked = 0
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_verify_group_list, groups[g], config, cache, marks): g for g in order}
        at = 0
        for n, fut in enumerate(as_completed(futures), 1):
            for path, problems, remarks in fut.result():
                done[path] = (problems, remarks)
            group = futures[fut]
            checked += len(groups[group])
            say(f"{group}: {len(groups[group])} result(s) checked ({checked} of {len(paths)}, "
                f"{n} of {len(groups)} system folders)")
            while at < len(paths) and paths[at] in done:
                yield (paths[at], *done.pop(paths[at]))
                at += 1


def _system_of(path: Path) -> Path:
    """Results of one system under the standard layout <protocol>/<system>/<version>/<runtime>: its folder."""
    parts = Path(path).parent.parts
    return Path(*parts[:-2]) if len(parts) >= 3 else Path(path).parent


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).parent.iterdir() if f.is_file())
