"""The ``memmatrix`` command. Only this module turns errors into exit codes.

Exit codes: 0 success; 1 a check failed (verify found a difference, diff found a
regression); 2 something the user must fix (the message names it and the fix); 3 diff
compared nothing (a gate must not pass by comparing nothing).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import __version__
from .commands import (cmd_action, cmd_attest, cmd_bisect, cmd_cases_generate, cmd_changelog, cmd_check_cases,
                       cmd_check_system,
                       cmd_claims, cmd_diff, cmd_docs, cmd_estimate, cmd_merge, cmd_model, cmd_nightly, cmd_plan, cmd_plots, cmd_private, cmd_repack, cmd_report,
                       cmd_rescore, cmd_sweep, cmd_systems, cmd_timeline)
from .common.config import Config
from .common.errors import ConfigError, MemmatrixError
from .protocols import main_job_protocols, protocol_names
from .runtimes import RUNTIMES


def _systems(config: Config, wanted: list[str] | None) -> list[str]:
    from .ci.matrix import split_list
    from .systems import known_systems, main_job_systems
    wanted = split_list(wanted)  # commas, spaces or newlines: "a, b" is two systems
    if wanted == ["all"]:
        return known_systems(config)
    if not wanted:
        names, left_out = main_job_systems(config)
        if left_out:
            print(f"memmatrix: the main job leaves out {', '.join(left_out)} (main_job: false in their system.yaml: "
                  "too slow to install or run within its budget); `--system all` or `--system NAME` runs them",
                  file=sys.stderr)
        return names
    return wanted


def cmd_run(ns: argparse.Namespace, config: Config) -> int:
    from .result.artifacts import clean_stale
    from .ci.batch import Batch
    from .systems import ensure_lock, resolve_system

    # everything a user must fix is found before anything starts
    if ns.repeats is not None and ns.repeats < 1:
        raise MemmatrixError(f"--repeats {ns.repeats}: give a number of runs, 1 or more")
    from .model import GatewaySettings
    from .model.local import parse_model
    mode, local = parse_model(ns.model)
    batch = Batch.from_args(config, protocol=ns.protocol, cases=ns.cases, runtime=ns.runtime, out=ns.out,
                            seed=ns.seed, no_judge=ns.no_judge, option=ns.option, replace=ns.replace,
                            jobs=ns.jobs, gateway=None if mode is None else
                            GatewaySettings.from_env(mode="oracle", ablation="", embedder="hash") if local else
                            GatewaySettings.from_env(mode="oracle", ablation=mode[len("oracle-"):])
                            if mode.startswith("oracle-") else GatewaySettings.from_env(mode=mode))
    specs = [resolve_system(s, config, python=ns.python) for s in _systems(config, ns.system)]
    requests = [batch.request(spec, protocol) for spec in specs for protocol in batch.protocols]
    if local is not None:
        return _with_local_model(local, ns, config, batch, requests)
    return _run_all(ns, config, batch, requests)


def _with_local_model(local, ns: argparse.Namespace, config: Config, batch, requests) -> int:
    """--model local:NAME: the model's server on loopback for the whole batch, the gateway proxying to it."""
    import os
    from .model.local import CALL_TIMEOUT_S, MAX_TOKENS, LocalServer
    if not os.environ.get("MEMMATRIX_CALL_TIMEOUT"):  # a tiny model on a few cores takes seconds a call
        config = config.with_(call_timeout_s=max(config.call_timeout_s, CALL_TIMEOUT_S))
    max_tokens = MAX_TOKENS if not os.environ.get("MEMMATRIX_MODEL_MAX_TOKENS") else batch.gateway.max_tokens
    with LocalServer(local, config, seed=batch.gateway.seed, max_tokens=max_tokens) as server:
        batch.gateway = server.settings(batch.gateway, timeout_s=config.call_timeout_s)
        for req in requests:
            req.gateway = batch.gateway
        return _run_all(ns, config, batch, requests)


