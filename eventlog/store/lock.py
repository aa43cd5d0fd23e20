"""The cross-process, cross-language partition lock (docs/log-format.md, "Locking").

A lock file created with O_EXCL, holding the owner's pid and its start time (field 22 of /proc/<pid>/stat). Node has no
flock(2), so the JS writer and this one share this protocol instead. A holder killed with SIGKILL leaves a stale file
that the next writer breaks once that process is gone — judged by pid *and* start time, so a reused pid does not keep
it alive. Contents that are not a lock record (empty, junk, pid 0, -1, 20 digits) are stale once the file is 2 s old.

A writer that finds the lock held creates `<lock>.want`: a long-lived writer holding a lease (the JS writer in the
gateway keeps the lock across consecutive appends) sees it and lets go within its check interval.
"""
from __future__ import annotations

import os
import re
import time

from ..errors import LockTimeout

STALE_EMPTY_S = 2.0  # an empty or unparseable lock file older than this is stale
STALE_BREAKER_S = 10.0
PID_MAX = 1 << 22  # PID_MAX_LIMIT on 64-bit Linux: larger numbers are not pids
_RECORD = re.compile(rb"([0-9]{1,7})(?: ([0-9]{1,20}))?\n?")


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks after boot (/proc/<pid>/stat field 22), '' if /proc is not there (not
    Linux), None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return "" if not os.path.isdir("/proc/self") else None
    except OSError:
        return ""
    # comm (field 2) is in parentheses and may itself hold spaces and ')': split after the last ')'
    fields = data[data.rfind(b")") + 2:].split()
    return fields[19].decode() if len(fields) > 19 else ""


_own: tuple[int, str] = (-1, "")


def _own_start() -> str:
    """This process's start time, cached per pid (a forked child is another process with another start time)."""
    global _own
    pid = os.getpid()
    if _own[0] != pid:
        _own = (pid, start_time(pid) or "")
    return _own[1]


def lock_record() -> bytes:
    """What this process writes into a lock it takes."""
    start = _own_start()
    return f"{os.getpid()} {start}\n".encode() if start else f"{os.getpid()}\n".encode()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(64)
    except FileNotFoundError:
        return None


def holder_alive(content: bytes) -> bool | None:
    """True/False for a lock record whose holder is/is not running; None if `content` is not a lock record."""
    m = _RECORD.fullmatch(content)
    if not m:
        return None
    pid = int(m[1])
    if not 0 < pid <= PID_MAX:
        return None
    recorded = m[2].decode() if m[2] else None
    if pid == os.getpid():
        # ours only if the start time matches too (a record left by an earlier process that had our pid is stale)
        own = _own_start()
        return recorded is None or not own or recorded == own
    current = start_time(pid)
    if current is None:
        return False
    if current == "" or recorded is None:  # no /proc, or an old-format record: the pid alone decides
        return _pid_alive(pid)
    return current == recorded


def _is_stale(path: str, content: bytes) -> bool:
    alive = holder_alive(content)
    if alive is None:  # empty (a writer between create and write) or junk: stale once old enough
        try:
            return time.time() - os.stat(path).st_mtime > STALE_EMPTY_S
        except FileNotFoundError:
            return False
    return not alive


def _break(path: str, content: bytes) -> None:
    breaker = path + ".break"
    try:
        os.mkdir(breaker, 0o700)
    except FileExistsError:
        try:
            if time.time() - os.stat(breaker).st_mtime > STALE_BREAKER_S:
                os.rmdir(breaker)
        except FileNotFoundError:
            pass
        return
    try:
        if _read(path) == content:
            os.unlink(path)
    except FileNotFoundError:
        pass
    finally:
        os.rmdir(breaker)


def _want(path: str) -> None:
    """Tell a lease holder that someone waits (`<lock>.want`, empty, 0600)."""
    try:
        os.close(os.open(path + ".want", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    except OSError:
        pass  # best effort: without it a lease holder still lets go when idle


class FileLock:
    """`with FileLock(path + ".lock"): ...` — exclusive across processes and languages."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.held = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        payload = lock_record()
        wanted = raced = False
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                content = _read(self.path)
                # released between our open and read: try again at once, once. Unreadable again (a dangling symbolic
                # link planted as the lock: O_EXCL sees it, a read follows it) it is waited on until the deadline.
                if content is None and not raced:
                    raced = True
                    continue
                raced = False
                if content is None:
                    pass  # neither ours to break nor to read: wait for it to go away
                elif _is_stale(self.path, content):
                    _break(self.path, content)
                else:
                    _want(self.path)
                    wanted = True
            else:
                try:
                    os.write(fd, payload)
                except BaseException:  # ENOSPC …: leave no empty lock behind
                    os.close(fd)
                    os.unlink(self.path)
                    raise
                os.close(fd)
                self.held = True
                if wanted:
                    try:
                        os.unlink(self.path + ".want")
                    except FileNotFoundError:
                        pass
                return
            if time.monotonic() > deadline:
                if wanted:
                    try:
                        os.unlink(self.path + ".want")
                    except FileNotFoundError:
                        pass
                holder = "an unreadable lock file" if content is None else repr(content)
                raise LockTimeout(f"could not lock {self.path} within {self.timeout:.0f} s (held by {holder})")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> "FileLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
