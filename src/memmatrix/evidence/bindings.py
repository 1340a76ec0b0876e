"""What binds a result to its inputs: the run header, the protocol's steps, the case file, the model.

Each check returns problems that name the file and what disagrees. ``verify`` runs them all; the checks that
read whole records (each case against the case file's, an oracle run's answers asked again: ``reask``) run while
the transcripts are read (``stream``) and their problems are passed in.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..adapterkit import SizedMemo
from ..common.canon import canonical, sha256_file
from ..common.config import Config
from ..model import ORACLE_VERSION
from ..protocols import EvalProtocol, protocol_names


def check_bindings(path: Path, result: dict, records: list[dict], model_records: list[dict],
                   protocol: EvalProtocol, caps: dict, config: Config, cases: list[str],
                   reasked: list[str]) -> list[str]:
    """``records``: the transcript (slim records are enough), ``model_records`` likewise; ``cases`` and ``reasked``:
    the problems ``CaseCheck`` and ``reask.Reask`` found while the transcripts were read."""
    stamp = result["stamp"]
    return (header_problems(result["transcript"]["file"], records, stamp)
            + ([] if caps == result["capabilities"] else
               ["the capabilities in the result differ from those recorded in the transcript"])
            + ([] if caps.get("system") == stamp["system"].get("declared") else
               [f"the stamp says the adapter declared {stamp['system'].get('declared')}, the transcript records "
                f"{caps.get('system')}"])
            + step_problems(result["steps"], protocol)
            + cases
            + model_problems(result.get("model_transcript", {}).get("file", "model transcript"), model_records, stamp)
            + judge_problems(model_records, stamp, config)
            + reasked
            + layout_problems(path, stamp))


def header_problems(file: str, records: list[dict], stamp: dict) -> list[str]:
    """The transcript's first record names what produced it; it must say exactly what the stamp says."""
    if not records or records[0].get("kind") != "run":
        return [f"{file} does not open with a run header"]
    h = records[0]
    judge = {k: v for k, v in (stamp.get("judge") or {}).items() if k != "accuracy"} or None
    system = {k: stamp["system"].get(k) for k in ("name", "version", "adapter", "adapter_sha256", "code_sha256",
                                                   "oracle_sha256", "lock_sha256", "options")}
    want = {"protocol": stamp["protocol"], "dataset": stamp["dataset"], "system": system,
            "runtime": stamp["runtime"]["name"], "seed": stamp["seed"], "model": stamp["model"], "judge": judge,
            "limits": stamp.get("limits"), "clock": stamp["clock"]}
    problems = []
    for key, value in want.items():
        have = h.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            for k in sorted(set(value) | set(have)):
                if value.get(k) != have.get(k):
                    problems.append(f"{file}: the run header says {key}.{k} = {have.get(k)!r}, the stamp says "
                                    f"{value.get(k)!r}")
        elif have != value:
            problems.append(f"{file}: the run header says {key} = {have!r}, the stamp says {value!r}")
    return problems


def step_problems(steps: list[dict], protocol: EvalProtocol) -> list[str]:
    want = protocol.step_table()
    if steps == want:
        return []
    if [s.get("key") for s in steps] != [s["key"] for s in want]:
        return [f"the result's steps {[s.get('key') for s in steps]} are not the {protocol.name} protocol's "
                f"{[s['key'] for s in want]}"]
    return [f"the result labels step {s['key']} {s.get('name')!r} ({s.get('title')!r}); the {protocol.name} protocol "
            f"{protocol.version} calls it {w['name']!r} ({w['title']!r})" for s, w in zip(steps, want) if s != w]


def find_case_file(stamp: dict, config: Config) -> Path | None:
    """The case file a stamp names, in this checkout at the sha256 it records (renamed files are found too)."""
    ds = stamp["dataset"]
    named = config.home / ds["path"]
    if named.is_file() and sha256_file(named) == ds["sha256"]:
        return named
    private = sorted(config.private_cases.glob("*.json")) if config.private_cases else []
    for f in sorted((config.cases_dir / stamp["protocol"]["name"]).glob("*.json")) + private:
        if sha256_file(f) == ds["sha256"]:
            return f
    return None


class CaseCheck:
    """The transcript holds exactly the case file's cases and ops, in order: called with each case as it is read
    (its position, header and records), then ``problems(seen)`` with the case ids in transcript order."""

    def __init__(self, stamp: dict, protocol: EvalProtocol, found: Path | None) -> None:
        ds = stamp["dataset"]
        self.found, self.problems_ = found, []
        self.cases: list[dict] = []
        if found is None:
            self.problems_.append(f"the case file {ds['path']} (sha256 {ds['sha256'][:16]}…) named by the stamp is not "
                                  "in this checkout at that sha256: the transcript cannot be checked against its cases")
            return
        self.file = _case_file(found, ds["sha256"])
        data = self.file.data
        if data.get("protocol") != protocol.name or data.get("version") != ds["version"]:
            self.problems_.append(f"{found.name} is {data.get('protocol')} {data.get('version')}, the stamp says "
                                  f"{protocol.name} {ds['version']}")
        self.cases = self.file.cases
        self.per_case: list[str] = []

    def __call__(self, i: int, header: dict, body: list[dict]) -> None:
        if self.found is None or i >= len(self.cases) or header.get("case") != self.cases[i]["id"]:
            return  # the ids are compared at the end
        case, out = self.cases[i], []
        expect, ops_want = self.file.texts(i)
        for k, v in expect.items():
            if canonical(header.get(k)) != v:
                out.append(f"case {case['id']}: the transcript's {k} differs from the case file's")
        ops = [r for r in body if r.get("kind") == "op"]
        for op in ops:
            n = op.get("index")
            if not isinstance(n, int) or not 0 <= n < len(ops_want) or canonical(op.get("spec")) != ops_want[n]:
                out.append(f"case {case['id']} op {n}: the transcript's op is not the case file's op {n}")
        if [op.get("index") for op in ops] != list(range(len(ops))):
            out.append(f"case {case['id']}: the transcript's ops are not the case file's, in order")
        self.per_case += out

    def problems(self, seen: list[str]) -> list[str]:
        if self.found is None:
            return self.problems_
        want = [c["id"] for c in self.cases]
        if seen != want:
            missing = [c for c in want if c not in seen]
            extra = [c for c in seen if c not in want]
            return self.problems_ + [f"the transcript holds cases {seen}; the case file {self.found.name} has {want} "
                                     f"(missing {missing}, not in the file {extra})"]
        return self.problems_ + self.per_case


