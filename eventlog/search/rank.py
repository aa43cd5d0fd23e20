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
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..store.layout import parse_relpath
from .project import estimate
from .store import read_rows, release
from .tokens import query_terms

K1, B = 1.2, 0.75
RRF_K = 60
# Conversational context, in the hybrid mode (docs/search.md "Context"): a message's BM25 part is its own score plus
# CONTEXT_GAIN times the best own score among the CONTEXT_TURNS messages before and after it in its chat's day file
# (the order they were logged) within CONTEXT_GAP_MS of it, counting only messages in scope. In a conversation the
# words of a question are often in the turn that asked or the one that answered, not in the turn that holds the fact
# ("Yes, last Friday, with my sister!"). Hybrid ranks every message in scope anyway, so the boost only reorders;
# `--mode bm25` stays plain BM25 (its hits are the messages holding a query word, the baseline hybrid is held to).
# One turn each side (the turn a message answers or that answers it) at half its own weight, chosen on LoCoMo's
# conversations 0-4 and the project's evaluation together (docs/search.md "Context"): 2 turns gained 1.4 points R@10
# more on LoCoMo and cost the project's evaluation a question; a gain of 1.0 gained nothing at R@10.
CONTEXT_TURNS, CONTEXT_GAIN = 1, 0.5
CONTEXT_GAP_MS = 30 * 60_000  # a neighbour counts only within this time of the message: a later exchange is not context
VEC_CHUNK = 512
CANDIDATES, SHARE = 2000, 170  # the first pass rescores max(CANDIDATES, n / SHARE) by default (docs/search.md):
#                               recall@10 0.9976 against exhaustive with 2,000 of 345,539 real vectors (1/173)
FLOOR = 32  # the lowest by estimated cosine, rescored for the bottom of the min-max range
CEIL = 256  # hybrid/rrf: the best by estimated cosine, rescored for the top of the range (their hits come from
#             the candidates by estimated fused score)
# The projection estimates (the largest part of a first-pass query) run on two threads when the machine has two CPUs
# for this process and enough rows are in scope: numpy's int8 → float32 copy and the product release the GIL, each
# thread writes its own units' slices of one array, so the scores are the same bit for bit (tests/test_search_rank.py).
# Wall time drops, CPU time does not (docs/search.md measures both); threads=1 (SearchQuery.threads) turns it off.
def default_threads() -> int:
    """Threads for the projection estimates: two where this process may run on two CPUs, else one."""
    return min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


PARALLEL_MIN = 200_000  # rows of projection estimates below which one thread does them all
_POOL: tuple[int, ThreadPoolExecutor] | None = None  # (pid that made it, the pool): a forked child makes its own
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="eventlog-estimate"))
        return _POOL[1]


def _estimates(jobs: list[tuple[dict[str, Any], np.ndarray | None, np.ndarray]], qvec: np.ndarray,
               threads: int) -> None:
    """estimate() of each (projection, rows, out) job into its `out`; with threads > 1 and enough rows, half of the
    rows (whole units, in order) on a pool thread while this thread does the rest."""
    def run(part: list[tuple[dict[str, Any], np.ndarray | None, np.ndarray]]) -> None:
        for proj, rows, out in part:
            estimate(proj, qvec, rows, out)

    total = sum(len(out) for _, _, out in jobs)
    if threads < 2 or total < PARALLEL_MIN or len(jobs) < 2:
        run(jobs)
    else:
        acc, cut = 0, len(jobs) - 1
        for i, (_, _, out) in enumerate(jobs):
            acc += len(out)
            if acc >= total / 2:
                cut = max(1, min(i + (acc - total / 2 < len(out) / 2), len(jobs) - 1))
                break
        other = _pool().submit(run, jobs[cut:])
        try:
            run(jobs[:cut])
        finally:
            other.result()
    for proj, _, _ in jobs:
        # small (≈ 70 bytes a message + the axes): cheap to drop, and RSS stays bounded. Measured: keeping the
        # projections resident between queries saves ≈ 10 ms of page faults a query at 1 M but took the bench's
        # peak RSS to 594 MB (docs/search.md), so they are released as before
        release(proj)


