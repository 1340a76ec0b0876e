"""``memmatrix check-system NAME[@VERSION]``: a contributor's quick check of one system folder.

One line per check, in order: ``ok   <check>: detail``, ``FAIL <check>: what is wrong and the fix``, or
``skip <check>: why`` where an earlier failure leaves nothing to check; then a line with the elapsed time.
Exit 0 when no check failed, 1 when one did; a user error (an unknown system or version) raises before any
check (exit 2).

1. ``system.yaml`` fits schemas/system.schema.json (the loader every command uses).
2. ``lock``: the version's lock file exists, names no package index and no path of this machine, pins every
   package with its hashes (pip installs it with --require-hashes), and pins what the folder's
   requirements/<lock name>.in asks for, when there is one. A release the releases block drives gets its lock
   generated (and cached), as ``memmatrix run`` does.
3. ``oracle``: the folder's oracle module (system.yaml ``oracle``) loads as the gateway loads it, and the gateway
   answers every recorded request without a dialect raising. Recorded requests are JSON files
   ``{"system", "version", "path", "request": <body>}`` (or ``"requests": [...]``, each a body or
   ``{"request": <body>}``) in the folder's ``requests/*.json`` and, in a checkout,
   tests/fixtures/requests/<name>-*.json. An optional ``"case_file"`` (relative to the checkout) names the case
   file whose gold the replay answers from; without it there is no gold, so an unmatched answer is information,
   not a failure.
4. ``run <protocol>``: one case of each protocol ``memmatrix run`` runs by default (the first of its default
   case file that stands alone), run as ``memmatrix run`` runs it, on the oracle, then verified. A FAIL verdict
   is the system's measure, not a defect; an ERROR cell, no result, a result that does not verify, a model call
   answered with an error or one the oracle left unmatched is.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

from ..cases import default_case_file, load_cases
from ..common.config import Config
from ..common.errors import CaseFileError, ConfigError, MemmatrixError, OracleModuleError, SystemNotFound, SystemSpecError
from ..evidence.verify import verify_result
from ..model import Gateway, GatewaySettings
from ..model.dialectsource import load_dialects
from ..protocols import get_protocol, main_job_protocols
from ..runtimes import require
from ..systems import ensure_lock, known_systems, load_system_yaml, resolve_system, shown, system_folder
from .batch import Batch
from .matrix import split_list

#: options a lock must never carry: they name one machine's package indexes or folders
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--trusted-host")
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(?:==\s*([^\s;\\]+)|@\s*\S+)?")
_LOCAL = re.compile(r"file:|(^|[\s=@])(/|~/|\.\.?/)[\w.-]")


class Report:
    def __init__(self, echo):
        self.echo, self.checks, self.failed = echo, 0, []

    def line(self, mark: str, check: str, detail: str, more: list[str] = ()) -> None:
        self.checks += mark != "skip"
        if mark == "FAIL":
            self.failed.append(check)
        self.echo(f"{mark:<4} {check}: {detail}" + "".join(f"\n  - {m}" for m in more), flush=True)


def check_system(text: str, config: Config, protocols: list[str] | None = None, runtime: str = "embedded",
                 keep: Path | None = None, run: bool = True, echo=print) -> int:
    t0 = time.monotonic()
    name, version, folder = _target(text, config)
    names = [get_protocol(p).name for p in split_list(protocols)] if protocols else main_job_protocols()
    if keep is not None and keep.exists() and not keep.is_dir():
        raise ConfigError(f"--keep {keep} is a file; give a folder for the outputs")
    require(runtime)
    where = shown(folder, config)
    try:
        meta, yaml_error = load_system_yaml(folder, config), None
    except SystemSpecError as exc:
        meta, yaml_error = None, exc
    spec = oracle_error = None
    if meta is not None:
        try:  # an unknown version is the user's (exit 2); a broken oracle module is check 3's
            spec = resolve_system(f"{name}@{version}" if version else name, config)
        except OracleModuleError as exc:
            oracle_error = exc
        if run and spec is not None and runtime not in spec.runtimes:
            raise ConfigError(f"{name} does not offer the {runtime!r} runtime (system.yaml runtimes: "
                              f"{', '.join(spec.runtimes)}); give --runtime {spec.runtimes[0]}")
    version = spec.version if spec else version or (meta or {}).get("default_version", "")
    label = f"{name}@{version}" if version else name
    rep = Report(echo)
    if yaml_error is not None:
        first, *rest = str(yaml_error).splitlines()
        items = [r.strip()[2:] for r in rest if r.strip().startswith("- ")]  # the schema's problems, one a line
        said = " ".join([first, *(r.strip() for r in rest if r.strip() != "^" and not r.strip().startswith("- "))])
        rep.line("FAIL", "system.yaml", f"{said} (fix {'each' if items else 'it'} and run check-system again)", items)
        for check in ("lock", "oracle", *(f"run {p}" for p in names if run)):
            rep.line("skip", check, "needs a system.yaml that fits the schema")
    else:
        rep.line("ok", "system.yaml", f"{where}/system.yaml fits schemas/system.schema.json ({label}, "
                                      f"{len(meta['versions'])} pinned version(s))")
        lock_ok, spec = _check_lock(rep, spec, meta, folder, version, config)
        _check_oracle(rep, name, folder, meta, spec, oracle_error, config)
        if run:
            why = ("the run refuses a system whose oracle module does not load" if oracle_error else
                   "its environment is built from the lock: fix the lock first" if not lock_ok else "")
            for p in names:
                if why:
                    rep.line("skip", f"run {p}", why)
                else:
                    _check_run(rep, spec, config, p, runtime, keep)
    took = time.monotonic() - t0
    verdict = (f"{len(rep.failed)} of {rep.checks} check(s) failed ({', '.join(rep.failed)})" if rep.failed
               else f"all {rep.checks} check(s) passed")
    echo(f"memmatrix check-system {label}: {verdict} in {took:.1f} s", flush=True)
    return 1 if rep.failed else 0


def _target(text: str, config: Config) -> tuple[str, str, Path]:
    if ".py:" in text:
        raise SystemNotFound(f"check-system checks a system folder, and {text!r} is an adapter file; give the name of "
                             f"a folder under systems/ (`memmatrix run --system {text}` runs an adapter file)")
    name, _, version = text.partition("@")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name):
        raise SystemNotFound(f"{text!r} is not a system name: give NAME or NAME@VERSION, NAME a folder under "
                             "systems/ (lowercase letters, digits, - and _)")
    folder = system_folder(config, name)
    if folder is None:
        bare = next((r / name for r in config.systems_roots if (r / name).is_dir()), None)
        if bare is not None:
            raise SystemNotFound(f"{shown(bare, config)} holds no system.yaml; a system folder needs one "
                                 "(docs/adapters.md, 'A system is one folder')")
        raise SystemNotFound(f"unknown system {name!r}; known systems: {', '.join(known_systems(config)) or 'none'} "
                             "(a folder of yours elsewhere: set MEMMATRIX_SYSTEMS to the folder holding it)")
    return name, version, folder


# ---------------------------------------------------------------- 2. the lock
def _logical_lines(text: str):
    """(first line number, line) with backslash continuations joined, as pip reads a requirements file."""
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        start = start or n
        if raw.rstrip().endswith("\\"):
            buf += raw.rstrip()[:-1] + " "
            continue
        yield start, buf + raw
        buf, start = "", 0
    if buf:
        yield start, buf


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_problems(lock: Path, requirements: Path | None, regenerate: str) -> tuple[list[str], int]:
    """What is wrong with a lock file (each with its fix), and how many packages it pins."""
    problems, pins = [], {}
    for n, line in _logical_lines(lock.read_text(encoding="utf-8")):
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith("#"):
            continue
        first = text.split()[0]
        option = first.split("=", 1)[0]
        if option in INDEX_OPTIONS or (option[:2] in ("-f", "-i") and not option.startswith("--")):
            what = "a path of this machine" if _LOCAL.search(text) else "a package index"
            problems.append(f"{lock.name} line {n} ({text}) names {what}: delete the line; where packages come "
                            "from is pip's own configuration (PIP_INDEX_URL, PIP_FIND_LINKS), never the lock's "
                            f"({regenerate} writes locks without it)")
            continue
        if _LOCAL.search(text.split(" --hash", 1)[0]):
            problems.append(f"{lock.name} line {n} ({text[:80]}) names a path of this machine: pin the package by "
                            f"name==version from the index instead ({regenerate})")
            continue
        if first.startswith("-"):
            continue
        m = _PIN.fullmatch(text.split(" --hash", 1)[0].split(";", 1)[0].strip())
        if m is None or ("==" not in text and "@" not in text):
            problems.append(f"{lock.name} line {n} ({text[:80]}) is not pinned (name==version): pip installs a lock "
                            f"with --require-hashes, which needs every package pinned; regenerate it ({regenerate})")
            continue
        pins[_norm(m.group(1))] = m.group(3)
        if "--hash=" not in text:
            problems.append(f"{lock.name} line {n}: {m.group(1)} carries no --hash; pip installs a lock with "
                            f"--require-hashes, so every package needs its hashes: regenerate it ({regenerate})")
    if requirements is not None and requirements.is_file():
        for n, line in enumerate(requirements.read_text(encoding="utf-8").splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            m = _PIN.match(text) if text and not text.startswith("-") else None
            if m is None:
                continue
            pin, have = m.group(3), pins.get(_norm(m.group(1)), False)
            if have is False or (pin and have != pin):
                got = "pins no such package" if have is False else f"pins {have}"
                problems.append(f"requirements/{requirements.name} line {n} asks for {text} but {lock.name} {got}: "
                                f"the lock is older than its input; regenerate it ({regenerate})")
    return problems, len(pins)


def _check_lock(rep: Report, spec, meta: dict, folder: Path, version: str, config: Config) -> tuple[bool, object]:
    if spec is None:  # the oracle module did not load; the lock is still the pinned version's
        entry = meta["versions"].get(version)
        if entry is None:
            rep.line("skip", "lock", f"{version} is a release the releases block drives; its lock is generated once "
                                     "the oracle module loads")
            return True, spec
        lock, requirements = (folder / entry["lock"]) if entry.get("lock") else None, None
    else:
        lock, requirements = spec.lock, spec.requirements
    if requirements:  # a release system.yaml does not pin: its lock is generated from the releases block
        try:
            spec = ensure_lock(spec, config)
        except MemmatrixError as exc:
            rep.line("FAIL", "lock", f"the lock of {version} could not be generated from the releases block: {exc}")
            return False, spec
        lock = spec.lock
    if lock is None:
        rep.line("ok", "lock", f"none: system.yaml names no lock for {version}, so its environment installs no package")
        return True, spec
    if not lock.is_file():
        rep.line("FAIL", "lock", f"{shown(lock, config)} does not exist; write it (scripts/lock-system.sh "
                                 f"{shown(folder, config)} {version}) or fix versions.{version}.lock in system.yaml")
        return False, spec
    regenerate = f"scripts/lock-system.sh {shown(folder, config)} {lock.stem}, from requirements/{lock.stem}.in"
    inside = folder in lock.parents
    problems, pins = lock_problems(lock, folder / "requirements" / f"{lock.stem}.in" if inside else None, regenerate)
    if problems:
        rep.line("FAIL", "lock", f"{shown(lock, config)} cannot be installed as it is on another machine:", problems)
        return False, spec
    source = ("generated from the releases block" if requirements else
              f"current with requirements/{lock.stem}.in" if inside and (folder / "requirements" / f"{lock.stem}.in")
              .is_file() else "no requirements/*.in to compare with")
    rep.line("ok", "lock", f"{shown(lock, config)}: {pins} package(s) pinned with hashes, no index or local path; "
                           f"{source}")
    return True, spec


# ---------------------------------------------------------------- 3. the oracle module and recorded requests
def recorded_files(name: str, folder: Path, config: Config) -> list[Path]:
    """The folder's requests/*.json, then (in a checkout) tests/fixtures/requests/<name>-*.json."""
    return sorted((folder / "requests").glob("*.json")) + sorted(
        (config.home / "tests" / "fixtures" / "requests").glob(f"{name}-*.json"))


