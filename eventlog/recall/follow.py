"""`eventlog tail [-f]`: the last events, then every event as it is appended — across new chats and the midnight switch
to a new day file.

Following is event-driven (watchdog → inotify on Linux), never a polling loop: a change to a day file wakes the reader,
which reads from its last offset to the last complete line. A partial line (a writer mid-write, or a torn tail) is left
for later and never emitted; a repair that truncates it does not disturb the offset. When a directory appears (a new
chat, month or year) it is scanned at once, because a file created inside it can beat the watch on it.
A file replaced under the follower (`forget` rewrites a day file atomically: same lines, other bytes) is recognised by
its inode and re-read up to the last event already shown — found by its id, which an erasure keeps — so nothing is
shown twice and what was appended after it still is.
"""
from __future__ import annotations

import logging
import os
import queue
import re
import signal
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from ..errors import EventlogError
from ..store.fsutil import replace_file
from ..store.layout import RAW, log_files, log_files_under, parse_relpath


@dataclass
class Emitted:
    relpath: str
    line: int
    event: dict[str, Any]


def last_events(root: Path, n: int, chats: Iterable[str] | None = None, until: Any = None) -> list[Emitted]:
    """The last `n` events by time (ts, then id) of the chats in scope, reading only the newest day files needed;
    with `until` (aware datetime) the last ones before it."""
    if n <= 0:
        return []
    by_day = _files_by_day(root, chats, until=until)
    keep = _before(until)
    out: list[Emitted] = []
    for day in sorted(by_day, reverse=True):
        out.extend(e for e in _day_events(by_day[day]) if keep(e))
        if len(out) >= n:  # every earlier day holds only earlier events (files are per UTC day of ts)
            break
    out.sort(key=_order)
    return out[-n:]


# watchdog (7.1.0) logs this ERROR when its inotify emitter thread, between its should-keep-running check and its read,
# loses its watch to stop(): a shutdown race it handles by returning (gorakhargosh/watchdog#963). With no logging set
# up, Python's last-resort handler prints it on stderr, after `eventlog: interrupted` or before a clean exit (seen in
# CI). Only this record is dropped; every other watchdog warning and error still reaches stderr.
_STOP_RACE = "InotifyEmitter.queue_events() called when the thread is inactive"


def _not_the_stop_race(record: logging.LogRecord) -> bool:
    return record.getMessage() != _STOP_RACE


def _quiet_the_stop_race() -> None:
    lg = logging.getLogger("watchdog.observers.inotify")
    if _not_the_stop_race not in lg.filters:
        lg.addFilter(_not_the_stop_race)


