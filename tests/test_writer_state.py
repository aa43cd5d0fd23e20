"""What a long-lived writer remembers between appends (the chain tail, the directories it made) and what it checks
under the partition lock, against changes other writers and people make meanwhile: the events land, the chain holds
(`verify` clean), duplicates are refused, a sealed day's deletion stays visible.

Added for issue 15 (mwri): the complete mutation run of eventlog/store/writer.py and seal.py left these untested — a tail
cache trusted for a replaced file, a one-byte torn tail glued to the next line, the duplicate-id check under the lock
and the sealer's lock (both need a second writer *while* the lock is held: the test holds the real lock and waits for
the `<lock>.want` file a waiting writer creates), and a removed directory the writer never made again (a bug, fixed;
since then made again within the same append, as the JS writer does).
"""
from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import orjson
import pytest

from eventlog.store import schema
from eventlog.store.commitment import chain_hash
from eventlog.errors import BadEvent
from eventlog.store.lock import FileLock
from eventlog.store.seal import seal_files, sealed_index
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import encode_with_prev, ev

DAY = "raw/telegram/chats/42/2026/11/29.jsonl"
WAIT_S = 60.0  # generous: the machine may be loaded; a correct run ends as soon as the condition holds


def clean(root: Path) -> None:
    rep = verify(root)
    assert rep.ok and rep.warnings == [], (rep.damage, rep.warnings)


def texts(root: Path, rel: str = DAY) -> list[str]:
    return [orjson.loads(x).get("text") for x in (root / rel).read_bytes().split(b"\n")[:-1]]


def test_a_day_file_replaced_by_another_writer_under_a_running_one_is_chained_from_its_real_last_line(
        root: Path, tmp_path: Path) -> None:
    """Same size, other inode, other last line: the tail the first writer remembers is not the file's."""
    a = EventLog(root, fsync="never")
    a.append(ev(ts="2026-11-29T10:00:00Z", text="aaaa"))
    size = (root / DAY).stat().st_size
    os.rename(root / DAY, tmp_path / "moved-away.jsonl")  # kept, so its inode is not reused for the new file
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T10:00:00Z", text="bbbb"))
    assert (root / DAY).stat().st_size == size  # the case under test: only the inode tells the files apart
    a.append(ev(ts="2026-11-29T10:00:01Z", text="cccc"))
    assert texts(root) == ["bbbb", "cccc"]
    clean(root)


@pytest.mark.parametrize("torn", [b"{", b"x"])
def test_a_one_byte_torn_tail_is_moved_aside_not_glued_to_the_next_line(root: Path, torn: bytes) -> None:
    (root / DAY).parent.mkdir(parents=True)
    (root / DAY).write_bytes(torn)
    res = EventLog(root, fsync="never").append_many([ev(ts="2026-11-29T10:00:00Z", text="after")])
    assert res.repaired == [DAY]
    lines = [orjson.loads(x) for x in (root / DAY).read_bytes().split(b"\n")[:-1]]
    assert [x["event"] for x in lines] == ["log:repair", "message:received"]
    assert lines[0]["torn_bytes"] == 1 and lines[0]["torn_sha256"] == schema.line_hash(torn)
    assert (root / DAY).parent.joinpath(lines[0]["moved_to"]).read_bytes() == torn
    clean(root)


