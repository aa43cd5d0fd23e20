"""How many torn or invalid lines each JSONL day file holds, remembered between `eventlog sql` runs.

`eventlog sql` reports the lines its views skipped (`query.invalid_lines`). Counting them reads every file in scope
once more: 4.8 s of a 6 s `SELECT 1` on an uncompacted year of 200 chats (71,761 day files). The counts are derived
and rebuildable, so they live in the cache, never under the root (a read command creates nothing there):
`<cache>/sql-lines/<root key>.json` ($EVENTLOG_CACHE, else $XDG_CACHE_HOME/openclaw-eventlog) maps a hash of each
file's relpath (no chat id in clear) to the file's identity and its count. The identity is the one rule of
recall/freshness.py (size, mtime, ctime, inode; none for a file modified in the last 2 s, which is scanned every
time). A file whose identity is unchanged is not read again; any other is scanned and its entry replaced. `forget`
also drops the entries of the files it erased (registered in ops/erasure.py). The file also records the counting rule (a digest of the caller's SQL): another rule ignores it. A
run that saw an erasure (`forget` moves state/erasure's generation) while it counted writes nothing, and a run
writes only the entries it counted into the file as it is then, so it never puts back what `forget` dropped. A cache
that is missing, unreadable, damaged or of another rule is ignored and written again; when there is no cache
directory or it cannot be written, every file is scanned, as before.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Iterable

import orjson

from ..store.erased import generation
from ..store.fsutil import replace_file
from ..toolchain import cache_dir
from .freshness import same, snapshot_key, stat_key

FORMAT = 1
_KEY_LEN = 4  # freshness.Key


def directory() -> Path:
    return cache_dir() / "sql-lines"


def _root_key(root: Path) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]


def _path(root: Path) -> Path | None:
    """The root's cache file, or None when there is no cache directory to name (no HOME, no $EVENTLOG_CACHE)."""
    try:
        return directory() / f"{_root_key(root)}.json"
    except (RuntimeError, KeyError, OSError):
        return None


def _file_key(rel: str) -> str:
    return hashlib.blake2b(rel.encode(), digest_size=16).hexdigest()


def _rule_key(rule: str) -> str:
    return hashlib.sha256(rule.encode()).hexdigest()[:16]


def _load(path: Path | None) -> tuple[str | None, dict[str, list[int]]]:
    """(the rule digest, file key → entry) of a cache file; (None, {}) when it is missing or damaged."""
    if path is None:
        return None, {}
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None, {}
    if (not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("rule"), str)
            or not isinstance(data.get("files"), dict)):
        return None, {}
    files: dict[str, Any] = data["files"]
    return data["rule"], {k: v for k, v in files.items()
                          if isinstance(v, list) and len(v) == _KEY_LEN + 1 and all(type(x) is int for x in v)}


def _entries(path: Path | None, rule: str) -> dict[str, list[int]]:
    got, files = _load(path)
    return files if got == _rule_key(rule) else {}


def _update(path: Path | None, rule: str | None, changes: dict[str, list[int] | None]) -> int | None:
    """Apply `changes` (file key → entry, None: drop it) to the cache file as it is now, under `rule` (another
    rule's entries go; None: the file's own rule). The number of entries set or dropped, None when not written."""
    if path is None or not changes:
        return None
    got, files = _load(path)
    want = got if rule is None else _rule_key(rule)
    if want is None:
        return None  # nothing to drop from
    if want != got:
        files = {}
    done = 0
    for k, v in changes.items():
        if v is not None:
            files[k] = v
            done += 1
        elif files.pop(k, None) is not None:
            done += 1
    if not done:
        return 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(path, orjson.dumps({"format": FORMAT, "rule": want, "files": files}), "sql-lines")
    except OSError:
        return None  # a cache that cannot be written: the next run scans again
    return done


def invalid_lines(root: Path, paths: Iterable[str], scan: Callable[[list[str]], dict[str, int]],
                  rule: str) -> list[tuple[str, int]]:
    """(relpath, count) of the files among `paths` (absolute, under `root`) that hold torn or invalid lines, sorted.
    `scan(absolute paths)` counts them by `rule` in the files the cache cannot answer for: relpath → count, 0
    included (its relpaths are the paths without `root/`)."""
    paths = list(paths)
    prefix = str(root) + "/"
    cache_file = _path(root) if all(p.startswith(prefix) for p in paths) else None
    gen = generation(root)
    files = _entries(cache_file, rule)
    cut = len(prefix)
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
        if entry is not None and same(entry[:_KEY_LEN], stat_key(st)):
            if entry[_KEY_LEN]:
                out.append((rel, entry[_KEY_LEN]))
        else:
            stale.append(p)
            # taken before the scan: a file that grows meanwhile is scanned again next time
            snap = snapshot_key(st)
            ident[rel] = list(snap) if snap is not None else None
    if stale:
        counts = scan(stale)
        changes: dict[str, list[int] | None] = {}
        for rel, key in ident.items():
            n = counts.get(rel)
            if n is None:
                continue
            if key is not None:
                changes[_file_key(rel)] = key + [n]
            elif _file_key(rel) in files:
                changes[_file_key(rel)] = None
            if n:
                out.append((rel, n))
        if generation(root) == gen:  # else a forget ran meanwhile: what was counted may be what it erased
            _update(cache_file, rule, changes)
    return sorted(out)


def purge(root: Path, relpaths: Iterable[str]) -> dict[str, int]:
    """Drop the entries of `relpaths` (forget's erased files), whatever rule counted them: {"entries_deleted": n}."""
    return {"entries_deleted": _update(_path(root), None, {_file_key(r): None for r in relpaths}) or 0}
