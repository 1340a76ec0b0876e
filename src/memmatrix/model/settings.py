"""Gateway settings, built from MEMMATRIX_MODEL_* variables when asked for, never at import."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..common.errors import ConfigError
from .imperfect import MODES as IMPERFECT_MODES, Imperfection, problem

#: the ablations by name, rate 1.0 (any MODE-RATE-sSEED of a mode is one too)
ABLATIONS = ("", *IMPERFECT_MODES, "flaky", "stall")

MODES = ("oracle", "proxy", "replay")

VARIABLES = {
    "MEMMATRIX_MODEL_MODE": "oracle (default, offline, deterministic), proxy (a real upstream) or replay (a recording)",
    "MEMMATRIX_MODEL_UPSTREAM_URL": "proxy: the upstream's OpenAI-compatible base URL, e.g. https://api.openai.com/v1",
    "MEMMATRIX_MODEL_API_KEY": "proxy: the upstream key (read from the environment only, never written anywhere)",
    "MEMMATRIX_MODEL_UPSTREAM_MODEL": "proxy: the chat model every request is pinned to",
    "MEMMATRIX_MODEL_UPSTREAM_EMBEDDING_MODEL": "proxy: the embedding model every request is pinned to",
    "MEMMATRIX_MODEL_SEED": "proxy: seed sent with every chat request (default 0)",
    "MEMMATRIX_MODEL_MAX_TOKENS": "proxy: max tokens of every answer (default 2000)",
    "MEMMATRIX_MODEL_REPLAY": "replay: the model-transcript.jsonl to answer from",
    "MEMMATRIX_MODEL_EMBEDDER": "oracle: hash (default) or minilm (needs the minilm extra)",
    "MEMMATRIX_MODEL_EMBED_DIMS": "oracle: dimensions of the hash embedder when a request names none (default 1536)",
    "MEMMATRIX_MODEL_ORACLE_ABLATION": "oracle: answer imperfectly on purpose, one error mode of a real model "
                                       "(nocorrection, duplicate, paraphrase, undated, invent, wrongarg, malformed; "
                                       "MODE-RATE-sSEED for a rate below 1, see docs/plumbing.md) or a provider "
                                       "fault ('flaky': the first asking of a quarter of distinct chat requests fails "
                                       "with HTTP 500; 'stall': those askings wait 10 s, then HTTP 504)",
}
#: oracle-stall: how long the first asking of a stalled request waits before the gateway gives up on it
STALL_S = 10.0


@dataclass(frozen=True)
class GatewaySettings:
    mode: str = "oracle"
    upstream_url: str | None = None
    api_key: str | None = None
    upstream_model: str | None = None
    upstream_embedding_model: str | None = None
    seed: int = 0
    max_tokens: int = 2000
    replay: Path | None = None
    embedder: str = "hash"
    embed_dims: int = 1536
    ablation: str = ""
    timeout_s: float = 120.0
    local: dict | None = None  # proxy to a local model (--model local:NAME): its file, runtime and sampler

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> "GatewaySettings":
        env = os.environ if env is None else env
        mode = overrides.pop("mode", None) or env.get("MEMMATRIX_MODEL_MODE") or "oracle"
        if mode not in MODES:
            raise ConfigError(f"MEMMATRIX_MODEL_MODE={mode!r} is not one of {', '.join(MODES)}")

        def integer(name: str, default: int) -> int:
            raw = env.get(name)
            try:
                return int(raw) if raw else default
            except ValueError:
                raise ConfigError(f"{name}={raw!r} is not an integer") from None

        s = cls(mode=mode, upstream_url=env.get("MEMMATRIX_MODEL_UPSTREAM_URL") or None,
                api_key=env.get("MEMMATRIX_MODEL_API_KEY") or None,
                upstream_model=env.get("MEMMATRIX_MODEL_UPSTREAM_MODEL") or None,
                upstream_embedding_model=env.get("MEMMATRIX_MODEL_UPSTREAM_EMBEDDING_MODEL") or None,
                seed=integer("MEMMATRIX_MODEL_SEED", 0), max_tokens=integer("MEMMATRIX_MODEL_MAX_TOKENS", 2000),
                replay=Path(env["MEMMATRIX_MODEL_REPLAY"]) if env.get("MEMMATRIX_MODEL_REPLAY") else None,
                embedder=env.get("MEMMATRIX_MODEL_EMBEDDER") or "hash",
                embed_dims=integer("MEMMATRIX_MODEL_EMBED_DIMS", 1536),
                ablation=env.get("MEMMATRIX_MODEL_ORACLE_ABLATION") or "")
        from dataclasses import replace
        s = replace(s, **overrides)
        s.check()
        return s

    def check(self) -> None:
        if self.mode == "proxy":
            missing = [n for n, v in (("MEMMATRIX_MODEL_UPSTREAM_URL", self.upstream_url),
                                      ("MEMMATRIX_MODEL_UPSTREAM_MODEL", self.upstream_model)) if not v]
            if missing:
                raise ConfigError(f"proxy mode needs {' and '.join(missing)}; see the README section on real providers")
        if self.mode == "replay" and (self.replay is None or not self.replay.is_file()):
            raise ConfigError(f"replay mode needs MEMMATRIX_MODEL_REPLAY to name a model-transcript.jsonl "
                              f"(got {self.replay})")
        why = problem(self.ablation)
        if why:
            raise ConfigError(f"MEMMATRIX_MODEL_ORACLE_ABLATION: {why}")
        if self.embedder not in ("hash", "minilm"):
            raise ConfigError(f"MEMMATRIX_MODEL_EMBEDDER={self.embedder!r} is not hash or minilm")

    def identity(self, oracle_version: str, embedder_name: str) -> dict:
        """What the stamp records about the model: enough to say which runs are comparable."""
        if self.mode == "proxy":
            return {"mode": "proxy", "id": self.upstream_model, "oracle_version": None,
                    "embedding_model": self.upstream_embedding_model, "temperature": 0, "seed": self.seed,
                    "max_tokens": self.max_tokens, **({"local": self.local} if self.local else {})}
        if self.mode == "replay":
            return {"mode": "replay", "id": f"replay:{self.replay.name}", "oracle_version": None}
        imperfect = Imperfection.parse(self.ablation)
        note = "answers from the case files' gold facts: each system's plumbing given a perfect extractor"
        if imperfect is not None:
            note = f"answers from the case files' gold facts, imperfect on purpose: {imperfect.describe()}"
        return {"mode": "oracle", "id": "memmatrix-oracle",
                "oracle_version": oracle_version + (f"+{self.ablation}" if self.ablation else ""),
                "embedding_model": embedder_name, "note": note}


def ablation_of(model: dict) -> str:
    """The oracle ablation a stamp's model block records: what ``GatewaySettings.identity`` puts after the ``+`` of
    ``oracle_version`` ("" for none, and for a model that is not the oracle)."""
    return str(model.get("oracle_version") or "").partition("+")[2]
