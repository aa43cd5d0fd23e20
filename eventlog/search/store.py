"""Index units on disk: one file of packed arrays per UTC day (all chats), described by a JSON record.

    <root>/index/units/<yyyy-mm-dd>.json        the record: sources with their identities, the data file, its SHA-256
    <root>/index/units/<yyyy-mm-dd>.<gen>.bin   a JSON header line, then 64-byte-aligned raw arrays (memory-mapped)

A unit is published by writing the data file (temp + rename), then the record (temp + rename): a record only ever names
a complete data file, and a reader sees either the old unit or the new one, never a mix.
"""
from __future__ import annotations

import hashlib
import mmap
import os
import secrets
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..errors import EventlogError
from ..store import erased
from ..store.fsutil import replace_file, unlink_older
from . import watch

INDEX_DIR = "index"
UNIT_VERSION = 3  # 2: sign bits of the vectors ("bits") for the Hamming first pass; a v1 unit is stale (rebuilt, its
#                    vectors reused) and never read as a v2 one. 3: the meta field (derive.py) in the postings
_ALIGN = 64
_DATA_EXTS = ("bin", "proj")  # a unit's data file and its derived sidecars (project.py): removed together


class IndexError_(EventlogError):
    """A damaged or unreadable index unit."""


def units_dir(root: Path, subdir: str = "units") -> Path:
    """The directory of the day units (or, subdir "packs", of the month packs: pack.py)."""
    return root / INDEX_DIR / subdir


def _write_atomic(path: Path, data: bytes) -> None:
    replace_file(path, data, "tmp")  # a killed write's `<name>.tmp-<id>` is collect_garbage's


def pack(arrays: dict[str, np.ndarray]) -> bytes:
    """Arrays → one buffer: a JSON header line {name: [dtype, shape, offset]} and aligned data."""
    layout: dict[str, Any] = {}
    blobs: list[bytes] = []
    off = 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        pad = (-off) % _ALIGN
        blobs.append(b"\0" * pad)
        off += pad
        layout[name] = [arr.dtype.str, list(arr.shape), off]
        b = arr.tobytes()
        blobs.append(b)
        off += len(b)
    head = orjson.dumps(layout) + b"\n"
    head += b" " * ((-len(head)) % _ALIGN)
    # offsets are relative to the end of the header
    return head + b"".join(blobs)


def open_data(path: str | Path) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise IndexError_(f"{path}: empty index unit")
        # the header by pread: touching the mapping itself faults in (and counts as resident) far more than it reads
        head = os.pread(f.fileno(), 1 << 16, 0)
        nl = head.find(b"\n")
        if nl < 0:
            head = os.pread(f.fileno(), size, 0)
            nl = head.find(b"\n")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if nl < 0:
        raise IndexError_(f"{path}: no header")
    try:
        layout = orjson.loads(head[:nl])
    except orjson.JSONDecodeError:
        raise IndexError_(f"{path}: bad header") from None
    base = nl + 1 + ((-(nl + 1)) % _ALIGN)
    out: dict[str, Any] = {"_mmap": mm, "_path": str(path), "_at": {}}
    for name, (dt, shape, off) in layout.items():
        dtype = np.dtype(dt)
        count = 1
        for k in shape:
            count *= k
        if base + off + count * dtype.itemsize > size:
            raise IndexError_(f"{path}: truncated array {name}")
        out[name] = np.frombuffer(mm, dtype=dtype, count=count, offset=base + off).reshape(shape)
        out["_at"][name] = base + off
    return out


def read_rows(arrays: dict[str, Any], name: str, rows: np.ndarray) -> np.ndarray:
    """Rows (ascending) of a 2-d array of a unit by pread, not through its memory map: a page fault on a file mapping
    maps the pages around it too (16 on Linux), so a few scattered rows per unit would make most of the file resident
    (measured: gathering through the map and then dropping the pages costs more than these reads). One pread a run of
    consecutive rows, in a list comprehension joined once (≈ 1.7 µs a row, against ≈ 2.5 µs reading into slices)."""
    a = arrays[name]
    width = a.shape[1] * a.itemsize
    if not len(rows):
        return np.empty((0, a.shape[1]), a.dtype)
    r = np.asarray(rows, np.int64)
    brk = np.flatnonzero(np.diff(r) != 1) + 1  # runs of consecutive rows: one read each
    first = np.concatenate(([0], brk))
    lens = (np.append(brk, len(r)) - first) * width
    offs = arrays["_at"][name] + r[first] * width
    fd = os.open(arrays["_path"], os.O_RDONLY)
    try:
        pread = os.pread
        buf = b"".join([pread(fd, n, o) for n, o in zip(lens.tolist(), offs.tolist(), strict=True)])
    finally:
        os.close(fd)
    if len(buf) != len(r) * width:
        raise IndexError_(f"{arrays['_path']}: short read")
    return np.frombuffer(buf, a.dtype).reshape(len(r), a.shape[1])


