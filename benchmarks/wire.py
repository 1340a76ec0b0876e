"""The adapter wire's own cost per call, on loopback: the harness's connection (``loopback.Connection``) against
``http.client`` on one kept-alive connection (what the harness used before), both to one adapterkit server whose
adapter answers a door call with ten items at once, so what is measured is the wire: JSON and HTTP on both sides.

    python benchmarks/wire.py [--calls 2000]

Prints the round trip per call and the time inside the adapter (as its server measured it) for each client, and
the ratio of their wire times, in one run. Then the same calls again while the adapter takes a system's time to
answer (sleeping, or working on its own core), with the harness's work on every answer (the schema check,
normalising, recording) timed after it: the same code, as a real system's run makes it pay, as ratios of the
adapter answering at once.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memmatrix.adapterkit import CALL_MS_HEADER
from memmatrix.common import schemas
from memmatrix.exchange.loopback import Connection
from memmatrix.exchange.transcript import Transcript

ADAPTER = '''
class Door:
    ITEMS = [{"id": f"id-{i}", "text": f"a memory of the user, number {i}, in a sentence of some length",
              "score": 0.5, "created_at": "2026-01-01T00:00:00Z"} for i in range(10)]
    ITEMS[3]["text"] = "the code of the user's storage locker is QX-4471-TRV"  # the case's value, in one item
    def __init__(self, config):
        self.idle_s, self.work_s = config.get("idle_ms", 0) / 1000, config.get("work_ms", 0) / 1000
        self.heap = [str(i) * 8 for i in range(200_000)] if self.work_s else []  # some megabytes to walk
    def capabilities(self): return {}
    def reset(self): pass
    def write(self, scope, at, messages): return {"ids": []}
    def door(self, query, scope, door, at):
        import json, time
        time.sleep(self.idle_s)
        end = time.perf_counter() + self.work_s
        while time.perf_counter() < end:  # a system's own work: its process on a core, its memory in the caches
            sum(len(s) for s in self.heap[::97])
        return {"text": json.dumps(self.ITEMS), "items": self.ITEMS}
'''


def serve(folder: Path) -> tuple[subprocess.Popen, int]:
    (folder / "door.py").write_text(ADAPTER)
    port_file = folder / "port"
    proc = subprocess.Popen([sys.executable, str(ROOT / "src/memmatrix/adapterkit.py"), "--adapter",
                             f"{folder / 'door.py'}:Door", "--data-dir", str(folder), "--port", "0",
                             "--port-file", str(port_file)], stdout=subprocess.DEVNULL)
    for _ in range(400):
        if port_file.exists():
            return proc, int(port_file.read_text())
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("the adapter server did not start")


class HttpClient:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def post(self, path: str, body: bytes, timeout: float):
        self.conn.request("POST", path, body, {"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def measure(client, calls: int, record=None) -> tuple[float, float, float]:
    """(round trip, time inside the adapter, the harness's own work after the answer) per call, in ms."""
    body = json.dumps({"op": "door", "args": {"query": "What is my dog called?", "scope": "user-1",
                                              "door": "prompt", "at": "2026-01-01T00:00:00Z"}}).encode()
    inside = trip = work = 0.0
    for _ in range(calls):
        t0 = time.perf_counter()
        status, headers, raw = client.post("/call", body, 10)
        answer = json.loads(raw)["result"]
        t1 = time.perf_counter()
        if record is not None:
            record(answer)
        work += time.perf_counter() - t1
        trip += t1 - t0
        inside += float(headers[CALL_MS_HEADER.lower()])
    return trip * 1000 / calls, inside / calls, work * 1000 / calls


def recorder():
    """What the harness does with every answer: check it against the wire schema, normalise and record it."""
    transcript = Transcript()
    transcript.normalize.set_needles(["QX-4471-TRV", "storage locker code"])

    def record(answer: dict) -> None:
        assert not schemas.errors(ROOT / "schemas", "wire", answer, definition="door")
        transcript.add_exchange({"case": "c", "index": 1}, "door", {"query": "q"}, result=answer)
    return record


SETTINGS = [("answers at once", {}), ("sleeps 1 ms", {"idle_ms": 1}), ("sleeps 10 ms", {"idle_ms": 10}),
            ("sleeps 30 ms", {"idle_ms": 30}), ("works 10 ms", {"work_ms": 10}), ("works 30 ms", {"work_ms": 30})]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, port = serve(Path(tmp))
        try:
            init = json.dumps({"op": "init", "args": {"config": {}}}).encode()
            clients = {"http.client": HttpClient(port), "loopback.Connection": Connection("127.0.0.1", port)}
            for c in clients.values():
                c.post("/call", init, 10)
            rows = {}
            for _ in range(2):  # the second round is reported: both warm
                rows = {name: measure(c, ns.calls) for name, c in clients.items()}
            conn, record, waits = clients["loopback.Connection"], recorder(), {}
            for name, config in SETTINGS:  # the same calls, the adapter taking a system's time to answer
                conn.post("/call", json.dumps({"op": "init", "args": {"config": config}}).encode(), 10)
                per_call = max(config.get("idle_ms", 0), config.get("work_ms", 0))
                waits[name] = measure(conn, max(50, min(ns.calls, int(3000 / per_call) if per_call else ns.calls)),
                                      record)
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"{ns.calls} door calls, 10 items each, on loopback (ms per call)\n")
    print(f"{'client':22} {'round trip':>10} {'adapter':>8} {'wire':>7}")
    for name, (trip, inside, _) in rows.items():
        print(f"{name:22} {trip:10.3f} {inside:8.3f} {trip - inside:7.3f}")
    old, new = (rows[n][0] - rows[n][1] for n in ("http.client", "loopback.Connection"))
    print(f"\nthe wire with loopback.Connection costs {new / old:.2f}x what it costs with http.client")
    print("\nthe same call through loopback.Connection, the adapter taking a system's time (sleeping, or working on "
          "its own\ncore), and the harness's work on each answer (schema check, normalise, record), ms per call:\n")
    print(f"{'the adapter':18} {'wire':>7} {'harness work':>13} {'both':>7} {'x at once':>10}")
    base = sum(waits[SETTINGS[0][0]][i] for i in (0, 2)) - waits[SETTINGS[0][0]][1]
    for name, (trip, inside, work) in waits.items():
        both = trip - inside + work
        print(f"{name:18} {trip - inside:7.3f} {work:13.3f} {both:7.3f} {both / base:9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
