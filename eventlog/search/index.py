"""`eventlog index`: the derived, rebuildable search index — BM25 postings and int8 message embeddings, one unit per UTC
day (all chats), kept fresh the way compaction is: a unit is used only while every source day file it was built from
is unchanged, and a day whose files changed (append, late event, compaction, erasure, a new chat) is rebuilt whole.

Freshness is by content identity (`source_identity`): a day file's size and the SHA-256 of its bytes (not the chain's
last hash: an erasure in log format v2 keeps the chain, which covers commitments, and can keep the size). A cheap
(size, mtime) stat decides first; only a file whose stat moved is hashed again, so a `touch` costs no rebuild and a
query hashes at most the files written since they were indexed (usually today's).
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import orjson

from ..layout import RAW, parse_relpath
from ..schema import CHANNEL_RE, CHAT_ID_RE
from . import embed, store
from .tokens import token_ids

MESSAGE_EVENTS = (b"message:received", b"message:sent")
DIRECTIONS = {"in": 1, "out": 2}
EMBED_CHUNK = 256
_Y = re.compile(r"\d{4}")
_MD = re.compile(r"\d\d")
_DAY = re.compile(r"\d\d\.jsonl")


def source_identity(path: Path) -> tuple[int, str]:
    """(size, SHA-256) of a day file's bytes — its content identity. Swap point for a shared per-file identity."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


@dataclass
class Progress:
    built: list[str] = field(default_factory=list)
    fresh: int = 0
    removed: list[str] = field(default_factory=list)
    messages: int = 0


# Per process: chat-month directory → (its mtime_ns, its day-file names, {day: unit data file} of the units its files
# were found fresh in). Every writer creates and removes `<file>.lock` in that directory for each append
# (docs/log-format.md) and a rewrite goes through a rename there, so an unchanged directory mtime means unchanged files:
# a long-lived searcher re-lists and re-checks only the directories written since (compaction's planner uses the
# same rule). The mtime is read before the listing, so a file created meanwhile moves it past the recorded one.
_VERIFIED: dict[str, tuple[int, list[str], dict[str, str]]] = {}


@dataclass(frozen=True)
class Src:
    """One day file (LogFile without pathlib, which costs more than the stat at 73k files)."""

    day: date
    chat_id: str
    path: str
    relpath: str
    mdir: str  # its chat-month directory
    mtime: int  # that directory's mtime_ns before it was listed


