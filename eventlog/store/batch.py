"""One batch of the writer (an `append_many` call, or `CHUNK` files of a longer one) as one critical section.

A batch across many day files — a backfill, an import, a year of chats in time order — used to cost, per new day
file: its lock, an fsync of the file and one of its directory, then auto-seal's lock of the chat's previous day, a
re-read of that day, the seal stream's lock, a write and an fsync of it (docs/benchmarks.md, "A year of 200 chats").
Here the batch

1. takes the lock of every file it writes, and of every earlier day on disk that a new day file of the batch closes
   (auto-seal), in one global order (`order_key`: partition, then day) and holds them to the end, so two such writers
   never deadlock and no other writer sees a day between its last write and its seal;
2. writes each file (one write() of complete lines each);
3. commits once: under fsync "batch", every file written and every directory with a new entry is fsynced, many at a
   time (eventlog/store/groupsync.py), before anything is acknowledged — and before any seal of them is written, so
   a seal never reaches the disk ahead of the lines it commits to;
4. seals the days the batch closed: a day this writer made or has followed since is sealed from what it wrote (its
   line count, size and last chain hash), without reading it back; one write per seal stream, one commit;
5. releases the locks. The head's checkpoint follows once per append (EventLog.sealed).
"""
from __future__ import annotations

import contextlib
import os
from datetime import date
from typing import TYPE_CHECKING, Any

from ..errors import EventlogError
from .groupsync import GroupSync
from .layout import DayPath, parse_relpath
from .lock import FileLock
from .schema import DEFAULT_ACCOUNT

if TYPE_CHECKING:
    from .writer import AppendResult, EventLog

CHUNK = 4096  # day files one batch locks at once: a longer library call is cut into batches, so no lock is held long
Groups = dict[str, list[tuple[dict[str, Any], Any]]]
Ids = dict[str, tuple[dict[str, int], tuple[int, int]]]


def order_key(rel: str, p: DayPath | None) -> tuple[Any, ...]:
    """The order in which one writer takes several locks (`p`: the relpath parsed): a partition's day files together,
    day by day; the default account's before other accounts' of the same chat (as `eventlog migrate` takes a file's
    and then its accounts' files); streams (not day files) after every day file."""
    if p is None:
        return (1, rel)
    return (0, p.channel, p.chat_id, p.account != DEFAULT_ACCOUNT, p.account, rel)


class _Partition:
    """One chat's share of the batch: its files to write, the earlier days on disk a new day closes."""
    __slots__ = ("parsed", "rels", "pending", "since")

    def __init__(self, parsed: DayPath) -> None:
        self.parsed = parsed
        self.rels: list[str] = []
        self.pending: list[str] = []  # unsealed day files on disk, not written by the batch, that it may seal
        self.since: date | None = None  # auto-seal considers days from here on (None: all)


def write_batch(log: "EventLog", groups: Groups, ids: Ids | None) -> "AppendResult":
    from .writer import AppendResult

    result = AppendResult()
    parsed = {rel: parse_relpath(rel) for rel in groups}  # once per file: a batch needs it four times
    rels = sorted(groups, key=lambda r: order_key(r, parsed[r])) if len(groups) > 1 else list(groups)
    for i in range(0, len(rels), CHUNK):
        _chunk(log, rels[i:i + CHUNK], groups, ids, result, parsed)
    return result


def _plan(log: "EventLog", rels: list[str], fresh: set[str], parsed: dict[str, DayPath | None]
          ) -> tuple[list[str], list[_Partition]]:
    """The locks to take, in order, and the partitions of the batch. A partition gets a new day file if one of its
    files is not on disk (one stat, into `fresh`; a file this writer knows is taken to be there): then the days it
    closes are listed before any lock is taken, so their locks are taken in order too."""
    order: list[str] = []
    parts: list[_Partition] = []
    for rel in rels:
        p = parsed[rel] if log.autoseal else None
        if p is None:
            order.append(rel)
            continue
        if not parts or parts[-1].parsed[:2] != p[:2] or parts[-1].parsed.account != p.account:
            parts.append(_Partition(p))
        parts[-1].rels.append(rel)
    from .seal import unsealed_before

    for part in parts:
        new = [r for r in part.rels if r not in log._tails and not os.path.exists(f"{log._root_s}/{r}")]
        fresh.update(new)
        if new:
            p = part.parsed
            part.since, found = unsealed_before(log, p.channel, p.chat_id, parsed[max(new)].day,  # type: ignore[union-attr]
                                                p.account)
            mine = set(part.rels)
            part.pending = [r for r in found if r not in mine]
            parsed.update((r, parse_relpath(r)) for r in part.pending)
        order += sorted(part.rels + part.pending)  # one partition's relpaths sort by day
    return order, parts