def release_all(max_rss_mb: int) -> bool:
    """release() every mapped unit and projection when this process's resident set is above max_rss_mb (read from
    /proc, where there is one): the mapped pages a query touched stay resident until then."""
    try:
        with open("/proc/self/statm", "rb") as f:
            rss = int(f.read().split()[1]) * mmap.PAGESIZE
    except (OSError, ValueError, IndexError):
        return False
    if rss <= max_rss_mb << 20:
        return False
    for arrays in _OPEN.values():
        release(arrays)
    return True


_RECORDS: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}  # path → (stat key, parsed), per process


_OPEN: dict[str, dict[str, Any]] = {}
_OPEN_MAX = 4096


def open_cached(path: str | Path, ident: Any = None) -> dict[str, Any]:
    """open_data, kept open per process: a data file never changes under its name (a rebuild writes a new name). A
    file that may be replaced under its name (a projection) passes its `ident` (e.g. inode and size)."""
    key = str(path)
    got = _OPEN.get(key)
    if got is None or got.get("_ident") != ident:
        if len(_OPEN) >= _OPEN_MAX:
            _OPEN.clear()
        got = _OPEN[key] = open_data(path)
        got["_ident"] = ident
    return got


def release(arrays: dict[str, Any]) -> None:
    """Drop the unit's pages from this process's resident set (they stay in the page cache): bounded RSS on a full
    vector scan, whatever the index size."""
    mm = arrays.get("_mmap")
    if mm is not None and hasattr(mm, "madvise"):
        mm.madvise(mmap.MADV_DONTNEED)


def read_record(path: Path | str, any_version: bool = False) -> dict[str, Any] | None:
    """A unit record (parsed once per process while its file is unchanged), or None if absent or unreadable — or,
    unless any_version, written by another index format version (UNIT_VERSION)."""
    key = str(path)
    try:
        st = os.stat(key)
        sk = (st.st_ino, st.st_size, st.st_mtime_ns)
        hit = _RECORDS.get(key)
        if hit and hit[0] == sk:
            rec = hit[1]
        else:
            with open(key, "rb") as f:
                rec = orjson.loads(f.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("v"), int) or not isinstance(rec.get("data"), str):
        return None
    _RECORDS[key] = (sk, rec)
    return rec if any_version or rec["v"] == UNIT_VERSION else None


_LISTED: dict[tuple[str, bool], tuple[int, dict[str, dict[str, Any]]]] = {}  # (dir, any_version) → (mtime, records)
_RACY_NS = 2_000_000_000


def load_records(root: Path, any_version: bool = False, subdir: str = "units") -> dict[str, dict[str, Any]]:
    """day → record of every published unit (of this format version unless any_version). A record is replaced by a
    rename into the directory, which moves its mtime: while that is unchanged (and not within the file system's
    timestamp granularity of now), the records read last time are the records."""
    d = str(units_dir(root, subdir))
    w = watch.current(root)
    if w is not None:
        got = _load_watched(w, root, d, any_version)
        if got is not None:
            return got
    out: dict[str, dict[str, Any]] = {}
    try:
        mtime = os.stat(d).st_mtime_ns
        hit = _LISTED.get((d, any_version))
        if hit and hit[0] == mtime and time.time_ns() - mtime > _RACY_NS:
            return dict(hit[1])
        names = os.listdir(d)
    except FileNotFoundError:
        return out
    _read_named(d, names, out, any_version)
    _LISTED[(d, any_version)] = (mtime, dict(out))
    return out


def _read_named(d: str, names: list[str], into: dict[str, dict[str, Any]], any_version: bool,
                again: bool = False) -> None:
    """Read the records among `names` (files of directory d) into `into` (day → record), dropping the days whose
    record is gone or unreadable; `again`: parse even a file whose inode, size and mtime are unchanged."""
    for name in names:
        if name.endswith(".json") and not name.startswith("."):
            if again:
                _RECORDS.pop(f"{d}/{name}", None)
            rec = read_record(f"{d}/{name}", any_version)
            if rec is None:
                into.pop(name[:-5], None)
            else:
                into[name[:-5]] = rec


_WATCHED: dict[tuple[str, bool], dict[str, dict[str, Any]]] = {}