@dataclass
class Scored:
    """Every document in scope, kept unit after unit: its BM25 and cosine scores (NaN where not computed). Which unit
    and row a position is comes from `starts`/`uids`/`rows` (locate), computed for the few positions that need it,
    not for every document."""

    bm25: np.ndarray
    vec: np.ndarray
    exact: np.ndarray | None  # where vec is the exact int8 cosine (else the projection's estimate)
    starts: np.ndarray  # first position of each kept unit, and the end (len(kept) + 1)
    uids: np.ndarray  # the unit index (in `units`) of each kept unit
    rows: Sequence[np.ndarray | None]  # each kept unit's rows in scope, ascending (None: all of them)
    tss: list[np.ndarray]  # each kept unit's whole `ts` array
    vrange: tuple[float, float] | None = None  # (min, max) of vec when known without a pass (rank_vectors)
    _bmr: tuple[float, float] | None = None

    @property
    def vec_nan_free(self) -> bool:
        return not np.isnan(self.vec.min()) if len(self.vec) else True

    def bm25_range(self) -> tuple[float, float]:
        if self._bmr is None:
            b = self.bm25
            self._bmr = (float(b.min()), float(b.max())) if len(b) else (0.0, 0.0)
        return self._bmr

    def locate(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kept-unit number, unit index, row) of each position in idx."""
        idx = np.asarray(idx, np.int64)
        k = np.searchsorted(self.starts, idx, "right") - 1
        row = idx - self.starts[k]
        if any(r is not None for r in self.rows):
            for g in np.unique(k).tolist():
                r = self.rows[g]
                if r is not None:
                    sel = k == g
                    row[sel] = r[row[sel]]
        return k, self.uids[k], row

    def ts_at(self, idx: np.ndarray) -> np.ndarray:
        k, _, row = self.locate(idx)
        out = np.empty(len(k), np.int64)
        for g in np.unique(k).tolist():
            sel = k == g
            out[sel] = self.tss[g][row[sel]]
        return out


def _empty() -> Scored:
    e = np.zeros(0, np.float32)
    return Scored(e, e, np.zeros(0, bool), np.zeros(1, np.int64), np.zeros(0, np.int32), [], [])


def score_units(units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], text: str, chats: set[str] | None,
                direction: int | None, qvec: np.ndarray | None, since_ms: int | None = None,
                until_ms: int | None = None, projs: list[dict[str, Any] | None] | None = None,
                threads: int | None = None, accounts: set[str] | None = None, context: bool = False) -> Scored:
    """BM25 (and, with qvec, cosine) of the documents in scope. Without qvec only documents holding a query term are
    returned (every other BM25 score is 0); with it, every document in scope. With `projs` (one per unit, None where a
    unit has none), a unit's cosines are the projection's estimates (project.py; `exact` False), else exact int8.
    With `context` (and qvec: the hybrid mode) each BM25 score gets its conversational context (CONTEXT_*)."""
    q_terms, q_w, q_b = query_terms(text, B)
    masks, posts = [], []
    n_docs, sum_dl = 0, 0
    df = np.zeros(len(q_terms), np.int64)
    for rec, arr in units:
        mask = None
        if chats is not None:
            mask = np.array([c in chats for c in rec["chats"]], bool)[arr["file"]] if rec["chats"] else \
                np.zeros(len(arr["dl"]), bool)
        if accounts is not None:  # a unit's files name their account (store/layout.py)
            ok = np.array([(p := parse_relpath(f)) is not None and p.account in accounts for f in rec["files"]], bool)
            mask = ok[arr["file"]] if mask is None else mask & ok[arr["file"]]
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
            for j, (t, i) in enumerate(zip(q_terms.tolist(), at.tolist(), strict=True)):
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
    # Lucene's BM25 idf, times the term's field weight (a meta term: derive.META_WEIGHT)
    idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in df]) * q_w
    if qvec is None:
        return _bm25_only(units, masks, posts, idf, q_b, avgdl)
    # every document in scope, unit after unit: positions off .. off + n, written in place into one array each
    kept = []
    for ui, ((rec, _arr), mask) in enumerate(zip(units, masks, strict=True)):
        rows = None if mask is None else np.flatnonzero(mask)
        n = rec["docs"] if rows is None else len(rows)
        if n:
            kept.append((ui, rows, n))
    if not kept:
        return _empty()
    counts = np.array([n for _, _, n in kept], np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    off = int(starts[-1])
    vec = np.empty(off, np.float32)
    exact = np.empty(off, bool)
    at_l, tf_l, dl_l, j_l = [], [], [], []
    jobs: list[tuple[dict[str, Any], np.ndarray | None, np.ndarray]] = []
    for (ui, rows, n), lo in zip(kept, starts.tolist(), strict=False):
        (rec, arr), mask = units[ui], masks[ui]
        where = None if mask is None else np.cumsum(mask) - 1  # document → its position among `rows`
        dl = arr["dl"]
        for j, docs, tf in posts[ui]:
            at_l.append((docs if where is None else where[docs]) + lo)
            tf_l.append(tf)
            dl_l.append(dl[docs])
            j_l.append(np.full(len(docs), j, np.int32))
        proj = projs[ui] if projs is not None else None
        out = vec[lo:lo + n]
        if proj is not None:
            jobs.append((proj, rows, out))  # estimated below, all at once (_estimates)
            exact[lo:lo + n] = False
        elif "vec" in arr:
            out[:] = cosine_rows(arr["vec"], arr["scale"], qvec, np.arange(n) if rows is None else rows)
            exact[lo:lo + n] = True
            release(arr)  # resident memory stays bounded whatever the index size (the pages stay in the page cache)
        else:
            out.fill(np.nan)
            exact[lo:lo + n] = True
    _estimates(jobs, qvec, default_threads() if threads is None else threads)
    bm = np.zeros(off, np.float32)
    if at_l:
        tf = np.concatenate(tf_l).astype(np.float32)
        dl = np.concatenate(dl_l).astype(np.float32)
        jj = np.concatenate(j_l)
        b = q_b.astype(np.float32)[jj]
        w = idf.astype(np.float32)[jj] * tf / (tf + K1 * (1 - b + b * dl / avgdl))  # Lucene: no (k1 + 1)
        bm = np.bincount(np.concatenate(at_l), weights=w, minlength=off).astype(np.float32)
        if context:
            _add_context(bm, units, kept, starts)
    return Scored(bm, vec, exact, starts, np.array([ui for ui, _, _ in kept], np.int32),
                  [rows for _, rows, _ in kept], [units[ui][1]["ts"] for ui, _, _ in kept])


def _bm25_only(units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], masks: list[np.ndarray | None],
               posts: list[list[tuple[int, np.ndarray, np.ndarray]]], idf: np.ndarray, bs: np.ndarray,
               avgdl: float) -> Scored:
    """BM25 alone: the documents holding a query term (every other score is 0)."""
    out_b, uids, rows_l, tss = [], [], [], []
    for ui, ((_rec, arr), unit_posts) in enumerate(zip(units, posts, strict=True)):
        if not unit_posts:
            continue
        rows = np.unique(np.concatenate([docs for _, docs, _ in unit_posts]))
        if not len(rows):
            continue
        bm = np.zeros(len(rows), np.float32)
        dl = arr["dl"]
        for j, docs, tf in unit_posts:
            tf = tf.astype(np.float32)
            bm[np.searchsorted(rows, docs)] += idf[j] * tf / (tf + K1 * (1 - bs[j] + bs[j] * dl[docs] / avgdl))
        uids.append(ui)
        rows_l.append(rows)
        out_b.append(bm)
        tss.append(arr["ts"])
    if not out_b:
        return _empty()
    b = np.concatenate(out_b)
    return Scored(b, np.full(len(b), np.nan, np.float32), np.ones(len(b), bool),
                  np.concatenate(([0], np.cumsum([len(r) for r in rows_l]))).astype(np.int64),
                  np.array(uids, np.int32), rows_l, tss)


def _add_context(bm: np.ndarray, units: list[tuple[dict[str, Any], dict[str, np.ndarray]]],
                 kept: list[tuple[int, np.ndarray | None, int]], starts: np.ndarray) -> None:
    """bm (every document in scope, kept unit after kept unit) += CONTEXT_GAIN · the best own score among each
    document's CONTEXT_TURNS neighbours in scope on either side in the same file within CONTEXT_GAP_MS. Only the
    documents next to a scored one are touched: the work grows with the query's postings, not with the scope."""
    nb: np.ndarray | None = None
    for (ui, rows, n), lo in zip(kept, starts.tolist(), strict=False):
        seg = bm[lo:lo + n]
        p = np.flatnonzero(seg > 0)  # positions among the unit's n documents in scope (rows: their rows; None: all)
        if not len(p):
            continue
        if nb is None:
            nb = np.zeros(len(bm), np.float32)
        arr = units[ui][1]
        file, ts = arr["file"], arr["ts"]
        rp = p if rows is None else rows[p]
        fp, tp, own = file[rp], ts[rp], seg[p]
        for d in range(1, CONTEXT_TURNS + 1):
            for q in (p - d, p + d):
                ok = np.flatnonzero((q >= 0) & (q < n))
                qi = q[ok]
                rq = qi if rows is None else rows[qi]
                same = ok[(file[rq] == fp[ok]) & (np.abs(ts[rq] - tp[ok]) <= CONTEXT_GAP_MS)]
                t = q[same] + lo  # distinct within one offset (p is): a plain gather and scatter, no ufunc.at
                nb[t] = np.maximum(nb[t], own[same])
    if nb is not None:
        bm += np.float32(CONTEXT_GAIN) * nb