def test_appending_to_a_sealed_day_whose_file_was_deleted_keeps_the_events_and_the_evidence(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z", text="sealed"))
    log.append(ev(ts="2026-11-30T10:00:00Z", text="next day"))  # seals the 29th
    assert DAY in sealed_index(root, "telegram", "42")
    (root / DAY).unlink()
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T11:00:00Z", text="late"))  # never lose an event
    assert texts(root) == ["late"]
    rep = verify(root)
    assert not rep.ok and {p.relpath for p in rep.damage} == {DAY}  # the deleted sealed day is still reported


def test_a_directory_removed_under_a_running_writer_is_made_again_in_the_same_append(root: Path) -> None:
    """Like the JS writer: the append that finds its remembered directory gone (ENOENT on the lock) makes it again and
    tries once more — no event lost, none twice, a new file chained from the genesis. (Before mwri's fix every later
    append failed; after it the first one still did.)"""
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z", text="first"))
    shutil.rmtree(root / DAY.rsplit("/", 2)[0])  # …/2026/11, the day file's directory
    stored = log.append(ev(ts="2026-11-29T10:00:01Z", text="after"))
    assert stored["prev"] == schema.genesis(DAY)
    log.append(ev(ts="2026-11-29T10:00:02Z", text="second"))
    assert texts(root) == ["after", "second"]
    clean(root)


def test_an_enoent_after_the_lines_are_written_is_not_retried(root: Path) -> None:
    """Extending a sealed day writes its lines, then the seal record. If the seal's directory is gone for good (here a
    dangling symbolic link, so making it again fails too), the append fails — and its lines are in the day once, not
    twice: the retry is only for an ENOENT before the write."""
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z", text="one"))
    log.append(ev(ts="2026-11-30T10:00:00Z", text="next day"))  # seals the 29th
    seals = root / "seals/telegram"

    def lose_the_seals() -> None:
        seals.rename(root / "seals/moved")
        seals.symlink_to(root / "seals/nowhere")

    got = hold_lock_while(root, "seals/telegram/42.jsonl", lambda: log.append(
        ev(ts="2026-11-29T10:00:01Z", text="late")), lose_the_seals)
    assert isinstance(got, FileNotFoundError), got
    assert got.written == []  # type: ignore[attr-defined]
    assert texts(root) == ["one", "late"]
    seals.unlink()
    for left in ("42.jsonl.lock", "42.jsonl.lock.want"):  # the test's lock and the waiter's want moved with the dir
        (root / "seals/moved" / left).unlink()
    (root / "seals/moved").rename(seals)
    log.append(ev(ts="2026-11-29T10:00:02Z", text="later"))  # the lines after the seal chain on: sealed again
    assert texts(root) == ["one", "late", "later"]
    assert sealed_index(root, "telegram", "42")[DAY]["lines"] == 3
    clean(root)


def test_a_duplicate_id_in_a_later_file_of_the_batch_refuses_the_whole_batch(root: Path) -> None:
    log = EventLog(root, fsync="never")
    taken = schema.new_id()
    log.append(ev(ts="2026-11-30T10:00:00Z", text="has the id", id=taken))
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(BadEvent, match="duplicate id") as exc:
        log.append_many([ev(ts="2026-11-29T10:00:00Z", text="new", id=schema.new_id()),
                         ev(ts="2026-11-30T10:00:01Z", text="dup", id=taken)])
    assert exc.value.index == 1
    assert not (root / DAY).exists()
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def hold_lock_while(root: Path, rel: str, work, meanwhile) -> object:
    """Hold `rel`'s partition lock, run `work` in a thread until it waits for that lock (it creates `<lock>.want`),
    call `meanwhile` (still holding the lock), release, return `work`'s result or exception."""
    lock = FileLock(f"{root}/{rel}.lock")
    out: list[object] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed back to the test
            out.append(exc)

    t = threading.Thread(target=run)
    with lock:
        t.start()
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(lock.path + ".want") and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        waited = os.path.exists(lock.path + ".want")
        if waited:
            meanwhile()
    t.join(WAIT_S)
    assert waited, f"did not wait for the lock of {rel}: {out}"
    assert not t.is_alive()
    return out[0]


def rival_appends(root: Path, text: str, **extra) -> None:
    """Another writer's line, chained on from the day's last line, appended while the test holds the lock."""
    last = (root / DAY).read_bytes().split(b"\n")[-2]
    line = encode_with_prev(schema.prepare(ev(ts="2026-11-29T10:00:00Z", text=text, **extra)), chain_hash(last))
    with open(root / DAY, "ab") as f:
        f.write(line + b"\n")


def test_an_id_written_by_another_writer_while_the_batch_waits_for_the_lock_is_refused(root: Path) -> None:
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T09:00:00Z", text="first"))
    taken = schema.new_id()
    got = hold_lock_while(root, DAY, lambda: EventLog(root, fsync="never").append(
        ev(ts="2026-11-29T10:00:01Z", text="mine", id=taken)), lambda: rival_appends(root, "rival", id=taken))
    assert isinstance(got, BadEvent), got
    assert str(got) == f"duplicate id {taken}: {DAY} already has it (written meanwhile by another writer)"
    assert texts(root) == ["first", "rival"]
    clean(root)


def test_the_sealer_waits_for_the_days_lock_and_seals_what_a_writer_added_meanwhile(root: Path) -> None:
    EventLog(root, fsync="never", autoseal=False).append(ev(ts="2026-11-29T09:00:00Z", text="one"))
    got = hold_lock_while(root, DAY, lambda: seal_files(EventLog(root, fsync="never"), [DAY]),
                          lambda: rival_appends(root, "two"))
    assert got == [(DAY, "sealed")]
    assert sealed_index(root, "telegram", "42")[DAY]["lines"] == 2
    clean(root)


def test_a_new_day_seals_only_that_chats_earlier_days(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(ev(chat="42", ts="2026-11-29T10:00:00Z"))
    log.append(ev(chat="43", ts="2026-11-29T10:00:00Z"))
    log.append(ev(chat="43", ts="2026-11-30T10:00:00Z"))  # a new day for chat 43 only
    assert list(sealed_index(root, "telegram", "43")) == ["raw/telegram/chats/43/2026/11/29.jsonl"]
    assert sealed_index(root, "telegram", "42") == {}
    assert not (root / "seals/telegram/42.jsonl").exists()


def test_a_bad_event_is_refused_with_its_reason_and_its_index(root: Path) -> None:
    bad = {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "yesterday"}
    with pytest.raises(BadEvent) as expected:
        schema.prepare(dict(bad))
    with pytest.raises(BadEvent) as exc:
        EventLog(root, fsync="never").append_many([ev(ts="2026-11-29T10:00:00Z"), bad])
    assert exc.value.index == 1 and str(exc.value) == str(expected.value) and "ts" in str(exc.value)
    assert list(root.iterdir()) == []
