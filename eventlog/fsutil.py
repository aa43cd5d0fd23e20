"""Atomic file replacement: write a temporary file next to the target, fsync it, rename it over, fsync the directory."""
from __future__ import annotations

import os
from pathlib import Path

from .schema import new_id


def fsync_dir(d: str | os.PathLike[str]) -> None:
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, tag: str = "tmp") -> None:
    """Readers see the old bytes or the new ones, never a mix; after return the new bytes are durable. The temporary
    name (`<name>.<tag>-<id>`) never ends in `.jsonl`, so a leftover of a kill is not mistaken for a log file."""
    tmp = path.with_name(f"{path.name}.{tag}-{new_id()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.rename(tmp, path)
    fsync_dir(path.parent)
