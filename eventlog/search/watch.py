"""Change notification for a long-lived searcher: Linux inotify through ctypes (no dependency), so a query that finds
nothing changed reuses what the last one read without a single stat.

The kernel queues an inotify event inside the system call that made the change (write, rename, unlink, mkdir, …),
before that call returns. A searcher that drains its queue at the start of a query has therefore seen every change
completed before the query began — the same guarantee the stat-based check gives, without the file system's
timestamp granularity (its two-second "racy" window) and without visiting every directory. A consumer adds its watch on
a directory BEFORE it reads the directory, so a change made while it reads is queued and read again next time.

Consumers (index.py's scan, store.load_records, the projection and pack checks) register directories under a key and
`take(key)` what changed since their last take: {directory: {names}}, or None when they must read everything again
(first use, a queue overflow, a watched directory removed or moved). Anything else — no inotify (not Linux, no
ctypes), no watch left (ENOSPC), no instance left (EMFILE), a network file system (its remote changes raise no
event), a forked child (the queue belongs to the parent) — makes `get`/`current` answer None and the caller keeps the
stat-based check (`Unavailable` when it happens mid-read). The CLI never pays for watches: a root gets them at the
second refresh in the same process.
"""
from __future__ import annotations

import errno
import os
import struct
import threading
import time
from collections import OrderedDict
from typing import Any, Hashable

START_AT = 2  # the refresh of a root in this process that sets up its watches (1: the first; the CLI does one)
MAX_ROOTS = 8  # watched roots per process (an inotify instance each; the default per-user limit is 128)
RETRY_S = 60.0  # after a failure (no watch left, …) a root is tried again after this long

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF
        | IN_MOVE_SELF | IN_ONLYDIR)
_SELF = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
_HEAD = struct.Struct("iIII")
# file systems whose changes all pass through this kernel (a network or FUSE file system's remote ones raise no event)
LOCAL_FS = {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "overlay", "zfs", "bcachefs", "jfs", "reiserfs",
            "ramfs", "nilfs2"}


class Unavailable(Exception):
    """The watch cannot vouch for anything any more: use the stat-based check."""


_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        import ctypes
        import ctypes.util

        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        _libc = (lib, ctypes)
    return _libc


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of this process's mounts."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) >= 5 and right:
                mp = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                out.append((mp, right.split()[0]))
    return out


