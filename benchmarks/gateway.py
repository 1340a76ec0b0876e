"""Benchmark: the model gateway on loopback (oracle mode), as figures side by side.

    python benchmarks/gateway.py [--requests 400] [--threads 1,8]

Prints requests/s and p50/p95 latency per request kind and concurrency. Run it on an idle
machine; compare figures only between runs on the same machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path

import requests

from memmatrix.model import Gateway, GatewaySettings

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "requests"


def load(name: str) -> tuple[str, dict]:
    d = json.loads((FIX / f"{name}.json").read_text())
    return d["path"], d["request"]


KINDS = {
    "mem0 2.x extract (33 KB prompt)": load("mem0-2.2.1-extract"),
    "graphiti EdgeDuplicate (responses)": load("graphiti-0.31.2-responses-EdgeDuplicate"),
    "embeddings, base64, 2 inputs": load("graphiti-0.31.2-embeddings"),
}


def bench(url: str, path: str, body: dict, total: int, threads: int) -> dict:
    lat: list[float] = []
    lock = threading.Lock()
    per = total // threads

    def worker():
        s = requests.Session()
        for _ in range(per):
            t0 = time.perf_counter()
            r = s.post(url.rsplit("/v1", 1)[0] + path, json=body)
            r.raise_for_status()
            with lock:
                lat.append((time.perf_counter() - t0) * 1000)

    start = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - start
    lat.sort()
    return {"rps": len(lat) / wall, "p50": statistics.median(lat), "p95": lat[int(len(lat) * 0.95) - 1]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--threads", default="1,8")
    ns = ap.parse_args()
    threads = [int(t) for t in ns.threads.split(",")]
    cases = [json.loads((ROOT / "cases" / p / "1.0.0.json").read_text()) for p in ("deletion", "contradiction")]
    with Gateway(GatewaySettings(), cases) as gw:
        print(f"memmatrix model gateway, oracle mode, loopback, {ns.requests} requests per cell\n")
        print(f"{'request':38} " + " ".join(f"{f'{t} thr req/s':>12} {'p50 ms':>8} {'p95 ms':>8}" for t in threads))
        for name, (path, body) in KINDS.items():
            row = [bench(gw.url, path, body, ns.requests, t) for t in threads]
            print(f"{name:38} " + " ".join(f"{r['rps']:12.0f} {r['p50']:8.2f} {r['p95']:8.2f}" for r in row))
        print(f"\nrecorded {len(gw.recorder.records)} calls; transcript {len(gw.recorder.text()) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
