"""One run: a system, a protocol, a case file and a runtime in; a verified artifact directory out."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .artifacts import result_dir, write_run
from .canon import sha256_bytes, sha256_file
from .capabilities import Capabilities, check_capabilities
from .cases import CaseFile
from .config import Config
from .errors import AdapterError, RuntimeFailure
from .judge import Judge
from .model import GatewaySettings
from .model.handle import ADAPTER_KEY, LocalGateway
from .interpreter import CaseInterpreter, RunSettings
from .protocols import EvalProtocol
from .runtimes import start_runtime
from .scoring import score_transcript, summarize
from .stamp import fingerprint, harness, now_utc
from .systems import SystemSpec
from .transcript import NORMALIZATION, Transcript
from .wire import AdapterClient


@dataclass
class RunRequest:
    spec: SystemSpec
    protocol: EvalProtocol
    cases: CaseFile
    runtime: str
    out: Path
    seed: int = 0
    runtime_config: dict = field(default_factory=dict)
    gateway: GatewaySettings = field(default_factory=GatewaySettings)
    judge: bool = True  # protocols that need a judge get one through the gateway unless this is off
    options: dict = field(default_factory=dict)  # --option key=value: adapter options beyond the version's

    @property
    def all_options(self) -> dict:
        return {**self.spec.version_meta.get("options", {}), **self.options}

    @property
    def variant(self) -> str:
        """What sets this run apart from the default setup, for its directory name ('' when nothing)."""
        parts = [f"{k}={v}" for k, v in sorted(self.options.items())]
        if self.gateway.mode != "oracle":
            parts.append(self.gateway.mode)
        elif self.gateway.ablation:
            parts.append(f"oracle-{self.gateway.ablation}")
        return re.sub(r"[^A-Za-z0-9_.=-]+", "-", "+".join(parts))


def adapter_config(req: RunRequest) -> dict:
    return {"version": req.spec.version, "seed": req.seed, "options": req.all_options}


def portable(path: Path, home: Path) -> str:
    """A path as committed artifacts may name it: relative to the checkout, else just its name."""
    try:
        return str(Path(path).resolve().relative_to(home.resolve()))
    except ValueError:
        return Path(path).name


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
                                   "error": {"kind": "runtime", "message": f"{type(exc).__name__}: {exc}"[:500]}})
            return False
        client.stats.add("restart", (time.perf_counter() - t0) * 1000)  # the system's stop and start, not ours
        client.endpoint = runtime.endpoint
        client.transcript.add({**ctx, "kind": "call", "call": "restart", "args": {}, "result": {}})
        ok, _ = client.call("init", {"config": adapter_config(req)}, ctx)
        return ok
    return restart


def _recover(client: AdapterClient, reinit, case_id: str) -> str:
    """An adapter that stopped answering costs its case, not the run: restart it before the next case."""
    why = client.unavailable
    client.unavailable = None
    ok = reinit({"case": case_id, "index": -1, "step": "0"})
    if not ok:
        client.unavailable = f"{why}; restarting the system before case {case_id} failed too"
        return client.unavailable
    return f"{why}; the system was restarted before case {case_id} (every later case starts from a reset)"


def findings_of(caps: dict, client: AdapterClient) -> list[str]:
    found = []
    ops = caps["operations"]
    if ops["settle"]["support"] == "unsupported":
        found.append(f"no quiescence signal ({ops['settle'].get('reason')}): every check was polled to the settle timeout")
    for op, decl in sorted(ops.items()):
        if decl["support"] == "emulated":
            found.append(f"{op} is emulated: {decl.get('reason')}")
    if client.unavailable:
        found.append(client.unavailable)
    return found


def execute(req: RunRequest, config: Config) -> Path:
    """Run every case, score from the transcript, write the artifacts. Returns the run directory."""
    transcript = Transcript()
    started, t0 = now_utc(), time.monotonic()
    transcript.add({"kind": "run", "protocol": {"name": req.protocol.name, "version": req.protocol.version},
                    "dataset": {"version": req.cases.version, "sha256": req.cases.sha256},
                    "system": {"name": req.spec.name, "version": req.spec.version}})
    local = None if req.runtime == "compose" else LocalGateway(req.gateway, [req.cases.data])
    try:
        runtime_config = dict(req.runtime_config)
        if local is not None:
            runtime_config["model"] = {"base_url": local.adapter_url, "api_key": ADAPTER_KEY, **local.models()}
        with start_runtime(req.runtime, req.spec, config, runtime_config,
                           gateway=(req.gateway, [req.cases.data])) as runtime:
            gw = local or runtime.gateway
            judge = Judge(gw.url, gw.state()["identity"]["id"]) if req.judge and req.protocol.uses_judge else None
            client = AdapterClient(runtime.endpoint, transcript, config.schemas_dir, config.call_timeout_s)
            client.on_call = lambda ctx, op: gw.set_context({"case": ctx.get("case"), "index": ctx.get("index"),
                                                             "call": op})
            caps, checked = _start(client, req)
            settings = RunSettings(settle_timeout_s=config.settle_timeout_s)
            reinit = _restarter(runtime, client, req)
            recovered: list[str] = []
            for case in req.cases.cases:
                if client.unavailable and req.runtime != "inprocess":
                    recovered.append(_recover(client, reinit, case["id"]))
                CaseInterpreter(client, checked, req.cases.data["clock"], settings, judge, reinit).run(case)
            runtime_facts = runtime.describe()
            findings = findings_of(caps, client) + recovered
            adapter_ms = client.stats.summary()
            state = gw.state()
    finally:
        if local is not None:
            local.close()
    model_text, cost, model_latency, identity = state["transcript"], state["cost"], state["latency"], state["identity"]
    findings += gateway_findings(state["upstream"], cost)
    if req.gateway.mode == "proxy" and cost["total"]["llm_calls"] + cost["total"]["embedding_calls"] + \
            cost["total"]["errors"] > 0 and state["upstream"]["ok"] == 0:
        raise RuntimeFailure(f"the run was configured for the real model {identity['id']} at "
                             f"{req.gateway.upstream_url} but never reached it ({state['upstream']['first_error']}); "
                             "no result was written")

    cases = score_transcript(req.protocol, transcript.records)
    # an ad-hoc adapter (path.py:Class) is named by what it declares; a systems/ folder by its folder
    name = req.spec.name if req.spec.folder is not None else caps["system"]["name"]
    version = req.spec.version or caps["system"]["version"]
    image = runtime_facts.pop("image_digests", {})
    compose_sha = runtime_facts.pop("compose_sha256", None)
    stamp = {
        "harness": harness(config.home),
        "system": {"name": name, "version": version, "declared": caps["system"],
                   "adapter": f"{portable(req.spec.adapter_file, config.home)}:{req.spec.adapter.rpartition(':')[2]}",
                   "adapter_sha256": sha256_file(req.spec.adapter_file), "lock_sha256": req.spec.lock_sha256,
                   "upstream": req.spec.meta.get("upstream"), "image_digests": image, "compose_sha256": compose_sha,
                   "options": req.all_options},
        "runtime": runtime_facts,
        "model": identity,
        "judge": judge.identity() if judge else None,
        "protocol": {"name": req.protocol.name, "version": req.protocol.version},
        "dataset": {"path": portable(req.cases.path, config.home), "version": req.cases.version,
                    "sha256": req.cases.sha256},
        "seed": req.seed,
        "limits": {"call_timeout_s": config.call_timeout_s, "settle_timeout_s": config.settle_timeout_s},
        "clock": {"mode": "virtual", "start": req.cases.data["clock"]["start"]},
        "started_at": started,
        "finished_at": now_utc(),
        "normalization": {**NORMALIZATION, "volatile_fields_declared": sorted(caps.get("volatile_fields", []))},
    }
    stamp["fingerprint"] = fingerprint(stamp)
    files = {"transcript.jsonl": transcript.text()}
    result = {
        "kind": "memmatrix.result", "schema_version": 1, "stamp": stamp,
        "capabilities": next(r["result"] for r in transcript.records if r.get("call") == "capabilities"),
        "transcript": {"file": "transcript.jsonl", "sha256": transcript.sha256(), "records": len(transcript.records)},
        "steps": [{"key": s.key, "name": s.name, "title": s.title} for s in req.protocol.steps],
        "cases": cases,
        "summary": summarize(req.protocol, cases),
        "findings": findings,
        "timings": {"wall_s": round(time.monotonic() - t0, 3), "adapter_ms": adapter_ms, "model": model_latency},
        "cost": cost,
    }
    if model_text:
        files["model-transcript.jsonl"] = model_text
        result["model_transcript"] = {"file": "model-transcript.jsonl", "sha256": sha256_bytes(model_text.encode()),
                                      "records": model_text.count("\n")}
    target = result_dir(req.out, req.protocol.name, name, version,
                        req.runtime + (f"+{req.variant}" if req.variant else ""))
    return write_run(target, result, files, config.schemas_dir)


def gateway_findings(upstream: dict, cost: dict) -> list[str]:
    found = []
    total = cost["total"]
    if total["unmatched"]:
        found.append(f"the oracle matched no gold fact for {total['unmatched']} model call(s); they got well-formed "
                     "empty answers (see matched=false in model-transcript.jsonl)")
    if upstream["errors"]:
        found.append(f"{upstream['errors']} upstream model call(s) failed: {upstream['first_error']}")
    if upstream["replay_misses"]:
        found.append(f"{upstream['replay_misses']} model request(s) were not in the recording: "
                     f"{upstream['first_error']}")
    if total["errors"] and not (upstream["errors"] or upstream["replay_misses"]):
        found.append(f"{total['errors']} model call(s) failed inside the gateway")
    return found
