"""Building one index unit (a UTC day, all chats): read the day files, tokenise for BM25, embed the messages the
previous unit of the day did not already hold (or this update already embedded: a repeated text), quantise, publish;
and building many days, in worker processes when asked (`jobs`)."""
from __future__ import annotations

import hashlib
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import orjson

from ..store import erased
from . import derive, embed, project, store
from .index import DIRECTIONS, Src, identity_of_bytes
from .tokens import meta_token_ids, token_ids

EMBED_CHUNK = 256


def _read_messages(lf: Any) -> tuple[list[tuple[int, bytes]], tuple[int, str, int]]:
    """[(byte offset, line)] of the file's message lines, and its identity + mtime as read."""
    with open(lf.path, "rb") as f:
        mtime = os.fstat(f.fileno()).st_mtime_ns
        data = f.read()
    out = []
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        line = data[pos:nl]
        if b'"message:' in line:
            out.append((pos, line))
        pos = nl + 1
    return out, (*identity_of_bytes(data), mtime)


def build_unit(root: Path, day: str, files: list[Any], embedder: embed.Embedder | None) -> dict[str, Any]:
    """Index one day's files and publish the unit; returns its record."""
    read_at = erased.generation(root)  # before anything is read: store.publish checks it
    files = sorted(files, key=lambda lf: lf.relpath)
    ids: list[bytes] = []
    fidx: list[int] = []
    offs: list[int] = []
    tss: list[int] = []
    dirs: list[int] = []
    texts: list[str] = []  # what the model embeds (derive.embed_text)
    toks: list[np.ndarray] = []  # body terms, then meta terms (derive.py)
    body_len: list[int] = []
    earlier: dict[tuple[str, int], str] = {}  # (chat, message id) → text, for an imported reply's quoted text
    sources: dict[str, list[Any]] = {}
    chats: list[str] = []
    for i, lf in enumerate(files):
        lines, (size, tail, mtime) = _read_messages(lf)
        sources[lf.relpath] = [size, tail, mtime]
        chats.append(lf.chat_id)
        for off, line in lines:
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            text = ev.get("text") if isinstance(ev, dict) else None
            if not isinstance(text, str) or ev.get("event") not in ("message:received", "message:sent"):
                continue  # erased content ({"c": hash}) and non-message events are not indexed
            ts = ev.get("ts")
            try:
                ms = int(datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                ms = 0
            ids.append(str(ev.get("id", "")).encode()[:26])
            fidx.append(i)
            offs.append(off)
            tss.append(ms)
            dirs.append(DIRECTIONS.get(ev.get("direction"), 0))
            texts.append(derive.embed_text(ev, text))
            body = token_ids(text)
            body_len.append(len(body))
            toks.append(np.concatenate((body, meta_token_ids(derive.meta_text(ev, ms, earlier)))))
            if isinstance(ev.get("message_id"), int):
                earlier[(str(ev.get("chat_id")), ev["message_id"])] = text
    n = len(texts)
    dl = np.array(body_len, np.int32)  # BM25's length is the body's: meta terms are not length-normalised (rank.py)
    tl = np.array([len(t) for t in toks], np.int64)
    # postings: (term, doc) pairs sorted by term, with term frequencies
    if n and int(tl.sum()):
        all_t = np.concatenate(toks)
        all_d = np.repeat(np.arange(n, dtype=np.int32), tl)
        order = np.lexsort((all_d, all_t))
        all_t, all_d = all_t[order], all_d[order]
        key_change = np.ones(len(all_t), bool)
        key_change[1:] = (all_t[1:] != all_t[:-1]) | (all_d[1:] != all_d[:-1])
        starts = np.flatnonzero(key_change)
        pt = all_t[starts]
        pdoc = all_d[starts]
        ptf = np.diff(np.append(starts, len(all_t))).astype(np.int32)
        tchange = np.ones(len(pt), bool)
        tchange[1:] = pt[1:] != pt[:-1]
        tstart = np.flatnonzero(tchange)
        terms = pt[tstart]
        tptr = np.append(tstart, len(pt)).astype(np.int64)
    else:
        terms, tptr = np.zeros(0, np.int64), np.zeros(1, np.int64)
        pdoc, ptf = np.zeros(0, np.int32), np.zeros(0, np.int32)
    arrays: dict[str, np.ndarray] = {
        "id": np.array(ids, dtype="S26"), "file": np.array(fidx, np.int32), "offset": np.array(offs, np.int64),
        "ts": np.array(tss, np.int64), "dir": np.array(dirs, np.int8), "dl": dl,
        "terms": terms, "tptr": tptr, "pdoc": pdoc, "ptf": ptf,
        "thash": np.array([_text_hash(t) for t in texts], np.int64),
    }
    if embedder is not None:
        q = np.zeros((n, embedder.dim), np.int8)
        scale = np.zeros(n, np.float32)
        chunks: dict[int, Chunks] = {}
        todo = _reuse_vectors(root, day, embedder, ids, texts, q, scale, chunks)
        seen = SEEN.setdefault(embedder.name, {})
        rest = []
        for i in todo:  # a text this process embedded on an earlier day ("ok", a bot's template): copy its vector
            got = seen.get(_text_hash(texts[i])) if len(texts[i]) <= embed.CHUNK_CHARS else None
            if got is None:
                rest.append(i)
            else:
                q[i], scale[i] = got
        for s in range(0, len(rest), EMBED_CHUNK):
            rows = rest[s:s + EMBED_CHUNK]
            coded = list(embed.encode_chunked(embedder, [texts[i] for i in rows]))
            q[rows], scale[rows] = quantise(np.stack([v for _, v, _, _ in coded]))
            for j, _, spans, cv in coded:
                if len(spans) > 1:
                    chunks[rows[j]] = (*quantise(cv), np.array([a for a, _ in spans], np.int32))
            if len(seen) > SEEN_MAX:
                seen.clear()
            for i in rows:
                if len(texts[i]) <= embed.CHUNK_CHARS:
                    seen[_text_hash(texts[i])] = (q[i].copy(), scale[i])
        arrays.update(vec=q, scale=scale, **_chunk_arrays(chunks, embedder.dim))
    record = {"docs": n, "dl_sum": int(dl.sum()), "files": [lf.relpath for lf in files], "chats": chats, "sources": sources,
              "model": embedder.name if embedder else None, "dim": embedder.dim if embedder else 0,
              "erasure": read_at}
    sidecars = {project.SUFFIX: project.derive(arrays["vec"], arrays["scale"])} if embedder is not None else None
    return store.publish(root, day, record, arrays, sidecars)


Chunks = tuple[np.ndarray, np.ndarray, np.ndarray]  # a long message's chunks: int8 vectors, scales, start characters


def _chunk_arrays(chunks: dict[int, Chunks], dim: int) -> dict[str, np.ndarray]:
    """The chunks of the unit's multi-chunk messages (embed.chunk_spans), rows ordered by message: `kdoc` (the
    message's row), `kstart` (the chunk's first character), `kvec`/`kscale` (its int8 vector). A message of one
    chunk has none: its vector is its chunk's."""
    rows = sorted(chunks)
    if not rows:
        return {"kdoc": np.zeros(0, np.int32), "kstart": np.zeros(0, np.int32),
                "kvec": np.zeros((0, dim), np.int8), "kscale": np.zeros(0, np.float32)}
    return {"kdoc": np.concatenate([np.full(len(chunks[r][2]), r, np.int32) for r in rows]),
            "kstart": np.concatenate([chunks[r][2] for r in rows]),
            "kvec": np.concatenate([chunks[r][0] for r in rows]),
            "kscale": np.concatenate([chunks[r][1] for r in rows])}


SEEN: dict[str, dict[int, tuple[np.ndarray, np.float32]]] = {}  # model → text hash → vector, across days of one update
SEEN_MAX = 20_000


def _reuse_vectors(root: Path, day: str, embedder: embed.Embedder, ids: list[bytes], texts: list[str],
                   q: np.ndarray, scale: np.ndarray, chunks: dict[int, Chunks]) -> list[int]:
    """Copy the vectors (and chunks) of messages the day's previous unit already embedded (same id, same text hash,
    same model): an append to today's file re-embeds only the new messages. Returns the rows still to embed."""
    rec = store.read_record(store.units_dir(root) / f"{day}.json", any_version=True)  # a v1 unit's vectors are valid
    old: dict[tuple[bytes, int], int] = {}
    arr: dict[str, Any] = {}
    if rec and rec.get("model") == embedder.name and rec.get("dim") == embedder.dim:
        try:
            arr = store.open_data(store.units_dir(root) / rec["data"])
        except (FileNotFoundError, store.IndexError_):
            arr = {}
        # a unit built before chunking holds whole-text vectors of long messages: those are embedded again
        chunked = "kdoc" in arr or not any(len(t) > embed.CHUNK_CHARS for t in texts)
        if "vec" in arr and "thash" in arr and chunked:
            pairs = zip(arr["id"].tolist(), arr["thash"].tolist(), strict=True)
            old = {(i, int(h)): r for r, (i, h) in enumerate(pairs)}
    todo = []
    for row, (i, t) in enumerate(zip(ids, texts, strict=True)):
        r = old.get((i, _text_hash(t)))
        if r is None:
            todo.append(row)
        else:
            q[row], scale[row] = arr["vec"][r], arr["scale"][r]
            if len(t) > embed.CHUNK_CHARS:
                lo, hi = np.searchsorted(arr["kdoc"], [r, r + 1])
                chunks[row] = (arr["kvec"][lo:hi].copy(), arr["kscale"][lo:hi].copy(), arr["kstart"][lo:hi].copy())
    return todo


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def quantise(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows → (int8 rows, per-row scale): row ≈ int8 * scale, symmetric, max |value| → 127."""
    mx = np.abs(m).max(axis=1)
    mx[mx == 0] = 1
    scale = (mx / 127).astype(np.float32)
    return np.clip(np.rint(m / scale[:, None]), -127, 127).astype(np.int8), scale


_BLAS: Any = None


def one_blas_thread() -> Any:
    """A context pinning BLAS to one thread, for every numpy step of a build (the projection's SVD/eigh, the pack
    merge), not only the model's forward pass: two BLAS threads spin-waiting for each other on a shared 2-core
    machine cost 3× the CPU of one (issue 30). Parallelism is `jobs` processes. The controller is made once (its
    library scan costs ~5 ms; entering its limit ~20 µs)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def _build_one(root: Path, day: str, files: list[Src], model: str | None) -> tuple[str, int]:
    with one_blas_thread():  # in a worker process too
        return day, build_unit(root, day, files, embed.load(model) if model else None)["docs"]


def build_days(root: Path, days: list[str], files: dict[str, list[Src]], model: str | None,
                jobs: int) -> Iterator[tuple[str, int]]:
    """(day, messages) as each day is published; in `jobs` worker processes when there is more than one day."""
    jobs = min(jobs if jobs > 0 else (os.cpu_count() or 1), len(days))
    if jobs <= 1:
        for d in days:
            yield _build_one(root, d, files[d], model)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        pending: set[Any] = set()
        it = iter(days)
        try:
            while True:
                while len(pending) < 2 * jobs and (day := next(it, None)) is not None:  # a short queue: stops fast
                    pending.add(ex.submit(_build_one, root, day, files[day], model))
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    yield f.result()
        except BaseException:
            for f in pending:
                f.cancel()
            raise
