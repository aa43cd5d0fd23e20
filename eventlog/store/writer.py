"""The append-only writer: O_APPEND, the partition lock, the hash chain, fsync policy, torn-tail repair, auto-seal.

Every event is validated and encoded before anything is written, so bad input never leaves half a batch on disk.
A batch for one file is written with one write() of complete lines while its lock is held; a batch of many files is
eventlog/store/batch.py's (locks in one order, one group commit, the seals it closes written once per chat).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import orjson

from ..errors import BadEvent, DamagedLog, EventlogError
from . import dupids, schema
from .schema import DEFAULT_ACCOUNT
from .commitment import chain_hash
from .growing import read_last_line
from .groupsync import GroupSync
from .layout import RAW, parse_relpath

FSYNC_POLICIES = ("always", "batch", "never")


def _now_ts() -> str:
    return schema.normalize_ts(datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"))


@dataclass
class _Tail:
    ino: int
    size: int
    last: str  # hash of the last complete line (or the genesis)
    lines: int | None = None  # complete lines, when this writer knows them (it made the file, or read it whole)


@dataclass
class AppendResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # relpaths of torn tails moved aside


class EventLog:
    """Appends events under a log root. Safe across threads of one process only per instance; across processes and
    languages through the lock files."""

    def __init__(self, root: str | os.PathLike[str], fsync: str = "batch", autoseal: bool = True) -> None:
        if fsync not in FSYNC_POLICIES:
            raise EventlogError(f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}")
        self.root = Path(root).absolute()  # a relative root once made _ensure_dirs climb to "" for ever
        self._root_s = os.fspath(self.root)  # string paths in the hot path: pathlib costs ~100 µs per append
        self.fsync = fsync
        self.autoseal = autoseal
        self._tails: dict[str, _Tail] = {}
        self._dirs: set[str] = set()  # directories known to exist (one removed under the writer is made again)
        self._depth = 0  # nesting of _write_groups (a checkpoint's own append runs inside a write)
        self._checkpoint_due = False
        # A per-process placeholder for the chain field: events are encoded once, before the lock, and the real
        # `prev` is substituted under the lock (keys are sorted, so the top-level "prev" is found by its unique value).
        self._placeholder = secrets.token_hex(32)
        self._ph_bytes = self._placeholder.encode()

    # -- public API --------------------------------------------------------------------------------------------
    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.append_many([event]).events[0]

    def append_many(self, events: Iterable[dict[str, Any]], *, ids_only: bool = False) -> AppendResult:
        """Validate every event, then write them grouped by day file. Raises BadEvent (with `index`, the first bad
        event's position) before writing anything: bad input, or a caller-supplied id that is already in its target
        file or twice in the batch (eventlog/store/dupids.py). `result.events` are in input order.

        `ids_only`: `result.events` (and `written`) hold `{"id", "prev"}` of each event, not the whole event, and
        nothing of an event but its encoded line is kept while the batch waits for its locks: `eventlog append` of
        a 30 MB file of imported messages in one batch peaks at 170 MB RSS this way, 328 MB with whole events.

        An OSError or EventlogError from writing carries `written`: the events of the files written before it."""
        groups: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        ordered: list[dict[str, Any]] = []
        supplied: dict[str, dict[str, int]] = {}  # rel → {caller-supplied id: index}
        prepare, pre_encode = schema.prepare, self._pre_encode
        for i, ev in enumerate(events):
            try:
                prepared = prepare(ev)
                pre = pre_encode(prepared)
            except BadEvent as exc:
                raise BadEvent(str(exc), index=i) from None
            ts = prepared["ts"]  # day_relpath, inline: this loop runs once per event
            acc = prepared.get("account", DEFAULT_ACCOUNT)
            if acc == DEFAULT_ACCOUNT:
                rel = f"{RAW}/{prepared['channel']}/chats/{prepared['chat_id']}/{ts[0:4]}/{ts[5:7]}/{ts[8:10]}.jsonl"
            else:
                rel = (f"{RAW}/{prepared['channel']}/accounts/{acc}/chats/{prepared['chat_id']}/"
                       f"{ts[0:4]}/{ts[5:7]}/{ts[8:10]}.jsonl")
            if "id" in ev:
                seen = supplied.setdefault(rel, {})
                if prepared["id"] in seen:
                    raise BadEvent(f"duplicate id {prepared['id']} (also event {seen[prepared['id']] + 1} of this batch)",
                                   index=i)
                seen[prepared["id"]] = i
            if ids_only:
                prepared = {"id": prepared["id"]}  # the writer adds "prev"; the encoded line is all it writes
            groups.setdefault(rel, []).append((prepared, pre))
            ordered.append(prepared)
        checked = dupids.check_files(self._root_s, supplied) if supplied else {}
        result = self._write_groups(groups, {rel: (supplied[rel], checked[rel]) for rel in supplied})
        result.events = ordered
        return result

    def append_stream(self, relpath: str, events: Iterable[dict[str, Any]]) -> AppendResult:
        """Append to a non-partitioned chained stream under the root (dlp/alerts.jsonl, seals/…)."""
        if relpath.startswith("raw/") or ".." in relpath.split("/") or relpath.startswith("/"):
            raise EventlogError(f"not a stream path: {relpath}")
        items = []
        for ev in events:
            prepared = schema.prepare(ev)
            items.append((prepared, self._pre_encode(prepared)))
        return self._write_groups({relpath: items})

    # -- internals ---------------------------------------------------------------------------------------------
    def _pre_encode(self, prepared: dict[str, Any]) -> tuple[bytes, bytes, bytes | None, bytes | None]:
        """The line and its commitment form (None: the line is its own), each cut in two at `prev`'s placeholder.

        The cut also copies them out of orjson's output buffers, which are allocated much larger than the line: a
        batch that held those (two per event until its lock is taken) fragmented the heap into more than one fresh
        page per event, and the page faults cost more system time than the whole baseline (docs/log-format.md)."""
        ph = self._ph_bytes
        line, form = schema.encode_forms(prepared, self._placeholder)
        la, _, lb = line.partition(ph)
        if form is None:
            return la, lb, None, None
        fa, _, fb = form.partition(ph)
        return la, lb, fa, fb

    def sealed(self) -> None:
        """A seal was appended: every seal moves the head (docs/log-format.md, Head). Within one append the checkpoint
        is taken once, after the last of its seals — not once per day file the append opened, which cost a pass over
        every covered stream per seal."""
        if self._depth:
            self._checkpoint_due = True
            return
        from .head import checkpoint

        checkpoint(self)

    def _write_groups(self, groups: dict[str, list[tuple[dict[str, Any], Any]]],
                      ids: dict[str, tuple[dict[str, int], tuple[int, int]]] | None = None) -> AppendResult:
        self._depth += 1
        ok = False
        try:
            result = self._write_each(groups, ids)
            ok = True
        finally:
            self._depth -= 1
            if not self._depth and self._checkpoint_due:
                self._checkpoint_due = False
                if ok:
                    self.sealed()
                else:
                    # the seals are on disk and the next checkpoint covers them: the error being raised matters more
                    with contextlib.suppress(Exception):
                        self.sealed()
        return result

    def _write_each(self, groups: dict[str, list[tuple[dict[str, Any], Any]]],
                    ids: dict[str, tuple[dict[str, int], tuple[int, int]]] | None) -> AppendResult:
        from .batch import write_batch  # late import: batch seals through this writer

        return write_batch(self, groups, ids)

    def _ensure_dirs(self, rel: str, sync: GroupSync | None = None) -> bool:
        """Create missing parent directories (0700), fsyncing each parent of a new one (at the batch's commit under
        fsync "batch"). True if any was made."""
        top = os.path.dirname(f"{self._root_s}/{rel}")
        if top in self._dirs:
            return False
        path = top
        missing = []
        while not os.path.isdir(path):
            missing.append(path)
            path = os.path.dirname(path)
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                continue
            self._dir_changed(os.path.dirname(d), sync)
        self._dirs.add(top)
        return bool(missing)

    def _fsync_dir(self, d: str | Path) -> None:
        if self.fsync == "never":
            return
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _dir_changed(self, d: str, sync: GroupSync | None) -> None:
        """A directory got a new entry: fsync it now, or at the batch's commit."""
        if sync is not None and sync.deferred:
            sync.add_dir(d)
        else:
            self._fsync_dir(d)

    def _open(self, path: str, sync: GroupSync | None = None, fresh: bool = False) -> tuple[int, bool]:
        """(descriptor, created). `fresh`: the file was not there a moment ago, so creating it is tried first."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC  # read: the chain tail
        if not fresh:
            try:
                return os.open(path, flags), False
            except FileNotFoundError:
                pass
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return os.open(path, flags), False
        self._dir_changed(os.path.dirname(path), sync)
        return fd, True

    def _write_locked(self, rel: str, items: list[tuple[dict[str, Any], Any]], result: AppendResult,
                      ids: tuple[dict[str, int], tuple[int, int]] | None = None, sync: GroupSync | None = None,
                      fresh: bool = False) -> tuple[bool, dict[str, Any] | None]:
        """Write one file's lines under its lock (held by the caller). Returns (the file was created, the seal record
        to append while the lock is still held — the day was sealed and still matched its seal, so its seal is
        extended in the same critical section, and no other writer ever sees the file out of step with it). Under
        fsync "batch" with a `sync`, the fsync is the batch's commit (the descriptor goes to `sync`)."""
        path = f"{self._root_s}/{rel}"
        fd, created = self._open(path, sync, fresh)
        written = handed = False
        try:
            if ids is not None:
                dupids.check_locked(fd, rel, *ids)
            prev, extra, known = self._chain_tail(fd, rel, result)
            sealed = self._sealed_record(rel) if rel.startswith("raw/") and not created else None
            if sealed is not None:
                sealed = {**sealed, "lines": sealed["lines"] + self._check_against_seal(fd, rel, sealed)}
                known = sealed["lines"]  # the sealed part and what chains on from it: the whole file (after a repair)
            lines: list[bytes] = []
            put, join, sha256, nl = lines.append, b"".join, hashlib.sha256, b"\n"
            for prepared, (la, lb, fa, fb) in extra + items:
                pb = prev.encode()
                prepared["prev"] = prev
                put(join((la, pb, lb, nl)))
                # the chain covers the commitment form (content replaced by salted hashes), so erasure keeps it
                prev = sha256(join((la, pb, lb) if fa is None else (fa, pb, fb))).hexdigest()
            written = True  # from here on the file may hold some of the lines
            if self.fsync == "always":
                for line in lines:
                    self._write_all(fd, line)
                    os.fsync(fd)
            else:
                self._write_all(fd, b"".join(lines))
            st = os.fstat(fd)
            self._tails[rel] = _Tail(st.st_ino, st.st_size, prev, None if known is None else known + len(lines))
            if self.fsync == "batch":
                if sync is not None and sync.deferred:
                    handed = True  # from here on `sync` closes it, even if add_fd's early commit fails
                    sync.add_fd(fd)
                else:
                    os.fsync(fd)
            record = None
            if sealed is not None:
                from .seal import seal_record

                record = seal_record(rel, sealed["lines"] + len(lines), st.st_size, prev)
        except BaseException as exc:
            self._tails.pop(rel, None)
            if written:
                exc.after_write = True  # type: ignore[attr-defined]  # never retried: no double lines
            raise
        finally:
            if not handed:
                os.close(fd)
        return created, record

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def _chain_tail(self, fd: int, rel: str, result: AppendResult
                    ) -> tuple[str, list[tuple[dict[str, Any], Any]], int | None]:
        """The hash to chain from, repairing a torn tail first (returns the repair event to write before the batch),
        and how many complete lines the file has if that is known without reading it."""
        st = os.fstat(fd)
        cached = self._tails.get(rel)
        if cached and cached.ino == st.st_ino and cached.size == st.st_size:
            return cached.last, [], cached.lines
        if st.st_size == 0:
            return schema.genesis(rel), [], 0
        last, end = read_last_line(fd, st.st_size)
        extra: list[tuple[dict[str, Any], Any]] = []
        if end != st.st_size:
            extra.append(self._repair(fd, rel, end, st.st_size))
            result.repaired.append(rel)
        prev = schema.genesis(rel) if last is None else chain_hash(last)
        return prev, extra, None

    def _repair(self, fd: int, rel: str, end: int, size: int) -> tuple[dict[str, Any], Any]:
        """Move a torn tail aside (never glue it to the next line) and return a log:repair event for it."""
        path = self.root / rel
        with open(path, "rb") as f:
            f.seek(end)
            torn = f.read(size - end)
        rid = schema.new_id()
        aside = path.with_name(f"{path.name}.torn-{rid}")
        afd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            self._write_all(afd, torn)
            os.fsync(afd)
        except BaseException:  # ENOSPC …: no empty or partial copy left behind; the torn tail stays where it was
            os.close(afd)
            os.unlink(aside)
            raise
        os.close(afd)
        os.ftruncate(fd, end)
        os.fsync(fd)
        self._fsync_dir(path.parent)
        parsed = parse_relpath(rel)
        channel, chat = (parsed[0], parsed[1]) if parsed else ("eventlog", "stream")
        repair = {"event": "log:repair", "channel": channel, "chat_id": chat, "ts": _now_ts(), "torn_bytes": len(torn),
                  "torn_sha256": schema.line_hash(torn), "moved_to": aside.name}
        if parsed and parsed.account != DEFAULT_ACCOUNT:
            repair["account"] = parsed.account  # an account's file holds that account's events only
        event = schema.prepare(repair)
        return event, self._pre_encode(event)

    def _sealed_record(self, rel: str) -> dict[str, Any] | None:
        from .seal import sealed_index

        parsed = parse_relpath(rel)
        if not parsed:
            return None
        return sealed_index(self.root, parsed.channel, parsed.chat_id, parsed.account).get(rel)

    def _check_against_seal(self, fd: int, rel: str, sealed: dict[str, Any]) -> int:
        """The sealed part must still end where the seal says, with the sealed last line (its chain hash; an edit
        further up is `verify`'s to find, which rehashes the whole day), and any complete lines after the sealed part
        must chain on from it (a writer killed between extending a sealed day and resealing it leaves such lines). Returns
        how many there are. The sealed part is found by its byte count; if that no longer holds (an erasure rewrote
        the day and stopped before resealing: same chain hashes, other sizes) by its line count."""
        st = os.fstat(fd)
        sealed_size = sealed["bytes"]
        ok = isinstance(sealed_size, int) and 0 < sealed_size <= st.st_size
        if ok:
            last, end = read_last_line(fd, sealed_size)
            ok = end == sealed_size and last is not None and chain_hash(last) == sealed["last"]
        if ok:
            rest = os.pread(fd, st.st_size - sealed_size, sealed_size).split(b"\n")[:-1]
        else:
            data = os.pread(fd, st.st_size, 0).split(b"\n")[:-1]
            n = sealed.get("lines")
            ok = isinstance(n, int) and 0 < n <= len(data) and chain_hash(data[n - 1]) == sealed["last"]
            rest = data[n:] if ok else []
        expected = sealed["last"]
        for line in rest:  # lines after the sealed part must chain on from it
            try:
                ok = orjson.loads(line).get("prev") == expected
            except (orjson.JSONDecodeError, AttributeError):
                ok = False
            if not ok:
                break
            expected = chain_hash(line)
        if not ok:
            raise DamagedLog(f"{rel}: does not match its seal (run `eventlog verify`); refusing to append")
        return len(rest)


__all__ = ["EventLog", "AppendResult", "FSYNC_POLICIES", "BadEvent"]
