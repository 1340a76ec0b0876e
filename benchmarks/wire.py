"""The adapter wire's own cost per call, on loopback: the harness's connection (``loopback.Connection``) against
``http.client`` on one kept-alive connection (what the harness used before), both to one adapterkit server whose
adapter answers a door call with ten items at once, so what is measured is the wire: JSON and HTTP on both sides.

    python benchmarks/wire.py [--calls 2000]

Prints the round trip per call and the time inside the adapter (as its server measured it) for each client, and
the ratio of their wire times, in one run.
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

from memmatrix.adapterkit import CALL_MS_HEADER  # noqa: E402
from memmatrix.loopback import Connection  # noqa: E402

ADAPTER = '''
class Door:
    ITEMS = [{"id": f"id-{i}", "text": f"a memory of the user, number {i}, in a sentence of some length",
              "score": 0.5, "created_at": "2026-01-01T00:00:00Z"} for i in range(10)]
    def __init__(self, config): pass
    def capabilities(self): return {}
    def reset(self): pass
    def write(self, scope, at, messages): return {"ids": []}
    def door(self, query, scope, door, at):
        import json
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


def measure(client, calls: int) -> tuple[float, float]:
    """(round trip, time inside the adapter) per call, in ms."""
    body = json.dumps({"op": "door", "args": {"query": "What is my dog called?", "scope": "user-1",
                                              "door": "prompt", "at": "2026-01-01T00:00:00Z"}}).encode()
    inside = 0.0
    t0 = time.perf_counter()
    for _ in range(calls):
        status, headers, raw = client.post("/call", body, 10)
        json.loads(raw)
        inside += float(headers[CALL_MS_HEADER.lower()])
    return (time.perf_counter() - t0) * 1000 / calls, inside / calls


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
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"{ns.calls} door calls, 10 items each, on loopback (ms per call)\n")
    print(f"{'client':22} {'round trip':>10} {'adapter':>8} {'wire':>7}")
    for name, (trip, inside) in rows.items():
        print(f"{name:22} {trip:10.3f} {inside:8.3f} {trip - inside:7.3f}")
    old, new = (rows[n][0] - rows[n][1] for n in ("http.client", "loopback.Connection"))
    print(f"\nthe wire with loopback.Connection costs {new / old:.2f}x what it costs with http.client")
    return 0


if __name__ == "__main__":
    sys.exit(main())
