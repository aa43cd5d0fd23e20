"""Duplicate ids: an `id` the caller supplies must be new in the day file (or stream) it lands in.

The scope is the file, as `verify` checks it: within one batch (per target file) and against every line already in that
file. Ids the writer makes itself are unique by construction (a per-process counter from a random 80-bit start), so
only caller-supplied ids are checked, and the file is read only for batches that carry some.
"""
from __future__ import annotations

import os
import re

import orjson

from ..errors import BadEvent

# canonical lines are compact with sorted keys: a top-level id is written `"id":"<ULID>"`; nested objects can hold the
# same pattern, so a hit is confirmed by parsing its line.
_ID = re.compile(rb'"id":"([0-9A-HJKMNP-TV-Z]{26})"')
_CHUNK = 1 << 20


def find_ids(fd: int, wanted: dict[str, int], start: int = 0) -> dict[str, int]:
    """{id: line number} for the ids of `wanted` that some line from byte `start` on has as its top-level id
    (line numbers count from `start`)."""
    found: dict[str, int] = {}
    if not wanted:
        return found
    keys = {k.encode(): k for k in wanted}
    pos, carry, lineno = start, b"", 1
    while True:
        data = os.pread(fd, _CHUNK, pos)
        if not data:
            break
        pos += len(data)
        buf = carry + data
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        block = buf[:cut]
        for m in _ID.finditer(block):
            key = keys.get(m[1])
            if key is None or key in found:
                continue
            a = block.rfind(b"\n", 0, m.start()) + 1
            b = block.find(b"\n", m.end())
            try:
                top = orjson.loads(block[a:b]).get("id")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if top == key:
                found[key] = lineno + block.count(b"\n", 0, a)
        lineno += block.count(b"\n")
    return found


def raise_first(rel: str, wanted: dict[str, int], found: dict[str, int], where: bool = True) -> None:
    """BadEvent for the earliest event (by batch index) whose id the file already has."""
    if found:
        dup = min(found, key=lambda k: wanted[k])
        at = f"line {found[dup]}" if where else "written meanwhile by another writer"
        raise BadEvent(f"duplicate id {dup}: {rel} already has it ({at})", index=wanted[dup])


def check_files(root: str, supplied: dict[str, dict[str, int]]) -> dict[str, tuple[int, int]]:
    """Before anything is written: no supplied id may be in its target file already. Returns each checked file's
    (inode, size), so the check under the lock reads only what was appended since."""
    seen: dict[str, tuple[int, int]] = {}
    errors: list[tuple[int, str, dict[str, int], dict[str, int]]] = []
    for rel, wanted in supplied.items():
        try:
            fd = os.open(f"{root}/{rel}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            seen[rel] = (0, 0)
            continue
        try:
            st = os.fstat(fd)
            found = find_ids(fd, wanted)
        finally:
            os.close(fd)
        seen[rel] = (st.st_ino, st.st_size)
        if found:
            errors.append((min(wanted[k] for k in found), rel, wanted, found))
    if errors:
        _, rel, wanted, found = min(errors)
        raise_first(rel, wanted, found)
    return seen


def check_locked(fd: int, rel: str, wanted: dict[str, int], checked: tuple[int, int]) -> None:
    """Under the file's lock: the part written since check_files looked (all of it if the file was replaced)."""
    st = os.fstat(fd)
    ino, size = checked
    start = size if st.st_ino == ino and st.st_size >= size else 0
    if st.st_size > start:
        raise_first(rel, wanted, find_ids(fd, wanted, start), where=start == 0)