def _load_watched(w: Any, root: Path, d: str, any_version: bool) -> dict[str, dict[str, Any]] | None:
    """load_records for a root with a watch (watch.py): the records read last time, with those whose file an event
    named since read again (rename, in-place write or removal alike; no mtime, no racy window). None: use the stat
    path."""
    key = (d, any_version)
    wkey = ("records",) + key
    with w.lock:  # a change one thread drained is applied before another thread reads the records
        try:
            ch = w.take(wkey)
            have = _WATCHED.get(key)
            if ch is None or have is None:
                _WATCHED.pop(key, None)
                if not w.add(d, wkey):  # before the listing
                    w.forget(wkey)
                    return {}
                have = {}
                _read_named(d, os.listdir(d), have, any_version)
            else:  # named by an event: read again even under the same inode, size and mtime
                _read_named(d, [n for got in ch.values() for n in got], have, any_version, again=True)
        except FileNotFoundError:
            w.forget(wkey)
            return {}
        except watch.Unavailable:
            _WATCHED.pop(key, None)
            watch.failed(root, w)
            return None
        _WATCHED[key] = have
        return dict(have)


def write_sidecar(root: Path, data_name: str, suffix: str, data_sha256: str, arrays: dict[str, np.ndarray]) -> None:
    """A file derived from the data file `data_name` alone, beside it as `<stem><suffix>`, naming the data's SHA-256
    in its array "of" (a reader uses it only with that data file); published atomically."""
    out = {"of": np.array([data_sha256.encode()], "S64"), **arrays}
    _write_atomic(units_dir(root) / (data_name[: -len(".bin")] + suffix), pack(out))


def publish(root: Path, day: str, record: dict[str, Any], arrays: dict[str, np.ndarray],
            sidecars: dict[str, dict[str, np.ndarray]] | None = None, subdir: str = "units") -> dict[str, Any]:
    """Write the data file, then its sidecars (suffix → arrays, see write_sidecar), then the record that names them:
    a reader never sees a record without its data file, nor a data file's sidecar from another one. Under the erasure
    generation check (store/erased.py): a unit read before a `forget` that changed its sources is not published (the
    record returned says `dropped`); the next build redoes the day."""
    with erased.publishing(root, f"{subdir}/{day}", record.get("erasure"), lambda: _still_current(root, record)) as ok:
        if not ok:
            return {**record, "dropped": "erased while it was built"}
        return _publish(root, day, record, arrays, sidecars, subdir)


def _still_current(root: Path, record: dict[str, Any]) -> bool:
    """A unit's source day files (a pack's member units) are still the bytes (the data files) it was built from."""
    if "members" in record:
        now = load_records(root)
        return all(now.get(day, {}).get("data") == data for day, data in record["members"].items())
    for rel, src in record.get("sources", {}).items():
        try:
            data = (root / rel).read_bytes()
        except FileNotFoundError:
            return False
        if [len(data), hashlib.sha256(data).hexdigest()] != list(src[:2]):
            return False
    return True


def _publish(root: Path, day: str, record: dict[str, Any], arrays: dict[str, np.ndarray],
             sidecars: dict[str, dict[str, np.ndarray]] | None, subdir: str) -> dict[str, Any]:
    d = units_dir(root, subdir)
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = pack(arrays)
    name = f"{day}.{time.time_ns():x}{secrets.token_hex(2)}.bin"
    _write_atomic(d / name, data)
    sha = hashlib.sha256(data).hexdigest()
    for suffix, extra in (sidecars or {}).items():
        write_sidecar(root, name, suffix, sha, extra)
    record = {**record, "v": UNIT_VERSION, "day": day, "data": name, "bytes": len(data), "sha256": sha}
    _write_atomic(d / f"{day}.json", orjson.dumps(record))
    return record


def remove_unit(root: Path, day: str, subdir: str = "units") -> bool:
    d = units_dir(root, subdir)
    try:
        os.unlink(d / f"{day}.json")
    except FileNotFoundError:
        return False
    return True


def collect_garbage(root: Path, min_age_s: float = 60.0, subdir: str = "units") -> int:
    """Delete data files no record names (older than min_age_s, so a unit being published is left alone)."""
    d = units_dir(root, subdir)
    if not d.is_dir():
        return 0
    live = {rec["data"][: -len(".bin")] for rec in load_records(root, any_version=True, subdir=subdir).values()}

    def garbage(name: str) -> bool:
        stem, dot, ext = name.rpartition(".")
        # replace_file's temporaries (and older ones), and data files no record names
        return ".tmp-" in name or name.endswith(".tmp") or bool(dot and ext in _DATA_EXTS and stem not in live)
    return unlink_older((e for e in os.scandir(d) if garbage(e.name)), min_age_s)


def check_data(root: Path, record: dict[str, Any], subdir: str = "units") -> str | None:
    """None if the unit's data file matches its record (size + SHA-256), else why not."""
    path = units_dir(root, subdir) / record["data"]
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"{record['day']}: data file {record['data']} missing"
    if len(data) != record["bytes"] or hashlib.sha256(data).hexdigest() != record["sha256"]:
        return f"{record['day']}: data file {record['data']} does not match its record (damaged)"
    return None
