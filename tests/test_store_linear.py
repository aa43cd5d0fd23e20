"""Seals and checkpoints cost what is new, not what is already sealed (issue 30, item 1).

A year of many chats opens tens of thousands of day files; each new day seals the chat's previous one and moves the
head. The work of that step is counted here — checkpoint lines folded, seal records parsed, day files measured — at
two sizes of the log already sealed, and must be the same. Counting, never timing."""
from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from eventlog.store import head, seal
from store_support import current_head
from eventlog.store.seal import seal_closed
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog


def ev(chat: str, day: date, text: str = "hi") -> dict[str, Any]:
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": f"{day.isoformat()}T12:00:00.000Z",
            "text": text}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    n = {"folded": 0, "seal_lines": 0, "measured": 0}

    def wrap(mod: Any, name: str, key: str) -> None:
        orig = getattr(mod, name)

        def counting(*a: Any, **k: Any) -> Any:
            n[key] += 1
            return orig(*a, **k)
        monkeypatch.setattr(mod, name, counting)
    wrap(head, "_fold", "folded")
    wrap(seal, "_seal_record", "seal_lines")
    wrap(seal, "measure", "measured")
    return n


def grown(root: Path, days: int, chats: int = 3) -> tuple[EventLog, date]:
    """A log of `chats` chats with one event a day for `days` days, in time order (every day but the last sealed)."""
    log = EventLog(root)
    start = date(2025, 1, 1)
    for d in range(days):
        log.append_many([ev(str(100 + c), start + timedelta(days=d)) for c in range(chats)])
    return log, start + timedelta(days=days)


def work(counted: dict[str, int], step: Any) -> dict[str, int]:
    before = dict(counted)
    step()
    return {k: counted[k] - before[k] for k in counted}


