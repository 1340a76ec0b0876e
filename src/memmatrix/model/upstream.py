"""Proxy and replay: the two non-oracle ways the gateway answers."""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from pathlib import Path

import requests

from ..common.canon import canonical, read_text, sha256_bytes, sha256_json
from .settings import GatewaySettings


def normalize_request(body: dict) -> dict:
    """Wall-clock times in a prompt (a system may write today's date, or its memories' stamps) become ~wallclock,
    a bare wall-clock date ~today, so runs on different days record equal requests."""
    return json.loads(_normalized(body)[0])


def normalized_sha256(body: dict) -> str:
    """``sha256_json(normalize_request(body))``, without parsing and writing the text again where no wall-clock date
    is in it (the canonical text of a value read back from canonical text is that text)."""
    text, same = _normalized(body)
    return sha256_bytes((text if same else canonical(json.loads(text))).encode())


def _normalized(body: dict) -> tuple[str, bool]:
    """The request's text with its wall-clock times replaced, and whether it is still the request's canonical text."""
    from ..common.patterns import _DATETIME, wall_dates as window
    text = canonical(body)
    days = window()
    if not any(d in text for d in days):
        return text, True  # no wall-clock date: nothing below would change (a match needs one of them)
    text = _DATETIME.sub(lambda m: "~wallclock" if m.group(1) in days else m.group(0), text)
    for d in sorted(days):
        text = text.replace(d, "~today")
    return text, False


class UpstreamError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def pin(path: str, body: dict, s: GatewaySettings) -> dict:
    """The request as sent upstream: model, temperature, seed and answer length pinned."""
    out = dict(body)
    if path.endswith("/embeddings"):
        if s.upstream_embedding_model:
            out["model"] = s.upstream_embedding_model
        return out
    out["model"] = s.upstream_model
    out["temperature"] = 0
    if path.endswith("/responses"):
        out["max_output_tokens"] = min(int(out.get("max_output_tokens") or s.max_tokens), s.max_tokens)
    else:
        out["seed"] = s.seed
        key = "max_completion_tokens" if "max_completion_tokens" in out else "max_tokens"
        out[key] = min(int(out.get(key) or s.max_tokens), s.max_tokens)
    return out


def forward(path: str, body: dict, s: GatewaySettings, session: requests.Session) -> dict:
    url = s.upstream_url.rstrip("/") + path.removeprefix("/v1")
    headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
    try:
        resp = session.post(url, json=pin(path, body, s), headers=headers, timeout=s.timeout_s)
    except requests.RequestException as exc:
        raise UpstreamError(502, f"upstream not reachable: {type(exc).__name__}") from None
    if resp.status_code != 200:
        raise UpstreamError(502, f"upstream answered HTTP {resp.status_code}: {resp.text[:300]}")
    try:
        return resp.json()
    except ValueError:
        raise UpstreamError(502, "upstream answered something that is not JSON") from None


class ReplayMiss(Exception):
    pass


class Replay:
    """Answers from a recorded model transcript by request hash, in recorded order for repeats."""

    def __init__(self, path: Path):
        self.by_key: dict[str, deque] = defaultdict(deque)
        self.recorded: list[tuple[str, str]] = []  # (endpoint, canonical request) in recorded order
        text = read_text(path)
        self.sha256 = sha256_bytes(text.encode())
        self.recorded_model = None  # the upstream model that answered the recording
        for n, line in enumerate(text.splitlines(), 1):
            rec = json.loads(line)
            self.recorded_model = self.recorded_model or rec.get("upstream_model")
            if "response" not in rec:
                continue
            req = normalize_request(rec["request"])
            self.by_key[self.key(rec["endpoint"], req)].append(rec["response"])
            self.recorded.append((rec["endpoint"], canonical(req)))

    @staticmethod
    def key(endpoint: str, request: dict) -> str:
        return sha256_json({"endpoint": endpoint, "request": request})

    def answer(self, endpoint: str, body: dict) -> dict:
        req = normalize_request(body)
        queue = self.by_key.get(self.key(endpoint, req))
        if queue:
            response = queue[0]
            if len(queue) > 1:
                queue.popleft()
            return response
        raise ReplayMiss(self.first_difference(endpoint, canonical(req)))

    def first_difference(self, endpoint: str, text: str) -> str:
        """Name the recorded request closest to this one and where they first differ."""
        same = [(i, r) for i, (e, r) in enumerate(self.recorded) if e == endpoint]
        if not same:
            return f"the recording holds no request to {endpoint}"

        def common(a: str, b: str) -> int:
            n = 0
            for x, y in zip(a, b):
                if x != y:
                    break
                n += 1
            return n

        i, best = max(same, key=lambda ir: common(ir[1], text))
        at = common(best, text)
        clip = lambda s: re.sub(r"\s+", " ", s[max(0, at - 60): at + 60])  # noqa: E731
        return (f"request to {endpoint} is not in the recording; it first differs from recorded request #{i} "
                f"at character {at}: recorded …{clip(best)}… now …{clip(text)}…")