class _CaseTexts:
    """A case file's cases and, per case once it is first asked for, the canonical JSON of what a transcript must
    repeat of it (its header fields and ops): a ``verify`` checks many results against the same case file."""

    def __init__(self, found: Path) -> None:
        self.data = json.loads(found.read_text(encoding="utf-8"))
        self.cases: list[dict] = self.data.get("cases", [])
        self._texts: dict[int, tuple[dict[str, str], list[str]]] = {}

    def texts(self, i: int) -> tuple[dict[str, str], list[str]]:
        if i not in self._texts:
            case = self.cases[i]
            expect = {"shape": case["shape"], "scopes": case["scopes"], "targets": case["targets"],
                      "recall_k": case.get("recall_k", 10), "ops": len(case["ops"]), "units": case.get("units")}
            self._texts[i] = ({k: canonical(v) for k, v in expect.items()}, [canonical(op) for op in case["ops"]])
        return self._texts[i]


#: the last eight case files read, by path and the sha256 the stamp found them at (a file at a sha256 never changes)
_CASE_FILES = SizedMemo(8, lambda key, got: 1)


def _case_file(found: Path, sha256: str) -> _CaseTexts:
    return _CASE_FILES.get((str(found), sha256), lambda: _CaseTexts(found))


def model_problems(file: str, model_records: list[dict], stamp: dict) -> list[str]:
    """Every model call was answered by what the stamp says answered it."""
    model = stamp["model"]
    mode = model["mode"]
    problems = []
    if mode == "oracle":
        if model.get("id") != "memmatrix-oracle":
            problems.append(f"the stamp's model is an oracle named {model.get('id')!r}; the oracle is memmatrix-oracle")
        base = str(model.get("oracle_version") or "").split("+")[0]
        if base != ORACLE_VERSION:
            problems.append(f"made with oracle {model.get('oracle_version')}; this memmatrix's oracle is "
                            f"{ORACLE_VERSION}: verify with the memmatrix version in the stamp")
        bad = [r.get("seq") for r in model_records if r.get("kind") == "chat" and "response" in r
               and ("dialect" not in r or "upstream_model" in r or r.get("replayed"))]
    elif mode == "proxy":
        names = {"chat": model.get("id"), "embedding": model.get("embedding_model")}
        bad = [r.get("seq") for r in model_records if "response" in r and r.get("kind") in names
               and r.get("upstream_model") != names[r["kind"]]]
    elif mode == "replay":
        if not model.get("recording_sha256") or model.get("id") != f"replay:{model['recording_sha256'][:16]}":
            problems.append("a replay stamp must name the recording's sha256 and be identified by it")
        bad = [r.get("seq") for r in model_records if "response" in r and r.get("kind") != "models"
               and not r.get("replayed")]
    else:
        bad = [r.get("seq") for r in model_records]
    if bad:
        problems.append(f"{file}: {len(bad)} model call(s) (seq {bad[:5]}) were not answered by the {mode} model the "
                        f"stamp names ({model.get('id')})")
    judge = stamp.get("judge")
    if judge and judge.get("model") != model.get("id"):
        problems.append(f"the stamp's judge model {judge.get('model')!r} is not the run's model {model.get('id')!r}")
    return problems


def judge_problems(model_records: list[dict], stamp: dict, config: Config) -> list[str]:
    """The judge's accuracy in the stamp is what its answers to the suite (in the model transcript) score."""
    judge = stamp.get("judge")
    if not judge:
        return []
    from ..protocols.judging import rederive
    try:
        derived = rederive(judge.get("accuracy"), model_records, config)
    except ValueError as exc:
        return [f"the judge's accuracy cannot be re-derived: {exc}"]
    if derived != judge.get("accuracy"):
        return [f"the judge's accuracy in the stamp ({(judge.get('accuracy') or {}).get('accuracy')}) is not what its "
                f"recorded answers to the suite score ({derived.get('accuracy')})"]
    return []


def layout_problems(path: Path, stamp: dict) -> list[str]:
    """Under the standard layout <protocol>/<system>/<version>/<runtime>[+variant], the folders agree with the stamp."""
    parts = Path(path).resolve().parent.parts
    if len(parts) < 4 or parts[-4] not in protocol_names():
        return []
    protocol, system, version, runtime = parts[-4:]
    problems = []
    for what, folder, want in (("protocol", protocol, stamp["protocol"]["name"]), ("system", system, stamp["system"]["name"]),
                               ("version", version, stamp["system"]["version"])):
        if folder != want:
            problems.append(f"the result sits in a folder for {what} {folder!r}, its stamp says {want!r}")
    if runtime.split("+", 1)[0] != stamp["runtime"]["name"]:
        problems.append(f"the result sits in a folder for runtime {runtime!r}, its stamp says {stamp['runtime']['name']!r}")
    return problems