@pytest.mark.parametrize("what", ["new day", "late event into a sealed day", "eventlog seal", "new chat"])
def test_seal_and_checkpoint_work_does_not_grow_with_what_is_sealed(tmp_path: Path, counted: dict[str, int],
                                                                    what: str) -> None:
    seen = []
    for days in (20, 120):
        log, nxt = grown(tmp_path / str(days), days)
        steps = {
            "new day": lambda log=log, nxt=nxt: log.append(ev("100", nxt)),
            "late event into a sealed day":
                lambda log=log, nxt=nxt, days=days: log.append(ev("101", nxt - timedelta(days=days // 2), "late")),
            "eventlog seal": lambda log=log, nxt=nxt: seal_closed(log, through=nxt),
            "new chat": lambda log=log, nxt=nxt: log.append_many([ev("999", nxt - timedelta(days=2)),
                                                                   ev("999", nxt - timedelta(days=1))]),
        }
        before = current_head(log.root)
        seen.append(work(counted, steps[what]))
        assert current_head(log.root) != before, "the step moved the head"
        assert verify(log.root).damage == []
    assert seen[0] == seen[1], seen


def test_one_checkpoint_per_append_however_many_days_it_seals(tmp_path: Path, counted: dict[str, int]) -> None:
    log = EventLog(tmp_path / "r")
    start = date(2025, 1, 1)
    log.append_many([ev(str(100 + c), start + timedelta(days=d)) for d in range(30) for c in range(4)])
    lines = (log.root / head.CHECKPOINTS).read_bytes().count(b"\n")
    assert lines == 1, "one append, one checkpoint, covering every seal it made"
    state, _ = head.read_checkpoints(log.root)
    assert {f"seals/telegram/{100 + c}.jsonl" for c in range(4)} <= set(state)
    assert all(state[f"seals/telegram/{100 + c}.jsonl"]["lines"] == 29 for c in range(4))


# -- the work per new day file of a batch (issue 30: a year of 200 chats appended in time order) -------------------
# Counted per day file a batch adds, as the difference between two sizes of the same shape (what every batch pays once
# — the head's checkpoint, a seal stream per chat — drops out). Before the batch was one critical section a new day
# file cost three lock files (its own, then auto-seal's of the previous day and of the chat's seal stream) and three
# fsyncs one after the other (the file, its directory, the seal stream), and its previous day was read back twice.


@pytest.fixture
def syscalls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    import os
    import threading

    from eventlog.store import lock

    n = {"locks": 0, "fsyncs": 0, "opens": 0, "creates": 0, "measured": 0, "chain_checks": 0}
    mutex = threading.Lock()  # fsyncs run in the group commit's threads
    real_fsync, real_open, real_acquire = os.fsync, os.open, lock.FileLock.acquire
    real_measure, real_damage = seal.measure, seal.chain_damage

    def fsync(fd: int) -> None:
        with mutex:
            n["fsyncs"] += 1
        real_fsync(fd)

    def open_(path: Any, flags: int, *a: Any, **k: Any) -> int:
        with mutex:
            n["opens"] += 1
            n["creates"] += bool(flags & os.O_CREAT)
        return real_open(path, flags, *a, **k)

    def acquire(self: Any) -> None:
        n["locks"] += 1
        real_acquire(self)

    def counting(key: str, real: Any) -> Any:
        def f(*a: Any, **k: Any) -> Any:
            n[key] += 1
            return real(*a, **k)
        return f
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(lock.FileLock, "acquire", acquire)
    monkeypatch.setattr(seal, "measure", counting("measured", real_measure))
    monkeypatch.setattr(seal, "chain_damage", counting("chain_checks", real_damage))
    return n


def _year(root: Path, chats: int, days: int, days_per_batch: int, fsync: str) -> None:
    """`chats` chats with one event a day for `days` days, appended in time order, `days_per_batch` days per
    append_many (a file read whole is one batch per 1 MiB: a few days of every chat)."""
    log = EventLog(root, fsync=fsync)
    start = date(2025, 1, 1)
    for b in range(0, days, days_per_batch):
        log.append_many([ev(str(100 + c), start + timedelta(days=d))
                         for d in range(b, min(b + days_per_batch, days)) for c in range(chats)])


@pytest.mark.parametrize("days_per_batch", [60, 3])
def test_a_new_day_file_costs_one_lock_one_fsync_and_no_reread(tmp_path: Path, syscalls: dict[str, int],
                                                               days_per_batch: int) -> None:
    chats = 4
    seen = {}
    for days in (30, 60):
        before = dict(syscalls)
        _year(tmp_path / str(days), chats, days, min(days_per_batch, days), "batch")
        seen[days] = {k: syscalls[k] - before[k] for k in syscalls}
        rep = verify(tmp_path / str(days))
        assert rep.ok and rep.warnings == [], (rep.damage, rep.warnings)
        sealed = seal.sealed_index(tmp_path / str(days), "telegram", "100")
        assert len(sealed) == days - 1, "every day but the last is sealed"
    files = chats * 30  # the day files the larger run adds
    per_file = {k: (seen[60][k] - seen[30][k]) / files for k in seen[60]}
    # once per chat and batch (not per day file): the lock of its previous day, written by the batch before and
    # sealed under that lock, the chat's seal stream (lock, fsync) and its month directory's fsync; once per batch
    # the head's checkpoint (two locks, one fsync). One batch for the whole run: none of that is added per file.
    k = days_per_batch
    per_chat_batch, per_batch = (1 / k, 1 / (k * chats)) if k < 30 else (0.0, 0.0)
    assert per_file["locks"] == pytest.approx(1 + 2 * per_chat_batch + 2 * per_batch), per_file
    # + ≈ 0.13: a new chat-month directory (8 here) costs its parent's fsync in the batch that makes it
    assert per_file["fsyncs"] <= 1 + 2 * per_chat_batch + per_batch + 0.15, per_file
    assert per_file["creates"] <= 2 + 2 * per_chat_batch + 2 * per_batch + 0.1, per_file  # the lock, the file
    assert per_file["opens"] <= 3 + 6 * per_chat_batch + 4 * per_batch + 0.1, per_file
    assert per_file["measured"] == 0 and per_file["chain_checks"] == 0, "a day this writer wrote is sealed unread"
