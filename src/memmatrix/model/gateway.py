"""The model gateway: an OpenAI-compatible server on loopback that every system's model calls go through.

Modes: ``oracle`` answers from the case files' gold facts (offline, deterministic), ``proxy``
forwards to a real upstream with the model, temperature, seed and answer length pinned, and
``replay`` answers from a recorded model transcript. Every call is recorded.

    with Gateway(GatewaySettings(), [case_file_dict], dialects) as gw:   # dialects: the system's DialectSource
        openai_base_url = gw.url          # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from ..adapterkit import stop_serving
from ..common.canon import sha256_json
from ..common.errors import OracleModuleError
from .dialects.common import Reply, approx_tokens, chat_completion, response_object
from .dialectsource import DialectSource, load_dialects
from .embed import encode_base64, make_embedder
from .gold import GoldIndex
from .oracle import DialectError, Oracle
from .record import ModelRecorder
from .serving import (TOKEN_RENDERING, BadRequest, EventStream, completion_events, embedding_inputs, include_usage, models_answer,
                      response_events, unstreamed)
from .settings import STALL_S, GatewaySettings
from .upstream import Replay, ReplayMiss, UpstreamError, forward, normalize_request, normalized_sha256

CHAT_MODEL = "memmatrix-oracle"
EMBED_MODEL = "memmatrix-embed"


def adapter_models(settings: GatewaySettings) -> dict:
    """What adapters are told to ask for (any name works; proxy mode pins the upstream's)."""
    dims = 384 if settings.embedder == "minilm" else settings.embed_dims
    return {"chat_model": CHAT_MODEL, "embedding_model": EMBED_MODEL, "embedding_dims": dims}


class InjectedFault(Exception):
    """A provider failure the gateway makes on purpose (oracle-flaky)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # systems call concurrently (some gather 20 requests at once)


class Gateway:
    def __init__(self, settings: GatewaySettings, case_files: list[dict], dialects: DialectSource | None = None,
                 host: str = "127.0.0.1", port: int = 0):
        self.settings = settings
        self.host, self.port = host, port
        self.configure(case_files, dialects)
        self.embedder = make_embedder(settings.embedder, settings.embed_dims)
        self.recorder = ModelRecorder(settings.mode)
        self.replay = Replay(settings.replay) if settings.mode == "replay" else None
        self.session = requests.Session()
        self.upstream = {"ok": 0, "errors": 0, "replay_misses": 0, "first_error": None}
        self.inflight = 0  # calls received and not yet answered: a run may not end on one (proxy, replay)
        self._inflight_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._failed: set[str] = set()  # oracle-flaky: the requests that have failed once

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "Gateway":
        self._server = _Server((self.host, self.port), _handler(self))
        self.port = self._server.server_address[1]
        # the loop looks at shutdown()'s flag when its select() returns: stop() wakes it with a connection, so
        # the poll can be long (a 5 ms poll woke this process 200 times a second for the whole run)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True,
                         name="memmatrix-gateway").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            stop_serving(self._server)
            self._server = None
        self.session.close()

    def __enter__(self) -> "Gateway":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def identity(self) -> dict:
        ident = self.settings.identity(self.oracle.version, getattr(self.embedder, "name", "none"))
        if self.replay is not None:  # a replay is named by the recording's content and the model that made it
            ident.update(id=f"replay:{self.replay.sha256[:16]}", recording_sha256=self.replay.sha256,
                         recorded_model=self.replay.recorded_model)
        return ident

    def models(self) -> dict:
        return adapter_models(self.settings)

    def configure(self, case_files: list[dict], dialects: DialectSource | None) -> None:
        """The gold the oracle answers from, and the run's system's dialects (oracle mode only: in proxy mode
        this process holds the upstream key, and no module sent over the wire may run beside it)."""
        if dialects is not None and self.settings.mode != "oracle":
            raise OracleModuleError(f"the gateway runs a system's oracle module only in oracle mode (this one is in "
                                    f"{self.settings.mode} mode); send no dialects")
        self.oracle = Oracle(GoldIndex(case_files, self.settings.ablation),
                             load_dialects(dialects) if dialects is not None else ())

    def state(self) -> dict:
        """Everything a run needs from the gateway when it ends."""
        rows = self.recorder.ordered()
        return {"transcript": self.recorder.text(rows), "cost": self.recorder.cost(rows),
                "latency": self.recorder.latency(),
                "identity": self.identity(), "upstream": dict(self.upstream), "inflight": self.inflight}

    # ------------------------------------------------------------------ requests
    def handle(self, method: str, path: str, raw: bytes) -> tuple[int, dict | EventStream]:
        if method == "GET" and (path.startswith("/v1/models") or path.startswith("/models")):
            t0 = time.perf_counter()
            status, answer = models_answer(path, (CHAT_MODEL, EMBED_MODEL))
            model = path.split("/models", 1)[1].lstrip("/") or None
            self.recorder.add({"endpoint": "/v1/models" + (f"/{model}" if model else ""), "kind": "models",
                               "request": {"method": "GET", "model": model}, "status": status,
                               **({"response": answer} if status == 200 else {})}, (time.perf_counter() - t0) * 1000)
            return status, answer
        if method == "GET" and path == "/health":
            return 200, {"ok": True, "mode": self.settings.mode}
        if method == "GET" and path == "/_memmatrix/state":
            return 200, self.state()
        if method != "POST":
            return 404, _error(f"no route {method} {path}", "not_found")
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return 400, _error("the request body is not JSON", "invalid_request_error")
        if path == "/_memmatrix/context":
            self.recorder.set_context(body if isinstance(body, dict) else {})
            return 200, {"ok": True}
        if path == "/_memmatrix/gold":  # a gateway running as a service gets the run's case files over the wire
            if not isinstance(body, dict) or not isinstance(body.get("case_files"), list):
                return 400, _error("'case_files' must be a list of case files", "invalid_request_error")
            try:  # and the run's system's dialects, as the module's text
                dialects = DialectSource.from_wire(body["dialects"]) if body.get("dialects") is not None else None
                self.configure(body["case_files"], dialects)
            except OracleModuleError as exc:
                return 400, _error(str(exc), "invalid_request_error")
            return 200, {"ok": True}
        routes = {"/v1/chat/completions": ("chat", self._chat), "/v1/responses": ("chat", self._chat),
                  "/v1/embeddings": ("embedding", self._embeddings)}
        if path not in routes:
            return 404, _error(f"no route POST {path}; the gateway serves {sorted(routes)}", "not_found")
        kind, fn = routes[path]
        with self._inflight_lock:
            self.inflight += 1
        try:
            return self._serve(path, kind, fn, body)
        finally:
            with self._inflight_lock:
                self.inflight -= 1

    def _serve(self, path: str, kind: str, fn, body) -> tuple[int, dict]:
        t0 = time.perf_counter()
        try:
            if not isinstance(body, dict):
                raise BadRequest("the request body must be a JSON object")
            status, response, meta = fn(path, body)
        except BadRequest as exc:
            return 400, _error(str(exc), "invalid_request_error")
        except InjectedFault as exc:
            status, response = exc.status, _error(str(exc), "server_error")
            meta = {"error": str(exc), "error_kind": "fault"}
        except (UpstreamError, ReplayMiss) as exc:
            status, response = getattr(exc, "status", 409), _error(str(exc), "upstream_error")
            key = "replay_misses" if isinstance(exc, ReplayMiss) else "errors"
            self.upstream[key] += 1
            self.upstream["first_error"] = self.upstream["first_error"] or str(exc)[:500]
            meta = {"error": str(exc)[:2000], "error_kind": "replay_miss" if isinstance(exc, ReplayMiss) else "upstream"}
        except Exception as exc:  # a dialect that breaks is surfaced, never papered over
            said = str(exc) if isinstance(exc, DialectError) else f"{type(exc).__name__}: {exc}"
            status, response, meta = 500, _error(f"oracle failed: {said}", "server_error"), \
                {"error": said, "error_kind": "gateway"}
        record = {"endpoint": path, "kind": kind, "request": normalize_request(body), "status": status, **meta}
        if status == 200 and "response" not in record:
            record["response"] = response
        self.recorder.add(record, (time.perf_counter() - t0) * 1000)
        if status == 200 and kind == "chat" and body.get("stream") is True:  # recorded whole, sent as events
            if path.endswith("/responses"):
                return status, response_events(response)
            return status, completion_events(response, include_usage(body))
        return status, response

    def _maybe_fail(self, body: dict) -> None:
        """The provider failing mid-write: the first asking of a chat request whose content hash starts with 0-3
        (a quarter of them, the same ones on every run) answers HTTP 500 (oracle-flaky), or stalls ``STALL_S``
        seconds and then answers HTTP 504 as a proxy that gave up waiting does (oracle-stall); asked again, it
        is answered. What a system does with the failure (retry, time out, fail the write, or drop what it was
        told) is what the run measures."""
        h = normalized_sha256(body)
        if h[0] not in "0123":
            return
        with self._inflight_lock:
            first = h not in self._failed
            self._failed.add(h)
        if not first:
            return
        if self.settings.ablation == "stall":
            time.sleep(STALL_S)
            raise InjectedFault(504, f"injected provider stall (oracle-stall) on request {h[:12]}: no answer in "
                                     f"{STALL_S:g} s; ask again")
        raise InjectedFault(500, f"injected provider failure (oracle-flaky) on request {h[:12]}: ask again")

    def _chat(self, path: str, body: dict) -> tuple[int, dict, dict]:
        if path.endswith("/completions") and not (isinstance(body.get("messages"), list) and body["messages"]):
            raise BadRequest("'messages' must be a non-empty list")
        if path.endswith("/responses") and not body.get("input"):
            raise BadRequest("'input' is required")
        if self.settings.mode != "oracle":
            response = self._elsewhere(path, body)
            usage = response.get("usage") or {}
            return 200, response, {"usage": {"in": usage.get("prompt_tokens", usage.get("input_tokens", 0)),
                                             "out": usage.get("completion_tokens", usage.get("output_tokens", 0))},
                                   **self._provenance(self.settings.upstream_model)}
        if self.settings.ablation in ("flaky", "stall"):
            self._maybe_fail(body)
        reply: Reply = self.oracle.chat(body)
        rid = normalized_sha256(body)[:12]  # from the content as recorded: never from today's date
        response = response_object(body, reply, rid) if path.endswith("/responses") else chat_completion(body, reply, rid)
        usage = response["usage"]
        return 200, response, {"dialect": reply.dialect, "matched": reply.matched,
                               "usage": {"in": usage.get("prompt_tokens", usage.get("input_tokens")),
                                         "out": usage.get("completion_tokens", usage.get("output_tokens"))}}

    def _embeddings(self, path: str, body: dict) -> tuple[int, dict, dict]:
        inputs, rendered = embedding_inputs(body.get("input"))
        if self.settings.mode != "oracle":  # a real upstream takes token ids as they are
            response = self._elsewhere(path, body)
            return 200, response, {"usage": {"inputs": len(inputs)},
                                   **self._provenance(self.settings.upstream_embedding_model)}
        dims = body.get("dimensions")
        if dims is not None and (not isinstance(dims, int) or dims < 8):
            raise BadRequest("'dimensions' must be an integer of at least 8")
        b64 = body.get("encoding_format") == "base64"
        data, width = [], 0
        for i, text in enumerate(inputs):
            vec = self.embedder(text, dims)
            width = len(vec)
            data.append({"object": "embedding", "index": i, "embedding": encode_base64(vec) if b64 else vec})
        tokens = sum(len(t.split()) if rendered else approx_tokens(t) for t in inputs)
        response = {"object": "list", "data": data, "model": body.get("model", EMBED_MODEL),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        # oracle vectors are re-derivable from the input: record their digest, not 1536 floats each
        return 200, response, {"usage": {"inputs": len(inputs)}, "response_sha256": sha256_json(response),
                               "response": {"digest_only": True, "inputs": len(inputs), "dims": width},
                               **({"input_rendering": TOKEN_RENDERING} if rendered else {})}

    def _provenance(self, model: str | None) -> dict:
        """Who answered a non-oracle call: the pinned upstream model, or the recording."""
        if self.settings.mode == "replay":
            return {"replayed": True}
        return {"upstream_model": model}

    def _elsewhere(self, path: str, body: dict) -> dict:
        if self.settings.mode == "replay":
            return self.replay.answer(path, body)
        response = forward(path, unstreamed(body), self.settings, self.session)
        self.upstream["ok"] += 1
        return response


def _error(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _handler(gateway: Gateway):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, fmt, *args):
            pass

        def _serve(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else b""
            status, body = gateway.handle(method, self.path.split("?", 1)[0], raw)
            stream = isinstance(body, EventStream)
            data = body.data if stream else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

    return Handler
