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
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..store import layout
from ..store.layout import RAW, parse_relpath
from . import embed, pack, project, store, watch, watchscan

MESSAGE_EVENTS = (b"message:received", b"message:sent")
DIRECTIONS = {"in": 1, "out": 2}


def identity_of_bytes(data: bytes) -> tuple[int, str]:
    """The content identity of a day file's bytes: (size, SHA-256). A unit records the identity of exactly the bytes it
    indexed (an append racing the build then reads as a change). Swap point, together with source_identity, for a
    shared per-file identity."""
    return len(data), hashlib.sha256(data).hexdigest()


def source_identity(path: Path | str) -> tuple[int, str]:
    """identity_of_bytes of the file as it is now, streamed."""
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
    packs: list[str] = field(default_factory=list)  # month packs built (check_only: stale), pack.py


# Per process, so a long-lived searcher does not re-read what has not changed: each chat-month directory's mtime and the
# days of its day files (`_DIRS`), which directories hold each day (`_DAY_DIRS`), and the unit data file each day was
# last found fresh with (`_FRESH`). Every writer creates and removes `<file>.lock` in the chat-month directory for each
# append (docs/log-format.md) and a rewrite renames into it, so an unchanged directory mtime means unchanged files
# (compaction's planner relies on the same rule); only the days of directories whose mtime moved are checked again.
# The mtime is read before the listing, so a file created meanwhile moves it past the recorded one.
# A directory modified within the last two seconds is always re-checked: a second append inside the file system's
# timestamp granularity could leave its mtime where the first one put it ("racy git").
# A root refreshed a second time in a process gets inotify watches instead (watch.py, watchscan.py): then a query reads
# only what the events since the last one name, and none of the stats below; this stat-based path stays the fallback.
_RACY_NS = 2_000_000_000
_DIRS: dict[str, tuple[int, list[str]]] = {}
_DAY_DIRS: dict[str, dict[str, set[str]]] = {}  # root → day → chat-month directories
_FRESH: dict[str, dict[str, str]] = {}  # root → day → data file


@dataclass(frozen=True)
class Src:
    """One day file (LogFile without pathlib, which costs more than the stat at 73k files)."""

    day: date
    chat_id: str
    path: str
    relpath: str


@dataclass
class Scan:
    days: list[str]  # days in scope that have day files (any chat)
    check: dict[str, list[Src]]  # the days that need a real freshness check (or a build), with all their files


_LS: dict[str, tuple[int, list[str]]] = {}  # directory → (mtime, its subdirectories): a new one moves the mtime


def _subdirs(path: str, pattern: Any) -> list[str]:
    try:
        mtime = os.stat(path).st_mtime_ns
        hit = _LS.get(path)
        if hit is not None and hit[0] == mtime and time.time_ns() - mtime > _RACY_NS:
            return hit[1]
        got = layout.subdirs(path, pattern)
    except (FileNotFoundError, NotADirectoryError):
        return []
    _LS[path] = (mtime, got)
    return got


def scan(root: Path, since: date | None, until: date | None, records: dict[str, dict[str, Any]],
         model: str | None, everything: bool = False) -> Scan:
    """The days in [since, until] with day files, and those of them the per-process cache cannot vouch for (all of
    them with `everything`)."""
    raw = os.path.join(str(root), RAW)
    key = str(root)
    lo_s, hi_s = (since.isoformat() if since else ""), (until.isoformat() if until else "9999")
    fresh = _FRESH.setdefault(key, {})
    with watchscan.LOCK:
        got = watchscan.changes(root)  # a watched root (a long-lived searcher): only what its events name
        if got is not None:
            return _result(raw, got[0], got[1], fresh, records, model, everything, lo_s, hi_s)
    lo = (since.year, since.month) if since else None
    hi = (until.year, until.month) if until else None
    day_dirs = _DAY_DIRS.setdefault(key, {})
    touched: set[str] = set()
    observed: set[str] = set()
    now = time.time_ns()
    for _, mdir, y, m in layout.month_dirs(root, lo=lo, hi=hi, listdir=_subdirs):
        try:
            mtime = os.stat(mdir).st_mtime_ns
        except FileNotFoundError:
            continue
        observed.add(mdir)
        seen = _DIRS.get(mdir)
        if seen is not None and seen[0] == mtime and now - mtime > _RACY_NS:
            continue
        days = [day.isoformat() for _, day in layout.day_entries(mdir, y, m)]
        for d in seen[1] if seen else ():
            day_dirs.get(d, set()).discard(mdir)
            touched.add(d)
        for d in days:
            day_dirs.setdefault(d, set()).add(mdir)
            touched.add(d)
        _DIRS[mdir] = (mtime, days)
    prefix = raw + "/"
    for mdir in [m for m in _DIRS if m.startswith(prefix) and m not in observed]:  # gone, or outside the month range
        ym = int(mdir[-7:-3]), int(mdir[-2:])
        if (lo and ym < lo) or (hi and ym > hi):
            continue
        for d in _DIRS.pop(mdir)[1]:
            day_dirs.get(d, set()).discard(mdir)
            touched.add(d)
    return _result(raw, day_dirs, touched, fresh, records, model, everything, lo_s, hi_s)


