"""The ``memmatrix`` command. Only this module turns errors into exit codes.

Exit codes: 0 success; 1 a check failed (verify found a difference, diff found a
regression); 2 something the user must fix (the message names it and the fix).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import __version__
from .config import Config
from .errors import MemmatrixError
from .protocols import protocol_names
from .runtimes import RUNTIMES


def _systems(config: Config, wanted: list[str] | None) -> list[str]:
    from .systems import known_systems
    if not wanted or wanted == ["all"]:
        return known_systems(config)
    return [s for item in wanted for s in item.split(",") if s]


def cmd_run(ns: argparse.Namespace, config: Config) -> int:
    from .cases import default_case_file, load_cases
    from .protocols import get_protocol
    from .request import RunRequest, check_options, check_out
    from .run import execute
    from .systems import resolve_system
    from .artifacts import clean_stale

    # everything a user must fix is found before anything starts
    out = Path(ns.out)
    check_out(out)
    if ns.protocol is None and ns.cases:  # a case file names its protocol
        from .cases import read_case_json
        ns.protocol = [read_case_json(Path(ns.cases)).get("protocol", "")]
    names = [p.strip() for item in (ns.protocol or protocol_names()) for p in item.split(",") if p.strip()]
    protocols = [get_protocol(p) for p in names]
    specs = [resolve_system(s, config, python=ns.python) for s in _systems(config, ns.system)]
    if ns.cases and len(protocols) > 1:
        raise MemmatrixError("--cases names one case file, so give exactly one --protocol with it")
    defaults = {p.name: default_case_file(config, p.name) for p in protocols if not ns.cases}
    loaded = {p.name: load_cases(Path(ns.cases) if ns.cases else defaults[p.name], config, p) for p in protocols}
    from .model import GatewaySettings
    gateway = GatewaySettings.from_env()
    options = {}
    for item in ns.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise MemmatrixError(f"--option {item!r} is not KEY=VALUE (e.g. --option forget_path=edge_delete)")
        options[key.strip()] = value
    requests = []
    for spec in specs:
        for protocol in protocols:
            cf = loaded[protocol.name]
            newest = cf.sha256 == load_cases(default_case_file(config, protocol.name), config, protocol).sha256
            req = RunRequest(spec=spec, protocol=protocol, cases=cf, runtime=ns.runtime, out=out, seed=ns.seed,
                             gateway=gateway, judge=not ns.no_judge, options=options, default_cases=newest,
                             replace=ns.replace)
            if spec.folder is not None:
                check_options(req, spec.meta.get("options"))
            requests.append(req)
    clean_stale(out) if out.exists() else None
    failures = []
    for req in requests:
        spec, protocol = req.spec, req.protocol
        label = f"{spec.name}{'@' + spec.version if spec.version else ''} · {protocol.name} · {ns.runtime}"
        print(f"memmatrix: running {label}", file=sys.stderr, flush=True)
        try:
            where = execute(req, config)
        except MemmatrixError as exc:
            failures.append(f"{label}: {exc}")
            print(f"memmatrix: {label} could not run: {exc}", file=sys.stderr, flush=True)
            continue
        print(f"memmatrix: wrote {where}", file=sys.stderr, flush=True)
    if failures:
        print(f"memmatrix: {len(failures)} run(s) did not produce a result:\n  - " + "\n  - ".join(failures),
              file=sys.stderr)
        return 2
    return 0


def cmd_verify(ns: argparse.Namespace, config: Config) -> int:
    from .verify import find_results, verify_result
    bad = 0
    for path in find_results([Path(p) for p in ns.paths]):
        problems = verify_result(path, config)
        if not problems and ns.rerun:
            from .rerun import rerun
            print(f"     {path}: verified; re-running it", flush=True)
            problems = [f"re-run: {p}" for p in rerun(path, config)]
        if problems:
            bad += 1
            print(f"FAIL {path}")
            for p in problems:
                print(f"  - {p}")
        else:
            print(f"ok   {path}" + (" (re-run reproduced it)" if ns.rerun else ""))
    if bad:
        print(f"memmatrix verify: {bad} result(s) could not be re-derived from their artifacts"
              + (" or re-run" if ns.rerun else ""))
    return 1 if bad else 0


def cmd_report(ns: argparse.Namespace, config: Config) -> int:
    from .report import render
    text = render([Path(p) for p in ns.paths], config=config)
    if ns.output:
        with open(ns.output, "a" if ns.append else "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_diff(ns: argparse.Namespace, config: Config) -> int:
    from .diff import diff
    report = diff([Path(ns.old)], [Path(ns.new)], config)
    sys.stdout.write(report.render())
    return 1 if report.regressions else 0


def cmd_systems(ns: argparse.Namespace, config: Config) -> int:
    from .systems import known_systems, load_system_yaml, system_folder
    for name in known_systems(config):
        meta = load_system_yaml(system_folder(config, name), config)
        versions = ", ".join(v + (" (default)" if v == meta["default_version"] else "") for v in meta["versions"])
        print(f"{name:12} {meta['title']} — versions: {versions}; runtimes: {', '.join(meta['runtimes'])}")
    return 0


def cmd_model(ns: argparse.Namespace, config: Config) -> int:
    import json
    import time
    from .model import Gateway, GatewaySettings
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memmatrix", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"memmatrix {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run protocols against systems and write verified artifacts")
    r.add_argument("--system", action="append", metavar="NAME[@VERSION]|PATH.py:CLASS",
                   help="a system under systems/, or any adapter file; repeatable; default: every system")
    r.add_argument("--protocol", action="append", default=None, metavar="NAME",
                   help=f"evaluation protocol ({', '.join(protocol_names())}); repeatable; default: all of them")
    r.add_argument("--runtime", default="embedded", choices=RUNTIMES, help="where adapters run (default: embedded)")
    r.add_argument("--cases", metavar="FILE", help="case file (default: the newest cases/<protocol>/*.json)")
    r.add_argument("--out", default="results", metavar="DIR", help="results folder (default: results)")
    r.add_argument("--seed", type=int, default=0, help="seed passed to the system (default: 0)")
    r.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="an adapter option (see the system's adapter); recorded in the stamp and the result's folder name")
    r.add_argument("--no-judge", action="store_true",
                   help="never consult the pinned judge: hygiene a system leaves unqualified becomes SKIP")
    r.add_argument("--replace", action="store_true",
                   help="replace a result of a different setup (case file, seed, model, judge, protocol version) "
                        "in the target folder; without it such a run is refused before it starts")
    r.add_argument("--python", metavar="PATH",
                   help="interpreter for an adapter given as PATH.py:CLASS (default: the one running memmatrix)")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("verify", help="re-derive every result from its transcript; exit 1 on any difference")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.add_argument("--rerun", action="store_true",
                   help="also execute each run again from its stamp and compare its transcripts (an oracle run on "
                        "the oracle; a proxy or replay run by replaying its own model transcript)")
    v.set_defaults(func=cmd_verify)

    rp = sub.add_parser("report", help="the matrix as Markdown (systems x steps, with reasons)")
    rp.add_argument("paths", nargs="+", metavar="PATH")
    rp.add_argument("--output", metavar="FILE", help="write to FILE (e.g. $GITHUB_STEP_SUMMARY) instead of stdout")
    rp.add_argument("--append", action="store_true", help="add to the end of --output instead of replacing it")
    rp.set_defaults(func=cmd_report)

    d = sub.add_parser("diff", help="state changes between comparable runs; exit 1 on a regression")
    d.add_argument("old", metavar="OLD")
    d.add_argument("new", metavar="NEW")
    d.set_defaults(func=cmd_diff)

    s = sub.add_parser("systems", help="list the systems under systems/")
    s.set_defaults(func=cmd_systems)

    m = sub.add_parser("model", help="serve the model gateway (oracle, proxy or replay) on loopback")
    m.add_argument("action", choices=["serve"])
    m.add_argument("--host", default="127.0.0.1")
    m.add_argument("--port", type=int, default=8790)
    m.add_argument("--cases", nargs="*", default=[], metavar="FILE", help="case files whose gold the oracle answers from")
    m.add_argument("--system", metavar="NAME", help="answer that system's prompts too (its folder's oracle dialects)")
    m.set_defaults(func=cmd_model)

    c = sub.add_parser("check-cases", help="validate a case file against its schema and protocol rules")
    c.add_argument("file", metavar="FILE")
    c.add_argument("--protocol", help="the protocol the file is for (default: the one the file names)")
    c.set_defaults(func=cmd_check_cases)
    return p


def _terminate(signum, frame):
    raise KeyboardInterrupt  # unwinds through every runtime's finally: nothing is left running


def main(argv: list[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return ns.func(ns, Config.from_env())
    except MemmatrixError as exc:
        print(f"memmatrix: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memmatrix: interrupted; runtimes were stopped and no partial result was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
