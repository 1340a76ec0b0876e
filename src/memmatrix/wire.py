"""The harness side of the adapter wire: endpoints and a client that never lets a failure pass.

An ``Endpoint`` moves one call to an adapter and back (over HTTP on loopback, or
in-process for unit tests). ``AdapterClient`` adds what every call needs: a timeout,
validation of the answer against schemas/wire.schema.json, and a transcript record.
A failed call becomes an error record, never an exception out of the run.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import requests

from . import schemas
from .adapterkit import Dispatcher
from .transcript import Transcript


class CallError(Exception):
    """One failed call. ``kind`` is timeout, connection, adapter, malformed, bad_request or unavailable."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message

    def as_record(self) -> dict:
        return {"kind": self.kind, "message": self.message}


class Endpoint(Protocol):
    def call(self, op: str, args: dict, timeout: float) -> Any: ...
    def wedged(self) -> bool: ...
    def close(self) -> None: ...


class HttpEndpoint:
    """An adapter server reached over JSON-over-HTTP (see adapterkit.py)."""

    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()

    def call(self, op: str, args: dict, timeout: float) -> Any:
        try:
            resp = self.session.post(f"{self.base_url}/call", json={"op": op, "args": args}, timeout=timeout)
        except requests.Timeout:
            raise CallError("timeout", f"{op} did not answer within {timeout:g} s") from None
        except requests.ConnectionError as exc:
            raise CallError("connection", f"{op}: adapter at {self.base_url} not reachable ({type(exc).__name__})") from None
        try:
            body = resp.json()
        except ValueError:
            raise CallError("malformed", f"{op} answered HTTP {resp.status_code} with a body that is not JSON: "
                            f"{resp.text[:200]!r}") from None
        if resp.status_code == 200 and isinstance(body, dict) and "result" in body:
            return body["result"]
        err = body.get("error") if isinstance(body, dict) else None
        if resp.status_code == 500 and isinstance(err, dict):
            raise CallError("adapter", f"{op} raised {err.get('type')}: {err.get('message')}")
        if resp.status_code == 502 and isinstance(err, dict):
            raise CallError("malformed", str(err.get("message")))
        if resp.status_code in (400, 404) and isinstance(err, dict):
            raise CallError("bad_request", f"{op}: {err.get('message')}")
        raise CallError("malformed", f"{op} answered HTTP {resp.status_code} with {str(body)[:200]}")

    def health(self, timeout: float = 2.0) -> dict:
        return self.session.get(f"{self.base_url}/health", timeout=timeout).json()

    def wedged(self) -> bool:
        try:
            return bool(self.health().get("busy"))
        except (requests.RequestException, ValueError):
            return True

    def close(self) -> None:
        self.session.close()


class InProcessEndpoint:
    """The adapter class in this process, behind the same Dispatcher and JSON round trip as the server."""

    def __init__(self, cls: type, runtime_config: dict):
        self.dispatcher = Dispatcher(cls, runtime_config)
        self._worker: threading.Thread | None = None

    def call(self, op: str, args: dict, timeout: float) -> Any:
        box: dict = {}

        def work() -> None:
            try:
                result = self.dispatcher.call(op, json.loads(json.dumps(args)))
            except BaseException as exc:  # recorded, never raised past the run
                box["error"] = exc
                return
            try:
                box["result"] = json.loads(json.dumps(result, allow_nan=False))
            except (TypeError, ValueError) as exc:
                box["malformed"] = f"{op} returned something that is not JSON: {exc}"

        self._worker = threading.Thread(target=work, daemon=True, name=f"adapter-{op}")
        self._worker.start()
        self._worker.join(timeout)
        if self._worker.is_alive():
            raise CallError("timeout", f"{op} did not answer within {timeout:g} s")
        if "malformed" in box:
            raise CallError("malformed", box["malformed"])
        if "error" in box:
            exc = box["error"]
            raise CallError("adapter", f"{op} raised {type(exc).__name__}: {str(exc)[:2000]}")
        return box["result"]

    def wedged(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def close(self) -> None:
        if not self.wedged():
            self.dispatcher.close()


@dataclass
class CallStats:
    """Latency per operation, kept outside the transcript (it is not deterministic)."""

    ms: dict[str, list[float]] = field(default_factory=dict)

    def add(self, op: str, ms: float) -> None:
        self.ms.setdefault(op, []).append(ms)

    def summary(self) -> dict:
        out = {}
        for op, values in sorted(self.ms.items()):
            v = sorted(values)
            out[op] = {"calls": len(v), "p50_ms": round(v[len(v) // 2], 3),
                       "p95_ms": round(v[min(len(v) - 1, int(len(v) * 0.95))], 3),
                       "total_ms": round(sum(v), 3)}
        return out


class AdapterClient:
    """Calls an adapter through an endpoint; validates, records and times every call."""

    def __init__(self, endpoint: Endpoint, transcript: Transcript, schemas_dir: Path, timeout_s: float):
        self.endpoint = endpoint
        self.transcript = transcript
        self.schemas_dir = schemas_dir
        self.timeout_s = timeout_s
        self.stats = CallStats()
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
            t0 = time.perf_counter()
            try:
                result = self.endpoint.call(op, args, timeout_s or self.timeout_s)
            finally:
                self.stats.add(op, (time.perf_counter() - t0) * 1000)
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