def _result(raw: str, day_dirs: dict[str, set[str]], touched: set[str], fresh: dict[str, str],
            records: dict[str, dict[str, Any]], model: str | None, everything: bool, lo_s: str, hi_s: str) -> Scan:
    prefix = raw + "/"
    for d in touched:  # no longer vouched for until checked: a check_only or failed update must not lose the touch
        fresh.pop(d, None)
    out = Scan(sorted(d for d, dirs in day_dirs.items() if dirs and lo_s <= d <= hi_s), {})
    for d in out.days:
        rec = records.get(d)
        if (everything or d in touched or rec is None or fresh.get(d) != rec["data"]
                or (model and rec.get("model") != model)):
            files = []
            for mdir in sorted(day_dirs[d]):
                chat = mdir.rsplit("/", 3)[1]
                files.append(Src(date.fromisoformat(d), chat, f"{mdir}/{d[8:10]}.jsonl",
                                 f"{RAW}/{mdir[len(prefix):]}/{d[8:10]}.jsonl"))  # either layout (store/layout.py)
            out.check[d] = files
    return out


def _mark_fresh(root: Path, days: Iterable[str], records: dict[str, dict[str, Any]]) -> None:
    fresh = _FRESH.setdefault(str(root), {})
    for d in days:
        if d in records:
            fresh[d] = records[d]["data"]


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
    if rec.get("v") != store.UNIT_VERSION:
        return f"index format v{rec.get('v')}, now v{store.UNIT_VERSION}"
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
    if model and project.load(root, rec) is None:  # derived from the unit alone: `update` writes it, no rebuild
        return project.MISSING
    return None


_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_LOCK = threading.Lock()


def update(root: Path, since: date | None = None, until: date | None = None, chats: list[str] | None = None,
           rebuild: bool = False, vectors: bool = True, check_only: bool = False, any_model: bool = False,
           progress: Callable[[int, int, str, int], None] | None = None, jobs: int = 1,
           watch_changes: bool = True) -> Progress:
    """Bring every day unit in scope up to date (or, check_only, just list the stale days in `built`). A unit holds
    all chats, so `chats` does not narrow what is checked. Units are built with vectors when `vectors` and the model is
    installed; with `any_model` a fresh unit built without vectors (or with another model) is accepted as it is.
    `jobs` > 1 builds days in that many worker processes (each loads the model once). Days are published one by one
    (atomically), newest first, so an interrupted build keeps every finished day and loses at most the ones in
    progress; the next run continues with the rest. One update of a root at a time per process (threads wait): the
    per-process freshness state it reads and marks stays consistent. watch_changes=False: no inotify watch is set up,
    every refresh uses the stat-based check (watch.py; the benchmark's baseline)."""
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(str(root), threading.RLock())
    with lock, build.one_blas_thread():
        return _update(root, since, until, rebuild, vectors, check_only, any_model, progress, jobs, watch_changes)


