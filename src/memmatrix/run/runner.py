"""One run: a system, a protocol, a case file and a runtime in; a verified artifact directory out."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ..result import derive
from ..protocols import judging
from ..result.artifacts import write_run
from ..common.canon import COMPRESSED_SUFFIX, ENCODINGS, canonical, compress_bytes, sha256_bytes
from ..exchange.capabilities import Capabilities, check_capabilities
from ..result.costs import derive_costs, disk_bytes, disk_use, lag_distribution
from ..common.config import Config
from ..common.errors import AdapterError, RuntimeFailure
from ..protocols.judge import Judge
from ..model.handle import ADAPTER_KEY, LocalGateway
from ..exchange.overhead import Ledger
from .parallel import merge_models, merge_transcripts
from .interpreter import CaseInterpreter, RunSettings
from .request import RunRequest, adapter_config, check_options, check_target, portable, run_header, setup_of
from ..runtimes import start_runtime
from ..protocols.scoring import score_transcript, summarize
from ..result.stamp import fingerprint, harness, now_utc, prefetch_git_sha
from ..exchange.transcript import NORMALIZATION, Transcript
from ..exchange.wire import AdapterClient, CallStats

__all__ = ["RunRequest", "execute", "portable"]


def _start(client: AdapterClient, req: RunRequest) -> tuple[dict, Capabilities]:
    ctx = {"case": None, "index": -1, "step": "0"}
    ok, init = client.call("init", {"config": adapter_config(req)}, ctx)
    if not ok:
        raise AdapterError(f"the adapter {req.spec.adapter} could not be initialised: {init['message']}")
    ok, caps = client.call("capabilities", {}, ctx)
    if not ok:
        raise AdapterError(f"the adapter {req.spec.adapter} did not declare its capabilities: {caps['message']}")
    checked = check_capabilities(caps, init["implemented"], req.spec.adapter)
    declared = caps["system"]
    if req.spec.folder is not None and declared["name"] != req.spec.name:
        raise AdapterError(f"the adapter in systems/{req.spec.name}/ declares system name {declared['name']!r}; "
                           f"make capabilities()['system']['name'] return {req.spec.name!r}")
    if req.spec.folder is None:  # an ad-hoc adapter declares its options itself
        check_options(req, caps.get("options"))
    client.transcript.normalize.volatile_fields = checked.volatile_fields
    return caps, checked


def _restarter(runtime, client: AdapterClient, req: RunRequest):
    """Restart the system keeping its stores, then initialise the adapter again (recorded like the first time)."""
    def restart(ctx: dict) -> bool:
        t0 = time.perf_counter()
        try:
            runtime.restart()
        except Exception as exc:  # recorded as an ERROR of the restart step, never raised out of the run
            client.transcript.add({**ctx, "kind": "call", "call": "restart", "args": {},
                                   "error": {"kind": "runtime", "origin": "harness",
                                             "message": f"{type(exc).__name__}: {exc}"[:500]}})
            return False
        client.stats.add("restart", (time.perf_counter() - t0) * 1000)  # the system's stop and start, not ours
        client.endpoint = runtime.endpoint
        client.transcript.add({**ctx, "kind": "call", "call": "restart", "args": {}, "result": {}})
        ok, _ = client.call("init", {"config": adapter_config(req)}, ctx)
        return ok
    return restart


def _recover(client: AdapterClient, reinit, case_id: str) -> None:
    """An adapter that stopped answering costs its case, not the run: restart it before the next case."""
    why = client.unavailable
    client.unavailable = None
    ctx = {"case": case_id, "index": -1, "step": "0"}
    ok = reinit(ctx)
    if not ok:
        client.unavailable = f"{why}; restarting the system before case {case_id} failed too"
        client.transcript.add({**ctx, "kind": "unavailable", "message": client.unavailable})
        return
    client.transcript.add({**ctx, "kind": "recovered",
                           "message": f"{why}; the system was restarted before case {case_id} (every later case "
                                      "starts from a reset)"})


def _existing(target: Path) -> dict | None:
    try:
        return json.loads((target / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None if not (target / "result.json").exists() else {}


def _judge_identity(judge: Judge | None) -> dict | None:
    return judge.identity() if judge else None


@dataclass
class Session:
    """One instance of the system: its gateway, runtime, transcript and client (a --jobs run has several)."""
    gw: object
    runtime: object
    client: AdapterClient
    reinit: object
    judge: Judge | None = None
    lags: list = field(default_factory=list)
    disk: list = field(default_factory=list)  # per case: the stores' bytes after reset and at the end


def _open(stack: ExitStack, req: RunRequest, config: Config, budgets: dict, ledger: Ledger,
          transcript: Transcript) -> Session:
    dialects = req.spec.oracle if req.gateway.mode == "oracle" else None  # a real model needs no oracle module
    local = None if req.runtime == "compose" else LocalGateway(req.gateway, [req.cases.data], dialects)
    if local is not None:
        stack.callback(local.close)  # after the runtime has stopped (the stack unwinds last-in first-out)
    runtime_config = dict(req.runtime_config)
    if local is not None:
        runtime_config["model"] = {"base_url": local.adapter_url, "api_key": ADAPTER_KEY, **local.models()}
    runtime = stack.enter_context(start_runtime(req.runtime, req.spec, config, runtime_config, ledger=ledger,
                                                gateway=(req.gateway, [req.cases.data], req.spec.oracle)))
    gw = local or runtime.gateway
    client = AdapterClient(runtime.endpoint, transcript, config.schemas_dir, config.call_timeout_s, budgets)
    client.ledger = ledger
    client.on_call = lambda ctx, op: gw.set_context({"case": ctx.get("case"), "index": ctx.get("index"), "call": op})
    return Session(gw=gw, runtime=runtime, client=client, reinit=_restarter(runtime, client, req))


def _drive(s: Session, cases: list[dict], req: RunRequest, checked: Capabilities, settings: RunSettings,
           bar) -> None:
    """Run ``cases`` in order on one instance."""
    for case in cases:
        if s.client.unavailable and req.runtime != "inprocess":
            _recover(s.client, s.reinit, case["id"])
        folder = s.runtime.data_dir()
        interp = CaseInterpreter(s.client, checked, req.cases.data["clock"], settings, s.judge, s.reinit,
                                 disk=(lambda: disk_bytes(folder)) if folder is not None else None)
        interp.run(case)
        s.lags += interp.lags
        if interp.disk_bytes[1] is not None:
            s.disk.append({"case": case["id"], "after_reset": interp.disk_bytes[0], "at_end": interp.disk_bytes[1]})
        bar.set_postfix_str(case["id"], refresh=False)
        bar.update()


def execute(req: RunRequest, config: Config) -> Path:
    """Run every case, score from the transcript, write the artifacts. Returns the run directory."""
    jobs = max(1, min(req.jobs, len(req.cases.cases))) if req.runtime != "compose" else 1  # one gateway service
    if jobs > 1 and not req.parallel:
        print(f"memmatrix: {req.spec.name} does not declare instances that share nothing (system.yaml parallel: "
              "true); its cases run on one instance", file=sys.stderr, flush=True)
        jobs = 1
    if jobs > 1 and req.uses_judge:  # the judge reads door text whose ids are numbered across the whole run
        print(f"memmatrix: the {req.protocol.name} protocol asks the judge about door text, whose ids only a single "
              "instance numbers as the transcript does; its cases run on one instance (--no-judge allows more)",
              file=sys.stderr, flush=True)
        jobs = 1
    transcript = Transcript(worker=0 if jobs > 1 else None)
    started, t0 = now_utc(), time.monotonic()
    prefetch_git_sha(str(config.home))
    ledger = Ledger()
    settings = RunSettings(settle_timeout_s=config.settle_timeout_s)
    budgets = budgets_for(req.spec.meta.get("budgets") or {}, req.gateway.mode, config.call_timeout_s)
    limits = {"call_timeout_s": config.call_timeout_s, "settle_timeout_s": config.settle_timeout_s,
              "poll_interval_s": settings.poll_interval_s,
              **({"budgets_s": {op: b["seconds"] for op, b in budgets.items()}} if budgets else {})}
    with ExitStack() as stack:
        first = _open(stack, req, config, budgets, ledger, transcript)
        gw, runtime, client = first.gw, first.runtime, first.client
        model = gw.state()["identity"]
        judge = first.judge = Judge(gw.url, model["id"]) if req.uses_judge else None
        caps, checked = _start(client, req)
        name = req.spec.name if req.spec.folder is not None else caps["system"]["name"]
        version = req.spec.version or caps["system"]["version"]
        target = req.target(name, version)
        planned = {"protocol": {"version": req.protocol.version}, "dataset": {"sha256": req.cases.sha256},
                   "seed": req.seed, "system": {"options": req.recorded_options}, "model": model,
                   "judge": _judge_identity(judge)}
        check_target(req, _existing(target), setup_of(planned), target)  # before any case runs
        accuracy = judging.measure(judge, gw, config) if judge else None
        header = run_header(req, config, runtime.name, model, _judge_identity(judge), limits)
        header["system"].update(name=name, version=version)
        transcript.prepend(header)
        sessions = [first]
        for k in range(1, jobs):  # the other instances: their own start stays out of the merged transcript
            s = _open(stack, req, config, budgets, Ledger(), Transcript(worker=k))
            s.judge = Judge(s.gw.url, model["id"]) if judge else None
            _start(s.client, req)
            sessions.append(s)
        case_order = {c["id"]: i for i, c in enumerate(req.cases.cases)}
        bar = tqdm(total=len(req.cases.cases), desc=f"  {name} {version} {req.protocol.name}", unit="case",
                   leave=False, file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True)
        plan = [req.cases.cases[k::jobs] for k in range(jobs)]
        if jobs == 1:
            _drive(first, plan[0], req, checked, settings, bar)
        else:
            with ThreadPoolExecutor(jobs, thread_name_prefix="memmatrix-job") as pool:
                list(pool.map(lambda k: _drive(sessions[k], plan[k], req, checked, settings, bar), range(jobs)))
        bar.close()
        runtime_facts = {**runtime.describe(), **({"instances": jobs} if jobs > 1 else {})}  # not in the transcript
        stats = CallStats()
        for s in sessions:
            for op, values in s.client.stats.ms.items():
                stats.ms.setdefault(op, []).extend(values)
        adapter_ms = stats.summary()
        lags = [x for s in sessions for x in s.lags]
        disk = sorted((x for s in sessions for x in s.disk), key=lambda x: case_order[x["case"]])
        state = gw.state()
        if jobs > 1:
            case_ids = [c["id"] for c in req.cases.cases]
            transcript.records = merge_transcripts([s.client.transcript for s in sessions], case_ids)
            merged = merge_models([s.gw.gateway.recorder for s in sessions], case_ids, req.gateway.mode)
            more = [s.gw.state() for s in sessions[1:]]
            state = {**state, "transcript": "".join(canonical(r) + "\n" for r in merged["records"]),
                     "cost": merged["cost"], "latency": merged["latency"],
                     "upstream": {k: (sum(m["upstream"][k] for m in [state, *more]) if k != "first_error" else
                                      next((m["upstream"][k] for m in [state, *more] if m["upstream"][k]), None))
                                  for k in state["upstream"]},
                     "inflight": sum(m.get("inflight", 0) for m in [state, *more])}
    model_text, cost, model_latency = state["transcript"], state["cost"], state["latency"]
    if req.gateway.mode == "proxy":
        _never_reached(req, state, model)
    elif state.get("inflight"):
        print(f"memmatrix: warning: {state['inflight']} model call(s) were still in flight when the run ended",
              file=sys.stderr)
    # the findings read the failed model calls only: a canonical line holds the key as '"error":' exactly
    model_records = [json.loads(line) for line in model_text.splitlines() if '"error":' in line]
    findings = derive.run_findings(transcript.records, caps, limits) + derive.model_findings(model_records, cost)
    if cost["total"]["unmatched"]:
        print(f"memmatrix: warning: the oracle did not answer {cost['total']['unmatched']} model call(s) of "
              f"{name} {version}; those answers measure the oracle, not the system (see the result's findings)",
              file=sys.stderr, flush=True)

    cases = score_transcript(req.protocol, transcript.records)
    image = runtime_facts.pop("image_digests", {})
    compose_sha = runtime_facts.pop("compose_sha256", None)
    judge_stamp = {**_judge_identity(judge), "accuracy": accuracy} if judge else None
    stamp = {
        "harness": harness(config.home),
        "system": {**header["system"], "declared": caps["system"], "upstream": req.spec.meta.get("upstream"),
                   "image_digests": image, "compose_sha256": compose_sha},
        "runtime": runtime_facts,
        "model": model,
        "judge": judge_stamp,
        "protocol": header["protocol"],
        "dataset": header["dataset"],
        "seed": req.seed,
        "limits": limits,
        "clock": header["clock"],
        "started_at": started,
        "finished_at": now_utc(),
        "normalization": {**NORMALIZATION, "volatile_fields_declared": sorted(caps.get("volatile_fields", []))},
        **({"repeat": req.repeat} if req.repeat > 1 else {}),
    }
    stamp["fingerprint"] = fingerprint(stamp)
    text = transcript.text()
    files = {"transcript.jsonl" + COMPRESSED_SUFFIX: compress_bytes(text.encode())}
    result = {
        "kind": "memmatrix.result", "schema_version": 2, "stamp": stamp,
        "capabilities": next(r["result"] for r in transcript.records if r.get("call") == "capabilities"),
        "transcript": {"file": "transcript.jsonl" + COMPRESSED_SUFFIX, "sha256": sha256_bytes(text.encode()),
                       "records": len(transcript.records), "encoding": ENCODINGS[COMPRESSED_SUFFIX]},
        "steps": req.protocol.step_table(),
        "cases": cases,
        "summary": summarize(req.protocol, cases),
        "findings": findings,
        "timings": {"wall_s": round(time.monotonic() - t0, 3), "adapter_ms": adapter_ms, "model": model_latency,
                    "harness": ledger.summary() if jobs == 1 else
                    {"jobs": jobs, "instances": [s.client.ledger.summary() for s in sessions]},
                    **({"lag_ms": lag_distribution(lags)} if lags else {}),
                    **({"disk": disk_use(disk, transcript.records)} if disk else {})},
        "cost": cost,
        "costs": derive_costs(transcript.records, cost),
    }
    measures = req.protocol.measures(cases)
    if measures is not None:
        result["measures"] = measures
    if model_text:
        files["model-transcript.jsonl" + COMPRESSED_SUFFIX] = compress_bytes(model_text.encode())
        result["model_transcript"] = {"file": "model-transcript.jsonl" + COMPRESSED_SUFFIX,
                                      "sha256": sha256_bytes(model_text.encode()),
                                      "records": model_text.count("\n"), "encoding": ENCODINGS[COMPRESSED_SUFFIX]}
    return write_run(target, result, files, config.schemas_dir,
                     guard=lambda existing: check_target(req, existing, setup_of(stamp), target))


def budgets_for(declared: dict, mode: str, call_timeout_s: float) -> dict:
    """system.yaml's time budgets as this run applies them: never longer than the call timeout; with a real
    model (proxy mode) a budget declared for the oracle gives way to a longer call timeout."""
    out = {}
    for op, b in declared.items():
        seconds = min(b["seconds"], call_timeout_s) if mode != "proxy" else call_timeout_s
        if seconds < call_timeout_s:
            out[op] = {**b, "seconds": seconds}
    return out


def _never_reached(req: RunRequest, state: dict, model: dict) -> None:
    """A proxy run writes a result only when every model call it made completed at the real model."""
    total, up = state["cost"]["total"], state["upstream"]
    calls = total["llm_calls"] + total["embedding_calls"] + total["errors"]
    if calls and up["ok"] == 0:
        raise RuntimeFailure(f"the run was configured for the real model {model['id']} at {req.gateway.upstream_url} "
                             f"but never reached it ({up['first_error']}); no result was written")
    if up["errors"] or state.get("inflight"):
        raise RuntimeFailure(f"{up['errors']} call(s) to the real model {model['id']} failed or timed out and "
                             f"{state.get('inflight', 0)} were still in flight when the run ended "
                             f"({up['first_error']}); a result would not say what the model answered, so none was "
                             "written")
