"""Reading files that only grow: a stream from where the last read stopped (checkpoints, seal streams), and a file's
last line from its end.

A reader keeps, per file, how far it read and the last complete line it saw. The next read continues there if the file
is the same inode, no shorter, and still has that line in that place; anything else (replaced, truncated, edited at
its end) starts again from the beginning, and the caller rebuilds what it derived. So a stream read after every append
costs what was appended, not the whole stream (a full re-read per seal made appends across many day files quadratic).
"""
from __future__ import annotations

import os
from pathlib import Path

_TAIL_CHUNK = 64 * 1024


def read_last_line(fd: int, size: int) -> tuple[bytes | None, int]:
    """(last complete line without '\\n' or None, offset just after the last '\\n'), reading backwards in chunks."""
    buf = b""
    pos = size
    last_nl = -1
    while pos > 0 and last_nl < 0:
        n = min(_TAIL_CHUNK, pos)
        pos -= n
        buf = os.pread(fd, n, pos) + buf
        idx = buf.rfind(b"\n")
        if idx >= 0:
            last_nl = pos + idx
    if last_nl < 0:
        return None, 0
    buf = buf[: last_nl - pos]
    while True:
        idx = buf.rfind(b"\n")
        if idx >= 0:
            return buf[idx + 1 :], last_nl + 1
        if pos == 0:
            return buf, last_nl + 1
        n = min(_TAIL_CHUNK, pos)
        pos -= n
        buf = os.pread(fd, n, pos) + buf


class Growing:
    """The read position in one growing file. `read(path)` → (restarted, new complete lines)."""
    __slots__ = ("ino", "size", "last")

    def __init__(self) -> None:
        self.ino = -1
        self.size = 0  # bytes of the complete lines read so far
        self.last = b""  # the last complete line read

    def read(self, path: Path | str) -> tuple[bool, list[bytes]] | None:
        """None when the file does not exist. `restarted`: everything derived before must be dropped (the lines
        returned are then the whole file's). A torn tail is not returned until it is completed."""
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            return None
        with f:
            st = os.fstat(f.fileno())
            restarted = st.st_ino != self.ino or st.st_size < self.size
            if not restarted and self.size:
                f.seek(self.size - len(self.last) - 1)
                restarted = f.read(len(self.last) + 1) != self.last + b"\n"
            if restarted:
                self.ino, self.size, self.last = st.st_ino, 0, b""
            if st.st_size <= self.size:
                return restarted, []
            f.seek(self.size)
            lines = f.read(st.st_size - self.size).split(b"\n")[:-1]
        if lines:
            self.size += sum(len(x) + 1 for x in lines)
            self.last = lines[-1]
        return restarted, lines
