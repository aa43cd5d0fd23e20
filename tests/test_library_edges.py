"""The logic that moved out of eventlog/cli/ (issue 23, item 2), called as a library: the index check
(eventlog/search/check.py) and tail's start and cursor (eventlog/recall/tail.py)."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from eventlog.errors import EventlogError
from eventlog.recall.tail import TailQuery, tail
from eventlog.search import index, store
from eventlog.search.check import check
from eventlog.store.writer import EventLog


def ev(chat: str, ts: str, text: str) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text,
            "direction": "in", "from": {"id": 1, "username": "ann"}}


def test_index_check_states(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append_many([ev("1", "2026-10-01T10:00:00.000Z", "alpha"), ev("1", "2026-10-02T10:00:00.000Z", "beta")])
    c = check(root, vectors=False)
    assert c.state == "stale" and sorted(c.stale) == ["2026-10-01", "2026-10-02"] and c.fresh == 0
    index.update(root, vectors=False)
    c = check(root, vectors=False)
    assert (c.state, c.fresh, c.stale, c.removed, c.damaged) == ("fresh", 2, [], [], [])
    log.append(ev("1", "2026-10-02T11:00:00.000Z", "gamma"))
    assert check(root, vectors=False).stale == ["2026-10-02"]
    index.update(root, vectors=False)
    rec = store.load_records(root)["2026-10-01"]
    data = store.units_dir(root) / rec["data"]
    b = bytearray(data.read_bytes())
    b[-1] ^= 0xFF
    data.write_bytes(bytes(b))
    c = check(root, vectors=False)
    assert c.state == "damaged" and len(c.damaged) == 1  # damage outranks anything stale
    assert store.load_records(root)["2026-10-01"] == rec, "a check builds nothing"


def texts(root: Path, q: TailQuery) -> tuple[list[str], int]:
    got: list[str] = []
    n = tail(root, q, lambda e: got.append(e.event["text"]))
    return got, n


def test_tail_start_and_cursor(root: Path) -> None:
    from datetime import datetime, timezone

    log = EventLog(root, fsync="never", autoseal=False)
    log.append(ev("1", "2026-11-01T10:00:00.000Z", "old"))
    log.append(ev("2", "2026-11-02T10:00:00.000Z", "b"))
    log.append(ev("1", "2026-11-02T09:00:00.000Z", "a"))
    assert texts(root, TailQuery(count=2)) == (["a", "b"], 2)
    since = datetime(2026, 11, 2, tzinfo=timezone.utc)
    assert texts(root, TailQuery(since=since)) == (["a", "b"], 2)
    assert texts(root, TailQuery(count=5, chats=("1",))) == (["old", "a"], 2)
    # a new cursor shows the first -n and remembers the end of the log; the next run shows only what is new
    assert texts(root, TailQuery(count=1, cursor="me")) == (["b"], 1)
    assert texts(root, TailQuery(count=1, cursor="me")) == ([], 0)
    log.append(ev("1", "2026-11-01T11:00:00.000Z", "late, into an earlier day"))
    assert texts(root, TailQuery(cursor="me")) == (["late, into an earlier day"], 1)
    with pytest.raises(EventlogError, match="--cursor"):
        tail(root, TailQuery(cursor="../x"), lambda e: None)
    with pytest.raises(EventlogError, match="--chat"):
        tail(root, TailQuery(chats=("../x",)), lambda e: None)


def test_following_saves_the_cursor_when_interrupted(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    log.append(ev("1", "2026-11-01T10:00:00.000Z", "before"))
    got: list[str] = []
    following = threading.Event()

    def on_event(e) -> None:
        got.append(e.event["text"])
        if e.event["text"] == "while following":  # then Ctrl-C, while the follower waits for the next change
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()

    def on_following(n: int) -> None:
        following.set()
        log.append(ev("1", "2026-11-01T10:00:01.000Z", "while following"))

    # Python's own Ctrl-C handler for the test: a process started with SIGINT ignored (a background job of a shell
    # without job control, as CI may run us) keeps it ignored, and the follower would then wait for ever.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            tail(root, TailQuery(count=0, cursor="me", follow=True), on_event, on_following)
    finally:
        signal.signal(signal.SIGINT, old)
    assert following.is_set() and got == ["while following"]
    # what was shown while following is "seen": the cursor's next run has nothing new
    assert texts(root, TailQuery(cursor="me")) == ([], 0)
