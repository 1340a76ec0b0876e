"""The Letta server: its schema (alembic, from the letta sdist), its process, and its REST API.

- Migrations: the wheel ships no ``alembic/``; the sdist of the same release does. It is fetched once
  per environment with pip (``--no-binary :all:``), checked against the sha256 pinned here (also in
  the lock), and its ``alembic/`` + ``alembic.ini`` kept in the environment (``<prefix>/share``).
  ``alembic upgrade head`` runs on every start (a no-op on an up-to-date schema).
- Or a running server (the compose runtime's letta service): ``LettaClient`` on its URL, left running.
- The server: ``letta server`` on a free loopback port, HOME and LETTA_DIR inside the state folder,
  the LLM and embeddings through the memmatrix gateway (OPENAI_BASE_URL, a dummy key), a pooled
  database engine (``NON_DEFAULT_ENV``), tiktoken's files from the environment (``tiktoken_cache``). Health:
  ``GET /v1/health/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from postgres import free_port, wait_ready

#: each drivable release's sdist (PyPI's sha256), the source of its alembic migrations; the same hash is in its lock
SDIST = {
    "0.15.1": "9f890f3a457b5f8947d06aeef102449852084f5db47c9e6898ff8240ebaa46ea",
    "0.16.0": "e8c0855a6396dd9255fc75ff3088cf10f67c36fc42961e1714c39d99c913de02",
    "0.16.1": "8d157d57c8f979cc4bdd821baac3a92a97db85c5a50f15c01c00dc6c94540ca0",
    "0.16.2": "62eb84288291dd07862cf45c4a7656fca14ca7462878cd0066cea3cab49fe754",
    "0.16.4": "6881749980d36f6708b0b61b11f7b07cebafb3ec0c5e203d0c214436d9d161b9",
    "0.16.5": "a71fa5e25973ead9211a22da4bdf15bc894fb749e02f73d3f39e93d1994c1d0f",
    "0.16.6": "4e0380a499799975495654c3349d70dcb1d42384498e4980c12f331f7cc2a9f6",
    "0.16.7": "f7acef8f3e9bbbbf63582208f6ebf0ad9cd11869c79b204adaa20c9c3a0633b8",
    "0.16.8": "363e26989e552c859ce2e7961d484acee6fccfc1e7b16e8f644b1ae1ccd754a3",
}
#: what the adapter sets that is not Letta's default (everything else is), also stated in the declaration's notes.
#: Letta's default (disable_sqlalchemy_pooling=True) opens a new asyncpg connection per session (NullPool), and
#: there a connect runs with asyncpg's own 60 s timeout (the 30 s pg_pool_timeout is passed only to a pool). Some of
#: those connects to a loopback Postgres hang until that timeout inside a step: with provider tracing on (Letta's
#: default) the trace write awaited after every LLM call opens one, so every step stalls 60 s. A pool reuses its
#: connections and neither stall happens (docs/research/letta-claims-setup.md).
NON_DEFAULT_ENV = {
    "LETTA_DISABLE_SQLALCHEMY_POOLING": "false",
}
#: the adapter option provider_trace=off (not the default): Letta writes no provider_traces rows
TRACE_OFF = {"LETTA_TRACK_PROVIDER_TRACE": "false"}


class LettaError(RuntimeError):
    pass


def tiktoken_cache() -> dict:
    """TIKTOKEN_CACHE_DIR at the tiktoken files the environment already ships (llama-index, a Letta dependency,
    bundles cl100k_base and points tiktoken there the same way while it loads its tokenizer). Letta before 0.16
    counts context tokens with tiktoken, which otherwise downloads the file on first use: offline, GET /context
    fails. tiktoken checks the file's sha256 either way. Empty when the variable is already set or no file ships."""
    from importlib.util import find_spec
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return {}
    spec = find_spec("llama_index.core")
    folder = Path(spec.origin).parent / "_static" / "tiktoken_cache" if spec and spec.origin else None
    return {"TIKTOKEN_CACHE_DIR": str(folder)} if folder and folder.is_dir() else {}