def local_fs(path: str) -> bool:
    """True if `path` (symlinks resolved) lies on a file system every change of which raises inotify events here."""
    real = os.path.realpath(path)
    best, fs = "", ""
    for mp, t in _mounts():
        if (real == mp or real.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
            best, fs = mp, t
    return fs in LOCAL_FS


class Watch:
    """One inotify instance (one root), thread-safe."""

    def __init__(self) -> None:
        lib, ctypes = _lib()
        fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise Unavailable(os.strerror(ctypes.get_errno()))
        self.fd, self.pid = fd, os.getpid()
        self.wds: dict[int, str] = {}
        self.paths: dict[str, int] = {}
        self.keys: dict[str, set[Hashable]] = {}  # directory → the keys it is registered under
        self.pending: dict[Hashable, dict[str, set[str]]] = {}
        self.epoch = 0  # moves on an overflow or a removed/moved watched directory: everyone reads everything again
        self.seen: dict[Hashable, int] = {}  # key → epoch of its last take
        self.broken: str | None = None
        self.lock = threading.RLock()

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0 and self.pid == os.getpid():
                os.close(self.fd)
            self.fd = -1
            self.broken = self.broken or "closed"

    def watching(self, path: str) -> bool:
        return path in self.paths

    def add(self, path: str, key: Hashable) -> bool:
        """Watch directory `path` for `key` (before reading it). False if it does not exist (or is no directory);
        Unavailable if no watch can be added."""
        lib, ctypes = _lib()
        with self.lock:
            if self.broken:
                raise Unavailable(self.broken)
            self.keys.setdefault(path, set()).add(key)
            if path in self.paths:
                return True
            wd = lib.inotify_add_watch(self.fd, os.fsencode(path), MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if err in (errno.ENOENT, errno.ENOTDIR):
                    return False
                self.broken = f"inotify_add_watch {path}: {os.strerror(err)}"
                raise Unavailable(self.broken)
            old = self.wds.get(wd)
            if old is not None and old != path:  # the same directory under another name (a symlink, a move)
                self.paths.pop(old, None)
            self.wds[wd] = path
            self.paths[path] = wd
            return True

    def _reset(self) -> None:
        self.epoch += 1
        self.pending.clear()

    def drain(self) -> None:
        with self.lock:
            if self.broken:
                raise Unavailable(self.broken)
            if self.pid != os.getpid():
                self.broken = "forked"
                raise Unavailable(self.broken)
            while True:
                try:
                    buf = os.read(self.fd, 1 << 16)
                except BlockingIOError:
                    return
                except OSError as e:
                    self.broken = f"inotify read: {e}"
                    raise Unavailable(self.broken) from None
                at = 0
                while at + _HEAD.size <= len(buf):
                    wd, mask, _cookie, n = _HEAD.unpack_from(buf, at)
                    name = buf[at + _HEAD.size:at + _HEAD.size + n].rstrip(b"\0")
                    at += _HEAD.size + n
                    if mask & IN_Q_OVERFLOW:
                        self._reset()
                        continue
                    path = self.wds.get(wd)
                    if path is None:
                        continue
                    if mask & _SELF:  # a watched directory removed, moved or unmounted: paths can no longer be trusted
                        if mask & IN_MOVE_SELF:
                            _lib()[0].inotify_rm_watch(self.fd, wd)
                        if mask & (IN_IGNORED | IN_MOVE_SELF):
                            self.wds.pop(wd, None)
                            if self.paths.get(path) == wd:
                                del self.paths[path]
                        self._reset()
                        continue
                    fname = os.fsdecode(name)
                    for key in self.keys.get(path, ()):
                        self.pending.setdefault(key, {}).setdefault(path, set()).add(fname)

    def take(self, key: Hashable) -> dict[str, set[str]] | None:
        """{directory: names} changed since `key`'s last take, or None: read everything again (and add the watches
        before reading)."""
        with self.lock:
            self.drain()
            if self.seen.get(key) != self.epoch:
                self.seen[key] = self.epoch
                self.pending.pop(key, None)
                return None
            return self.pending.pop(key, {})

    def forget(self, key: Hashable) -> None:
        """The next take(key) answers None (the key's state was dropped)."""
        with self.lock:
            self.seen.pop(key, None)
            self.pending.pop(key, None)


_ROOTS: OrderedDict[str, Watch] = OrderedDict()
_USES: dict[str, int] = {}
_FAILED: dict[str, float] = {}
_LOCK = threading.Lock()


def get(root: Any, enabled: bool = True) -> Watch | None:
    """The watch of `root` for a refresh (counted: the START_AT-th refresh in this process sets it up), or None.
    enabled=False: none is set up, so the refresh uses the stat-based check (the benchmark's baseline)."""
    key = str(root)
    with _LOCK:
        _USES[key] = _USES.get(key, 0) + 1
        if not enabled or _USES[key] < START_AT:
            return None
        w = _ROOTS.get(key)
        if w is not None and not w.broken and w.pid == os.getpid():
            _ROOTS.move_to_end(key)
            return w
        if w is not None:  # broken (no watch left, …) or inherited from the parent process
            _drop(key)
            _FAILED[key] = time.monotonic()
        if time.monotonic() - _FAILED.get(key, -RETRY_S) < RETRY_S:
            return None
        try:
            if not local_fs(key) or (os.path.lexists(f"{key}/raw") and not local_fs(f"{key}/raw")):
                _FAILED[key] = float("inf")  # remote changes raise no event: never watched
                return None
            w = Watch()
        except (Unavailable, OSError, ImportError, AttributeError):
            _FAILED[key] = time.monotonic()
            return None
        _ROOTS[key] = w
        while len(_ROOTS) > MAX_ROOTS:
            _drop(next(iter(_ROOTS)))
        return w


def current(root: Any) -> Watch | None:
    """The usable watch of `root` if a refresh set one up, else None (not counted)."""
    w = _ROOTS.get(str(root))
    if w is None or w.broken or w.pid != os.getpid():
        return None
    return w


def failed(root: Any, w: Watch) -> None:
    """`w` could not vouch (Unavailable): close it; the root is tried again after RETRY_S."""
    key = str(root)
    with _LOCK:
        if _ROOTS.get(key) is w:
            _drop(key)
        _FAILED[key] = time.monotonic()


def _drop(key: str) -> None:
    w = _ROOTS.pop(key, None)
    if w is not None:
        w.close()
