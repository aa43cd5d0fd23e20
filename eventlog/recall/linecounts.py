"""How many torn or invalid lines each JSONL day file holds, remembered between `eventlog sql` runs.

`eventlog sql` reports the lines its views skipped (`query.invalid_lines`). Counting them reads every file in scope
once more: 4.8 s of a 6 s `SELECT 1` on an uncompacted year of 200 chats (71,761 day files). The counts are derived
and rebuildable, so they live in the cache, never under the root (a read command creates nothing there):
`<cache>/sql-lines/<root key>.json` ($EVENTLOG_CACHE, else $XDG_CACHE_HOME/openclaw-eventlog) maps a hash of each
file's relpath (no chat id in clear) to the file's identity and its count. The identity is the one rule of
recall/freshness.py (size, mtime, ctime, inode; none for a file modified in the last 2 s, which is scanned every
time). A file whose identity is unchanged is not read again; any other is scanned and its entry replaced. `forget`
also drops the entries of the files it erased (registered in ops/erasure.py). A cache that is missing, unreadable or damaged is ignored and written again; when the cache cannot
be written, every file is scanned, as before.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson

from ..store.fsutil import replace_file
from ..toolchain import cache_dir
from .freshness import snapshot_key, stat_key

FORMAT = 1
_KEY_LEN = 4  # freshness.Key


def directory() -> Path:
    return cache_dir() / "sql-lines"


def _root_key(root: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]


def _path(root: Path) -> Path:
    return directory() / f"{_root_key(root)}.json"


def _file_key(rel: str) -> str:
    return hashlib.blake2b(rel.encode(), digest_size=16).hexdigest()


def _load(path: Path) -> dict[str, list[int]]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        return {}
    files: dict[str, Any] = data["files"]
    return {k: v for k, v in files.items()
            if isinstance(v, list) and len(v) == _KEY_LEN + 1 and all(type(x) is int for x in v)}


def _save(path: Path, files: dict[str, list[int]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(path, orjson.dumps({"format": FORMAT, "files": files}), "sql-lines")
    except OSError:
        pass  # a cache that cannot be written: the next run scans again


def invalid_lines(root: Path, paths: Iterable[str],
                  scan: Callable[[list[str]], dict[str, int]]) -> list[tuple[str, int]]:
    """(relpath, count) of the files among `paths` (absolute, under `root`) that hold torn or invalid lines, sorted.
    `scan(absolute paths)` counts them in the files the cache cannot answer for: relpath → count, 0 included."""
    cache_file = _path(root)
    files = _load(cache_file)
    cut = len(str(root)) + 1
    out: list[tuple[str, int]] = []
    stale: list[str] = []
    ident: dict[str, list[int] | None] = {}
    for p in paths:
        rel = p[cut:]
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue  # gone since the query planned it (a retention `forget`): nothing of it was read
        entry = files.get(_file_key(rel))
        if entry is not None and tuple(entry[:_KEY_LEN]) == stat_key(st):
            if entry[_KEY_LEN]:
                out.append((rel, entry[_KEY_LEN]))
        else:
            stale.append(p)
            # taken before the scan: a file that grows meanwhile is scanned again next time
            snap = snapshot_key(st)
            ident[rel] = list(snap) if snap is not None else None
    if stale:
        counts = scan(stale)
        dirty = False
        for rel, key in ident.items():
            n = counts.get(rel)
            if n is None:
                continue
            if key is not None:
                files[_file_key(rel)] = key + [n]
                dirty = True
            elif files.pop(_file_key(rel), None) is not None:
                dirty = True
            if n:
                out.append((rel, n))
        if dirty:
            _save(cache_file, files)
    return sorted(out)


def purge(root: Path, relpaths: Iterable[str]) -> dict[str, int]:
    """Drop the entries of `relpaths` (forget's erased files): {"entries_deleted": n}."""
    cache_file = _path(root)
    files = _load(cache_file)
    gone = [k for k in map(_file_key, relpaths) if k in files]
    for k in gone:
        del files[k]
    if gone:
        _save(cache_file, files)
    return {"entries_deleted": len(gone)}
