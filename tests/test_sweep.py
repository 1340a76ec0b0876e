"""sweep and bisect end to end: a package whose behaviour flips at a known release, served by a loopback
package index, locked (uv) and installed into one environment per release like any system's."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import threading
import zipfile
from pathlib import Path

import pytest

from memmatrix.cli import main
from memmatrix.common.config import Config
from memmatrix.systems.locking import uv_binary

ROOT = Path(__file__).resolve().parents[1]
RELEASES = [f"1.0.{i}" for i in range(16)]  # 1.0.0 .. 1.0.15
FLIP = "1.0.11"                              # from here on, the audit quotes the deleted value


def wheel(version: str, quotes: bool) -> tuple[str, bytes]:
    """A pure-Python wheel of memmatrix-flipper, byte-for-byte the same every time it is built."""
    name = f"memmatrix_flipper-{version}"
    files = {
        "memmatrix_flipper/__init__.py": f"QUOTES_DELETED_VALUE = {quotes}\n",
        f"{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: memmatrix-flipper\nVersion: {version}\n",
        f"{name}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: memmatrix-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{name}.dist-info/RECORD"] = "\n".join(record + [f"{name}.dist-info/RECORD,,"]) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path, text in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0)), text)
    return f"{name}-py3-none-any.whl", buf.getvalue()


@pytest.fixture
def index():
    """A PEP 691 JSON simple index on loopback serving every release (and counting what is fetched)."""
    wheels = {}
    for i, v in enumerate(RELEASES):
        fname, data = wheel(v, quotes=RELEASES.index(v) >= RELEASES.index(FLIP))
        wheels[fname] = (data, f"2026-01-{i + 1:02d}T00:00:00Z")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_HEAD(self):
            self.do_GET(head=True)

        def do_GET(self, head=False):
            if self.path.rstrip("/") == "/simple/memmatrix-flipper":
                base = f"http://127.0.0.1:{self.server.server_port}/files/"
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": "memmatrix-flipper", "versions": RELEASES,
                                   "files": [{"filename": f, "url": base + f, "upload-time": t,
                                              "hashes": {"sha256": hashlib.sha256(d).hexdigest()}}
                                             for f, (d, t) in wheels.items()]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            elif self.path.startswith("/files/") and self.path[7:] in wheels:
                body, kind = wheels[self.path[7:]][0], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/simple"
    server.shutdown()


@pytest.mark.heavy
def test_sweep_then_bisect_pins_the_planted_flip_in_logarithmic_runs(tmp_path, index, monkeypatch, capsys):
    monkeypatch.setenv("MEMMATRIX_SYSTEMS", str(ROOT / "tests" / "fixtures" / "systems"))
    monkeypatch.setenv("MEMMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    uv_binary(Config.from_env())  # the lock tool comes from the real index
    monkeypatch.setenv("MEMMATRIX_INDEX_URL", index)
    monkeypatch.setenv("PIP_INDEX_URL", index)  # the environments install from the fixture's index
    out = tmp_path / "results"
    sweep = ["sweep", "--system", "flipper", "--versions", "1.0.0,1.0.15", "--protocol", "deletion", "--out", str(out)]
    assert main(sweep) == 0
    history = json.loads((out / "history" / "flipper.json").read_text())
    assert [r["version"] for r in history["releases"]] == RELEASES  # the index's list, recorded
    assert history["sweeps"][0]["versions"] == ["1.0.0", "1.0.15"]

    capsys.readouterr()
    assert main(["bisect", "--system", "flipper", "--protocol", "deletion", "--out", str(out)]) == 0
    runs = json.loads((out / "history" / "flipper.json").read_text())["bisections"][-1]["runs"]
    assert len(runs) == 4  # 14 releases between the samples: ceil(log2(15)) runs, not 14
    assert "bisect ran 4 release(s)" in capsys.readouterr().err

    assert main(["timeline", str(out), "--output", str(tmp_path / "timeline.md")]) == 0
    timeline = (tmp_path / "timeline.md").read_text()
    assert "| 1.0.10 → 1.0.11 | yes |" in timeline  # exactly the planted release, with both results linked
    assert "results/deletion/flipper/1.0.10/embedded/result.json" in timeline
    assert "results/deletion/flipper/1.0.11/embedded/result.json" in timeline
    changed = [ln for ln in timeline.splitlines() if "→" in ln and "| yes |" in ln]
    assert len(changed) == 1 and changed[0].count("· 10: P→F") == 4 and "· 9:" not in changed[0]
    assert main(["verify", str(out)]) == 0
    recorded = out / "history" / "flipper.json"
    good = recorded.read_text()
    forged = json.loads(good)
    forged["sweeps"][0]["versions"].append("1.0.99")  # a release the index never listed
    recorded.write_text(json.dumps(forged))
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    assert "release 1.0.99 was measured but the recorded index list does not hold it" in capsys.readouterr().out
    recorded.write_text(good)

    # a second sweep of the same releases runs them again with no lock and no install
    assert main(sweep + ["--again"]) == 0
    err = capsys.readouterr().err
    assert "running flipper@1.0.0" in err and "locking" not in err and "building the environment" not in err

    # a release the adapter declares it cannot drive is refused before anything runs
    assert main(["sweep", "--system", "flipper", "--versions", "0.0.0", "--out", str(out)]) == 2