def _update(root: Path, since: date | None, until: date | None, rebuild: bool, vectors: bool, check_only: bool,
            any_model: bool, progress: Callable[[int, int, str, int], None] | None, jobs: int,
            watch_changes: bool) -> Progress:
    model = model_name(vectors)
    watch.get(root, watch_changes)  # counts this refresh: a root refreshed again in this process gets its watches (watch.py)
    build.SEEN.clear()  # the cross-day text cache lives for one update (and its workers): a --rebuild embeds anew
    records = store.load_records(root, any_version=True)
    want = None if any_model else model
    sc = scan(root, since, until, records, want, everything=rebuild or check_only)
    out = Progress()
    reasons = {d: None if rebuild else stale_reason(root, records.get(d), files, want)
               for d, files in sorted(sc.check.items(), reverse=True)}
    if want and not rebuild:  # a day the per-process cache vouches for can still have lost its projection
        ok = watchscan.projections_seen(root)
        for d in sc.days:
            rec = records.get(d)
            if d not in reasons and rec and rec.get("model") and (ok is None or ok.get(d) != rec["data"]):
                if project.load(root, rec) is None:
                    reasons[d] = project.MISSING
                elif ok is not None:
                    ok[d] = rec["data"]
    todo = [d for d, why in reasons.items() if rebuild or (why is not None and why != project.MISSING)]
    derive = [d for d, why in reasons.items() if why == project.MISSING]
    out.fresh = len(sc.days) - len(todo) - (len(derive) if check_only else 0)
    if check_only:
        todo = sorted(todo + derive, reverse=True)
    else:
        for d in derive:  # a unit published without its projection (an older build): derived from its vectors
            project.ensure(root, records[d])
        for i, (d, docs) in enumerate(build.build_days(root, todo, sc.check, model, jobs)):
            out.messages += docs
            if progress:
                progress(i + 1, len(todo), d, docs)
        _mark_fresh(root, sc.check, store.load_records(root) if todo else records)
    out.built = todo
    months = (since.isoformat()[:7] if since else "", until.isoformat()[:7] if until else "9999")
    if check_only:
        out.packs = pack.stale(root, store.load_records(root), months)
    elif not watchscan.packs_checked(root, months):
        out.packs = pack.update(root, store.load_records(root), months)
        if not out.packs:
            watchscan.packs_checked(root, months, True)
    if since is None and until is None:
        for d in sorted(set(records) - set(sc.days)):  # a day whose files are all gone
            if not check_only:
                store.remove_unit(root, d)
            out.removed.append(d)
        if not check_only:  # every run, also when nothing was rebuilt: a data file no unit names is garbage
            store.collect_garbage(root)
    return out


def purge(root: Path, files: Iterable[str] = (), chats: Iterable[str] = ()) -> list[str]:
    """Drop every unit holding one of `files` (day-file relpaths) or any file of `chats`, so no erased content stays
    in the index; the next `eventlog index` (or search) rebuilds those days from the log as it then is. Returns the
    dropped days. For the `forget` registry of derived stores."""
    files, chats = set(files), set(map(str, chats))
    days = {parse_relpath(f)[2].isoformat() for f in files if parse_relpath(f)}  # type: ignore[index]
    dropped = []
    for day, rec in store.load_records(root, any_version=True).items():
        if day in days or chats.intersection(rec.get("chats", ())):
            store.remove_unit(root, day)
            dropped.append(day)
    store.collect_garbage(root, min_age_s=0)
    pack.purge(root, set(dropped))  # a month pack holding a dropped day goes too, files and all
    return sorted(dropped)


def size_bytes(root: Path) -> int:
    d = store.units_dir(root)
    return (sum(e.stat().st_size for e in os.scandir(d)) if d.is_dir() else 0) + pack.size_bytes(root)


def iter_units(root: Path, days: Iterator[str] | list[str]) -> Iterator[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """(record, arrays) of the published units of `days`."""
    udir = str(store.units_dir(root))
    for d in days:
        rec = store.read_record(f"{udir}/{d}.json")
        if rec is None:
            continue
        try:
            yield rec, store.open_cached(store.units_dir(root) / rec["data"])
        except FileNotFoundError:  # replaced under us: read the new record once
            rec = store.read_record(store.units_dir(root) / f"{d}.json")
            if rec is not None:
                yield rec, store.open_data(store.units_dir(root) / rec["data"])


from . import build  # noqa: E402  (build.py uses the definitions above)
from .build import build_unit, quantise  # noqa: E402,F401  (kept importable from here)