def _subdirs(path: str, pattern: Any) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir() and pattern.fullmatch(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return []


def list_sources(root: Path, chats: list[str] | None = None, since: date | None = None,
                 until: date | None = None) -> dict[str, list[Src]]:
    """day (ISO) → its day files in scope, pruned by directory names like layout.log_files."""
    raw = os.path.join(str(root), RAW)
    out: dict[str, list[Src]] = {}
    lo = (since.year, since.month) if since else None
    hi = (until.year, until.month) if until else None
    for ch in _subdirs(raw, CHANNEL_RE):
        cdir = os.path.join(raw, ch, "chats")
        for chat in (chats if chats is not None else _subdirs(cdir, CHAT_ID_RE)):
            if not CHAT_ID_RE.fullmatch(chat):
                continue
            for y in _subdirs(os.path.join(cdir, chat), _Y):
                for m in _subdirs(os.path.join(cdir, chat, y), _MD):
                    ym = (int(y), int(m))
                    if (lo and ym < lo) or (hi and ym > hi):
                        continue
                    mdir = os.path.join(cdir, chat, y, m)
                    try:
                        mtime = os.stat(mdir).st_mtime_ns
                    except FileNotFoundError:
                        continue
                    seen = _VERIFIED.get(mdir)
                    if seen and seen[0] == mtime:
                        names = seen[1]
                    else:
                        try:
                            names = sorted(e.name for e in os.scandir(mdir) if _DAY.fullmatch(e.name) and e.is_file())
                        except FileNotFoundError:
                            continue
                    for name in names:
                        try:
                            day = date(ym[0], ym[1], int(name[:2]))
                        except ValueError:
                            continue
                        if (since and day < since) or (until and day > until):
                            continue
                        rel = f"{RAW}/{ch}/chats/{chat}/{y}/{m}/{name}"
                        out.setdefault(day.isoformat(), []).append(
                            Src(day, chat, os.path.join(mdir, name), rel, mdir, mtime))
    return out


def _known_fresh(rec: dict[str, Any] | None, day: str, files: list[Src], model: str | None) -> bool:
    if rec is None or (model and rec.get("model") != model) or len(rec["sources"]) != len(files):
        return False
    for f in files:
        seen = _VERIFIED.get(f.mdir)
        if not seen or seen[0] != f.mtime or seen[2].get(day) != rec["data"]:
            return False
    return True


def _mark_verified(days: dict[str, list[Src]], records: dict[str, dict[str, Any]]) -> None:
    names: dict[str, list[str]] = {}
    for d, files in days.items():
        for f in files:
            names.setdefault(f.mdir, []).append(f.relpath.rsplit("/", 1)[1])
    for d, files in days.items():
        rec = records.get(d)
        for f in files:
            seen = _VERIFIED.get(f.mdir)
            if not seen or seen[0] != f.mtime:
                seen = _VERIFIED[f.mdir] = (f.mtime, sorted(set(names[f.mdir])), {})
            if rec is not None:
                seen[2][d] = rec["data"]


def model_name(want_vectors: bool = True) -> str | None:
    """The embedding model an index built now would use, or None when its package is absent."""
    if not want_vectors:
        return None
    return None if embed.available() else embed.load().name


def stale_reason(root: Path, rec: dict[str, Any] | None, files: list[Any], model: str | None,
                 all_chats: bool = True) -> str | None:
    """None if the unit `rec` answers for exactly `files` as they are now; else why not. With all_chats=False only
    the given files are checked (a --chat scoped query), not that the unit holds no other chat's file."""
    if rec is None:
        return "not indexed"
    if model and rec.get("model") != model:
        return f"built with model {rec.get('model')}, now {model}"
    sources: dict[str, list[Any]] = rec["sources"]
    if all_chats and len(sources) != len(files):
        return "day files added or removed"
    for lf in files:
        src = sources.get(lf.relpath)
        if src is None:
            return f"{lf.relpath} not indexed"
        st = _stat(lf.path)
        if st is None:
            return f"{lf.relpath} gone"
        if (st[0], st[1]) == (src[0], src[2]):
            continue
        if list(source_identity(lf.path)) != [src[0], src[1]]:
            return f"{lf.relpath} changed"
    return None


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
    return out, (len(data), hashlib.sha256(data).hexdigest(), mtime)


def build_unit(root: Path, day: str, files: list[Any], embedder: embed.Embedder | None) -> dict[str, Any]:
    """Index one day's files and publish the unit; returns its record."""
    files = sorted(files, key=lambda lf: lf.relpath)
    ids: list[bytes] = []
    fidx: list[int] = []
    offs: list[int] = []
    tss: list[int] = []
    dirs: list[int] = []
    texts: list[str] = []
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
            texts.append(text)
    n = len(texts)
    toks = [token_ids(t) for t in texts]
    dl = np.array([len(t) for t in toks], np.int32)
    # postings: (term, doc) pairs sorted by term, with term frequencies
    if n and int(dl.sum()):
        all_t = np.concatenate(toks)
        all_d = np.repeat(np.arange(n, dtype=np.int32), dl)
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
        todo = _reuse_vectors(root, day, embedder, ids, texts, q, scale)
        for s in range(0, len(todo), EMBED_CHUNK):
            rows = todo[s:s + EMBED_CHUNK]
            q[rows], scale[rows] = quantise(embedder.encode([texts[i] for i in rows]))
        arrays["vec"], arrays["scale"] = q, scale
    record = {"docs": n, "files": [lf.relpath for lf in files], "chats": chats, "sources": sources,
              "model": embedder.name if embedder else None, "dim": embedder.dim if embedder else 0}
    return store.publish(root, day, record, arrays)


def _reuse_vectors(root: Path, day: str, embedder: embed.Embedder, ids: list[bytes], texts: list[str],
                   q: np.ndarray, scale: np.ndarray) -> list[int]:
    """Copy the vectors of messages the day's previous unit already embedded (same id, same text hash, same model):
    an append to today's file re-embeds only the new messages. Returns the rows still to embed."""
    rec = store.read_record(store.units_dir(root) / f"{day}.json")
    old: dict[tuple[bytes, int], int] = {}
    arr: dict[str, Any] = {}
    if rec and rec.get("model") == embedder.name and rec.get("dim") == embedder.dim:
        try:
            arr = store.open_data(store.units_dir(root) / rec["data"])
        except (FileNotFoundError, store.IndexError_):
            arr = {}
        if "vec" in arr and "thash" in arr:
            old = {(i, int(h)): r for r, (i, h) in enumerate(zip(arr["id"].tolist(), arr["thash"].tolist()))}
    todo = []
    for row, (i, t) in enumerate(zip(ids, texts)):
        r = old.get((i, _text_hash(t)))
        if r is None:
            todo.append(row)
        else:
            q[row], scale[row] = arr["vec"][r], arr["scale"][r]
    return todo


def _text_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def quantise(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows → (int8 rows, per-row scale): row ≈ int8 * scale, symmetric, max |value| → 127."""
    mx = np.abs(m).max(axis=1)
    mx[mx == 0] = 1
    scale = (mx / 127).astype(np.float32)
    return np.clip(np.rint(m / scale[:, None]), -127, 127).astype(np.int8), scale


def update(root: Path, since: date | None = None, until: date | None = None, chats: list[str] | None = None,
           rebuild: bool = False, vectors: bool = True, check_only: bool = False, any_model: bool = False,
           progress: Callable[[int, int, str, int], None] | None = None) -> Progress:
    """Bring every day unit in scope up to date (or, check_only, just list the stale days in `built`). Units are built
    with vectors when `vectors` and the model is installed; with `any_model` a fresh unit built without vectors (or
    with another model) is accepted as it is (BM25-only queries)."""
    model = model_name(vectors)
    embedder = embed.load() if model else None
    records = store.load_records(root)
    days = list_sources(root, chats, since, until)
    if chats:  # a unit holds all chats: check and rebuild the whole day, with every chat's files
        full = list_sources(root, None, since, until)
        days = {d: full[d] for d in days if d in full}
    out = Progress()
    want = None if any_model else model
    todo = [d for d, files in sorted(days.items())
            if rebuild or not (_known_fresh(records.get(d), d, files, want)
                               or stale_reason(root, records.get(d), files, want) is None)]
    out.fresh = len(days) - len(todo)
    if not check_only:
        for i, d in enumerate(todo):
            rec = build_unit(root, d, days[d], embedder)
            out.messages += rec["docs"]
            if progress:
                progress(i + 1, len(todo), d, rec["docs"])
    out.built = todo
    if not check_only:
        _mark_verified(days, store.load_records(root))
    if since is None and until is None and not chats:
        for d in sorted(set(records) - set(days)):  # a day whose files are all gone
            if not check_only:
                store.remove_unit(root, d)
            out.removed.append(d)
        if not check_only:
            store.collect_garbage(root)
    return out


def purge(root: Path, files: Iterable[str] = (), chats: Iterable[str] = ()) -> list[str]:
    """Drop every unit holding one of `files` (day-file relpaths) or any file of `chats`, so no erased content stays
    in the index; the next `eventlog index` (or search) rebuilds those days from the log as it then is. Returns the
    dropped days. For the `forget` registry of derived stores."""
    files, chats = set(files), set(map(str, chats))
    days = {parse_relpath(f)[2].isoformat() for f in files if parse_relpath(f)}  # type: ignore[index]
    dropped = []
    for day, rec in store.load_records(root).items():
        if day in days or chats.intersection(rec.get("chats", ())):
            store.remove_unit(root, day)
            dropped.append(day)
    store.collect_garbage(root, min_age_s=0)
    return sorted(dropped)


def size_bytes(root: Path) -> int:
    d = store.units_dir(root)
    return sum(e.stat().st_size for e in os.scandir(d)) if d.is_dir() else 0


def tty_progress(stream: Any = sys.stderr) -> Callable[[int, int, str, int], None] | None:
    if not stream.isatty():
        return None

    def show(i: int, n: int, day: str, docs: int) -> None:
        stream.write(f"\rindex: {i}/{n} days ({day}, {docs} messages)\x1b[K")
        if i == n:
            stream.write("\n")
        stream.flush()

    return show


def iter_units(root: Path, days: Iterator[str] | list[str]) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """(record, arrays) of the published units of `days`."""
    for d in days:
        rec = store.read_record(store.units_dir(root) / f"{d}.json")
        if rec is None:
            continue
        try:
            yield rec, store.open_cached(store.units_dir(root) / rec["data"])
        except FileNotFoundError:  # replaced under us: read the new record once
            rec = store.read_record(store.units_dir(root) / f"{d}.json")
            if rec is not None:
                yield rec, store.open_data(store.units_dir(root) / rec["data"])
