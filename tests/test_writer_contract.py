"""The writer's promises that the other store tests reach only with small lines and the default policy: the chain
continues correctly after lines and torn tails longer than the 64 KiB read-back chunk, each fsync policy syncs what
it says, and bad arguments are refused with a clear message before anything is written.

Added for issue 15 (mutation testing of eventlog/store/writer.py: `_read_last_line`'s chunk loop, the fsync policies and
the argument checks had no test that could fail).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eventlog.errors import BadEvent, EventlogError
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import ev

DAY = "raw/telegram/chats/42/2026/11/29.jsonl"
BIG = 150_000  # > 2 × the 64 KiB chunk


def clean(root: Path) -> None:
    rep = verify(root)
    assert rep.ok and not rep.warnings, (rep.damage, rep.warnings)


@pytest.mark.parametrize("before", [0, 1, 3])
def test_a_fresh_writer_chains_on_after_a_line_longer_than_the_read_back_chunk(root: Path, before: int) -> None:
    log = EventLog(root, fsync="never")
    for i in range(before):
        log.append(ev(ts="2026-11-29T10:00:00Z", text=f"small {i}"))
    log.append(ev(ts="2026-11-29T10:00:01Z", text="x" * BIG))
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T10:00:02Z", text="after"))  # no cached tail
    clean(root)


def test_a_fresh_writer_chains_on_after_a_short_line_that_follows_a_long_one(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:01Z", text="x" * BIG))
    log.append(ev(ts="2026-11-29T10:00:02Z", text="short"))
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T10:00:03Z", text="after"))
    clean(root)


@pytest.mark.parametrize("torn_size, before", [(BIG, 1), (BIG, 0), (10, 0)])
def test_a_long_torn_tail_is_moved_aside_whole(root: Path, torn_size: int, before: int) -> None:
    path = root / DAY
    if before:
        EventLog(root, fsync="never").append(ev(ts="2026-11-29T10:00:01Z", text="y" * BIG))
    else:
        path.parent.mkdir(parents=True)
    torn = b'{"torn":"' + b"z" * torn_size
    with open(path, "ab") as f:
        f.write(torn)
    res = EventLog(root, fsync="never").append_many([ev(ts="2026-11-29T10:00:02Z", text="after")])
    assert res.repaired == [DAY]
    [aside] = path.parent.glob("29.jsonl.torn-*")
    assert aside.read_bytes() == torn
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    clean(root)


@pytest.mark.parametrize("policy, per_file", [("always", 3), ("batch", 1), ("never", 0)])
def test_each_fsync_policy_syncs_what_it_promises(root: Path, monkeypatch, policy: str, per_file: int) -> None:
    real = os.fsync
    synced: list[tuple[bool, int]] = []

    def spy(fd: int) -> None:  # the real fsync, counted: regular file (by inode) or directory
        st = os.fstat(fd)
        synced.append((stat.S_ISDIR(st.st_mode), st.st_ino))
        real(fd)

    log = EventLog(root, fsync=policy, autoseal=False)
    monkeypatch.setattr(os, "fsync", spy)
    log.append_many([ev(ts=f"2026-11-29T10:00:0{i}Z", text=f"line {i}") for i in range(3)])
    ino = (root / DAY).stat().st_ino
    assert sum(1 for is_dir, i in synced if not is_dir and i == ino) == per_file
    dirs = {i for is_dir, i in synced if is_dir}
    if policy == "never":
        assert synced == []
    else:
        # the new file's directory and each new directory's parent, so the new entries survive a power cut
        want = {(root / DAY).parent.stat().st_ino, root.stat().st_ino, (root / "raw").stat().st_ino}
        assert want <= dirs
    synced.clear()
    log.append(ev(ts="2026-11-29T10:00:09Z", text="one more"))  # an existing file: no directory to sync
    assert synced == ([] if policy == "never" else [(False, ino)])


def test_an_unknown_fsync_policy_is_refused() -> None:
    with pytest.raises(EventlogError, match=r"^fsync policy must be one of always, batch, never$"):
        EventLog("/nonexistent", fsync="sometimes")


@pytest.mark.parametrize("rel", ["raw/telegram/x.jsonl", "dlp/../raw/x.jsonl", "/etc/x.jsonl", "../x.jsonl"])
def test_a_stream_path_outside_the_streams_is_refused(root: Path, rel: str) -> None:
    with pytest.raises(EventlogError, match=f"^not a stream path: {rel}$"):
        EventLog(root, fsync="never").append_stream(rel, [{"event": "a:b", "channel": "x", "chat_id": "1",
                                                           "ts": "2026-11-29T10:00:00Z"}])
    assert list(root.iterdir()) == []


def test_a_bad_event_names_its_position_and_nothing_is_written(root: Path) -> None:
    good = ev(ts="2026-11-29T10:00:00Z")
    with pytest.raises(BadEvent) as e:
        EventLog(root, fsync="never").append_many([good, good, {"event": "a:b"}])
    assert e.value.index == 2
    assert list(root.iterdir()) == []
    dup = dict(good, id="01KB0000000000000000000001")
    with pytest.raises(BadEvent, match=r"^duplicate id 01KB0000000000000000000001 \(also event 2 of this batch\)$") \
            as e:
        EventLog(root, fsync="never").append_many([good, dup, dup])
    assert e.value.index == 2 and list(root.iterdir()) == []
    # the same id in two different day files is two events, not a duplicate
    other = dict(dup, ts="2026-11-30T10:00:00Z")
    assert len(EventLog(root, fsync="never").append_many([dup, other]).events) == 2


def test_a_failed_file_reports_the_events_written_before_it(root: Path) -> None:
    log = EventLog(root, fsync="never")
    first = ev(ts="2026-11-29T10:00:00Z")
    blocked = ev(chat="43", ts="2026-11-29T10:00:00Z")
    (root / "raw/telegram/chats").mkdir(parents=True)
    (root / "raw/telegram/chats/43").write_text("a file where a directory must be")
    with pytest.raises(OSError) as e:
        log.append_many([first, blocked])
    assert [x["chat_id"] for x in e.value.written] == ["42"]
    clean(root)
    (root / "raw/telegram/chats/43").unlink()
    log.append(blocked)  # a failed directory is not remembered as made
    assert (root / "raw/telegram/chats/43/2026/11/29.jsonl").is_file()


@pytest.mark.parametrize("policy", ["batch", "always"])
def test_a_torn_tail_is_repaired_under_a_syncing_policy(root: Path, policy: str) -> None:
    EventLog(root, fsync=policy).append(ev(ts="2026-11-29T10:00:00Z"))
    with open(root / DAY, "ab") as f:
        f.write(b'{"torn')
    assert EventLog(root, fsync=policy).append_many([ev(ts="2026-11-29T10:00:01Z")]).repaired == [DAY]
    clean(root)


def test_a_torn_tail_of_a_stream_is_repaired_with_a_stream_repair_event(root: Path) -> None:
    import orjson

    alerts = "dlp/alerts.jsonl"
    a = {"event": "dlp:alert", "channel": "telegram", "chat_id": "42", "ts": "2026-11-29T10:00:00Z"}
    EventLog(root, fsync="never").append_stream(alerts, [a])
    with open(root / alerts, "ab") as f:
        f.write(b'{"torn')
    res = EventLog(root, fsync="never").append_stream(alerts, [a])
    assert res.repaired == [alerts]
    repair = orjson.loads((root / alerts).read_bytes().split(b"\n")[1])
    assert (repair["event"], repair["channel"], repair["chat_id"], repair["torn_bytes"]) == \
        ("log:repair", "eventlog", "stream", 6)
    assert (root / "dlp" / repair["moved_to"]).read_bytes() == b'{"torn'
    clean(root)