class Follower:
    """Watches `root/raw` and hands every newly appended complete line's event to `on_event`."""

    def __init__(self, root: Path, on_event: Callable[[Emitted], None], chats: Iterable[str] | None = None) -> None:
        self.root = root
        self.raw = root / RAW
        self.chats = set(chats) if chats else None
        self.on_event = on_event
        self.offsets: dict[str, int] = {}
        self.lines: dict[str, int] = {}
        self.inodes: dict[str, int] = {}
        self.last_ids: dict[str, str | None] = {}  # id of the last event before the offset (None: none, or no id)
        self._wake: "queue.Queue[str | None]" = queue.Queue()
        self._observer: Any = None

    # -- which files --------------------------------------------------------------------------------------------
    def _relpath(self, path: str) -> str | None:
        try:
            rel = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return None
        parsed = parse_relpath(rel)
        if not parsed or (self.chats is not None and parsed[1] not in self.chats):
            return None
        return rel

    def start(self, offsets: dict[str, int] | None = None) -> int:
        """Record where every existing file ends (following starts there, or at `offsets` for the files it names)
        and start watching. Returns the file count."""
        from watchdog.observers import Observer

        for lf in log_files(self.root, chat=list(self.chats) if self.chats else None):
            try:
                self._mark(lf.path, lf.relpath, offsets.get(lf.relpath) if offsets else None)
            except FileNotFoundError:
                continue
        # watchdog's inotify emitter warns "Callback with id … already exists" (a RuntimeWarning on stderr) for every
        # directory it re-adds when a recursive watch sees a new subdirectory: harmless for us (we rescan new
        # directories ourselves), and 90 KB of noise for 60 chats.
        warnings.filterwarnings("ignore", message=r"Callback with id .* already exists", category=RuntimeWarning)
        # watchdog's threads (the inotify reader, the emitter, the observer: made by schedule() and start()) inherit
        # the signal mask they start with. With SIGINT/SIGTERM blocked in them the kernel delivers those signals to
        # the main thread, interrupting its wait on the queue. Unblocked, a Ctrl-C taken by a watchdog thread only set
        # CPython's flag, and the main thread slept on in `_wake.get()` until the next change under the log (seen:
        # `tail -f` ignoring Ctrl-C for 60 s in a CI run).
        _quiet_the_stop_race()
        held = {signal.SIGINT, signal.SIGTERM}
        before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            self._observer = Observer()
            handler = _Handler(self._wake)
            if self.raw.is_dir():
                self._observer.schedule(handler, str(self.raw), recursive=True)
            else:  # no log yet: watch the root until raw/ appears
                self._observer.schedule(handler, str(self.root), recursive=True)
            self._observer.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        # Files created between the listing and the watch: one rescan closes the gap.
        self._scan(self.raw)
        return len(self.offsets)

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        self._wake.put(None)

    def _mark(self, path: Path, rel: str, offset: int | None) -> None:
        """Where following starts in one file (its last complete line, or `offset`), with the file's inode and the id
        of the event just before: one short read from the end."""
        from ..store.growing import read_last_line

        fd = os.open(path, os.O_RDONLY)
        try:
            st = os.fstat(fd)
            last, end = read_last_line(fd, st.st_size if offset is None else min(offset, st.st_size))
        finally:
            os.close(fd)
        self.offsets[rel] = end if offset is None else offset
        self.lines[rel] = -1  # unknown until needed: counted lazily on first read
        self.inodes[rel] = st.st_ino
        self.last_ids[rel] = _id_of(last)

    def _resync(self, rel: str, data: bytes) -> int:
        """The offset in a replaced file just after the last event already shown (by id); its line count too."""
        want = self.last_ids.get(rel)
        if want is None and self.offsets.get(rel, 0) == 0:
            self.lines[rel] = 0
            return 0
        pos, num = 0, 0
        while (nl := data.find(b"\n", pos)) >= 0:
            num += 1
            if want is not None and _id_of(data[pos:nl]) == want:
                self.lines[rel] = num
                return nl + 1
            pos = nl + 1
        self.lines[rel] = num  # the event is not there any more: show only what comes after the file as it is now
        return pos

    @staticmethod
    def _complete_end(path: Path, size: int) -> int:
        """Offset just after the last newline at or before `size` (a partial last line is not yet an event)."""
        if size == 0:
            return 0
        with open(path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) == b"\n":  # the usual case: one byte read per file at start-up
                return size
            pos = size
            while pos > 0:
                n = min(65536, pos)
                f.seek(pos - n)
                chunk = f.read(n)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    return pos - n + i + 1
                pos -= n
        return 0

    # -- reading ------------------------------------------------------------------------------------------------
    def _scan(self, directory: Path) -> None:
        for lf in log_files_under(self.root, directory, self.chats):
            self._read(str(lf.path))

    def _read(self, path: str) -> None:
        rel = self._relpath(path)
        if rel is None:
            return
        start = self.offsets.get(rel, 0)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                size = st.st_size
                if self.inodes.setdefault(rel, st.st_ino) != st.st_ino:  # rewritten under us (a forget)
                    self.inodes[rel] = st.st_ino
                    whole = f.read(size)
                    start = self._resync(rel, whole)
                    self.offsets[rel] = start
                elif size < start:  # truncated (a torn tail was moved aside): resume at what is left
                    start = self._complete_end(Path(path), size)
                    self.offsets[rel] = start
                    return
                f.seek(start)
                data = f.read(size - start)
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        if end == 0:
            return
        if self.lines.get(rel, 0) < 0:
            with open(path, "rb") as f:
                self.lines[rel] = f.read(start).count(b"\n")
        num = self.lines.get(rel, 0)
        for line in data[:end].split(b"\n")[:-1]:
            num += 1
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                eid = ev.get("id")
                self.last_ids[rel] = eid if isinstance(eid, str) else None
                self.on_event(Emitted(rel, num, ev))
        self.lines[rel] = num
        self.offsets[rel] = start + end

    def run(self, stop: threading.Event | None = None) -> None:
        """Block, delivering events, until stop() is called (or `stop` is set: checked twice a second, for callers
        that run this on a thread)."""
        while not (stop and stop.is_set()):
            try:
                item = self._wake.get(timeout=0.5 if stop else None)
            except queue.Empty:
                continue
            if item is None:
                return
            kind, _, path = item.partition(":")
            if kind == "dir":
                if Path(path) == self.raw or self.raw in Path(path).parents:
                    self._scan(Path(path))
                elif not self.raw.is_dir():
                    continue
                elif Path(path) in self.raw.parents or Path(path) == self.root:
                    self._scan(self.raw)
            elif path.endswith(".jsonl"):
                self._read(path)


def _id_of(line: bytes | None) -> str | None:
    if not line:
        return None
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    eid = ev.get("id") if isinstance(ev, dict) else None
    return eid if isinstance(eid, str) else None


class _Handler:
    """watchdog handler: only pushes paths onto the queue (the reading happens on the caller's thread)."""

    def __init__(self, wake: "queue.Queue[str | None]") -> None:
        self.wake = wake

    def dispatch(self, event: Any) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write", "deleted"):
            return
        path = getattr(event, "dest_path", "") or event.src_path
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if event.is_directory:
            if kind in ("created", "moved"):
                self.wake.put("dir:" + path)
        elif path.endswith(".jsonl"):
            self.wake.put("file:" + path)


