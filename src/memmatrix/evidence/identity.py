"""What a result says it is, checked against things a label cannot change.

A result whose every hash, sha and fingerprint agree with each other can still be relabelled: another system,
version, option or runtime written into a self-consistent stamp. These checks compare each label with evidence
outside the result:

- the system folder: the stamp's hashes of the adapter, the whole folder (``code_sha256``), the oracle module
  and the lock are the checkout's ``systems/<name>/``, or that folder at the stamp's commit when git has it (it
  says which); a version the folder cannot run, or an option it does not declare, is named;
- the result's folder name: its ``+variant`` (options, case set, seed, model ablation, proxy or replay, repeat,
  judge) is what the stamp says;
- the model traffic: a system whose folder names oracle dialects calls a model, and a judged run asks the judge
  its suite, so their results hold a model transcript with those calls;
- the harness: the commit a stamp names is a commit of this repository, the memmatrix version is the one that
  commit declares, the run's times are in order and after that commit, its timings count the calls the
  transcript holds;
- a history: every release a sweep or bisect names has its result, and every result of a swept release is
  named by one.

What none of this can tell is a real-model run relabelled consistently; an attestation can (attest.py).
"""

from __future__ import annotations

import re
import subprocess
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from ..common.canon import NOT_CODE, sha256_bytes, sha256_file, sha256_tree
from ..common.config import Config
from ..common.releases import Ranges
from ..model.settings import ablation_of
from ..run.request import parse_variant
from ..systems import load_system_yaml, system_folder


# ---------------------------------------------------------------- git, when the checkout has it
def _git(home: Path, *args: str, binary: bool = False) -> str | bytes | None:
    try:
        done = subprocess.run(["git", "-C", str(home), *args], capture_output=True, timeout=30, text=not binary)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


@lru_cache(maxsize=256)
def commit_exists(home: Path, sha: str) -> bool | None:
    """Is ``sha`` a commit in the history of the checkout at ``home`` (an ancestor of HEAD)? None when there is no git
    repository to ask. A commit only a local branch or a deleted scratch branch holds is not: a clean clone of the
    branch, which is what CI checks, would not find it."""
    if _git(home, "rev-parse", "--git-dir") is None:
        return None
    return _git(home, "merge-base", "--is-ancestor", sha, "HEAD") is not None


@lru_cache(maxsize=256)
def commit_time(home: Path, sha: str) -> datetime | None:
    out = _git(home, "show", "-s", "--format=%cI", sha)
    return datetime.fromisoformat(out.strip()) if out else None


@lru_cache(maxsize=256)
def version_at(home: Path, sha: str) -> str | None:
    """The memmatrix version pyproject.toml declares at a commit."""
    text = _git(home, "show", f"{sha}:pyproject.toml")
    m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text or "")
    return m.group(1) if m else None


@lru_cache(maxsize=512)
def folder_at(home: Path, sha: str, folder: str) -> dict | None:
    """A system folder at a commit as ``_snapshot`` gives it for the checkout (None: git has no such folder). Two git
    processes: the tree's listing, then every blob through one ``cat-file --batch``."""
    listing = _git(home, "ls-tree", "-r", sha, "--", folder)
    if not listing:
        return None
    entries = [(line.split()[2], line.split("\t", 1)[1]) for line in listing.splitlines() if "\t" in line]
    try:
        done = subprocess.run(["git", "-C", str(home), "cat-file", "--batch"], capture_output=True, timeout=60,
                              input="".join(f"{oid}\n" for oid, _ in entries).encode())
    except (OSError, subprocess.TimeoutExpired):
        return None
    out, at, files, sources = done.stdout, 0, {}, {}
    for _, name in entries:
        head_end = out.index(b"\n", at)
        size = int(out[at:head_end].split()[2])
        blob = out[head_end + 1:head_end + 1 + size]
        rel = Path(name).relative_to(folder).as_posix()
        files[rel] = sha256_bytes(blob)
        if rel.endswith(".py"):
            sources[rel] = blob.decode("utf-8", errors="replace")
        at = head_end + 1 + size + 1
    return {**_snapshot(files), "sources": sources}


