"""The vector first pass: a low-dimensional projection of each unit's int8 vectors, derived from them alone.

Per unit (one UTC day), from the stored vectors x (row ≈ int8 · scale): their mean μ and the top DIM principal axes V
(DIM × 512) of x − μ, and per message the int8 codes of V(x − μ) with one scale a row. For a query q (unit length):

    cos(q, x) = q·μ + (Vq)·(V(x − μ)) + q_⊥·(x − μ)_⊥  ≈  q·μ + (Vq)·codes · cscale

— the dropped term is the part of x − μ outside the unit's top DIM axes (USE vectors share a mean direction and
most of their spread lies in few axes). The estimate reads DIM bytes a message instead of 512 and is one small
matrix-vector product per unit; rank.py rescores the candidates it picks with the exact int8 cosine.

The projection lives beside its unit as `<data file stem>.proj` (same packed-array format, store.pack) and names the
data file's SHA-256 ("of"): a unit's data file never changes under its name, so a projection is either the one of
the data file it sits beside or not used (never stale). It is written before the unit's record (store.publish), and
derived for units published without one (an older build; `eventlog index` does it, `index --check` lists the day).
Garbage collection removes it with its data file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from . import store

DIM = 64
SUFFIX = ".proj"
MISSING = "vector projection missing"  # stale_reason's answer for a unit that only lacks its projection
_SAMPLE = 4096  # rows used to find the axes (all of a day's rows up to this)


def path_for(root: Path, rec: dict[str, Any]) -> Path:
    return store.units_dir(root) / (rec["data"][: -len(".bin")] + SUFFIX)


def derive(vec: np.ndarray, scale: np.ndarray, dim: int = DIM) -> dict[str, np.ndarray]:
    """The projection arrays of int8 rows `vec` with per-row `scale`. A unit of n < dim messages keeps n axes: its
    centred rows span at most n − 1 of them, so the estimate is exact and a sparse day stores n × 512 floats of axes,
    not dim × 512 (131 KB) — the fixed block that made a personal chat's index ten times its log (issue 30)."""
    n, d = vec.shape
    k = max(1, min(dim, d, n))
    x = vec.astype(np.float32) * np.asarray(scale, np.float32)[:, None]
    mu = x.mean(axis=0) if n else np.zeros(d, np.float32)
    xc = x - mu
    sample = xc if n <= _SAMPLE else xc[np.linspace(0, n - 1, _SAMPLE).astype(np.int64)]
    if len(sample) < d:  # the thin SVD of the rows: O(n² d), where eigh of the d × d covariance is O(d³)
        axes = np.linalg.svd(sample.astype(np.float64), full_matrices=False)[2]  # rows, descending singular values
        basis = np.ascontiguousarray(axes[:k], dtype=np.float32) if n else np.zeros((k, d), np.float32)
    else:
        cov = sample.T @ sample
        w, axes = np.linalg.eigh(cov.astype(np.float64))  # ascending eigenvalues
        basis = np.ascontiguousarray(axes[:, ::-1][:, :k].T, dtype=np.float32)
    c = xc @ basis.T
    mx = np.abs(c).max(axis=1) if n else np.zeros(0, np.float32)
    mx[mx == 0] = 1
    cscale = (mx / 127).astype(np.float32)
    codes = np.clip(np.rint(c / cscale[:, None]), -127, 127).astype(np.int8)
    return {"mu": mu.astype(np.float32), "basis": basis, "codes": codes, "cscale": cscale}


def load(root: Path, rec: dict[str, Any]) -> dict[str, Any] | None:
    """The unit's projection (memory-mapped, kept open), or None when it is absent or belongs to another data file."""
    path = f"{root}/{store.INDEX_DIR}/units/{rec['data'][: -len('.bin')]}{SUFFIX}"  # path_for, without pathlib's cost
    try:
        st = os.stat(path)  # deleted or replaced since it was mapped: map it again
        arr = store.open_cached(path, (st.st_ino, st.st_size, st.st_mtime_ns))
    except (FileNotFoundError, store.IndexError_):
        return None
    if "of" not in arr or arr["of"][0].decode() != rec.get("sha256"):
        return None
    return arr


def ensure(root: Path, rec: dict[str, Any]) -> bool:
    """Derive and write the projection of a published unit with vectors that lacks one. True if it wrote one."""
    if not rec.get("model") or load(root, rec) is not None:
        return False
    data = store.open_data(store.units_dir(root) / rec["data"])
    if "vec" not in data:
        return False
    store.write_sidecar(root, rec["data"], SUFFIX, rec["sha256"], derive(data["vec"], data["scale"]))
    store.release(data)
    return True


_CHUNK = 4096  # rows converted to float32 at a time, into one reused buffer (a fresh array a unit costs page faults;
#               1 MB of float32 stays in the CPU cache, and fewer, larger dot products cost less Python)


def estimate(proj: dict[str, Any], qvec: np.ndarray, rows: np.ndarray | None,
             out: np.ndarray | None = None) -> np.ndarray:
    """Estimated cosine of the query with the unit's messages (all, or `rows`, ascending), into `out` when given. A
    month pack (pack.py) holds its members' projections as segments (`sstart`: each member's first row): each segment
    by its own axes."""
    codes, cs = proj["codes"], proj["cscale"]
    if "sstart" in proj:
        ss = proj["sstart"]
        if "bstart" in proj:  # members' axes as rows bstart[i]:bstart[i+1] (as many as each member holds, pack.py)
            bs, flat = proj["bstart"], proj["basis"] @ qvec
            qp = np.zeros((len(ss) - 1, codes.shape[1]), np.float32)  # zeros beyond a member's axes: codes are too
            for i in range(len(ss) - 1):
                qp[i, :int(bs[i + 1] - bs[i])] = flat[int(bs[i]):int(bs[i + 1])]
        else:
            qp = proj["basis"] @ qvec  # (segments, DIM)
        qm = (proj["mu"] @ qvec).astype(np.float32)
    else:
        ss = np.array([0, len(codes)])
        qp = (proj["basis"] @ qvec)[None, :]
        qm = np.array([proj["mu"] @ qvec], np.float32)
    n = int(ss[-1]) if rows is None else len(rows)
    at = ss if rows is None else np.searchsorted(rows, ss)
    if out is None:
        out = np.empty(n, np.float32)
    buf = np.empty((_CHUNK, codes.shape[1]), np.float32)
    for i in range(len(ss) - 1):
        for lo in range(int(at[i]), int(at[i + 1]), _CHUNK):
            hi = min(lo + _CHUNK, int(at[i + 1]))
            b = buf[:hi - lo]
            b[...] = codes[lo:hi] if rows is None else codes[rows[lo:hi]]
            np.dot(b, qp[i], out=out[lo:hi])
    out *= cs if rows is None else cs[rows]
    for i in range(len(ss) - 1):  # + q·μ of each segment, in place
        out[int(at[i]):int(at[i + 1])] += qm[i]
    return out