def migrations(version: str) -> Path:
    """The folder holding alembic.ini and alembic/ of letta ``version``, from its sdist, fetched once."""
    home = Path(sys.prefix) / "share" / f"memmatrix-letta-{version}"
    if (home / "alembic.ini").exists():
        return home
    if version not in SDIST:
        raise LettaError(f"no sdist hash pinned for letta {version}; add it to SDIST in systems/letta/server.py")
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "req.txt"
        req.write_text(f"letta=={version} --hash=sha256:{SDIST[version]}\n")
        out = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                              "--require-hashes", "--disable-pip-version-check", "-q", "-d", tmp, "-r", str(req)],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
        archive = Path(tmp) / f"letta-{version}.tar.gz"
        if out.returncode != 0 or not archive.exists():
            raise LettaError(f"fetching the letta {version} sdist (for its alembic migrations) failed: "
                             f"{(out.stderr or out.stdout)[-600:]}; check that PyPI is reachable")
        if hashlib.sha256(archive.read_bytes()).hexdigest() != SDIST[version]:
            raise LettaError(f"the letta {version} sdist does not match its pinned sha256")
        stage = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{home.name}-"))
        with tarfile.open(archive) as tf:
            top = f"letta-{version}/"
            members = [m for m in tf.getmembers() if m.name.startswith((top + "alembic/", top + "alembic.ini"))]
            for m in members:
                m.name = m.name[len(top):]
            if hasattr(tarfile, "data_filter"):
                tf.extractall(stage, members=members, filter="data")
            else:  # Python < 3.11.4 (Debian 12's 3.11.2): the data filter's checks by hand
                bad = [m.name for m in members if not (m.isfile() or m.isdir()) or m.name.startswith("/")
                       or ".." in Path(m.name).parts]
                if bad:
                    raise LettaError(f"the letta {version} sdist holds unsafe members: {bad[:3]}")
                tf.extractall(stage, members=members)
        try:
            os.rename(stage, home)  # atomic: a concurrent run either sees all of it or fetches it again
        except OSError:
            shutil.rmtree(stage, ignore_errors=True)
    return home


class LettaClient:
    """Letta's REST API at ``base_url`` (a server of the compose runtime's letta service, or one started here)."""

    def __init__(self, base_url: str):
        self.base_url = base_url.rstrip("/")

    def call(self, method: str, path: str, body=None, query: dict | None = None, timeout: float = 300):
        url = f"{self.base_url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None}, doseq=True)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise LettaError(f"Letta {method} {path} answered {exc.code}: {exc.read()[:800].decode(errors='replace')}")
        return json.loads(raw) if raw.strip() else None

    def healthy(self) -> bool:
        try:
            return self.call("GET", "/v1/health/", timeout=2).get("status") == "ok"
        except (OSError, LettaError, ValueError, AttributeError):
            return False

    def stop(self) -> None:
        """A server this process did not start is left alone."""


class LettaServer(LettaClient):
    def __init__(self, state: Path, pg_uri: str, model: dict, log, extra_env: dict | None = None):
        super().__init__("http://127.0.0.1:0")
        self.state = state
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.pg_uri = pg_uri  # the pooled engine asks for SSL unless the URI says otherwise; alembic gets it plain
        home = state / "home"
        (home / ".letta").mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TZ", "TMPDIR", "SSL_CERT_FILE",
                                                                 "NO_PROXY", "no_proxy") or k.startswith("LC_")}
        self.env = {**base, "HOME": str(home), "LETTA_DIR": str(home / ".letta"), "LETTA_PG_URI": f"{pg_uri}?sslmode=disable",
                    "OPENAI_BASE_URL": model["base_url"], "OPENAI_API_KEY": model["api_key"],
                    "PYTHONDONTWRITEBYTECODE": "1", **tiktoken_cache(), **NON_DEFAULT_ENV, **(extra_env or {})}

    def migrate(self, version: str) -> None:
        folder = migrations(version)
        alembic = Path(sys.prefix) / "bin" / "alembic"
        out = subprocess.run([str(alembic), "upgrade", "head"], cwd=folder, env={**self.env, "LETTA_PG_URI": self.pg_uri}, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=600)
        self.log.write(f"$ alembic upgrade head\n{out.stdout[-4000:]}{out.stderr[-4000:]}\n")
        self.log.flush()
        if out.returncode != 0:
            raise LettaError(f"alembic upgrade head failed (exit {out.returncode}): {out.stderr[-800:]}")

    def start(self, timeout_s: float = 240) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        cmd = [str(Path(sys.prefix) / "bin" / "letta"), "server", "--host", "127.0.0.1", "--port", str(self.port)]
        self.proc = subprocess.Popen(cmd, env=self.env, cwd=self.state, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=False)
        wait_ready(self.healthy, self.proc, "letta server", self.state / "letta.log", timeout_s, LettaError, 0.5)

    def stop(self, timeout_s: float = 2.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 1.0)):
            try:
                proc.send_signal(sig)
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                return