def _snapshot(files: dict[str, str]) -> dict:
    """A folder's files (relative path -> sha256) and its code hash, computed as ``canon.sha256_tree`` does."""
    code = "".join(f"{p}\0{h}\n" for p, h in sorted(files.items())
                   if not set(Path(p).parts) & set(NOT_CODE) and not p.endswith(".pyc"))
    return {"code": sha256_bytes(code.encode()), "files": files}


@lru_cache(maxsize=256)
def _after(home: Path, sha: str, folder: str) -> tuple[str, ...]:
    """The commit a run names, then every later commit that changed the folder, oldest first: a run made from a
    tree with uncommitted changes of the folder (git_sha ``...-dirty``) finds its folder where it was committed."""
    later = _git(home, "log", "--format=%H", "--reverse", f"{sha}..HEAD", "--", folder) or ""
    return (sha, *later.split())


# ---------------------------------------------------------------- the system folder
@lru_cache(maxsize=64)
def _checkout_folder(folder: Path) -> dict:
    paths = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix != ".pyc" and "__pycache__" not in p.parts]
    files = {p.relative_to(folder).as_posix(): sha256_file(p) for p in paths}
    sources = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
               for p in paths if p.suffix == ".py"}
    return {"code": sha256_tree(folder), "files": files, "sources": sources}  # the code hash exactly as a run takes it


def _wanted(system: dict, meta: dict) -> dict[str, str]:
    """The folder's files whose hashes the stamp names, each with the hash it names."""
    want = {}
    adapter = (system.get("adapter") or "").rpartition(":")[0]
    if system.get("adapter_sha256") and adapter:
        want[Path(adapter).name] = system["adapter_sha256"]
    if system.get("oracle_sha256") and meta.get("oracle"):
        want[meta["oracle"].split(":")[0]] = system["oracle_sha256"]
    lock = (meta.get("versions", {}).get(system["version"]) or {}).get("lock") or f"locks/{system['version']}.txt"
    if system.get("lock_sha256"):
        want[lock] = system["lock_sha256"]
    return want


def _generated_lock(snapshot: dict, want: dict[str, str], system: dict) -> dict[str, str]:
    """``want`` without the lock of a swept release the folder commits no lock for: that lock was generated from the
    releases block (``ensure_lock``), and the folder's code hash, which covers that block, binds it."""
    lock = f"locks/{system['version']}.txt"
    return {k: v for k, v in want.items() if not (k == lock and k not in snapshot["files"])}


def _matches(snapshot: dict, system: dict, want: dict[str, str]) -> list[str]:
    """What of the stamp's hashes a folder snapshot disagrees with."""
    out = []
    want = _generated_lock(snapshot, want, system)
    if system.get("code_sha256") and snapshot["code"] != system["code_sha256"]:
        out.append(f"code_sha256 {system['code_sha256'][:12]}… (the folder hashes to {snapshot['code'][:12]}…)")
    for rel, h in want.items():
        have = snapshot["files"].get(rel)
        if have != h:
            out.append(f"{rel} {h[:12]}… (the folder's is {have[:12] + '…' if have else 'missing'})")
    return out


def _yaml_versions(home: Path, rel: str) -> list[tuple[str, str]]:
    """Every committed version of a folder's system.yaml, newest first: (commit, sha256 of the file)."""
    out = []
    for c in (_git(home, "log", "--format=%H", "--", f"{rel}/system.yaml") or "").split():
        blob = _git(home, "show", f"{c}:{rel}/system.yaml", binary=True)
        if blob is not None:
            out.append((c, sha256_bytes(blob)))
    return out