def _run_all(ns: argparse.Namespace, config: Config, batch, requests) -> int:
    from .result.artifacts import clean_stale
    from .systems import ensure_lock
    clean_stale(batch.out) if batch.out.exists() else None
    failures, locked, wrote = [], {}, []
    for req in requests:
        try:  # a release not pinned in system.yaml gets its generated lock first (once per system and version)
            key = (req.spec.name, req.spec.version)
            req.spec = locked[key] = locked.get(key) or ensure_lock(req.spec, config)
        except MemmatrixError as exc:
            failures.append(f"{req.spec.name}@{req.spec.version}: {exc}")
            continue
        where = batch.execute(req, config)
        if isinstance(where, str):
            failures.append(where)
            continue
        wrote.append(where)
        for k in range(2, batch.repeats(req.protocol, ns.repeats) + 1):
            if req.protocol.repeated == "model" and not _made_model_calls(where):
                print(f"memmatrix: {req.spec.name} made no model call, so one run of {req.protocol.name} is its "
                      "measure", file=sys.stderr)
                break
            again = batch.execute(batch.request(req.spec, req.protocol, repeat=k), config)
            (failures if isinstance(again, str) else wrote).append(again)
    if wrote:
        _closing(config, batch.out, wrote)
    if failures:
        print(f"memmatrix: {len(failures)} run(s) did not produce a result:\n  - " + "\n  - ".join(failures),
              file=sys.stderr)
        return 2
    return 0


def _made_model_calls(where: Path) -> bool:
    import json
    total = json.loads((where / "result.json").read_text(encoding="utf-8")).get("cost", {}).get("total", {})
    return bool(total.get("llm_calls"))


def _closing(config: Config, out: Path, wrote: list[Path]) -> None:
    """How a run ends on the terminal: a line per result, the full report in a file, and whether the results
    match the committed matrix (when they were written anywhere else)."""
    from .publish.diff import diff
    from .publish.report import brief, render
    print(f"memmatrix: {len(wrote)} result(s):\n{brief(wrote, config)}", file=sys.stderr)
    committed = config.home / "results"
    if not committed.is_dir() or out.resolve() == committed.resolve() or committed.resolve() in out.resolve().parents:
        return
    (out / "report.md").write_text(render(wrote, config=config), encoding="utf-8")  # this run's results only
    print(f"memmatrix: the full report is in {out / 'report.md'}", file=sys.stderr)
    # only the committed runs of the same protocol, system and version can match (<protocol>/<system>/<version>/):
    # reading the whole matrix would cost more than a small run
    baseline = sorted(p for p in {committed.joinpath(*w.parts[-4:-1]) for w in wrote} if p.is_dir())
    try:
        report = diff(baseline, wrote, config) if baseline else None
    except MemmatrixError as exc:  # the run went well; only the comparison could not be made
        print(f"memmatrix: not compared with the committed matrix: {exc}", file=sys.stderr)
        return
    if report is None or not report.compared:
        print("memmatrix: no committed result of the same setup to compare with", file=sys.stderr)
    elif not report.changes:
        print(f"memmatrix: matches the committed matrix ({len(report.compared)} run(s) compared, every cell the same)",
              file=sys.stderr)
    else:
        print(f"memmatrix: {len(report.changes)} state change(s) against the committed matrix, "
              f"{len(report.regressions)} regression(s): `memmatrix diff results {out}` lists them", file=sys.stderr)


