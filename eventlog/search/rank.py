"""Ranking over the index units in scope: BM25 (global statistics over the filtered set), cosine similarity on the
vectors, their min-max-normalised weighted fusion (`hybrid`) and reciprocal rank fusion (`rrf`).
Filters (chat, days, direction) select documents *before* anything is scored or normalised.

Vector scoring is exhaustive int8 by default; with candidates (SearchQuery.candidates) it is two-pass. First every
document in scope gets an *estimated* cosine from its unit's projection (project.py: 64 int8 numbers a message, the
unit's mean and top principal axes; 1/8 of the int8 vectors' bytes). Then `rescore` computes the exact int8 cosine of
the candidates — the best by the mode's estimated fused score (the candidates; `default_candidates` when not given),
the CEIL best and FLOOR lowest by estimated cosine (for the min-max range) — and, until none is left, of every document
in the final top k that still carries an estimate. So every hit's score is the exact int8 score; an estimate only
decides which documents are looked at closely, and the remaining estimates are clamped into the exact range."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .project import estimate
from .store import read_rows, release
from .tokens import token_ids

K1, B = 1.2, 0.75
RRF_K = 60
VEC_CHUNK = 512
CANDIDATES, SHARE = 2000, 170  # the first pass rescores max(CANDIDATES, n / SHARE) by default (docs/search.md):
#                               recall@10 0.9976 against exhaustive with 2,000 of 345,539 real vectors (1/173)
FLOOR = 32  # the lowest by estimated cosine, rescored for the bottom of the min-max range
CEIL = 256  # hybrid/rrf: the best by estimated cosine, rescored for the top of the range (their hits come from
#             the candidates by estimated fused score)


@dataclass
class Scored:
    """Every document in scope: which unit, which row, its BM25 and cosine scores (NaN where not computed)."""

    unit: np.ndarray
    row: np.ndarray
    bm25: np.ndarray
    vec: np.ndarray
    ts: np.ndarray
    exact: np.ndarray | None = None  # where vec is the exact int8 cosine (else the projection's estimate)

    @property
    def vec_nan_free(self) -> bool:
        return not np.isnan(self.vec.min()) if len(self.vec) else True


def score_units(units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], text: str, chats: set[str] | None,
                direction: int | None, qvec: np.ndarray | None, since_ms: int | None = None,
                until_ms: int | None = None, projs: list[dict[str, Any] | None] | None = None) -> Scored:
    """BM25 (and, with qvec, cosine) of the documents in scope. Without qvec only documents holding a query term are
    returned (every other BM25 score is 0); with it, every document in scope. With `projs` (one per unit, None where a
    unit has none), a unit's cosines are the projection's estimates (project.py; `exact` False), else exact int8."""
    q_terms = np.unique(token_ids(text))
    masks, posts = [], []
    n_docs, sum_dl = 0, 0
    df = np.zeros(len(q_terms), np.int64)
    for rec, arr in units:
        mask = None
        if chats is not None:
            mask = np.array([c in chats for c in rec["chats"]], bool)[arr["file"]] if rec["chats"] else \
                np.zeros(len(arr["dl"]), bool)
        if direction is not None:
            mask = (arr["dir"] == direction) if mask is None else mask & (arr["dir"] == direction)
        if since_ms is not None:
            mask = (arr["ts"] >= since_ms) if mask is None else mask & (arr["ts"] >= since_ms)
        if until_ms is not None:
            mask = (arr["ts"] < until_ms) if mask is None else mask & (arr["ts"] < until_ms)
        masks.append(mask)
        if mask is None:
            n_docs += rec["docs"]
            sum_dl += rec["dl_sum"] if "dl_sum" in rec else int(arr["dl"].sum())
        else:
            n_docs += int(mask.sum())
            sum_dl += int(arr["dl"][mask].sum())
        terms, tptr = arr["terms"], arr["tptr"]
        unit_posts = []
        if len(terms):
            at = np.searchsorted(terms, q_terms)
            for j, (t, i) in enumerate(zip(q_terms.tolist(), at.tolist())):
                if i < len(terms) and terms[i] == t:
                    lo, hi = int(tptr[i]), int(tptr[i + 1])
                    docs = arr["pdoc"][lo:hi]
                    tf = arr["ptf"][lo:hi]
                    if mask is not None:
                        keep = mask[docs]
                        docs, tf = docs[keep], tf[keep]
                    df[j] += len(docs)
                    unit_posts.append((j, docs, tf))
        posts.append(unit_posts)
    avgdl = sum_dl / n_docs if n_docs else 1.0
    idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df])  # Lucene's BM25 idf
    if qvec is None:
        return _bm25_only(units, masks, posts, idf, avgdl)
    # every document in scope, unit after unit: positions off .. off + n; BM25 from the postings in one pass at the end
    at_l, tf_l, dl_l, j_l, sizes, out_t, out_v, out_x = [], [], [], [], [], [], [], []
    kept = []
    off = 0
    for ui, ((rec, arr), mask, unit_posts) in enumerate(zip(units, masks, posts)):
        rows = None if mask is None else np.flatnonzero(mask)
        n = rec["docs"] if rows is None else len(rows)
        if not n:
            continue
        where = None if mask is None else np.cumsum(mask) - 1  # document → its position among `rows`
        dl = arr["dl"]
        for j, docs, tf in unit_posts:
            at_l.append((docs if where is None else where[docs]) + off)
            tf_l.append(tf)
            dl_l.append(dl[docs])
            j_l.append(np.full(len(docs), j, np.int32))
        kept.append((ui, rows))
        sizes.append(n)
        off += n
        out_t.append(arr["ts"] if rows is None else arr["ts"][rows])
        proj = projs[ui] if projs is not None else None
        if proj is not None:
            out_v.append(estimate(proj, qvec, rows))
            out_x.append(False)
            release(proj)  # small (≈ 70 bytes a message + the axes): cheap to drop, and RSS stays bounded
        elif "vec" in arr:
            out_v.append(cosine_rows(arr["vec"], arr["scale"], qvec, np.arange(n) if rows is None else rows))
            out_x.append(True)
            release(arr)  # resident memory stays bounded whatever the index size (the pages stay in the page cache)
        else:
            out_v.append(np.full(n, np.nan, np.float32))
            out_x.append(True)
    if not kept:
        e = np.zeros(0, np.float32)
        return Scored(np.zeros(0, np.int32), np.zeros(0, np.int32), e, e, np.zeros(0, np.int64))
    counts = np.array(sizes)
    starts = np.cumsum(counts) - counts
    unit = np.repeat(np.array([ui for ui, _ in kept], np.int32), counts)
    row = np.arange(off, dtype=np.int32) - np.repeat(starts, counts).astype(np.int32)
    for i, (_, rows) in enumerate(kept):
        if rows is not None:
            row[starts[i]:starts[i] + counts[i]] = rows
    bm = np.zeros(off, np.float32)
    if at_l:
        tf = np.concatenate(tf_l).astype(np.float32)
        dl = np.concatenate(dl_l).astype(np.float32)
        w = idf.astype(np.float32)[np.concatenate(j_l)] * tf / (tf + K1 * (1 - B + B * dl / avgdl))  # Lucene: no (k1 + 1)
        bm = np.bincount(np.concatenate(at_l), weights=w, minlength=off).astype(np.float32)
    return Scored(unit, row, bm, np.concatenate(out_v), np.concatenate(out_t),
                  np.repeat(np.array(out_x, bool), counts))


def _bm25_only(units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], masks: list[np.ndarray | None],
               posts: list[list[tuple[int, np.ndarray, np.ndarray]]], idf: np.ndarray, avgdl: float) -> Scored:
    """BM25 alone: the documents holding a query term (every other score is 0)."""
    out_u, out_r, out_b, out_t = [], [], [], []
    for ui, ((rec, arr), unit_posts) in enumerate(zip(units, posts)):
        if not unit_posts:
            continue
        rows = np.unique(np.concatenate([docs for _, docs, _ in unit_posts]))
        if not len(rows):
            continue
        bm = np.zeros(len(rows), np.float32)
        dl = arr["dl"]
        for j, docs, tf in unit_posts:
            tf = tf.astype(np.float32)
            bm[np.searchsorted(rows, docs)] += idf[j] * tf / (tf + K1 * (1 - B + B * dl[docs] / avgdl))  # Lucene
        out_u.append(np.full(len(rows), ui, np.int32))
        out_r.append(rows.astype(np.int32))
        out_b.append(bm)
        out_t.append(arr["ts"][rows])
    if not out_u:
        e = np.zeros(0, np.float32)
        return Scored(np.zeros(0, np.int32), np.zeros(0, np.int32), e, e, np.zeros(0, np.int64))
    b = np.concatenate(out_b)
    return Scored(np.concatenate(out_u), np.concatenate(out_r), b, np.full(len(b), np.nan, np.float32),
                  np.concatenate(out_t), np.ones(len(b), bool))


def rescore(s: Scored, units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], qvec: np.ndarray,
            idx: np.ndarray) -> None:
    """Replace the estimates at idx with exact int8 cosines, unit by unit."""
    assert s.exact is not None
    idx = idx[~s.exact[idx]]
    if not len(idx):
        return
    idx = idx[np.argsort(s.unit[idx], kind="stable")]
    bounds = np.flatnonzero(np.diff(s.unit[idx])) + 1
    for part in np.split(idx, bounds):
        arr = units[int(s.unit[part[0]])][1]
        if "vec" not in arr:
            continue
        order = np.argsort(s.row[part])
        part = part[order]
        rows = s.row[part]
        s.vec[part] = (read_rows(arr, "vec", rows).astype(np.float32) @ qvec) * arr["scale"][rows]
        s.exact[part] = True


def rank_vectors(s: Scored, units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], qvec: np.ndarray, mode: str,
                 weight: float, k: int, candidates: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the k best indexes, best first; the scores) for a vector-using mode: the estimates pick the candidates, the
    exact int8 cosine scores them, and every hit returned is scored exactly. candidates ≥ the documents in scope is
    exhaustive int8 scoring; so is a Scored whose cosines are all exact (score_units without projections)."""
    n = len(s.vec)
    candidates = default_candidates(n) if candidates is None else candidates
    if not n:
        return np.zeros(0, np.int64), s.vec
    if s.exact is None or s.exact.all():  # scored exhaustively
        score, ok = fuse(s, mode, weight)
        return top(score, ok, s.ts, k), score
    nan_free = s.vec_nan_free
    has = None if nan_free else ~np.isnan(s.vec)
    by_vec = s.vec if nan_free else np.where(has, s.vec, -np.inf)
    # by estimated cosine: the candidates themselves (vector), or only enough to pin the top of the min-max range
    seeds = [_best(by_vec, candidates if mode == "vector" else min(candidates, CEIL)),
             _best(-by_vec, FLOOR)]
    if mode != "vector":
        seeds.append(_best(fuse(s, mode, weight)[0], candidates))
    seeds = np.unique(np.concatenate(seeds))
    some_exact = bool(s.exact.any())  # units scored exactly from the start (no projection)
    rescore(s, units, qvec, seeds)
    exact_vals = s.vec[s.exact] if some_exact else s.vec[seeds[s.exact[seeds]]]
    if len(exact_vals):
        # estimates stay inside the exact range: they never stretch the min-max normalisation (exact values are
        # inside it by definition; NaN stays NaN)
        np.clip(s.vec, float(np.nanmin(exact_vals)), float(np.nanmax(exact_vals)), out=s.vec)
    while True:
        score, ok = fuse(s, mode, weight)
        best = top(score, ok, s.ts, k)
        todo = best[~s.exact[best] & (True if has is None else has[best])]
        if not len(todo):
            return best, score
        rescore(s, units, qvec, todo)