# -- catching up: --since and named cursors ------------------------------------------------------------------------

def events_since(root: Path, since: Any, chats: Iterable[str] | None = None, until: Any = None) -> Iterator[Emitted]:
    """Every event with `since` ≤ ts < `until` (aware datetimes; `until` optional), in time order (ts, then id), one
    UTC day in memory at a time."""
    from .when import iso

    lo = iso(since)
    keep = _before(until)
    by_day = _files_by_day(root, chats, since, until)
    for day in sorted(by_day):
        out = [e for e in _day_events(by_day[day])
               if isinstance(e.event.get("ts"), str) and e.event["ts"] >= lo and keep(e)]
        out.sort(key=_order)
        yield from out


def _before(until: Any) -> Callable[[Emitted], bool]:
    """Whether an event's ts is before `until` (always, without one); ts text compares as time (RFC 3339 UTC, ms)."""
    from .when import iso

    if until is None:
        return lambda e: True
    hi = iso(until)
    return lambda e: isinstance(ts := e.event.get("ts"), str) and ts < hi


def _files_by_day(root: Path, chats: Iterable[str] | None, since: Any = None, until: Any = None
                  ) -> dict[Any, list[Any]]:
    """The day files in scope by UTC day; `since`/`until` aware instants pruning the days."""
    from .when import utc_days

    first, last = utc_days(since, until)
    by_day: dict[Any, list[Any]] = {}
    for lf in log_files(root, chat=list(chats) if chats else None, since=first, until=last):
        by_day.setdefault(lf.day, []).append(lf)
    return by_day


def _day_events(files: list[Any]) -> Iterator[Emitted]:
    """The object events of a day's files, skipping lines that are not JSON (a torn tail is not yet an event)."""
    from ..store.reader import iter_lines

    for lf in files:
        for num, line in iter_lines(lf.path, lf.relpath):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                yield Emitted(lf.relpath, num, ev)


def _order(e: Emitted) -> tuple[str, str]:
    return (str(e.event.get("ts", "")), str(e.event.get("id", "")))


CURSOR_DIR = "state/cursors"
_CURSOR_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class Cursor:
    """`tail --cursor NAME`: what was already shown, as the byte offset reached in every day file, kept in
    <root>/state/cursors/NAME.json (0600, written atomically). Offsets, not a timestamp: a late event appended to an
    earlier day is still "new" the next time. A missing cursor starts at the end of the log as it is now."""

    def __init__(self, root: Path, name: str) -> None:
        if not _CURSOR_NAME.fullmatch(name):
            raise EventlogError(f"--cursor {name[:40]!r}: use letters, digits, _ . - (up to 64)")
        self.path = root / CURSOR_DIR / f"{name}.json"
        self.root = root
        try:
            data = orjson.loads(self.path.read_bytes())
            self.offsets: dict[str, int] | None = {k: int(v) for k, v in data["offsets"].items()}
        except FileNotFoundError:
            self.offsets = None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise EventlogError(f"cursor {self.path} is damaged; delete it to start again") from None

    @property
    def exists(self) -> bool:
        return self.offsets is not None

    def new_events(self, chats: Iterable[str] | None = None) -> tuple[list[Emitted], dict[str, int]]:
        """Events appended since the cursor (complete lines only), in time order, and the offsets after them."""
        known = self.offsets or {}
        offsets = dict(known)
        out: list[Emitted] = []
        for lf in log_files(self.root, chat=list(chats) if chats else None):
            size = os.stat(lf.path).st_size
            start = known.get(lf.relpath, 0)
            if size < start:  # a torn tail was moved aside: resume at what is left
                start = Follower._complete_end(lf.path, size)
            if size == start:
                offsets[lf.relpath] = start
                continue
            with open(lf.path, "rb") as f:
                before = f.read(start).count(b"\n") if start else 0
                data = f.read(size - start)
            end = data.rfind(b"\n") + 1
            for i, line in enumerate(data[:end].split(b"\n")[:-1], before + 1):
                try:
                    ev = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(ev, dict):
                    out.append(Emitted(lf.relpath, i, ev))
            offsets[lf.relpath] = start + end
        out.sort(key=_order)
        return out, offsets

    def end_offsets(self, chats: Iterable[str] | None = None) -> dict[str, int]:
        return {lf.relpath: Follower._complete_end(lf.path, os.stat(lf.path).st_size)
                for lf in log_files(self.root, chat=list(chats) if chats else None)}

    def save(self, offsets: dict[str, int]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        replace_file(self.path, orjson.dumps({"v": 1, "offsets": offsets}, option=orjson.OPT_SORT_KEYS))
        self.offsets = offsets