def cmd_verify(ns: argparse.Namespace, config: Config) -> int:
    from .evidence.verify import find_results, verify_all
    if ns.jobs < 1 or ns.cache < 0:
        raise ConfigError(f"--jobs {ns.jobs} --cache {ns.cache}: --jobs must be at least 1 and --cache at least 0")
    attest = None
    if ns.attested_by:
        from .evidence.attest import _sigstore, check_identity_spec
        check_identity_spec(ns.attested_by)
        _sigstore()  # a missing sigstore-python is one line before any work
    bad = 0
    from .result.history import find_histories
    histories = find_histories([Path(p) for p in ns.paths])
    marks = None
    if not ns.fresh:
        from .evidence.reasked import Marks
        marks = Marks(config.cache_dir)
        print(f"memmatrix verify: a model transcript this machine re-asked before with the same code, system folder and "
              f"case file, every answer matching, is not re-asked ({marks.dir.parent}); --fresh asks every answer again",
              file=sys.stderr)
    for path, problems, remarks in verify_all(find_results([Path(p) for p in ns.paths], allow_none=bool(histories)),
                                              config, ns.jobs, ns.cache, marks,
                                              lambda text: print(f"memmatrix verify: {text}", file=sys.stderr,
                                                                 flush=True)):
        signed = ""
        if ns.attested_by or (path.parent / "attestation.sigstore.json").is_file():
            from .evidence.attest import ATTESTED, attestation, page_status
            attest = attestation(path, config.home, ns.attested_by) if ns.attested_by else page_status(path, config.home)
            signed = f" ({attest.status}: {attest.detail})"
            if attest.status != ATTESTED and (ns.attested_by or attest.status == "invalid"):
                problems.append(f"{attest.status}: {attest.detail}" + (f"; --attested-by {ns.attested_by} refuses it"
                                                                        if ns.attested_by else ""))
        if not problems and ns.rerun:
            from .evidence.rerun import rerun
            print(f"     {path}: verified; re-running it", flush=True)
            problems = [f"re-run: {p}" for p in rerun(path, config, remarks)]
        if problems:
            bad += 1
            print(f"FAIL {path}{signed}")
            for p in problems:
                print(f"  - {p}")
        else:
            print(f"ok   {path}" + (" (re-run reproduced it)" if ns.rerun else "") + signed)
        for n in remarks:
            print(f"  note: {n}")
    from .ci.private import check_record
    from .publish.privatesets import records_in
    for path in records_in([Path(p) for p in ns.paths]):  # private-set scores: the schema holds, nothing re-derives
        problems = check_record(path, config)
        bad += bool(problems)
        print(("FAIL " if problems else "ok   ") + str(path) + " (private-set scores: checked against the schema; "
              "re-deriving them needs the runs and the set)" + "".join(f"\n  - {p}" for p in problems))
    from .result.history import check_history
    for path in histories:  # what a sweep recorded beside its results
        problems = check_history(path, config)
        bad += bool(problems)
        print(("FAIL " if problems else "ok   ") + str(path) + "".join(f"\n  - {p}" for p in problems))
    if bad:
        print(f"memmatrix verify: {bad} result(s) could not be re-derived from their artifacts"
              + (" or re-run" if ns.rerun else ""))
    return 1 if bad else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memmatrix", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Reproduce how agent-memory systems behave on the write path: does a deleted memory stay "
                    "deleted,\ndoes a correction hold. Every result is a verified artifact (result.json and its "
                    "transcripts).",
        epilog="start here:\n"
               "  memmatrix systems                                  the systems it can run\n"
               "  memmatrix run --system NAME --protocol deletion    one system, one protocol\n"
               "  memmatrix run                                      the main job (see the README for time and disk)\n"
               "  memmatrix run --system all                         every system, the heavy ones too\n"
               "  memmatrix verify memmatrix-results                 re-derive every verdict from its transcript\n"
               "  memmatrix COMMAND --help                           a command's options\n\n"
               "exit codes: 0 success, 1 a check failed, 2 something to fix (the message says what), "
               "3 diff compared nothing")
    p.add_argument("--version", action="version", version=f"memmatrix {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run protocols against systems and write verified artifacts")
    r.add_argument("--system", action="append", metavar="NAME[@VERSION]|PATH.py:CLASS",
                   help="a system under systems/, or any adapter file; repeatable; \"all\" for every system; default: "
                        "the main job's (every system but those whose system.yaml says main_job: false)")
    r.add_argument("--protocol", action="append", default=None, metavar="NAME",
                   help=f"evaluation protocol ({', '.join(protocol_names())}); repeatable; default: all but "
                   f"the stress protocols ({', '.join(sorted(set(protocol_names()) - set(main_job_protocols())))})")
    r.add_argument("--runtime", default="embedded", choices=RUNTIMES, help="where adapters run (default: embedded)")
    r.add_argument("--cases", metavar="FILE", help="case file (default: the newest cases/<protocol>/*.json)")
    r.add_argument("--output", "--out", dest="out", default="memmatrix-results", metavar="DIR",
                   help="results folder (default: memmatrix-results; the committed matrix is results/)")
    r.add_argument("--seed", type=int, default=0, help="seed passed to the system (default: 0)")
    r.add_argument("--repeats", type=int, metavar="N", help="runs of a repeated protocol per system: door 3 on the "
                   "oracle and 5 with a real model (a system that made no model call runs once), concurrency 5")
    r.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="run the cases on N instances of the system at once (embedded and inprocess; systems whose "
                        "system.yaml says parallel: true); the transcripts are the same as with one (default: 1)")
    r.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="an adapter option (see the system's adapter); recorded in the stamp and the result's folder name")
    r.add_argument("--model", metavar="oracle|oracle-MODE|proxy|replay|local:NAME",
                   help="who answers the systems' model calls: the oracle (default); oracle-MODE, an oracle that "
                        "makes one mistake a real model makes (oracle-paraphrase, oracle-nocorrection-0.2-s1: "
                        "docs/plumbing.md); proxy or replay as the "
                        "MEMMATRIX_MODEL_* variables configure them, or local:NAME, a small GGUF model served on "
                        "loopback as proxy mode's upstream (local:smollm2, local:gemma3-270m; built once, see "
                        "`memmatrix model setup`)")
    r.add_argument("--no-judge", action="store_true",
                   help="never consult the pinned judge: hygiene a system leaves unqualified becomes SKIP")
    r.add_argument("--replace", action="store_true",
                   help="replace a result of a different setup (case file, seed, model, judge, protocol version) "
                        "in the target folder; without it such a run is refused before it starts")
    r.add_argument("--python", metavar="PATH",
                   help="interpreter for an adapter given as PATH.py:CLASS (default: the one running memmatrix)")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("verify", help="re-derive every result from its transcript; exit 1 on any difference")
    v.add_argument("paths", nargs="+", metavar="PATH", help="result.json files or folders holding them")
    v.add_argument("--rerun", action="store_true",
                   help="also execute each run again from its stamp and compare its transcripts (an oracle run on "
                        "the oracle; a proxy or replay run by replaying its own model transcript)")
    v.add_argument("--attested-by", metavar="OWNER/REPO/.github/workflows/FILE",
                   help="refuse every result not signed by this workflow (its attestation.sigstore.json, checked "
                        "offline with sigstore-python); without it, a valid signature's identity is only reported")
    v.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="verify in N processes, one system's results in one process (they share the oracle's "
                        "answers); the output is in the same order whatever N is, and standard error says "
                        "each system folder as it is done")
    v.add_argument("--cache", type=int, default=20_000, metavar="N",
                   help="oracle replies kept for requests asked again by another result of the same system and case "
                        "file (0: ask the oracle for every request; the growth benchmark's setting)")
    v.add_argument("--fresh", action="store_true",
                   help="re-ask every oracle answer, also of a model transcript this machine re-asked before with the "
                        "same code, system folder and case file (those are skipped otherwise; docs/verify.md)")
    v.set_defaults(func=cmd_verify)

    at = sub.add_parser("attest", help="place a workflow's attestation bundle beside every result it signs")
    at.add_argument("action", choices=["place"], help="place: copy the bundle beside each result.json it signs")
    at.add_argument("bundle", metavar="BUNDLE", help="the bundle actions/attest-build-provenance wrote (bundle-path)")
    at.add_argument("results", metavar="RESULTS", help="the folder of results its subjects name")
    at.set_defaults(func=cmd_attest)

    rs = sub.add_parser("rescore", help="re-derive results' cells with this scorer from their unchanged transcripts "
                        "(refused where a verdict would change)")
    rs.add_argument("paths", nargs="+", help="result.json files or folders holding them")
    rs.set_defaults(func=cmd_rescore)

    rp = sub.add_parser("repack", help="store results' transcripts as xz (every hash unchanged), then verify them")
    rp.add_argument("paths", nargs="+", help="result.json files or folders holding them")
    rp.set_defaults(func=cmd_repack)

    pl = sub.add_parser("plots", help="draw the cost plots (lag CDF, store growth, accuracy against door size) as SVG "
                        "from results")
    pl.add_argument("paths", nargs="*", default=["results"], help="folders of results (default: results)")
    pl.add_argument("--output", "--out", dest="out", metavar="DIR",
                    help="folder for the SVG files (default: the project's docs/plots, wherever you stand)")
    pl.set_defaults(func=cmd_plots)

    pv = sub.add_parser("private", help="record the scores of runs on a private case set (only its sha256 and the "
                        "scores are committed)")
    pv.add_argument("action", choices=["record"], help="record: add these runs' scores to the private set's record")
    pv.add_argument("paths", nargs="+", help="result.json files or folders of runs made on a private set")
    pv.add_argument("--into", metavar="FILE", help="the record to update (default: results/private/<protocol>.json)")
    pv.set_defaults(func=cmd_private)

    rp = sub.add_parser("report", help="the matrix as Markdown (systems x steps, with reasons), or as a static site")
    rp.add_argument("paths", nargs="+", metavar="PATH", help="result.json files or folders holding them")
    rp.add_argument("--output", "--out", metavar="FILE", help="write to FILE (e.g. $GITHUB_STEP_SUMMARY) instead of stdout")
    rp.add_argument("--html", metavar="DIR", help="write the matrix as a static site into DIR (opens from the file "
                    "system: no server, nothing loaded from elsewhere)")
    rp.add_argument("--append", action="store_true", help="add to the end of --output instead of replacing it")
    rp.add_argument("--baseline", metavar="OLD", help="with --html: a previous matrix's results folder; the front "
                    "page says which cells changed since it")
    rp.set_defaults(func=cmd_report)

    d = sub.add_parser("diff", help="state changes between comparable runs; exit 1 on a regression, 3 when nothing was comparable")
    d.add_argument("old", metavar="OLD", help="the earlier results: a result.json or a folder holding them")
    d.add_argument("new", metavar="NEW", help="the later results, paired with OLD's by system, protocol and setup")
    d.add_argument("--across-versions", action="store_true",
                   help="pair runs of different system versions (one version on each side) instead of the same version")
    d.add_argument("--json", action="store_true", help="the changes as JSON (for machines) instead of Markdown")
    d.add_argument("--cost-threshold", metavar="RATIO", default="",
                   help="list runs whose model tokens or calls exceed this share of the baseline run's (e.g. 150%%)")
    d.add_argument("--latency-threshold", metavar="RATIO", default="",
                   help="list runs whose p50 of an adapter operation exceeds this share of the baseline run's (e.g. 200%%)")
    d.add_argument("--fail-on-threshold", action="store_true",
                   help="exit 1 when a figure is over its threshold (without it they are only listed)")
    d.set_defaults(func=cmd_diff)

    for name, helptext in (("sweep", "measure a system over sampled releases from its package index"),
                           ("bisect", "run the releases between two measured ones until every change point is exact")):
        w = sub.add_parser(name, help=helptext)
        w.add_argument("--system", required=True, metavar="NAME", help="a system folder with a releases block")
        if name == "sweep":
            w.add_argument("--versions", required=True, metavar="SPEC",
                           help="comma-separated: 1.0.11 | 0.1.0..2.2.1 | every:N | A..B:every:N | spread:N "
                                "(N releases evenly over the drivable ones)")
            w.add_argument("--again", action="store_true", help="run releases that already have a result again")
            w.add_argument("--bisect", action="store_true", help="then bisect every change point (as `memmatrix bisect`)")
        w.add_argument("--protocol", action="append", default=None, metavar="NAME",
                       help=f"evaluation protocol ({', '.join(protocol_names())}); repeatable; default: all but "
                   f"the stress protocols ({', '.join(sorted(set(protocol_names()) - set(main_job_protocols())))})")
        w.add_argument("--cases", metavar="FILE", help="a case file other than the protocol's default (give one "
                       "--protocol with it); results go to <runtime>+cases=<set>-<version>-<sha> folders")
        w.add_argument("--runtime", default="embedded", choices=RUNTIMES, help="where adapters run (default: embedded)")
        w.add_argument("--output", "--out", dest="out", default="results", metavar="DIR",
                       help="results folder (default: results)")
        w.add_argument("--seed", type=int, default=0, help="seed passed to the system (default: 0)")
        w.add_argument("--option", action="append", metavar="KEY=VALUE", help="an adapter option")
        w.add_argument("--no-judge", action="store_true", help="never consult the pinned judge")
        w.set_defaults(func=cmd_sweep if name == "sweep" else cmd_bisect)

    t = sub.add_parser("timeline", help="each swept system's verdicts across releases, with its change points")
    t.add_argument("out", nargs="?", default="results", metavar="DIR", help="results folder (default: results)")
    t.add_argument("--system", action="append", metavar="NAME", help="only this system; repeatable")
    t.add_argument("--output", "--out", metavar="FILE", help="write to FILE (links relative to it) instead of stdout")
    t.set_defaults(func=cmd_timeline)

    c = sub.add_parser("claims", help="published vendor claims and whether the results reproduce them")
    c.add_argument("paths", nargs="*", default=["results"], metavar="PATH", help="results folders (default: results)")
    c.add_argument("--claims", metavar="DIR", help="folder of claims/<system>.yaml (default: the checkout's claims/)")
    c.add_argument("--json", metavar="FILE", help="also write the statuses as JSON to FILE ('-': stdout only)")
    c.add_argument("--output", "--out", metavar="FILE", help="write the Markdown to FILE (links relative to it)")
    c.add_argument("--baseline", metavar="FILE", help="an earlier --json output: list the claims whose status changed")
    c.add_argument("--fail-on-change", action="store_true", help="exit 1 when a claim's status changed since --baseline")
    c.set_defaults(func=cmd_claims)

    es = sub.add_parser("estimate", help="what a run with a real model would cost: the oracle runs' model traffic "
                                         "(calls, tokens, embeddings) per system and protocol, times a price table")
    es.add_argument("paths", nargs="*", default=["results"], metavar="PATH", help="results folders (default: results)")
    es.add_argument("--prices", metavar="FILE", default="examples/prices.yaml",
                    help="price table, USD per million tokens (default: examples/prices.yaml; copy and edit it)")
    es.add_argument("--protocol", action="append", metavar="NAME", help="only this protocol; repeatable")
    es.add_argument("--system", action="append", metavar="NAME", help="only this system; repeatable")
    es.set_defaults(func=cmd_estimate)

    pl = sub.add_parser("plan", help="the matrix as JSON for a workflow's strategy.matrix: one entry per "
                                     "system version x protocol x runtime, each with its own artifact name")
    pl.add_argument("--system", action="append", metavar="NAMES", help="systems (NAME or NAME@VERSION), separated by "
                                                                       "commas, spaces or newlines; default: all")
    pl.add_argument("--protocol", action="append", metavar="NAMES",
                    help="protocols, separated by commas, spaces or newlines; default: the main job's, as `run` "
                         f"({', '.join(main_job_protocols())})")
    pl.add_argument("--runtime", action="append", metavar="NAMES", help="runtimes (default: embedded)")
    pl.add_argument("--every-version", action="store_true", help="every pinned version, not only the default")
    pl.add_argument("--skip-unchanged", metavar="RESULTS",
                    help="leave out entries whose inputs (system folder, lock, case file, protocol, model, options) "
                         "are those of their committed result under RESULTS; each entry's decision on stderr")
    pl.add_argument("--max-jobs", type=int, metavar="N",
                    help="at most N entries (GitHub Actions allows 256 jobs per matrix): over it, each system "
                         "version's protocols run in one job; still over it is an error")
    pl.set_defaults(func=cmd_plan)

    mg = sub.add_parser("merge", help="verify the results of several jobs (downloaded artifacts) and merge them")
    mg.add_argument("dest", metavar="DEST", help="the results folder to merge into")
    mg.add_argument("sources", nargs="+", metavar="SRC", help="folders of results (each a run's --out)")
    mg.set_defaults(func=cmd_merge)

    a = sub.add_parser("action", help="one step of the GitHub Action (action.yml runs them; inputs from MM_* variables)")
    a.add_argument("step", choices=["install", "run", "verify", "report", "claims", "diff", "comment", "history", "pages"],
                   help="the step to run, as action.yml names it")
    a.set_defaults(func=cmd_action)

    s = sub.add_parser("systems", help="list the systems under systems/")
    s.set_defaults(func=cmd_systems)

    m = sub.add_parser("model", help="serve the model gateway (oracle, proxy or replay) on loopback, or set up a "
                                     "local model")
    msub = m.add_subparsers(dest="action", required=True, metavar="ACTION")
    ms = msub.add_parser("serve", help="serve the model gateway on loopback until interrupted: the oracle answers "
                                       "from the cases' gold; proxy and replay as the MEMMATRIX_MODEL_* variables say")
    ms.add_argument("--host", default="127.0.0.1", help="the address to listen on (loopback unless you mean it)")
    ms.add_argument("--port", type=int, default=8790, help="the port to listen on")
    ms.add_argument("--cases", nargs="*", default=[], metavar="FILE", help="case files whose gold the oracle answers from")
    ms.add_argument("--system", metavar="NAME", help="answer that system's prompts too (its folder's oracle dialects)")
    ms.set_defaults(func=cmd_model, local=None)
    mu = msub.add_parser("setup", help="build the environment a local GGUF model is served from, and install it")
    mu.add_argument("local", nargs="?", metavar="local:NAME",
                    help="the local model (local:smollm2, local:gemma3-270m); `run --model local:NAME` does the same "
                         "on first use")
    mu.set_defaults(func=cmd_model)

    c = sub.add_parser("check-cases", help="validate a case file against its schema and protocol rules")
    c.add_argument("file", metavar="FILE", help="the case file (cases/<protocol>/<version>.json or your own)")
    c.add_argument("--protocol", metavar="NAME", help="the protocol the file is for (default: the one the file names)")
    c.set_defaults(func=cmd_check_cases)

    cs = sub.add_parser("check-system", help="a contributor's quick check of one system folder: system.yaml, its "
                        "lock, its oracle dialects on recorded requests, one case of each protocol run and verified; "
                        "exit 1 when a check failed")
    cs.add_argument("system", metavar="NAME[@VERSION]",
                    help="a folder under systems/ (or a MEMMATRIX_SYSTEMS root), at its default version or VERSION")
    cs.add_argument("--protocol", action="append", default=None, metavar="NAME",
                    help="run only this protocol's case; repeatable; default: the main job's, as `run` "
                         f"({', '.join(main_job_protocols())})")
    cs.add_argument("--runtime", default="embedded", choices=RUNTIMES,
                    help="where the adapter runs for the run checks (default: embedded)")
    cs.add_argument("--keep", metavar="DIR", help="keep the one-case files (DIR/cases) and the results "
                    "(DIR/results) in DIR; `MEMMATRIX_PRIVATE_CASES=DIR/cases memmatrix verify DIR/results` verifies "
                    "them again (default: a temporary folder, removed when the run passed, named when it failed)")
    cs.add_argument("--static", action="store_true",
                    help="only the checks that run nothing: system.yaml, the lock and the oracle module")
    cs.set_defaults(func=cmd_check_system)

    g = sub.add_parser("cases", help="case sets generated from a versioned spec (cases/specs/)")
    gsub = g.add_subparsers(dest="cases_command", required=True, metavar="ACTION")
    gen = gsub.add_parser("generate", help="write the case file a spec describes, validated (the same bytes every time)")
    gen.add_argument("spec", metavar="SPEC", help="a cases/specs/<protocol>-<version>.yaml file")
    gen.add_argument("--output", "--out", dest="out", metavar="FILE", help="where to write it (default: cases/<protocol>/breadth-<version>.json)")
    gen.add_argument("--check", action="store_true", help="exit 1 unless the file already holds what the spec generates")
    gen.set_defaults(func=cmd_cases_generate)

    cl = sub.add_parser("changelog", help="what a release says: its section of CHANGELOG.md, refused when the tag and "
                                          "the package version disagree (the release workflow runs it)")
    cl.add_argument("version", metavar="VERSION", help="the release tag (v0.2.0) or version (0.2.0)")
    cl.set_defaults(func=cmd_changelog)

    ng = sub.add_parser("nightly", help="keep a history of nightly matrices (a dated file per night) and chart it")
    ngs = ng.add_subparsers(dest="nightly_command", required=True, metavar="COMMAND")
    na = ngs.add_parser("add", help="add a night's results to a history folder; rebuild its index.json, trend.md and "
                                    "trend.svg from every night in it")
    na.add_argument("paths", nargs="+", metavar="RESULTS", help="the night's results: result.json files or folders")
    na.add_argument("--into", required=True, metavar="DIR",
                    help="the history folder (e.g. a checkout of a data branch); made if missing")
    na.add_argument("--date", default="", metavar="YYYY-MM-DD", help="the night's date (default: today, UTC)")
    na.set_defaults(func=cmd_nightly)

    dc = sub.add_parser("docs", help="rewrite the generated parts of README.md and docs/ (the command table, the "
                        "protocols' columns, the variables, the scorecard, each system's claims)")
    dc.add_argument("--check", action="store_true", help="change nothing; exit 1 when a generated part is stale")
    dc.set_defaults(func=cmd_docs)
    _explain(p)
    return p