def default_candidates(n: int) -> int:
    """How many documents the first pass hands to exact scoring by default (per list: by estimated cosine and by the
    mode's estimated fused score): CANDIDATES, or 1/SHARE of the documents in scope when that is more."""
    return max(CANDIDATES, -(-n // SHARE))


_SAMPLE = 8192


def _best(x: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the k largest values (any order; NaN never). On a large array a strided sample gives a threshold
    that the k-th largest value is very likely above; the partition then runs over the values above it only (when
    fewer than k are, over everything: the answer is the same either way)."""
    if len(x) <= k:
        return np.arange(len(x))
    if len(x) > 16 * _SAMPLE and k < len(x) // 16:
        sample = x[:: len(x) // _SAMPLE]
        want = min(len(sample) - 1, int(k * len(sample) / len(x) * 1.5) + 8)  # a margin above the expected rank
        t = np.partition(sample, len(sample) - 1 - want)[len(sample) - 1 - want]
        if not np.isnan(t):
            idx = np.flatnonzero(x >= t)
            if len(idx) >= k:
                return idx[np.argpartition(-x[idx], k - 1)[:k]]
    return np.argpartition(-np.nan_to_num(x, nan=-np.inf), k - 1)[:k]


def cosine_rows(vec: np.ndarray, scale: np.ndarray, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cosine of the query with the int8 rows (row ≈ int8 * scale, unit length), VEC_CHUNK rows at a time through one
    reused float32 buffer that stays in the CPU cache (measured: 512 rows ≈ 4× faster than 16,384)."""
    out = np.empty(len(rows), np.float32)
    buf = np.empty((VEC_CHUNK, vec.shape[1]), np.float32)
    whole = len(rows) == len(vec)
    for s in range(0, len(rows), VEC_CHUNK):
        r = rows[s:s + VEC_CHUNK]
        b = buf[:len(r)]
        b[...] = vec[s:s + len(r)] if whole else vec[r]
        np.dot(b, qvec, out=out[s:s + len(r)])
    out *= scale[rows]
    return out


def minmax(x: np.ndarray) -> np.ndarray:
    if not len(x):
        return x
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    if not hi > lo:
        return np.zeros_like(x) if hi <= 0 else np.ones_like(x)
    return (x - lo) / (hi - lo)


def _ranks(x: np.ndarray) -> np.ndarray:
    """1-based rank of each element by descending value."""
    order = np.argsort(-x, kind="stable")
    r = np.empty(len(x), np.int64)
    r[order] = np.arange(1, len(x) + 1)
    return r


def fuse(s: Scored, mode: str, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """(score of every candidate, mask of candidates that count as hits) for a mode."""
    if mode == "bm25":
        return s.bm25, s.bm25 > 0
    if mode == "vector":
        return s.vec, ~np.isnan(s.vec)
    if mode == "hybrid":  # weight · minmax(vec, NaN → 0) + (1 − weight) · minmax(bm25), as one affine pass
        vec = s.vec if s.vec_nan_free else np.nan_to_num(s.vec, nan=0.0)
        score = np.empty(len(vec), np.float32)
        const = 0.0
        for x, w in ((vec, weight), (s.bm25, 1 - weight)):
            lo, hi = (float(x.min()), float(x.max())) if len(x) else (0.0, 0.0)
            if hi > lo:
                a = w / (hi - lo)
                const -= a * lo
                if x is vec:
                    np.multiply(x, np.float32(a), out=score)
                else:
                    score += x * np.float32(a)
            else:
                const += w if hi > 0 else 0.0
                if x is vec:
                    score.fill(0)
        score += np.float32(const)
        return score, np.ones(len(score), bool)
    if mode == "rrf":
        rb = np.where(s.bm25 > 0, 1.0 / (RRF_K + _ranks(s.bm25)), 0.0)
        rv = 1.0 / (RRF_K + _ranks(np.nan_to_num(s.vec, nan=-1.0)))
        return (rb + rv).astype(np.float32), np.ones(len(rb), bool)
    raise ValueError(f"unknown mode {mode}")


def top(score: np.ndarray, ok: np.ndarray, ts: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the k best candidates, best first; ties go to the newer message."""
    idx = _best(score if ok.all() else np.where(ok, score, -np.inf), 4 * k)
    idx = idx[ok[idx]]
    order = np.lexsort((-ts[idx], -score[idx]))
    return idx[order][:k]