def _where(gw: Gateway, body: dict, src) -> str | None:
    """What a dialect raised on ``body`` and where: the line of the system's module (or the last frame)."""
    try:
        gw.oracle.chat(body)
    except Exception as exc:  # noqa: BLE001 - any exception a dialect raises is the report
        while exc.__cause__ is not None:  # the dialect's own exception, under any the oracle wraps it in
            exc = exc.__cause__
        frames = traceback.extract_tb(exc.__traceback__)
        mine = [f for f in frames if src is not None and f.filename == f"{src.system}/{src.file}"]
        f = (mine or frames)[-1]
        return f"{type(exc).__name__}: {exc} (at {src.where if mine else f.filename} line {f.lineno}, in {f.name})"
    return None  # the oracle answered; the gateway failed building the response from its Reply


def replay(gw: Gateway, path: Path, src, config: Config) -> tuple[Counter, list[str], bool]:
    """Each request in one recorded file through the gateway: outcome counts, what happened to each, and whether
    one raised (or was refused)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        bodies = [data["request"]] if "request" in data else [r.get("request", r) for r in data["requests"]]
        if not bodies or not all(isinstance(b, dict) for b in bodies):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Counter(refused=1), ['is not a recorded request: give it JSON {"system", "version", "path", '
                                    '"request": <the body the client sent>}'], True
    gold = config.home / data["case_file"] if isinstance(data.get("case_file"), str) else None
    gw.configure([json.loads(gold.read_text(encoding="utf-8"))] if gold and gold.is_file() else [], src)
    out, said, bad = Counter(), [], False
    for body in bodies:
        status, answer = gw.handle("POST", data.get("path") or "/v1/chat/completions", json.dumps(body).encode())
        record = gw.recorder.records[-1] if gw.recorder.records else {}
        if status == 200 and record.get("matched") is False:
            out["unmatched"] += 1
            said.append("unmatched")
        elif status == 200:
            out["answered"] += 1
            said.append(f"answered ({record.get('dialect') or record.get('kind')})")
        elif status == 500:
            out["raised"] += 1
            said.append(f"raised {_where(gw, body, src) or answer['error']['message']}; fix the dialect: in a run it "
                        "fails the system's model call")
        else:
            out["refused"] += 1
            said.append(f"the gateway refuses it ({status}: {answer['error']['message']}): fix or delete the file")
        bad |= status != 200
    return out, said, bad


def _check_oracle(rep: Report, name: str, folder: Path, meta: dict, spec, oracle_error, config: Config) -> None:
    if oracle_error is not None:
        rep.line("FAIL", "oracle", str(oracle_error))
        return
    if not meta.get("oracle") and (folder / "oracle.py").is_file():
        rep.line("FAIL", "oracle", f"{shown(folder, config)}/oracle.py exists but system.yaml names no 'oracle', so "
                                   "the gateway never loads it: add `oracle: oracle.py:DIALECTS` to system.yaml")
        return
    src = spec.oracle
    loaded = (f"{src.where}:{src.attribute} loads ({len(load_dialects(src))} dialect(s))" if src
              else "no oracle module (memmatrix's own dialects answer)")
    files = recorded_files(name, folder, config)
    if not files:
        rep.line("ok", "oracle", f"{loaded}; no recorded request to replay (save some in "
                                 f"{shown(folder, config)}/requests/*.json)")
        return
    gw = Gateway(GatewaySettings(), [], src)
    total, lines, bad = Counter(), [], False
    try:
        for path in files:
            got, said, broke = replay(gw, path, src, config)
            total, bad = total + got, bad or broke
            summary = said[0] if len(said) == 1 else ", ".join(f"{n} {k}" for k, n in sorted(got.items()))
            lines.append(f"{shown(path, config)}: {summary}" + "".join(f"; {x}" for x in said if len(said) > 1
                                                                    and x.startswith(("raised", "the gateway"))))
    finally:
        gw.stop()
    counts = ", ".join(f"{total[k]} {k}" for k in ("answered", "unmatched", "raised", "refused") if total[k])
    note = " (no case gold: unmatched is information, not a failure)" if total["unmatched"] else ""
    rep.line("FAIL" if bad else "ok", "oracle", f"{loaded}; {len(files)} recorded file(s) replayed: {counts}{note}", lines)


# ---------------------------------------------------------------- 4. one case of each protocol, run and verified
def one_case(config: Config, protocol, into: Path) -> tuple[Path, str]:
    """A case file holding the first case of the protocol's default file that passes the validator alone."""
    source = default_case_file(config, protocol.name)
    data = json.loads(source.read_text(encoding="utf-8"))
    into.mkdir(parents=True, exist_ok=True)
    for case in data["cases"]:
        path = into / f"{protocol.name}.json"
        path.write_text(json.dumps({**data, "cases": [case]}, ensure_ascii=False, indent=1), encoding="utf-8")
        try:
            load_cases(path, config, protocol)
            return path, case["id"]
        except CaseFileError:
            continue
    raise CaseFileError(f"no case of {shown(source, config)} passes the case validator on its own")


