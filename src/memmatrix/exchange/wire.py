"""The harness side of the adapter wire: endpoints and a client that never lets a failure pass.

An ``Endpoint`` moves one call to an adapter and back (over HTTP on loopback, or
in-process for unit tests). ``AdapterClient`` adds what every call needs: a timeout,
validation of the answer against schemas/wire.schema.json, and a transcript record.
A failed call becomes an error record, never an exception out of the run.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests

from ..common import schemas
from ..adapterkit import CALL_MS_HEADER, Dispatcher, raised_at
from .loopback import Connection
from ..common.stats import percentiles
from .overhead import Ledger
from .transcript import Transcript


#: Where a failed call came from, by its kind. ``system``: the system did not answer in time, or its process
#: went away; ``adapter``: the call raised inside the adapter (its code or the system under it: the message
#: names the exception) or broke the wire contract; ``harness``: memmatrix's own machinery (a runtime that
#: could not restart the system). Recorded on every error record and counted in the run's findings.
ORIGIN = {"timeout": "system", "connection": "system", "unavailable": "system", "adapter": "adapter",
          "malformed": "adapter", "bad_request": "adapter", "runtime": "harness"}


class CallError(Exception):
    """One failed call. ``kind`` is timeout, connection, adapter, malformed, bad_request or unavailable."""

    def __init__(self, kind: str, message: str, known: list[str] | None = None):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.known = known or []  # upstream issues this failure is known to be

    def as_record(self) -> dict:
        return {"kind": self.kind, "origin": ORIGIN.get(self.kind, "adapter"), "message": self.message,
                **({"known": self.known} if self.known else {})}


class Endpoint(Protocol):
    def call(self, op: str, args: dict, timeout: float) -> Any: ...
    def wedged(self) -> bool: ...
    def close(self) -> None: ...


class HttpEndpoint:
    """An adapter server reached over JSON-over-HTTP (see adapterkit.py).

    Calls go over one kept-alive connection (``loopback.Connection``): requests' per-call machinery (proxy
    look-up, hooks, adapters) cost about half a millisecond a call on loopback, ``http.client``'s header parsing
    a tenth, more than many systems' own work. ``session`` (requests) serves the rare health and shutdown
    requests."""

    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")
        self._session: requests.Session | None = None
        self.system_ms: float | None = None  # the last call's time inside the adapter, as its server measured it
        parts = urlsplit(self.base_url)
        self._conn = Connection(parts.hostname or "127.0.0.1", parts.port or 80)

    def _post(self, body: bytes, timeout: float) -> tuple[int, dict, bytes]:
        return self._conn.post("/call", body, timeout)

    def call(self, op: str, args: dict, timeout: float) -> Any:
        self.system_ms = None
        try:
            status, headers, raw = self._post(json.dumps({"op": op, "args": args}).encode(), timeout)
        except (TimeoutError, socket.timeout):
            raise CallError("timeout", f"{op} did not answer within {timeout:g} s") from None
        except OSError as exc:
            raise CallError("connection", f"{op}: adapter at {self.base_url} not reachable ({type(exc).__name__})") from None
        try:
            body = json.loads(raw)
        except ValueError:
            raise CallError("malformed", f"{op} answered HTTP {status} with a body that is not JSON: "
                            f"{raw[:200].decode(errors='replace')!r}") from None
        if status == 200 and isinstance(body, dict) and "result" in body:
            try:
                self.system_ms = float(headers[CALL_MS_HEADER.lower()])
            except (KeyError, ValueError):
                pass  # an adapter server that does not say: its whole round trip counts as the system's
            return body["result"]
        err = body.get("error") if isinstance(body, dict) else None
        if status == 500 and isinstance(err, dict):
            at = f" (at {err['where']})" if err.get("where") else ""
            raise CallError("adapter", f"{op} raised {err.get('type')}: {err.get('message')}{at}")
        if status == 502 and isinstance(err, dict):
            raise CallError("malformed", str(err.get("message")))
        if status in (400, 404) and isinstance(err, dict):
            raise CallError("bad_request", f"{op}: {err.get('message')}")
        raise CallError("malformed", f"{op} answered HTTP {status} with {str(body)[:200]}")

    @property
    def session(self) -> requests.Session:
        """For the rare health request, made when first needed (an embedded server says it is up on its pipe)."""
        if self._session is None:
            self._session = requests.Session()
            self._session.trust_env = False  # loopback: no proxy look-up in the environment
        return self._session

    def shutdown(self, timeout: float) -> None:
        """POST /shutdown on the kept-alive connection; raises OSError when the server does not answer."""
        self._conn.post("/shutdown", b"{}", timeout)

    def health(self, timeout: float = 2.0) -> dict:
        return self.session.get(f"{self.base_url}/health", timeout=timeout).json()

    def wedged(self) -> bool:
        try:
            return bool(self.health().get("busy"))
        except (requests.RequestException, ValueError):
            return True

    def close(self) -> None:
        self._conn.close()
        if self._session is not None:
            self._session.close()


class InProcessEndpoint:
    """The adapter class in this process, behind the same Dispatcher and JSON round trip as the server.

    Calls run on one worker thread that lives as long as the endpoint (a thread per call cost more than a
    small in-memory system's own work); a call that outlives its timeout leaves the worker busy (wedged)."""

    def __init__(self, cls: type, runtime_config: dict):
        self.dispatcher = Dispatcher(cls, runtime_config)
        self.system_ms: float | None = None
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._busy = threading.Event()
        self._worker = threading.Thread(target=self._serve, daemon=True, name="memmatrix-inprocess-adapter")
        self._worker.start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            op, args, box, done = job
            t0 = time.perf_counter()
            try:
                result = self.dispatcher.call(op, json.loads(json.dumps(args)))
                box["system_ms"] = (time.perf_counter() - t0) * 1000
                box["result"] = json.loads(json.dumps(result, allow_nan=False))
            except (TypeError, ValueError) as exc:
                if "system_ms" in box:
                    box["malformed"] = f"{op} returned something that is not JSON: {exc}"
                else:
                    box["error"] = exc
            except BaseException as exc:  # recorded, never raised past the run
                box["error"] = exc
            finally:
                self._busy.clear()
                done.set()

    def call(self, op: str, args: dict, timeout: float) -> Any:
        self.system_ms = None
        box: dict = {}
        done = threading.Event()
        self._busy.set()
        self._jobs.put((op, args, box, done))
        if not done.wait(timeout):
            raise CallError("timeout", f"{op} did not answer within {timeout:g} s")
        if "malformed" in box:
            raise CallError("malformed", box["malformed"])
        if "error" in box:
            exc = box["error"]
            at = raised_at(exc)
            raise CallError("adapter", f"{op} raised {type(exc).__name__}: {str(exc)[:2000]}"
                            + (f" (at {at})" if at else ""))
        self.system_ms = box["system_ms"]
        return box["result"]

    def wedged(self) -> bool:
        return self._busy.is_set()

    def close(self) -> None:
        if not self.wedged():
            self.dispatcher.close()
        self._jobs.put(None)  # the worker ends when it is free (a wedged one is a daemon thread)


@dataclass
class CallStats:
    """Latency per operation, kept outside the transcript (it is not deterministic)."""

    ms: dict[str, list[float]] = field(default_factory=dict)

    def add(self, op: str, ms: float) -> None:
        self.ms.setdefault(op, []).append(ms)

    def summary(self) -> dict:
        return {op: {"calls": len(v), **percentiles(v), "total_ms": round(sum(v), 3)}
                for op, v in sorted(self.ms.items())}


class AdapterClient:
    """Calls an adapter through an endpoint; validates, records and times every call."""

    def __init__(self, endpoint: Endpoint, transcript: Transcript, schemas_dir: Path, timeout_s: float,
                 budgets: dict | None = None):
        self.endpoint = endpoint
        self.transcript = transcript
        self.schemas_dir = schemas_dir
        self.timeout_s = timeout_s
        self.budgets = budgets or {}  # operation -> {"seconds", "why", "known"}: system.yaml's time budgets
        self.stats = CallStats()
        self.ledger = Ledger()  # the system's time against the harness's (timings.harness)
        self.unavailable: str | None = None
        self.on_call = None  # hook told (context, operation) before each call: the model gateway tags its records
        self._calls = 0

    def call(self, op: str, args: dict, context: dict, timeout_s: float | None = None) -> tuple[bool, Any]:
        """Run one call; returns (True, result) or (False, error record). Never raises CallError."""
        self._calls += 1
        try:
            if self.unavailable:
                raise CallError("unavailable", self.unavailable)
            if self.on_call is not None:
                self.on_call(context, op)
            budget = self.budgets.get(op)
            limit = timeout_s or (budget["seconds"] if budget else self.timeout_s)
            t0 = time.perf_counter()
            try:
                result = self.endpoint.call(op, args, limit)
            except CallError as err:
                if err.kind == "timeout" and budget and not timeout_s:
                    known = budget.get("known", [])
                    raise CallError("timeout", f"the system did not answer {op} within its budget of {limit:g} s "
                                    f"(declared in its folder: {budget['why']})"
                                    + (f"; known upstream: {', '.join(known)}" if known else ""), known) from None
                raise
            finally:
                t1 = time.perf_counter()
                self.stats.add(op, (t1 - t0) * 1000)
                self.ledger.call(t0, t1, getattr(self.endpoint, "system_ms", None))
            problems = schemas.errors(self.schemas_dir, "wire", result, definition=op)
            if problems:
                raise CallError("malformed", f"{op} answer does not fit wire.schema.json#/$defs/{op}: "
                                + "; ".join(problems[:5]))
        except CallError as err:
            went = None
            if err.kind == "timeout" and self.endpoint.wedged():
                went = (f"the adapter stopped answering: call {self._calls} ({op}) timed out "
                        f"and it is still busy; later calls were not made")
            elif err.kind == "connection":
                went = f"the adapter went away at call {self._calls} ({op}): {err.message}"
            rec = self.transcript.add_exchange(context, op, args, error=err.as_record())
            if went:
                self.unavailable = went
                self.transcript.add({**context, "kind": "unavailable", "message": went})
            return False, rec["error"]
        rec = self.transcript.add_exchange(context, op, args, result=result)
        return True, rec["result"]
