"""The cross-process, cross-language partition lock (docs/log-format.md, "Locking").

A lock file created with O_EXCL, holding the owner's pid. Node has no flock(2), so the JS writer and this one share this
protocol instead; a holder killed with SIGKILL leaves a stale file that the next writer breaks once the pid is gone.
"""
from __future__ import annotations

import os
import time

from .errors import LockTimeout

STALE_EMPTY_S = 2.0
STALE_BREAKER_S = 10.0


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


def _is_stale(path: str, content: bytes) -> bool:
    text = content.strip()
    if not text:
        try:
            return time.time() - os.stat(path).st_mtime > STALE_EMPTY_S
        except FileNotFoundError:
            return False
    try:
        pid = int(text.split()[0])
    except ValueError:
        return True
    return pid != os.getpid() and not _pid_alive(pid)


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


class FileLock:
    """`with FileLock(path + ".lock"): ...` — exclusive across processes and languages."""

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self.held = False

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        payload = f"{os.getpid()}\n".encode()
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                content = _read(self.path)
                if content is None:
                    continue  # released between our open and read: try again at once
                if _is_stale(self.path, content):
                    _break(self.path, content)
            else:
                try:
                    os.write(fd, payload)
                finally:
                    os.close(fd)
                self.held = True
                return
            if time.monotonic() > deadline:
                raise LockTimeout(f"could not lock {self.path} within {self.timeout:.0f} s (held by {content!r})")
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