def _with_earlier_yaml(home: Path, rel: str, commits: tuple[str, ...], checkout: dict, system: dict,
                       want: dict[str, str]):
    """A run whose code files are those of a commit (or of the checkout) but whose system.yaml is another committed
    one: system.yaml also records what is learnt after a run (the release changes a sweep found, remarks), and the
    stamp's code hash covers it. Only system.yaml is varied, and only over its committed versions: every other file
    must be the commit's. Returns ((commit, snapshot), yaml commit) or (None, None)."""
    yamls = _yaml_versions(home, rel)
    for c in ("checkout", *commits):
        snap = checkout if c == "checkout" else folder_at(home, c, rel)
        if snap is None:
            continue
        for yc, yh in yamls:
            if yh == snap["files"].get("system.yaml"):
                continue
            trial = {**_snapshot({**snap["files"], "system.yaml": yh}), "sources": snap.get("sources", {})}
            if not _matches(trial, system, want):
                return (c, trial), yc
    return None, None


def _yaml_change(home: Path, rel: str, then: str) -> str:
    """What differs between the run's system.yaml (at commit ``then``) and the checkout's: the top-level entries."""
    import yaml
    try:
        old = yaml.safe_load(_git(home, "show", f"{then}:{rel}/system.yaml") or "") or {}
        new = yaml.safe_load((home / rel / "system.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return "its entries could not be compared"
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "since changed: " + (", ".join(keys) if keys else "only its comments or layout")


def folder_problems(stamp: dict, records: list[dict], config: Config) -> tuple[list[str], list[str]]:
    """(problems, remarks): the stamp's system folder is the checkout's, or the one at the stamp's commit; and what the
    transcript recorded of the adapter (the operations it implements, the calls it answered) is what that folder's
    adapter class defines."""
    system = stamp["system"]
    adapter = (system.get("adapter") or "").rpartition(":")[0]
    folder = system_folder(config, system["name"])
    if folder is None or not adapter.startswith("systems/"):
        return [], [f"the adapter {adapter or '?'} is not a system folder of this checkout: its code is not checked"]
    meta = load_system_yaml(folder, config)
    want = _wanted(system, meta)
    snapshot, where = _checkout_folder(folder), None
    here = _matches(snapshot, system, want)
    remarks = []
    if here:
        sha = (stamp.get("harness") or {}).get("git_sha", "").split("-")[0]
        rel = folder.relative_to(config.home).as_posix() if folder.is_relative_to(config.home) else None
        known = bool(sha and rel and commit_exists(config.home, sha))
        commits = _after(config.home, sha, rel) if known else ()
        found = next(((c, snap) for c in commits
                      if (snap := folder_at(config.home, c, rel)) is not None and not _matches(snap, system, want)),
                     None)
        yaml_at = None
        if found is None and known:
            found, yaml_at = _with_earlier_yaml(config.home, rel, commits, snapshot, system, want)
        if found is None:
            where = f"the checkout's {rel} nor at commit {sha[:12]} or any later commit" if known else \
                f"the checkout's {rel}"
            return [f"the stamp's system folder is neither {where}: {'; '.join(here[:3])}"], []
        commit, snapshot = found
        remarks.append(f"the system folder is {rel} at {commit[:12] if commit != 'checkout' else 'the checkout'}"
                       + (" (the run's commit)" if commit == sha else f" (the run was made on {sha[:12]})")
                       + (f", with the system.yaml of commit {yaml_at[:12]} ({_yaml_change(config.home, rel, yaml_at)})"
                          if yaml_at else ""))
    return implemented_problems(snapshot["sources"], system.get("adapter", ""), records), remarks


def committed_folder(stamp: dict, config: Config) -> tuple[str, str] | None:
    """(commit, folder path in the repository) of the committed system folder a run was made with, the run's commit
    or a later one that changed the folder, when the checkout's folder is no longer it; None when git has none that
    matches every hash the stamp names (or the checkout's folder still does)."""
    system = stamp["system"]
    folder = system_folder(config, system["name"])
    sha = (stamp.get("harness") or {}).get("git_sha", "").split("-")[0]
    if folder is None or not folder.resolve().is_relative_to(config.home.resolve()) \
            or not re.fullmatch(r"[0-9a-f]{7,40}", sha) or not commit_exists(config.home, sha):
        return None
    rel = folder.resolve().relative_to(config.home.resolve()).as_posix()
    want = _wanted(system, load_system_yaml(folder, config))
    if not _matches(_checkout_folder(folder), system, want):
        return None
    return next(((c, rel) for c in _after(config.home, sha, rel)
                 if (snap := folder_at(config.home, c, rel)) is not None and not _matches(snap, system, want)), None)


def export_folder(home: Path, commit: str, rel: str, into: Path) -> Path:
    """Write the folder ``rel`` as committed at ``commit`` under ``into`` (``into/<rel>``, every file, locks too)."""
    import io
    import tarfile
    done = subprocess.run(["git", "-C", str(home), "archive", "--format=tar", commit, "--", rel], capture_output=True,
                          timeout=120, check=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / rel


@lru_cache(maxsize=64)
def _parsed(source: str):
    """A module's syntax tree, or None when it does not parse: remembered by its text, since the results of one
    system read the same adapter modules (the trees are only read)."""
    import ast
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def adapter_methods(sources: dict[str, str], spec: str) -> set[str] | None:
    """The methods the adapter class ``file.py:Class`` defines, with those of its bases found in the folder's own
    modules; None when a base lies outside the folder (what it adds cannot be read from here)."""
    import ast
    file, _, cls = spec.rpartition(":")

    def tree(rel: str):
        return _parsed(sources[rel]) if rel in sources else None

    def methods(rel: str, name: str, seen: set) -> set[str] | None:
        if (rel, name) in seen:
            return set()
        seen.add((rel, name))
        t = tree(rel)
        node = next((n for n in (t.body if t else []) if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            return None
        out = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        out |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id == "object":
                continue
            if not isinstance(base, ast.Name):
                return None
            imported = next((f"{n.module}.py" for n in t.body if isinstance(n, ast.ImportFrom) and n.level == 0
                             and n.module and any(a.name == base.id for a in n.names)), None)
            more = methods(imported if imported else rel, base.id, seen)
            if more is None:
                return None
            out |= more
        return out

    return methods(Path(file).name, cls, set())


def implemented_problems(sources: dict[str, str], spec: str, records: list[dict]) -> list[str]:
    """The operations the transcript says the adapter implements, and every call it answered, are methods of the
    adapter class its stamp names (a run of one system relabelled as another is caught here)."""
    from ..adapterkit import OPERATIONS
    methods = adapter_methods(sources, spec)
    if methods is None:
        return []
    defined = {op for op in OPERATIONS if op in methods}
    out = []
    for rec in records:
        if rec.get("kind") == "call" and rec.get("call") == "init" and "result" in rec:
            recorded = set(rec["result"].get("implemented") or [])
            if recorded != defined:
                out.append(f"the transcript says the adapter implements {sorted(recorded)}; the class {spec} defines "
                           f"{sorted(defined)}")
            break
    answered = sorted({r["call"] for r in records if r.get("kind") == "call" and "result" in r
                       and r.get("call") in OPERATIONS} - defined)
    if answered:
        out.append(f"the transcript holds answers to {answered}, which the class {spec} does not define")
    return out


def system_label_problems(stamp: dict, config: Config) -> list[str]:
    """A version the folder cannot run, an option it does not declare."""
    system = stamp["system"]
    folder = system_folder(config, system["name"])
    if folder is None:
        return []
    meta = load_system_yaml(folder, config)
    out = []
    version = system["version"]
    ranges = Ranges.of(meta)
    if version not in meta["versions"] and (ranges is None or ranges.refusal(version) is not None):
        pinned = ", ".join(meta["versions"])
        out.append(f"the stamp says {system['name']} {version}, which its system.yaml neither pins ({pinned}) nor "
                   "drives as a release")
    declared = {**(meta.get("options") or {})}
    pinned_options = (meta["versions"].get(version) or {}).get("options") or {}
    for key, value in (system.get("options") or {}).items():
        if key in pinned_options and pinned_options[key] == value:
            continue
        if key not in declared:
            out.append(f"the stamp's option {key}={value!r} is not one {system['name']} declares "
                       f"({', '.join(sorted(declared)) or 'none'})")
        elif declared[key].get("choices") and value not in declared[key]["choices"]:
            out.append(f"the stamp's option {key}={value!r} is not one of {declared[key]['choices']}")
    return out


# ---------------------------------------------------------------- the folder name
def variant_problems(path: Path, stamp: dict, config: Config) -> list[str]:
    """The result folder's name says what sets the run apart; it must be what the stamp says."""
    name = Path(path).resolve().parent.name
    v = parse_variant(name)
    out = []
    if v["runtime"] != stamp["runtime"]["name"]:
        out.append(f"the folder {name} names runtime {v['runtime']!r}, the stamp {stamp['runtime']['name']!r}")
    system = stamp["system"]
    folder = system_folder(config, system["name"])
    pinned = {}
    if folder is not None:
        meta = load_system_yaml(folder, config)
        pinned = (meta["versions"].get(system["version"]) or {}).get("options") or {}
    stamped = {k: str(val) for k, val in (system.get("options") or {}).items()
               if not (k in pinned and pinned[k] == val) and val != "~redacted"}
    if v["options"] != stamped:
        out.append(f"the folder {name} names options {v['options'] or 'none'}, the stamp {stamped or 'none'}")
    ds = stamp["dataset"]
    if v["cases"]:
        if not v["cases"].endswith(ds["sha256"][:8]) or f"-{ds['version']}-" not in f"-{v['cases']}":
            out.append(f"the folder {name} names case set {v['cases']!r}, the stamp {ds['path']} {ds['version']} "
                       f"(sha256 {ds['sha256'][:8]}…)")
    elif re.match(r"^[a-z][a-z0-9]*-\d", Path(ds["path"]).name):
        out.append(f"the folder {name} names no case set, but the stamp's case file is the named set {ds['path']}")
    model = stamp["model"]
    if v["seed"] != stamp.get("seed", 0):
        out.append(f"the folder {name} names seed {v['seed']}, the stamp {stamp.get('seed', 0)}")
    ablation = ablation_of(model)
    if v["ablation"] != ablation:
        out.append(f"the folder {name} names oracle ablation {v['ablation'] or 'none'!r}, the stamp "
                   f"{ablation or 'none'!r}")
    minilm = "minilm" in str(model.get("embedding_model") or "").lower()
    if model.get("mode") == "oracle" and (v["embedder"] == "minilm") != minilm:
        out.append(f"the folder {name} and the stamp disagree on the embedder (the stamp: "
                   f"{model.get('embedding_model')})")
    if model.get("mode") == "proxy" and v["proxy"] != model.get("id"):
        out.append(f"the stamp is a proxy run of {model.get('id')!r}; its folder {name} names "
                   f"{('a proxy of ' + repr(v['proxy'])) if v['proxy'] else 'no proxy model'}")
    if model.get("mode") != "proxy" and v["proxy"]:
        out.append(f"the folder {name} names a proxy run of {v['proxy']!r}; the stamp's model is {model.get('mode')}")
    if (model.get("mode") == "replay") != bool(v["replay"]):
        out.append(f"the folder {name} and the stamp disagree on whether this is a replay")
    if v["repeat"] != (stamp.get("repeat") or 1):
        out.append(f"the folder {name} names repeat {v['repeat']}, the stamp {stamp.get('repeat') or 1}")
    if v["no_judge"] and stamp.get("judge"):
        out.append(f"the folder {name} says the run had no judge, the stamp names one")
    if v["unknown"]:
        out.append(f"the folder {name} holds parts memmatrix never writes: {v['unknown']}")
    return out


# ---------------------------------------------------------------- model traffic
def model_traffic_problems(result: dict, model_records: list[dict], stamp: dict, config: Config) -> list[str]:
    """A system with oracle dialects calls a model (in the setups its ``model_calls_when`` names, when it names
    some), and a judged run asks its judge the suite: their model transcripts cannot be empty."""
    out = []
    folder = system_folder(config, stamp["system"]["name"])
    meta = load_system_yaml(folder, config) if folder is not None else {}
    options = {**{k: o.get("default") for k, o in (meta.get("options") or {}).items()},
               **(stamp["system"].get("options") or {})}
    when = meta.get("model_calls_when")
    calls_model = bool(meta.get("oracle")) and (not when or any(options.get(k) in v for k, v in when.items()))
    chats = [r for r in model_records if r.get("kind") == "chat"]
    if calls_model and not chats:
        out.append(f"{stamp['system']['name']} calls a model (its system.yaml names oracle dialects), but the result "
                   "holds no model call: its model transcript is missing or empty")
    if stamp.get("judge"):
        suite = [r for r in model_records if (r.get("context") or {}).get("call") == "judge-suite"]
        items = (stamp["judge"].get("accuracy") or {}).get("items")
        if not suite or (items and len(suite) < items):
            out.append(f"the stamp names a judge, but the model transcript holds {len(suite)} of the judge suite's "
                       f"{items or '?'} calls")
    return out


# ---------------------------------------------------------------- the harness
def _when(text: str | None) -> datetime | None:
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def harness_problems(result: dict, records: list[dict], stamp: dict, config: Config) -> tuple[list[str], list[str]]:
    out, remarks = [], []
    harness = stamp.get("harness") or {}
    sha = harness.get("git_sha", "").split("-")[0]
    known = commit_exists(config.home, sha) if re.fullmatch(r"[0-9a-f]{7,40}", sha or "") else False
    if sha == "unknown":  # what a run writes when its harness is no git checkout (an installed package)
        known = None
        remarks.append("the run was made outside a git checkout (harness.git_sha unknown): its commit and memmatrix "
                       "version are not checked, and its system folder must be the checkout's")
    elif known is None:
        remarks.append("no git repository here: the stamp's commit and memmatrix version are not checked")
    elif not known:
        out.append(f"the stamp's harness.git_sha {harness.get('git_sha')!r} is not a commit of this repository's "
                   "history (an ancestor of HEAD)")
    else:
        declared = version_at(config.home, sha)
        if declared and harness.get("version") != declared:
            out.append(f"the stamp says memmatrix {harness.get('version')}, but commit {sha[:12]} is memmatrix {declared}")
    started, finished = _when(stamp.get("started_at")), _when(stamp.get("finished_at"))
    if not started or not finished or started > finished:
        out.append(f"the run's times are not in order: started {stamp.get('started_at')}, finished "
                   f"{stamp.get('finished_at')}")
    elif known and (made := commit_time(config.home, sha)) and finished < made:
        out.append(f"the run finished ({stamp['finished_at']}) before the commit it names was made ({made.isoformat()})")
    if finished and finished > datetime.now(timezone.utc):
        out.append(f"the run finished in the future ({stamp['finished_at']})")
    rescored = stamp.get("rescored") or {}
    if rescored and finished and (_when(rescored.get("at")) or finished) < finished:
        out.append(f"the result was rescored ({rescored.get('at')}) before its run finished")
    timed = (result.get("timings") or {}).get("adapter_ms") or {}
    called = {r["call"] for r in records if r.get("kind") == "call" and "result" in r}
    zeroed = sorted(op for op in called & set(timed) if not (timed[op] or {}).get("total_ms"))
    if timed and (zeroed or not (result.get("timings") or {}).get("wall_s")):
        out.append(f"the timings say calls the transcript holds took no time ({', '.join(zeroed[:4]) or 'wall_s'})")
    return out, remarks


def identity_problems(path: Path, result: dict, records: list[dict], model_records: list[dict],
                      config: Config) -> tuple[list[str], list[str]]:
    """Every label checked against evidence outside the result: (problems, remarks on what could not be checked)."""
    stamp = result["stamp"]
    problems, remarks = folder_problems(stamp, records, config)
    problems += system_label_problems(stamp, config) + variant_problems(path, stamp, config)
    problems += model_traffic_problems(result, model_records, stamp, config)
    more, said = harness_problems(result, records, stamp, config)
    return problems + more, remarks + said
