"""Atomic file replacement: write a temporary file next to the target, fsync it, rename it over, fsync the directory."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from .schema import new_id


def fsync_dir(d: str | os.PathLike[str]) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_writer(path: Path, tag: str = "tmp", mode: int = 0o600) -> Iterator[BinaryIO]:
    """A file to write that replaces `path` when the block ends without error (on an error the target is untouched
    and the temporary gone). Readers see the old bytes or the new ones, never a mix; after the block the new bytes
    are durable. The temporary name (`<name>.<tag>-<id>`) never ends in `.jsonl`, so a leftover of a kill is not
    mistaken for a log file. The file is private (0600) unless `mode` says otherwise (files other programs read,
    e.g. inside OpenClaw's install); the mode is set before the rename, so the target is never seen with the wrong
    one."""
    tmp = path.with_name(f"{path.name}.{tag}-{new_id()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(fd)
            if mode != 0o600:
                os.fchmod(fd, mode)
        os.rename(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def replace_file(path: Path, data: bytes, tag: str = "tmp", mode: int = 0o600) -> None:
    """`data` as the new content of `path`, atomically and durably (atomic_writer)."""
    with atomic_writer(path, tag, mode) as f:
        f.write(data)


def unlink_older(entries: Iterable[os.DirEntry[str]], min_age_s: float) -> int:
    """Delete the given directory entries last modified at least `min_age_s` ago (a derived store's garbage: younger
    files may belong to a build in another process about to name them). Returns how many went."""
    now, n = time.time(), 0
    for e in entries:
        try:
            if now - e.stat().st_mtime >= min_age_s:
                os.unlink(e.path)
                n += 1
        except FileNotFoundError:
            pass
    return n