class _Formatter(argparse.HelpFormatter):
    """Each option's default appended to its help where the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text or default in (None, False, [], "", argparse.SUPPRESS) or action.option_strings == []
                or isinstance(action, (argparse._HelpAction, argparse._VersionAction))):
            return text
        return f"{text} (default: {default})"


class _TopFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    """The top-level help: its description and epilog as written (the examples keep their columns)."""


def _explain(parser: argparse.ArgumentParser) -> None:
    """Every subcommand's own help page: its one-line help as its description, defaults shown, all the way down."""
    parser.formatter_class = _TopFormatter if parser.formatter_class is argparse.RawDescriptionHelpFormatter \
        else _Formatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                sub.description = sub.description or (helps.get(name) or "")[:1].upper() + (helps.get(name) or "")[1:]
                _explain(sub)


def _terminate(signum, frame):
    raise KeyboardInterrupt  # unwinds through every runtime's finally: nothing is left running


def _complete(p: argparse.ArgumentParser) -> None:
    """Shell completion, when the [completion] extra is installed and the shell asks (argcomplete answers and
    exits; otherwise this does nothing): ``eval "$(register-python-argcomplete memmatrix)"`` (docs/cli.md)."""
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(p)


def main(argv: list[str] | None = None) -> int:
    p = parser()
    if argv is None:
        _complete(p)
    ns = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        ns.cli = main  # the action's steps run other subcommands through it (ci/ never imports the CLI)
        ns.parser = parser()  # the docs' command table is read from it
        return ns.func(ns, Config.from_env())
    except MemmatrixError as exc:
        print(f"memmatrix: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memmatrix: interrupted; runtimes were stopped and no partial result was written", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`memmatrix systems | head`): nothing left to say
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())

