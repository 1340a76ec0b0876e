"""The CLI's commands beyond ``run`` and ``verify``: results (rescore, repack, private, report, diff, plots),
releases (sweep, bisect, timeline), claims, the action's plan and merge, systems, the model gateway, and case
files (check-cases, cases generate). ``cli.py`` builds the parser and dispatches to them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common.config import Config
from .common.errors import ConfigError, MemmatrixError


def cmd_rescore(ns: argparse.Namespace, config: Config) -> int:
    from .evidence.rescore import RescoreRefused, rescore
    from .evidence.verify import find_results
    refused = 0
    for path in find_results([Path(p) for p in ns.paths]):
        try:
            print(f"ok   {path}: {rescore(path, config)}")
        except RescoreRefused as exc:
            refused += 1
            print(f"FAIL {exc}")
    return 1 if refused else 0


def cmd_repack(ns: argparse.Namespace, config: Config) -> int:
    from .evidence.repack import repack
    from .evidence.verify import find_results, verify_result
    bad = 0
    for path in find_results([Path(p) for p in ns.paths]):
        what = repack(path, config)
        problems = verify_result(path, config)
        bad += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {path}: {what}" + (f" ({problems[0]})" if problems else ""))
    return 1 if bad else 0


def cmd_private(ns: argparse.Namespace, config: Config) -> int:
    from .ci.private import record
    from .evidence.verify import find_results
    for f in record(find_results([Path(p) for p in ns.paths]), config, Path(ns.into) if ns.into else None):
        print(f"memmatrix: recorded in {f}")
    return 0


def cmd_report(ns: argparse.Namespace, config: Config) -> int:
    from .publish.report import stream
    if ns.baseline and not ns.html:
        raise ConfigError("memmatrix report: --baseline compares on the site's front page; give --html DIR with it "
                          "(or use 'memmatrix diff OLD NEW' for the changes as Markdown)")
    if ns.html:
        from .publish.site import write_site
        index = write_site([Path(p) for p in ns.paths], Path(ns.html), config,
                           baseline=Path(ns.baseline) if ns.baseline else None)
        print(f"memmatrix: wrote the site; open {index}", file=sys.stderr)
        if not ns.output:
            return 0
    pieces = stream([Path(p) for p in ns.paths], config=config)  # a section at a time: never the whole report
    first = next(pieces)  # every result read and checked before the output is opened
    if ns.output:
        with open(ns.output, "a" if ns.append else "w", encoding="utf-8") as fh:
            fh.write(first)
            fh.writelines(pieces)
    else:
        sys.stdout.write(first)
        sys.stdout.writelines(pieces)
    return 0


def cmd_diff(ns: argparse.Namespace, config: Config) -> int:
    import json
    from .publish.diff import diff
    from .publish.thresholds import parse
    limits = {k: v for k, v in (("cost", parse(ns.cost_threshold, "--cost-threshold")),
                                ("latency", parse(ns.latency_threshold, "--latency-threshold"))) if v}
    if ns.fail_on_threshold and not limits:
        raise ConfigError("--fail-on-threshold needs a threshold: pass --cost-threshold or --latency-threshold")
    report = diff([Path(ns.old)], [Path(ns.new)], config, across_versions=ns.across_versions, thresholds=limits)
    sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n" if ns.json else report.render())
    if not report.compared:
        print("memmatrix diff: nothing was comparable (see 'not compared'); exit 3 so a gate cannot pass on it",
              file=sys.stderr)
    if report.exit_code == 0 and ns.fail_on_threshold and report.over:
        return 1
    return report.exit_code


def _batch(ns: argparse.Namespace, config: Config):
    from .ci.batch import Batch
    return Batch.from_args(config, protocol=ns.protocol, cases=ns.cases, runtime=ns.runtime, out=ns.out, seed=ns.seed,
                           no_judge=ns.no_judge, option=ns.option, replace=False)


def cmd_sweep(ns: argparse.Namespace, config: Config) -> int:
    from .ci.sweep import Measurer, bisect, start_history, sweep
    from .result.history import history_file, save_history
    from .common.releases import select
    from .result.stamp import now_utc
    batch = _batch(ns, config)
    history, ranges = start_history(ns.system, config, batch.out)
    versions = select(ns.versions, [r["version"] for r in history["releases"]], ranges)
    print(f"memmatrix: sweeping {ns.system} over {len(versions)} release(s): {', '.join(versions)}", file=sys.stderr)
    save_history(history_file(batch.out, ns.system), history, config)  # the list as read, even if interrupted
    measurer = Measurer(ns.system, batch, config)
    failures = sweep(measurer, versions, again=ns.again)
    history["sweeps"].append({"at": now_utc(), "spec": ns.versions, "versions": versions,
                              "protocols": [p.name for p in batch.protocols], "runtime": batch.runtime,
                              "options": batch.options, "failures": failures,
                              **({"cases": ns.cases} if ns.cases else {})})
    if ns.bisect:
        history["bisections"] += bisect(measurer, history, ranges)
    save_history(history_file(batch.out, ns.system), history, config)
    print(f"memmatrix: {measurer.runs} run(s); history in {history_file(batch.out, ns.system)}", file=sys.stderr)
    for f in failures:
        print(f"memmatrix: {ns.system} {f['version']} · {f['protocol']}: no result: {f['error']}", file=sys.stderr)
    return 2 if failures else 0


def cmd_bisect(ns: argparse.Namespace, config: Config) -> int:
    from .ci.sweep import Measurer, bisect
    from .result.history import history_file, load_history, save_history
    from .common.releases import Ranges
    from .systems import load_system_yaml, resolve_system
    batch = _batch(ns, config)
    spec = resolve_system(ns.system, config)
    history = load_history(history_file(batch.out, ns.system), config)
    if history is None:
        raise MemmatrixError(f"{history_file(batch.out, ns.system)} does not exist: bisect works between the releases "
                             f"a sweep measured; run `memmatrix sweep --system {ns.system} --versions SPEC` first")
    measurer = Measurer(ns.system, batch, config)
    entries = bisect(measurer, history, Ranges.of(load_system_yaml(spec.folder, config)))
    history["bisections"] += entries
    save_history(history_file(batch.out, ns.system), history, config)
    failed = [r for e in entries for r in e["runs"] if r.get("error")]
    print(f"memmatrix: bisect ran {measurer.runs} release(s)" + (f", {len(failed)} could not run" if failed else ""),
          file=sys.stderr)
    return 0


def cmd_timeline(ns: argparse.Namespace, config: Config) -> int:
    from .publish.timeline import render
    base = Path(ns.output).parent if ns.output else Path.cwd()
    text = render(Path(ns.out), config, ns.system, base=base)
    if ns.output:
        Path(ns.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_claims(ns: argparse.Namespace, config: Config) -> int:
    import json
    import os
    from .publish.claims import changes, evaluate, load_claims, load_json, measured
    from .publish.claimsview import markdown
    from .evidence.verify import find_results
    from .common.errors import ConfigError
    if ns.fail_on_change and not ns.baseline:
        raise ConfigError("--fail-on-change compares with an earlier status: pass --baseline FILE (a --json output)")
    folder = Path(ns.claims) if ns.claims else config.home / "claims"
    claims = load_claims(folder, config)  # everything a user must fix is found first
    before = load_json(Path(ns.baseline)) if ns.baseline else None
    rows = evaluate(claims, measured(find_results([Path(p) for p in ns.paths]), config), config.home)
    base = Path(ns.output).parent if ns.output else Path.cwd()
    text = markdown(rows, os.path.relpath(config.home, base).replace(os.sep, "/") + "/")
    moved = changes(before, rows) if before is not None else []
    if before is not None:
        text += "\n" + ("### Status changes since the baseline\n\n" + "".join(f"- {c}\n" for c in moved)
                        if moved else "No claim changed status since the baseline.\n")
    if ns.json:
        payload = json.dumps({"kind": "memmatrix.claims", "claims": rows}, indent=2, ensure_ascii=False) + "\n"
        sys.stdout.write(payload) if ns.json == "-" else Path(ns.json).write_text(payload, encoding="utf-8")
    if ns.output:
        Path(ns.output).write_text(text, encoding="utf-8")
    elif ns.json != "-":
        sys.stdout.write(text)
    return 1 if moved and ns.fail_on_change else 0


def cmd_plan(ns: argparse.Namespace, config: Config) -> int:
    import json
    from .ci.matrix import plan
    entries = plan(config, ns.system, ns.protocol, ns.runtime, every_version=ns.every_version)
    if ns.skip_unchanged:
        from .ci.unchanged import changed_inputs
        results, kept = Path(ns.skip_unchanged), []
        if not results.is_dir():
            raise ConfigError(f"--skip-unchanged {results}: not a folder; give the committed results folder")
        for e in entries:
            changed, path, inputs = changed_inputs(config, e, results)
            label = f"{e['system']} {e['protocol']} {e['runtime']}"
            if changed:
                kept.append(e)
                why = "no committed result" if not path.is_file() else f"changed: {', '.join(changed)}"
                print(f"memmatrix plan: run  {label} ({why})", file=sys.stderr)
            else:
                print(f"memmatrix plan: skip {label} (inputs unchanged since {path.parent.as_posix()}: "
                      "re-verified, not re-run)", file=sys.stderr)
        entries = kept
    if ns.max_jobs is not None:
        from .ci.matrix import fit_jobs
        fitted = fit_jobs(entries, ns.max_jobs)
        if len(fitted) < len(entries):
            print(f"memmatrix plan: {len(entries)} entries over --max-jobs {ns.max_jobs}: each system version's "
                  f"protocols run in one job ({len(fitted)} jobs)", file=sys.stderr)
        entries = fitted
    print(json.dumps({"include": entries}, separators=(",", ":")))
    return 0


def cmd_merge(ns: argparse.Namespace, config: Config) -> int:
    from .ci.matrix import merge
    merged = merge(Path(ns.dest), [Path(p) for p in ns.sources], config)
    print(f"memmatrix merge: {len(merged)} run(s) verified and merged into {ns.dest}", file=sys.stderr)
    for run in merged:
        print(run)
    return 0


def cmd_action(ns: argparse.Namespace, config: Config) -> int:
    from .ci.action import STEPS
    return STEPS[ns.step](config, ns.cli)


def cmd_systems(ns: argparse.Namespace, config: Config) -> int:
    from .systems import known_systems, load_system_yaml, system_folder
    for name in known_systems(config):
        meta = load_system_yaml(system_folder(config, name), config)
        versions = ", ".join(v + (" (default)" if v == meta["default_version"] else "") for v in meta["versions"])
        block = meta.get("releases")
        swept = ""
        if block:  # any release the adapter can drive, by sweep or name@version
            refused = [r["versions"] for r in block.get("ranges", []) if r.get("drivable") is False]
            swept = "; any release" + (f" but {', '.join(refused)}" if refused else "")
        opt_in = "; not in the main job (--system all or by name)" if meta.get("main_job", True) is False else ""
        print(f"{name:12} {meta['title']} — versions: {versions}{swept}; runtimes: {', '.join(meta['runtimes'])}"
              f"{opt_in}")
    return 0


def cmd_model(ns: argparse.Namespace, config: Config) -> int:
    import json
    import time
    from .model import Gateway, GatewaySettings
    if ns.action == "setup":
        from .model.local import MODELS, ensure, parse_model
        mode, local = parse_model(ns.local) if ns.local else (None, None)
        if local is None:
            raise MemmatrixError(f"memmatrix model setup: name a local model, one of "
                                 f"{', '.join('local:' + n for n in MODELS)}")
        python, path = ensure(local, config)
        print(f"memmatrix: local:{local.name} is ready: {local.title} {local.quantisation}, {path.name} "
              f"(sha256 {local.sha256[:16]}…), served by {python}")
        return 0
    if ns.local:
        raise MemmatrixError("memmatrix model serve takes no local model; `memmatrix run --model local:NAME` serves one")
    settings = GatewaySettings.from_env()
    case_files = [json.loads(Path(f).read_text(encoding="utf-8")) for f in ns.cases]
    dialects = None
    if ns.system:  # that system's oracle dialects, as a run of it gets them
        from .systems import resolve_system
        dialects = resolve_system(ns.system, config).oracle
    with Gateway(settings, case_files, dialects, host=ns.host, port=ns.port) as gw:
        print(f"memmatrix model gateway ({settings.mode}) listening on {gw.url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


def cmd_check_cases(ns: argparse.Namespace, config: Config) -> int:
    from .cases import load_cases
    from .protocols import get_protocol
    from .cases import read_case_json
    name = ns.protocol or read_case_json(Path(ns.file)).get("protocol", "")
    cf = load_cases(Path(ns.file), config, get_protocol(name))
    print(f"ok {ns.file}: {cf.protocol} {cf.version}, {len(cf.cases)} case(s), sha256 {cf.sha256}")
    return 0


def cmd_plots(ns: argparse.Namespace, config: Config) -> int:
    """Draw every plot the results have data for; each file is named on its own line."""
    from .publish.plots import write_plots
    written = write_plots([Path(p) for p in ns.paths], Path(ns.out) if ns.out else config.home / "docs" / "plots")
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("memmatrix plots: no result under the given paths has what any plot draws", file=sys.stderr)
    return 0


def cmd_cases_generate(ns: argparse.Namespace, config: Config) -> int:
    """Generate a case file from its spec; with --check, only say whether the committed file is what it makes."""
    import json
    from .cases.generate import generate, load_spec, output_path
    from .cases import load_cases
    from .protocols import get_protocol
    spec = load_spec(Path(ns.spec))
    text = json.dumps(generate(spec), indent=1, ensure_ascii=False) + "\n"
    out = Path(ns.out) if ns.out else config.home / output_path(spec)
    if ns.check:
        same = out.is_file() and out.read_text(encoding="utf-8") == text
        print(f"{'ok' if same else 'DIFFERS'} {out}: {'what' if same else 'not what'} {ns.spec} generates")
        return 0 if same else 1
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        cf = load_cases(tmp, config, get_protocol(spec["protocol"]))  # the validator rejects what cannot discriminate
    except MemmatrixError:
        tmp.unlink()
        raise
    tmp.replace(out)
    print(f"ok {out}: {cf.protocol} {cf.version}, {len(cf.cases)} case(s), sha256 {cf.sha256}")
    return 0


def cmd_estimate(ns: argparse.Namespace, config: Config) -> int:
    from .evidence.verify import find_results, load_result
    from .publish.estimate import default_runs, load_prices, markdown
    prices_path = Path(ns.prices)
    if not prices_path.is_file() and not prices_path.is_absolute() and (config.home / prices_path).is_file():
        prices_path = config.home / prices_path  # the checkout's example, from any folder
    prices = load_prices(prices_path)  # everything a user must fix is found first
    paths = [Path(p) if Path(p).exists() or p != "results" else config.home / "results" for p in ns.paths]
    results = [(p, load_result(p, config)) for p in find_results(paths)]
    runs = [(p, r) for p, r in default_runs(results, tuple(ns.protocol or ()))
            if not ns.system or r["stamp"]["system"]["name"] in ns.system]
    if not runs:
        raise MemmatrixError(f"no oracle run at a default setup (embedded, no options) under {', '.join(ns.paths)}"
                             + (f" for {', '.join(ns.system)}" if ns.system else "") + "; pass a results folder")
    sys.stdout.write(markdown(runs, prices, Path.cwd()))
    return 0


def cmd_docs(ns: argparse.Namespace, config: Config) -> int:
    from .publish.docs import update
    changed = update(config, ns.parser, check=ns.check)
    for page in changed:
        print(f"{'stale' if ns.check else 'wrote'} {page.relative_to(config.home)}")
    return 1 if changed and ns.check else 0


def cmd_check_system(ns: argparse.Namespace, config: Config) -> int:
    from .ci.checksystem import check_system
    return check_system(ns.system, config, protocols=ns.protocol, runtime=ns.runtime,
                        keep=Path(ns.keep) if ns.keep else None, run=not ns.static)


def cmd_changelog(ns: argparse.Namespace, config: Config) -> int:
    from . import __version__
    from .ci.changelog import release_text
    print(release_text(config.home, ns.version, __version__), end="")
    return 0


def cmd_nightly(ns: argparse.Namespace, config: Config) -> int:
    from .publish.nightly import add, night, today
    wrote = add(Path(ns.into), night([Path(p) for p in ns.paths], ns.date or today(), config), config)
    for path in wrote:
        print(f"wrote {path}")
    return 0


def cmd_attest(ns: argparse.Namespace, config: Config) -> int:
    from .evidence.attest import place
    placed = place(Path(ns.bundle), Path(ns.results))
    for folder in placed:
        print(f"attested {folder}")
    if not placed:
        raise MemmatrixError(f"{ns.bundle} signs no result.json under {ns.results} (no subject has a result's sha256); "
                             "pass the folder the attest step's subject-path read")
    return 0