def _check_run(rep: Report, spec, config: Config, name: str, runtime: str, keep: Path | None) -> None:
    check, t0 = f"run {name}", time.monotonic()
    scratch = keep or Path(tempfile.mkdtemp(prefix=f"memmatrix-check-{spec.name}-{name}-"))
    protocol, case_id = get_protocol(name), "?"
    try:
        cases, case_id = one_case(config, protocol, scratch / "cases")
        batch = Batch.from_args(config, protocol=[name], cases=str(cases), runtime=runtime, out=str(scratch / "results"),
                                gateway=GatewaySettings.from_env(mode="oracle", ablation=""))
        where = batch.execute(batch.request(spec, protocol), config)
    except MemmatrixError as exc:
        where = f"{exc}"
    problems, detail = [], f"case {case_id}"
    if isinstance(where, str):
        problems.append(f"the run produced no result: {where}; the message names the adapter's or environment's "
                        f"problem (an environment's install log is under {config.cache_dir / 'envs'})")
    else:
        result = json.loads((where / "result.json").read_text(encoding="utf-8"))
        cells = [c for case in result["cases"] for c in case["cells"]]
        verdicts = Counter(c["verdict"] for c in cells)
        total = result.get("cost", {}).get("total", {})
        detail += (": " + ", ".join(f"{verdicts[v]} {v}" for v in ("PASS", "FAIL", "ERROR", "SKIP", "UNSUPPORTED")
                                    if verdicts[v] or v != "UNSUPPORTED")
                   + f"; {total.get('errors', 0)} model error(s), {total.get('unmatched', 0)} unmatched")
        errors = [c for c in cells if c["verdict"] == "ERROR"]
        if errors:
            problems.append(f"{len(errors)} ERROR cell(s) (first: step {errors[0]['step']}: {errors[0]['reason']}): "
                            "the adapter raised or a step could not finish; the cells' reasons are in result.json, the "
                            "operations and answers in its transcript")
        if total.get("errors"):
            problems.append(f"{total['errors']} model call(s) answered with an error: a dialect raised on the system's "
                            "prompt or the system sent a malformed request; the model transcript's records with an "
                            "'error' say which (save such a request in requests/ and check-system replays it)")
        if total.get("unmatched"):
            which = ", ".join(f"{k} x{n}" for k, n in result["cost"].get("unmatched", {}).items())
            problems.append(f"the oracle left {total['unmatched']} model call(s) unmatched ({which}): the system sends a "
                            "prompt no dialect recognises, so the run measures an extractor that extracted nothing; "
                            "add or fix a dialect in the folder's oracle module (the model transcript's records with "
                            "matched false hold the prompts)")
        problems += [f"the result does not verify: {p}; the stamp binds the system folder, the case file and the "
                     "transcripts, so something changed during the run (an adapter writing into its own folder, say) "
                     "or the harness has a bug" for p in verify_result(where / "result.json",
                                                                        config.with_(private_cases=cases.parent))[:3]]
        detail += f", verified ({time.monotonic() - t0:.1f} s)" if not problems else ""
    if problems:
        kept = f"the outputs are in {where if not isinstance(where, str) else scratch}"
        rep.line("FAIL", check, f"{detail}; {kept}", problems)
    else:
        rep.line("ok", check, detail + (f"; kept in {where}" if keep else ""))
        if keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