def rescore(s: Scored, units: list[tuple[dict[str, Any], dict[str, np.ndarray]]], qvec: np.ndarray,
            idx: np.ndarray) -> None:
    """Replace the estimates at idx with exact int8 cosines, unit by unit (each unit's rows ascending)."""
    assert s.exact is not None
    idx = idx[~s.exact[idx]]
    if not len(idx):
        return
    _, uid, row = s.locate(idx)
    order = np.lexsort((row, uid))
    idx, uid, row = idx[order], uid[order], row[order]
    bounds = np.flatnonzero(np.diff(uid)) + 1
    first = uid[np.concatenate(([0], bounds))].tolist()
    for u, part, rows in zip(first, np.split(idx, bounds), np.split(row, bounds), strict=True):
        arr = units[u][1]
        if "vec" not in arr:
            continue
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
        return top(score, ok, s, k), score
    nan_free = s.vec_nan_free
    has = None if nan_free else ~np.isnan(s.vec)
    by_vec = s.vec if has is None else np.where(has, s.vec, -np.inf)
    # by estimated cosine: the candidates themselves (vector), or only enough to pin the top of the min-max range
    picks = [_best(by_vec, candidates if mode == "vector" else min(candidates, CEIL)),
             _best(-by_vec, FLOOR)]
    if mode != "vector":
        picks.append(_best(fuse(s, mode, weight)[0], candidates))
    seeds = np.unique(np.concatenate(picks))
    some_exact = bool(s.exact.any())  # units scored exactly from the start (no projection)
    rescore(s, units, qvec, seeds)
    exact_vals = s.vec[s.exact] if some_exact else s.vec[seeds[s.exact[seeds]]]
    if len(exact_vals):
        # estimates stay inside the exact range: they never stretch the min-max normalisation (exact values are
        # inside it by definition; NaN stays NaN)
        lo, hi = float(np.nanmin(exact_vals)), float(np.nanmax(exact_vals))
        np.clip(s.vec, lo, hi, out=s.vec)
        if nan_free:  # every value is now inside [lo, hi], and lo and hi are values: the range, without a pass
            s.vrange = (lo, hi)
    while True:
        score, ok = fuse(s, mode, weight)
        best = top(score, ok, s, k)
        todo = best[~s.exact[best] & (True if has is None else has[best])]
        if not len(todo):
            return best, score
        rescore(s, units, qvec, todo)
        if s.vrange is not None:  # the rescored values may lie outside it; every other value is still inside
            s.vrange = (min(s.vrange[0], float(s.vec[todo].min())), max(s.vrange[1], float(s.vec[todo].max())))


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
        vec, vr = s.vec, s.vrange
        if vr is None and len(vec):
            lo = float(vec.min())
            if math.isnan(lo):
                vec = np.nan_to_num(vec, nan=0.0)
                lo = float(vec.min())
            vr = (lo, float(vec.max()))
        score = np.empty(len(vec), np.float32)
        const = 0.0
        for x, w, (lo, hi) in ((vec, weight, vr or (0.0, 0.0)), (s.bm25, 1 - weight, s.bm25_range())):
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


def top(score: np.ndarray, ok: np.ndarray, s: Scored, k: int) -> np.ndarray:
    """Indexes of the k best candidates of `s`, best first; ties go to the newer message."""
    idx = _best(score if ok.all() else np.where(ok, score, -np.inf), 4 * k)
    idx = idx[ok[idx]]
    order = np.lexsort((-s.ts_at(idx), -score[idx]))
    return idx[order][:k]
