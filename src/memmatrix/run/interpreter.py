"""The op interpreter: runs one case's op script against an adapter, recording everything.

It knows how to perform each op (which adapter calls, with which arguments, on the
harness clock) but nothing about verdicts: scoring is the protocol's, from the transcript.
An op whose adapter call is unsupported is recorded as a skip, with the adapter's reason.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..exchange.capabilities import Capabilities
from ..common.clock import HarnessClock
from ..protocols.observe import sight, wordings
from ..common.canon import canonical
from ..protocols.base import OpRecords, settled_after
from ..protocols.judge import Judge
from ..common.tokens import found_in
from ..exchange.wire import AdapterClient


LAG_POLL_S = 0.05  # between two asks of the door after a write (a measurement, not a wait for the system)


@dataclass
class RunSettings:
    settle_timeout_s: float
    poll_interval_s: float = 0.5


class CaseInterpreter:
    def __init__(self, client: AdapterClient, caps: Capabilities, clock_spec: dict, settings: RunSettings,
                 judge: Judge | None = None, restart=None, disk=None):
        self.client = client
        self.caps = caps
        self.clock_spec = clock_spec
        self.settings = settings
        self.judge = judge
        self.restart = restart  # callable(ctx) -> bool, given by the run: the runtime restarts the system
        self.times: dict[str, str] = {}
        self.lags: list[dict] = []  # write-to-door lag, in ms (timings, not the transcript: it is wall time)
        self.judged: dict[str, tuple[bool, dict]] = {}
        self.disk = disk  # () -> bytes the system's stores take on disk, or None: measured after reset and at the end
        self.disk_bytes: tuple[int | None, int | None] = (None, None)

    def run(self, case: dict) -> None:
        tr = self.client.transcript
        tr.add({"kind": "case", "case": case["id"], "shape": case["shape"], "scopes": case["scopes"],
                "targets": case["targets"], "recall_k": case.get("recall_k", 10), "ops": len(case["ops"]),
                **({"units": case["units"]} if "units" in case else {})})
        self.case = case
        tr.normalize.set_needles([w for t in case["targets"].values() for w in wordings(t)])
        self.case_start = len(tr.records)
        self.forgot = False
        self.clock = HarnessClock(self.clock_spec["start"], self.clock_spec.get("step", "PT1M"))
        ok, _ = self.client.call("reset", {}, {"case": case["id"], "index": -1, "step": "0"})
        if not ok:
            return  # the case is unmeasurable; the scorer turns the missing ops into ERROR cells
        base = self.disk() if self.disk else None
        for index, spec in enumerate(case["ops"]):
            tr.add({"kind": "op", "case": case["id"], "index": index, "step": str(spec["step"]), "spec": spec,
                    "at": self.clock.now()})
            ctx = {"case": case["id"], "index": index, "step": str(spec["step"])}
            if "id" in spec:
                self.times[spec["id"]] = self.clock.now()
            getattr(self, f"_op_{spec['op']}")(spec, ctx)
        self.disk_bytes = (base, self.disk() if self.disk else None)

    # ---------------------------------------------------------------- helpers
    def _wait(self, seconds: float) -> None:
        """Wait between two looks at a system still settling: the system's time, not the harness's."""
        t0 = time.perf_counter()
        time.sleep(seconds)
        self.client.ledger.system_span(t0, time.perf_counter())

    def _scope(self, key: str) -> str:
        return self.case["scopes"][key]

    def _supported(self, call: str, ctx: dict) -> bool:
        if self.caps.support(call) != "unsupported":
            return True
        self.client.transcript.add({**ctx, "kind": "skip", "call": call, "reason": self.caps.reason(call)})
        return False

    def _settle(self, ctx: dict) -> None:
        if self._supported("settle", ctx):
            self.client.call("settle", {"timeout_s": self.settings.settle_timeout_s}, ctx,
                             timeout_s=self.settings.settle_timeout_s + self.client.timeout_s)

    # ---------------------------------------------------------------- ops
    def _op_write(self, spec: dict, ctx: dict) -> None:
        self.client.call("write", {"scope": self._scope(spec["scope"]), "at": self.clock.now(),
                                   "messages": spec["messages"]}, ctx)
        self.clock.advance()

    def _op_concurrent(self, spec: dict, ctx: dict) -> None:
        """Writes sent together, each by a writer of its own, at one time. A writer the system refused (its
        answer is an error) writes again afterwards, alone, as a writer told of a failure would: a refusal is
        visible, a loss is not."""
        if not self._supported("write_concurrent", ctx):
            return
        writes = [w["messages"] for w in spec["writes"]]
        ok, result = self.client.call("write_concurrent", {"scope": self._scope(spec["scope"]), "at": self.clock.now(),
                                                           "writes": writes}, ctx)
        self.clock.advance()
        if not ok:
            return
        for i, answer in enumerate(result["writes"]):
            if "error" in answer and i < len(writes):
                self.client.call("write", {"scope": self._scope(spec["scope"]), "at": self.clock.now(),
                                           "messages": writes[i]}, {**ctx, "retry": i})
                self.clock.advance()

    def _op_import(self, spec: dict, ctx: dict) -> None:
        if self._supported("import_history", ctx):
            at = self.times.get(spec["at_of"], self.clock.now()) if "at_of" in spec else self.clock.now()
            self.client.call("import_history", {"scope": self._scope(spec["scope"]), "at": at,
                                                "messages": spec["messages"]}, ctx)
            if "at_of" not in spec:
                self.clock.advance()

    def _op_settle(self, spec: dict, ctx: dict) -> None:
        self._settle(ctx)

    def _op_restart(self, spec: dict, ctx: dict) -> None:
        """Stop the system and start it again on the same stores; the adapter is initialised anew."""
        if self.restart is None:
            self.client.transcript.add({**ctx, "kind": "skip", "call": "restart", "reason": "this run cannot restart"})
            return
        self.restart(ctx)
        self._settle(ctx)

    def _op_advance(self, spec: dict, ctx: dict) -> None:
        self.clock.advance(spec["by"])

    def _op_forget(self, spec: dict, ctx: dict) -> None:
        self.forgot = True
        if self._supported("forget", ctx):
            self.client.call("forget", {"scope": self._scope(spec["scope"]), "at": self.clock.now(),
                                        "text": spec["text"]}, ctx)
            self.clock.advance()

    def _op_update(self, spec: dict, ctx: dict) -> None:
        if self._supported("update", ctx):
            self.client.call("update", {"scope": self._scope(spec["scope"]), "at": self.clock.now(),
                                        "text": spec["text"], "new_text": spec["new_text"]}, ctx)
            self.clock.advance()

    def _op_share(self, spec: dict, ctx: dict) -> None:
        if self._supported("share", ctx):
            self.client.call("share", {"scope": self._scope(spec["scope"]), "to_scope": self._scope(spec["to"]),
                                       "at": self.clock.now(), "text": spec["text"]}, ctx)
            self.clock.advance()

    def _op_jobs(self, spec: dict, ctx: dict) -> None:
        if self._supported("run_background_jobs", ctx):
            self.client.call("run_background_jobs", {"at": self.clock.now()}, ctx)
            self._settle(ctx)

    def _op_audit(self, spec: dict, ctx: dict) -> None:
        if self._supported("audit", ctx):
            self.client.call("audit", {"scope": self._scope(spec["scope"])}, ctx)

    def _op_lag(self, spec: dict, ctx: dict) -> None:
        """Right after a write: ask the first door the target's first question until the value is there, or the
        settle timeout passes. Every poll is in the transcript; the lag itself (wall time) goes to the timings."""
        target = self.case["targets"][spec["target"]]
        query, door, scope = target["queries"][0], self.caps.doors[0], self._scope(spec["scope"])
        t0, poll, seen = time.monotonic(), 0, False
        while True:
            ok, result = self.client.call("door", {"query": query, "scope": scope, "door": door,
                                                   "at": self.clock.now()}, {**ctx, "poll": poll})
            if ok and any(found_in(result.get("text", ""), w) for w in wordings(target)):
                seen = True
                break
            if not ok or self.client.unavailable or time.monotonic() - t0 >= self.settings.settle_timeout_s:
                break
            poll += 1
            self._wait(LAG_POLL_S)
        ms = round((time.monotonic() - t0) * 1000, 1)
        self.client.transcript.add({**ctx, "kind": "polling", "polls": poll + 1, "until": "held" if seen else "timeout",
                                    "watch": False, "interval_s": LAG_POLL_S, "timeout_s": self.settings.settle_timeout_s})
        self.lags.append({"case": self.case["id"], "target": spec["target"], "ms": ms, "seen": seen})

    def _op_trace(self, spec: dict, ctx: dict) -> None:
        """Ask the system for the lineage of every returned item (so far in the case) holding the target."""
        if not self._supported("trace", ctx):
            return
        from ..protocols.writepath import traceable_ids
        answers = [r["result"] for r in self.client.transcript.records[self.case_start:]
                   if r.get("kind") == "call" and r.get("call") in ("door", "recall") and "result" in r]
        for item_id in traceable_ids(answers, self.case["targets"][spec["target"]]):
            raw = self.client.transcript.normalize.raw(item_id)  # the transcript renumbers ids; the system wants its own
            self.client.call("trace", {"scope": self._scope(spec["scope"]), "id": raw}, ctx)

    def _op_probe(self, spec: dict, ctx: dict) -> None:
        if not self._supported("probe", ctx):
            return
        if not self.caps.stores:
            self.client.transcript.add({**ctx, "kind": "skip", "call": "probe",
                                        "reason": "the adapter declares no derived stores to probe"})
            return
        watch = bool(spec.get("stale")) or self.forgot  # after a forget, a store seen holding it once holds it
        self._observe(ctx, lambda pctx: self._probe_sweep(spec, pctx), watch=watch, held=None)

    def _probe_sweep(self, spec: dict, ctx: dict) -> list[dict]:
        start = len(self.client.transcript.records)
        for store in self.caps.stores:
            for name in spec["targets"]:
                t = self.case["targets"][name]
                needle = {"token": t["token"], "text": t.get("fact") or t["token"]}
                ok, result = self.client.call("probe", {"store": store, "scope": self._scope(spec["scope"]),
                                                        "needle": needle}, ctx)
                if ok and spec.get("stale") == name and found_in(result, t["token"]):
                    text = "\n".join(result["evidence"] + [i["text"] for i in result.get("items", [])])
                    self._judge(ctx, {"store": store}, f"(derived store {store})", name, text)
        return self.client.transcript.records[start:]

    def _op_assess(self, spec: dict, ctx: dict) -> None:
        """Ask every door the asked targets' questions and the history questions; judge stale mentions."""
        targets = self.case["targets"]
        queries = [q for n in spec.get("ask", []) for q in targets[n]["queries"]]
        queries += [q for n in spec.get("history", []) for q in targets[n].get("history_queries", [])]
        queries = list(dict.fromkeys(queries))
        wanted = spec.get("expect", spec.get("ask", []))

        def sweep(pctx: dict) -> list[dict]:
            scope, at = self._scope(spec["scope"]), self.clock.now()
            start = len(self.client.transcript.records)
            for door in self.caps.doors:
                for q in queries:
                    self.client.call("door", {"query": q, "scope": scope, "door": door, "at": at}, pctx)
            calls = self.client.transcript.records[start:]
            stale = spec.get("stale")
            if stale:
                own = set(targets[stale]["queries"])
                for call in calls:
                    if "result" in call and call["args"]["query"] in own and found_in(call["result"], targets[stale]["token"]):
                        self._judge(pctx, {"door": call["args"]["door"], "query": call["args"]["query"]},
                                    call["args"]["query"], stale, call["result"]["text"])
            return calls

        def held(calls: list[dict]) -> bool:
            op = OpRecords(ctx["index"], ctx["step"], spec, calls=calls)
            return not op.errors() and all(sight(op, targets[n]).served for n in wanted)

        self._observe(ctx, sweep, watch=bool(spec.get("stale")), held=held)

    def _judge(self, ctx: dict, where: dict, question: str, stale: str, text: str) -> None:
        if self.judge is None:
            return
        targets = self.case["targets"]
        current = targets.get("current", {}).get("token")
        body = self.judge.request(question, targets[stale]["token"], current, text)
        key = canonical(body)
        if key not in self.judged:  # a poll that shows the same text again is not judged (or paid for) twice
            if self.client.on_call is not None:
                self.client.on_call(ctx, "judge")
            self.judged[key] = self.judge.judge(body)
        ok, answer = self.judged[key]
        rec = {**ctx, "kind": "judge", **where, "target": stale, "request": body}
        rec["result" if ok else "error"] = answer
        self.client.transcript.add(rec)

    def _op_expect(self, spec: dict, ctx: dict) -> None:
        """Ask every door (and the raw recall) each target's questions; absent targets also by token."""
        targets = self.case["targets"]

        def held(calls: list[dict]) -> bool:
            op = OpRecords(ctx["index"], ctx["step"], spec, calls=calls)
            return not op.errors() and all(sight(op, targets[n]).served for n in spec.get("present", []))

        self._observe(ctx, lambda pctx: self._sweep(spec, pctx), watch=bool(spec.get("absent")), held=held)

    # ---------------------------------------------------------------- polling
    def _must_poll(self) -> bool:
        """No quiescence signal, or the last settle did not report quiescence: observe by polling."""
        if self.caps.support("settle") == "unsupported":
            return True
        settled = None
        for rec in self.client.transcript.records[self.case_start:]:
            settled = settled_after(settled, rec)
        return settled is not True

    def _observe(self, ctx: dict, sweep, watch: bool, held) -> None:
        """One sweep of a settled system; otherwise polls, every one recorded, and how it ended.

        ``watch``: the op checks that something is absent (or no longer current), so it is polled
        for the whole settle timeout: a value that shows up late, or flickers, is seen. Otherwise
        polling stops at the first poll where ``held`` holds, or at the timeout.
        """
        if not self._must_poll():
            sweep(ctx)
            return
        interval, timeout = self.settings.poll_interval_s, self.settings.settle_timeout_s
        polls = math.ceil(timeout / interval) + 1
        t0 = time.monotonic()
        poll, until = 0, "timeout"
        while True:
            calls = sweep({**ctx, "poll": poll})
            if self.client.unavailable:
                until = "unavailable"
                break
            if not watch and held is not None and held(calls):
                until = "held"
                break
            if poll + 1 >= polls:
                break
            poll += 1
            self._wait(max(0.0, t0 + poll * interval - time.monotonic()))
        self.client.transcript.add({**ctx, "kind": "polling", "polls": poll + 1, "until": until, "watch": watch,
                                    "interval_s": interval, "timeout_s": timeout})

    def _sweep(self, spec: dict, ctx: dict) -> list[dict]:
        queries: list[str] = []
        for name in [*spec.get("present", []), *spec.get("absent", [])]:
            queries.extend(self.case["targets"][name]["queries"])
        for name in spec.get("absent", []):
            queries.append(self.case["targets"][name]["token"])
        queries = list(dict.fromkeys(queries))
        scope, at = self._scope(spec["scope"]), self.clock.now()
        start = len(self.client.transcript.records)
        for door in self.caps.doors:
            for q in queries:
                self.client.call("door", {"query": q, "scope": scope, "door": door, "at": at}, ctx)
        if self.caps.support("recall") != "unsupported":
            for q in queries:
                self.client.call("recall", {"query": q, "scope": scope, "k": self.case.get("recall_k", 10),
                                            "at": at}, ctx)
        return self.client.transcript.records[start:]
