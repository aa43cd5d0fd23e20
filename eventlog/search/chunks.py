"""Long messages in vector search: a message longer than one chunk (embed.chunk_spans) is stored with its chunks'
vectors besides its own (build.py: `kdoc`, `kstart`, `kvec`, `kscale`), and scores as its best chunk — a passage in
the middle of a long text is found even though the mean of its chunks barely resembles the query. The message is
still one document: it is ranked, and reported, once, with the chunk that matched (`best`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import embed
from .rank import Scored


def _cosines(arr: dict[str, Any], lo: int = 0, hi: int | None = None, qvec: Any = None) -> np.ndarray:
    vec = np.asarray(arr["kvec"][lo:hi], np.float32)
    return (vec @ qvec) * np.asarray(arr["kscale"][lo:hi], np.float32)


def raise_to_best_chunk(s: Scored, units: list[tuple[dict[str, Any], dict[str, Any]]], qvec: np.ndarray) -> None:
    """Each multi-chunk message's cosine in `s` becomes its best chunk's (exact: the first pass leaves it alone)."""
    for g, uid in enumerate(s.uids.tolist()):
        arr = units[uid][1]
        if "kdoc" not in arr or not len(arr["kdoc"]):
            continue
        kdoc = np.asarray(arr["kdoc"])
        firsts = np.flatnonzero(np.r_[True, kdoc[1:] != kdoc[:-1]])
        docs = kdoc[firsts]
        best = np.maximum.reduceat(_cosines(arr, qvec=qvec), firsts)
        rows = s.rows[g]
        if rows is None:
            at = docs.astype(np.int64)
        else:
            i = np.minimum(np.searchsorted(rows, docs), max(len(rows) - 1, 0))
            keep = (rows[i] == docs) if len(rows) else np.zeros(len(docs), bool)
            at, best = i[keep].astype(np.int64), best[keep]
        pos = s.starts[g] + at
        s.vec[pos] = np.fmax(best, s.vec[pos]) if s.exact is None else best
        if s.exact is not None:
            s.exact[pos] = True


def best(arr: dict[str, Any], row: int, qvec: np.ndarray | None, length: int, shift: int = 0) -> dict[str, int]:
    """{"index", "start", "end"} (characters of the message's text, `length` long) of the chunk of message `row` that
    matches the query best; the first chunk without a query vector, or for a message of one chunk. The chunks were
    cut from what the model read, in which the text starts at `shift` (after the sender's name)."""
    lo = hi = 0
    if qvec is not None and "kdoc" in arr:
        lo, hi = (int(x) for x in np.searchsorted(arr["kdoc"], [row, row + 1]))
    if hi - lo < 2:
        return {"index": 0, "start": 0, "end": min(length, embed.CHUNK_CHARS - shift)}
    k = int(np.argmax(_cosines(arr, lo, hi, qvec)))
    start = int(arr["kstart"][lo + k]) - shift
    return {"index": k, "start": max(start, 0), "end": max(0, min(length, start + embed.CHUNK_CHARS))}
