"""When a copy derived from a day file (a Parquet unit, a search index) may stand in for it: the file's identity.

The rule: a copy made from the first `size` bytes of a file stands in for the file while the file's *stat key* —
(size, mtime_ns, ctime_ns, inode) — is exactly what it was when the copy was made.
- Appends and torn-tail repairs change size and mtime; erasure (store format v2) rewrites a file through a new inode
  (rename) or in place — either moves mtime/ctime and usually size. Restoring from a backup, `cp -a`, or `chmod`
  changes the inode or ctime: the copy is then merely not used (read the JSONL) until it is rebuilt — never wrong.
- `ctime` cannot be set from user space (`touch -r` sets mtime and moves ctime), so a same-size rewrite that also
  restores mtime is still seen.
- Timestamps are coarse (a kernel tick, ~4 ms): a write in the same tick as the snapshot could keep mtime equal. So a
  file whose mtime is younger than RACY_NS when the copy is made gets no key (`None`): it is read from JSONL until a
  later rebuild (git's "racy clean" rule).
Cost: one stat per day file per query — the planner lists those files anyway (`os.scandir` + `DirEntry.stat`, ~1 µs
each on a warm cache); no file is opened. `content_digest` (SHA-256 of the bytes) is recorded beside the key for
audits (`compact --check`) and costs one read of the file; queries never pay it.
"""
from __future__ import annotations

import hashlib
import os
import time
from typing import Optional

RACY_NS = 2_000_000_000
Key = tuple  # (size, mtime_ns, ctime_ns, ino)


def stat_key(st: os.stat_result) -> Key:
    """The identity of a file as of this stat."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def key_of(path: str | os.PathLike[str]) -> Optional[Key]:
    """stat_key of a path, or None if it is gone."""
    try:
        return stat_key(os.stat(path))
    except FileNotFoundError:
        return None


def snapshot_key(st: os.stat_result, now_ns: int | None = None) -> Optional[Key]:
    """The key to record for a copy made now, or None when the file is too recently modified to be trusted."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    if now_ns - st.st_mtime_ns < RACY_NS:
        return None
    return stat_key(st)


def same(recorded: Optional[Key | list], current: Key) -> bool:
    """Whether a recorded key (from JSON: a list) still describes the file."""
    return recorded is not None and tuple(recorded) == current


def content_digest(path: str | os.PathLike[str], size: int) -> str:
    """SHA-256 of the first `size` bytes (what a copy was made from)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        left = size
        while left > 0:
            chunk = f.read(min(1 << 20, left))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()
