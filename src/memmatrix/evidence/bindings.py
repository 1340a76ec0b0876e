"""What binds a result to its inputs: the run header, the protocol's steps, the case file, the model.

Each check returns problems that name the file and what disagrees. ``verify`` runs them all; an oracle run's
answers are asked again (``reask``).
"""

from __future__ import annotations

from pathlib import Path

from ..common.canon import canonical, sha256_file
from ..common.config import Config
from ..model import ORACLE_VERSION
from ..protocols import EvalProtocol, protocol_names
from .reask import reask
from ..protocols.scoring import by_case


def check_bindings(path: Path, result: dict, records: list[dict], model_records: list[dict],
                   protocol: EvalProtocol, caps: dict, config: Config) -> list[str]:
    stamp = result["stamp"]
    return (header_problems(result["transcript"]["file"], records, stamp)
            + ([] if caps == result["capabilities"] else
               ["the capabilities in the result differ from those recorded in the transcript"])
            + ([] if caps.get("system") == stamp["system"].get("declared") else
               [f"the stamp says the adapter declared {stamp['system'].get('declared')}, the transcript records "
                f"{caps.get('system')}"])
            + step_problems(result["steps"], protocol)
            + case_problems(records, stamp, protocol, config)
            + model_problems(result.get("model_transcript", {}).get("file", "model transcript"), model_records, stamp)
            + judge_problems(model_records, stamp, config)
            + reask(stamp, model_records, find_case_file(stamp, config), config)[1]
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


def case_problems(records: list[dict], stamp: dict, protocol: EvalProtocol, config: Config) -> list[str]:
    """The transcript holds exactly the case file's cases and ops, in order."""
    import json
    ds = stamp["dataset"]
    found = find_case_file(stamp, config)
    if found is None:
        return [f"the case file {ds['path']} (sha256 {ds['sha256'][:16]}…) named by the stamp is not in this checkout "
                "at that sha256: the transcript cannot be checked against its cases"]
    data = json.loads(found.read_text(encoding="utf-8"))
    problems = []
    if data.get("protocol") != protocol.name or data.get("version") != ds["version"]:
        problems.append(f"{found.name} is {data.get('protocol')} {data.get('version')}, the stamp says "
                        f"{protocol.name} {ds['version']}")
    cases = data.get("cases", [])
    seen = list(by_case(records))
    have, want = [h["case"] for h, _ in seen], [c["id"] for c in cases]
    if have != want:
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        return problems + [f"the transcript holds cases {have}; the case file {found.name} has {want} "
                           f"(missing {missing}, not in the file {extra})"]
    for (header, body), case in zip(seen, cases):
        expect = {"shape": case["shape"], "scopes": case["scopes"], "targets": case["targets"],
                  "recall_k": case.get("recall_k", 10), "ops": len(case["ops"]), "units": case.get("units")}
        for k, v in expect.items():
            if canonical(header.get(k)) != canonical(v):
                problems.append(f"case {case['id']}: the transcript's {k} differs from the case file's")
        ops = [r for r in body if r.get("kind") == "op"]
        for op in ops:
            i = op.get("index")
            if not isinstance(i, int) or i >= len(case["ops"]) or canonical(op.get("spec")) != canonical(case["ops"][i]):
                problems.append(f"case {case['id']} op {i}: the transcript's op is not the case file's op {i}")
        if [op.get("index") for op in ops] != list(range(len(ops))):
            problems.append(f"case {case['id']}: the transcript's ops are not the case file's, in order")
    return problems


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