def _chunk(log: "EventLog", rels: list[str], groups: Groups, ids: Ids | None, result: "AppendResult",
           parsed: dict[str, DayPath | None]) -> None:
    sync = GroupSync(log.fsync == "batch")
    held: list[FileLock] = []
    done: list[str] = []
    created: set[str] = set()
    seals: dict[str, dict[str, dict[str, Any]]] = {}  # seal stream → day file → its new seal record
    fresh: set[str] = set()
    try:
        try:
            order, parts = _plan(log, rels, fresh, parsed)
            mine = set(rels)
            for rel in order:
                # this chunk's files, not `groups`: a day of the partition that an earlier chunk of the same call wrote
                # is on disk and unsealed, so it is among the days this chunk may seal (writing it again here wrote
                # its lines twice: an append_many of more than CHUNK files did)
                if rel in mine:
                    made, record = _write_one(log, rel, groups[rel], ids, result, sync, held, rel in fresh)
                    done.append(rel)
                    if made:
                        created.add(rel)
                    if record is not None:
                        seals.setdefault(parsed[rel].seal, {})[rel] = record  # type: ignore[union-attr]
                else:
                    _hold(log, rel, held)
            sync.commit()
        except BaseException as exc:
            _salvage(log, exc, sync, done, groups, seals, result)
            raise
        try:
            locked = {lock.path for lock in held}
            for part in parts:
                _closed(log, part, created, locked, seals, parsed)
            _write_seals(log, seals)
        except (OSError, EventlogError) as exc:
            # durable, but their seals are not written: acknowledged are the earlier batches' (as when a file's
            # seal failed before; the docs allow written lines to go unacknowledged after an I/O error)
            exc.written = list(result.events)  # type: ignore[union-attr]
            raise
        for rel in done:
            result.events.extend(ev for ev, _ in groups[rel])
    finally:
        for lock in reversed(held):
            lock.release()


def _write_one(log: "EventLog", rel: str, items: list[tuple[dict[str, Any], Any]], ids: Ids | None,
               result: "AppendResult", sync: GroupSync, held: list[FileLock], fresh: bool
               ) -> tuple[bool, dict[str, Any] | None]:
    checked = ids.get(rel) if ids else None
    made = log._ensure_dirs(rel, sync)
    lock = FileLock(f"{log._root_s}/{rel}.lock")
    try:
        lock.acquire()
        held.append(lock)
        created, record = log._write_locked(rel, items, result, checked, sync, fresh)
    except FileNotFoundError as exc:
        # The directory went away (removed by hand) while we believed it existed: make it again and try once more,
        # as the JS writer does. ENOENT before the write comes from opening the lock (or the file); after the write
        # nothing is retried, or the lines would be there twice.
        if getattr(exc, "after_write", False):
            raise
        if lock.held:
            lock.release()
            held.remove(lock)
        log._dirs.discard(os.path.dirname(f"{log._root_s}/{rel}"))
        made = log._ensure_dirs(rel, sync)
        lock = FileLock(f"{log._root_s}/{rel}.lock")
        lock.acquire()
        held.append(lock)
        created, record = log._write_locked(rel, items, result, checked, sync)
    return made or created, record


def _hold(log: "EventLog", rel: str, held: list[FileLock]) -> None:
    """The lock of a day the batch may seal without writing it (gone meanwhile: then there is nothing to seal)."""
    lock = FileLock(f"{log._root_s}/{rel}.lock")
    try:
        lock.acquire()
    except FileNotFoundError:
        return
    held.append(lock)


def _salvage(log: "EventLog", exc: BaseException, sync: GroupSync, done: list[str], groups: Groups,
             seals: dict[str, dict[str, dict[str, Any]]], result: "AppendResult") -> None:
    """A write failed: make the files written before it durable, so they can be acknowledged (`exc.written`), and
    extend the seals they extended; if even that fails, acknowledge only earlier batches."""
    if not isinstance(exc, (OSError, EventlogError)):
        sync.discard()
        return
    try:
        sync.commit()
    except BaseException:
        sync.discard()
    else:
        for rel in done:
            result.events.extend(ev for ev, _ in groups[rel])
        with contextlib.suppress(Exception):
            _write_seals(log, seals)
    exc.written = list(result.events)  # type: ignore[union-attr]


def _closed(log: "EventLog", part: _Partition, created: set[str], held: set[str],
            seals: dict[str, dict[str, dict[str, Any]]], parsed: dict[str, DayPath | None]) -> None:
    """Seal records for the days of `part` that the batch's newest new day file closed (auto-seal), under their held
    locks: every day from `since` to before it, written by the batch or found on disk, that has no seal yet."""
    newest = max((parsed[r].day for r in part.rels if r in created), default=None)  # type: ignore[union-attr]
    if newest is None:
        return
    from .seal import seal_record, seal_state, sealed_index

    p = part.parsed
    index = sealed_index(log.root, p.channel, p.chat_id, p.account)
    mine = seals.setdefault(p.seal, {})
    for rel in sorted(part.rels + part.pending):
        day = parsed[rel].day  # type: ignore[union-attr]
        if day >= newest:
            break
        if (part.since is not None and day < part.since) or rel in index or rel in mine \
                or f"{log._root_s}/{rel}.lock" not in held:
            continue
        tail = log._tails.get(rel)
        if tail is not None and tail.lines:
            try:
                st = os.stat(f"{log._root_s}/{rel}")
            except FileNotFoundError:
                continue
            if st.st_ino == tail.ino and st.st_size == tail.size:  # as this writer left it: seal what it wrote
                mine[rel] = seal_record(rel, tail.lines, tail.size, tail.last)
                continue
        _, record = seal_state(log, rel, None)
        if record is not None:
            mine[rel] = record


def _write_seals(log: "EventLog", seals: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Append every seal record of the batch: one write per seal stream, one commit (a nested batch)."""
    streams = {stream: list(records.values()) for stream, records in seals.items() if records}
    if not streams:
        return
    log._write_groups({stream: [(r, log._pre_encode(r)) for r in (_prepared(x) for x in recs)]
                       for stream, recs in streams.items()})
    log.sealed()  # every seal moves the head (docs/log-format.md, Head); taken once, after the append


def _prepared(record: dict[str, Any]) -> dict[str, Any]:
    """A seal record as schema.prepare would return it (seal_record makes it valid: its channel and chat come from a
    parsed day path, its ts is canonical, it has no content field, so no salt), without checking it again: a year of
    200 chats writes ≈ 70,000 of them."""
    from .schema import VERSION, new_id

    return {**record, "v": VERSION, "id": new_id()}
