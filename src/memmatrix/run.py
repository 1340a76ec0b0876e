"""One run: a system, a protocol, a case file and a runtime in; a verified artifact directory out."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from . import derive, judging
from .artifacts import write_run
from .canon import COMPRESSED_SUFFIX, gzip_bytes, sha256_bytes
from .capabilities import Capabilities, check_capabilities
from .config import Config
from .errors import AdapterError, RuntimeFailure
from .judge import Judge
from .model.handle import ADAPTER_KEY, LocalGateway
from .overhead import Ledger
from .interpreter import CaseInterpreter, RunSettings
from .request import RunRequest, adapter_config, check_options, check_target, portable, run_header, setup_of
from .runtimes import start_runtime
from .scoring import score_transcript, summarize
from .stamp import fingerprint, harness, now_utc
from .transcript import NORMALIZATION, Transcript
from .wire import AdapterClient

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


def execute(req: RunRequest, config: Config) -> Path:
    """Run every case, score from the transcript, write the artifacts. Returns the run directory."""
    transcript = Transcript()
    started, t0 = now_utc(), time.monotonic()
    ledger = Ledger()
    local = None if req.runtime == "compose" else LocalGateway(req.gateway, [req.cases.data], req.spec.oracle)
    settings = RunSettings(settle_timeout_s=config.settle_timeout_s)
    budgets = budgets_for(req.spec.meta.get("budgets") or {}, req.gateway.mode, config.call_timeout_s)
    limits = {"call_timeout_s": config.call_timeout_s, "settle_timeout_s": config.settle_timeout_s,
              "poll_interval_s": settings.poll_interval_s,
              **({"budgets_s": {op: b["seconds"] for op, b in budgets.items()}} if budgets else {})}
    try:
        runtime_config = dict(req.runtime_config)
        if local is not None:
            runtime_config["model"] = {"base_url": local.adapter_url, "api_key": ADAPTER_KEY, **local.models()}
        with start_runtime(req.runtime, req.spec, config, runtime_config,
                           gateway=(req.gateway, [req.cases.data], req.spec.oracle), ledger=ledger) as runtime:
            gw = local or runtime.gateway
            model = gw.state()["identity"]
            judge = Judge(gw.url, model["id"]) if req.uses_judge else None
            client = AdapterClient(runtime.endpoint, transcript, config.schemas_dir, config.call_timeout_s, budgets)
            client.ledger = ledger
            client.on_call = lambda ctx, op: gw.set_context({"case": ctx.get("case"), "index": ctx.get("index"),
                                                             "call": op})
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
            reinit = _restarter(runtime, client, req)
            bar = tqdm(req.cases.cases, desc=f"  {name} {version} {req.protocol.name}", unit="case", leave=False,
                       file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True)
            lags: list[dict] = []
            for case in bar:
                bar.set_postfix_str(case["id"], refresh=False)
                if client.unavailable and req.runtime != "inprocess":
                    _recover(client, reinit, case["id"])
                interp = CaseInterpreter(client, checked, req.cases.data["clock"], settings, judge, reinit)
                interp.run(case)
                lags += interp.lags
            runtime_facts = runtime.describe()
            adapter_ms = client.stats.summary()
            state = gw.state()
    finally:
        if local is not None:
            local.close()
    model_text, cost, model_latency = state["transcript"], state["cost"], state["latency"]
    if req.gateway.mode == "proxy":
        _never_reached(req, state, model)
    elif state.get("inflight"):
        print(f"memmatrix: warning: {state['inflight']} model call(s) were still in flight when the run ended",
              file=sys.stderr)
    model_records = [json.loads(line) for line in model_text.splitlines()]
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
    files = {"transcript.jsonl" + COMPRESSED_SUFFIX: gzip_bytes(text.encode())}
    result = {
        "kind": "memmatrix.result", "schema_version": 2, "stamp": stamp,
        "capabilities": next(r["result"] for r in transcript.records if r.get("call") == "capabilities"),
        "transcript": {"file": "transcript.jsonl" + COMPRESSED_SUFFIX, "sha256": sha256_bytes(text.encode()),
                       "records": len(transcript.records), "encoding": "gzip"},
        "steps": [{"key": s.key, "name": s.name, "title": s.title} for s in req.protocol.steps],
        "cases": cases,
        "summary": summarize(req.protocol, cases),
        "findings": findings,
        "timings": {"wall_s": round(time.monotonic() - t0, 3), "adapter_ms": adapter_ms, "model": model_latency,
                    "harness": ledger.summary(),
                    **({"lag_ms": lag_distribution(lags)} if lags else {})},
        "cost": cost,
    }
    measures = req.protocol.measures(cases)
    if measures is not None:
        result["measures"] = measures
    if model_text:
        files["model-transcript.jsonl" + COMPRESSED_SUFFIX] = gzip_bytes(model_text.encode())
        result["model_transcript"] = {"file": "model-transcript.jsonl" + COMPRESSED_SUFFIX,
                                      "sha256": sha256_bytes(model_text.encode()),
                                      "records": model_text.count("\n"), "encoding": "gzip"}
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


def lag_distribution(lags: list[dict]) -> dict:
    """Write-to-recall lag over every lag op: how long after a write returned its value first reached the door."""
    seen = sorted(x["ms"] for x in lags if x["seen"])
    def pct(q: float) -> float | None:
        return seen[min(len(seen) - 1, int(q * len(seen)))] if seen else None
    return {"writes": len(lags), "never": sum(not x["seen"] for x in lags), "p50": pct(0.5), "p95": pct(0.95),
            "max": seen[-1] if seen else None, "samples": [{k: x[k] for k in ("case", "target", "ms", "seen")}
                                                           for x in lags]}


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
