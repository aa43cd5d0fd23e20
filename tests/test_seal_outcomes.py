"""Sealing: each outcome `eventlog seal` prints, what a seal record holds (lines, bytes, last hash, a UTC time), which
days the writer seals by itself when a chat gets a new day, and that seal records after a damaged line still count.

Added for issue 15: mutation testing of eventlog/store/seal.py left the skip outcomes, the seal record's fields, the
auto-seal range and the seal-stream reader's recovery after a bad line unpinned.
"""
from __future__ import annotations

import re
from datetime import date, datetime, timezone
from pathlib import Path

import orjson
from click.testing import CliRunner

from eventlog.store import schema
from eventlog.cli.main import cli
from eventlog.store.commitment import chain_hash
from eventlog.store.seal import measure, read_seal_records, seal_before, seal_files, sealed_index
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import encode_with_prev, ev

SEALS = "seals/telegram/42.jsonl"


def day(d: int, chat: str = "42") -> str:
    return f"raw/telegram/chats/{chat}/2026/11/{d:02d}.jsonl"


def records(root: Path, rel: str = SEALS) -> list[dict]:
    p = root / rel
    if not p.exists():
        return []
    return [r for r in map(orjson.loads, p.read_bytes().split(b"\n")[:-1]) if r.get("event") == "seal:file"]


def test_each_seal_outcome(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    for i in range(3):
        log.append(ev(ts=f"2026-11-27T10:00:0{i}Z", text=f"x{i}"))
    log.append(ev(ts="2026-11-28T10:00:00Z"))
    (root / day(28)).write_bytes((root / day(28)).read_bytes() + b'{"torn')
    (root / day(26)).write_bytes(b"")
    got = seal_files(log, [day(27), day(28), day(26), day(25), "raw/telegram/chats/42/notaday.jsonl", day(27)])
    assert got == [(day(27), "sealed"), (day(28), "torn tail: not sealed until the next append repairs it"),
                   (day(26), "empty"), (day(25), "missing"), ("raw/telegram/chats/42/notaday.jsonl", "not a day file"),
                   (day(27), "already sealed")]
    data = (root / day(27)).read_bytes()
    [rec] = records(root)
    assert (rec["file"], rec["lines"], rec["bytes"]) == (day(27), 3, len(data))
    assert rec["last"] == chain_hash(data.split(b"\n")[-2]) and (rec["channel"], rec["chat_id"]) == ("telegram", "42")
    # the record's time is now, in UTC, with milliseconds
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["ts"])
    stamp = datetime.strptime(rec["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - stamp).total_seconds()) < 3600
    # every seal moves the head: the checkpoint file got a record; "already sealed" alone adds none
    cps = (root / "seals/checkpoints.jsonl").read_bytes()
    assert seal_files(log, [day(27)]) == [(day(27), "already sealed")]
    assert (root / "seals/checkpoints.jsonl").read_bytes() == cps
    # a day that grew by hand is sealed again; the newest record wins
    more = encode_with_prev(schema.prepare(ev(ts="2026-11-27T11:00:00Z")), rec["last"])
    (root / day(27)).write_bytes(data + more + b"\n")
    assert seal_files(log, [day(27)]) == [(day(27), "sealed")]
    assert sealed_index(root, "telegram", "42")[day(27)]["lines"] == 4
    assert (root / "seals/checkpoints.jsonl").read_bytes() != cps
    assert verify(root).ok


def test_the_seal_command_prints_what_it_did(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    log.append(ev(ts="2026-11-27T10:00:00Z"))
    log.append(ev(ts="2026-11-28T10:00:00Z"))
    (root / day(28)).write_bytes((root / day(28)).read_bytes() + b'{"torn')
    r = CliRunner().invoke(cli, ["seal", "--root", str(root), "--through", "2026-11-28"], catch_exceptions=False)
    assert r.exit_code == 0
    assert r.stdout == (f"{day(27)}: sealed\n{day(28)}: torn tail: not sealed until the next append repairs it\n")
    assert r.stderr == "1 sealed, 1 unchanged or skipped\n"


def test_measure_counts_complete_lines_across_chunks(tmp_path: Path) -> None:
    p = tmp_path / "f.jsonl"
    lines = [b"a" * 700_000, b"b" * 700_000, b"c"]  # lines straddle the 1 MiB read chunks
    p.write_bytes(b"\n".join(lines) + b"\n")
    assert measure(p) == (3, sum(len(x) + 1 for x in lines), chain_hash(b"c"), False)
    p.write_bytes(b"\n".join(lines) + b"\nd")
    assert measure(p) == (3, sum(len(x) + 1 for x in lines), chain_hash(b"c"), True)
    p.write_bytes(b"torn only")
    assert measure(p) == (0, 0, None, True)


def test_a_new_day_seals_only_the_chats_earlier_unsealed_days(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    for d in (24, 25, 26, 27):
        log.append(ev(ts=f"2026-11-{d}T10:00:00Z"))
    log.append(ev(chat="43", ts="2026-11-25T10:00:00Z"))
    seal_before(log, "telegram", "42", date(2026, 11, 26))  # the 26th is new: the 24th and 25th are sealed
    assert [r["file"] for r in records(root)] == [day(24), day(25)]
    assert records(root, "seals/telegram/43.jsonl") == []
    seal_before(log, "telegram", "42", date(2026, 11, 26))  # nothing new before the 26th
    seal_before(log, "telegram", "42", date(2026, 11, 25))  # a backfill of an earlier day seals nothing
    assert [r["file"] for r in records(root)] == [day(24), day(25)]
    seal_before(log, "telegram", "42", date(2026, 11, 28))  # from the day after the newest seal, up to yesterday
    assert [r["file"] for r in records(root)] == [day(24), day(25), day(26), day(27)]
    seal_before(log, "telegram", "42", date.min)  # the first possible day: nothing before it
    assert verify(root).ok


def test_the_writer_seals_a_chats_earlier_day_when_it_starts_a_new_one(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-27T10:00:00Z"))
    log.append(ev(ts="2026-11-27T11:00:00Z"))
    assert records(root) == []
    log.append(ev(ts="2026-11-28T10:00:00Z"))
    assert [(r["file"], r["lines"]) for r in records(root)] == [(day(27), 2)]
    log.append(ev(ts="2026-11-28T11:00:00Z"))  # the same day again: no new seal
    assert len(records(root)) == 1
    log.append(ev(ts="2026-11-27T12:00:00Z"))  # a late event for a sealed day: its seal is extended
    assert [(r["file"], r["lines"]) for r in records(root)] == [(day(27), 2), (day(27), 3)]
    rep = verify(root)
    assert rep.ok and not rep.warnings


def test_seal_records_after_a_damaged_line_still_count(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    for d in (26, 27):
        log.append(ev(ts=f"2026-11-{d}T10:00:00Z"))
        log.append(ev(ts=f"2026-11-{d}T11:00:00Z"))
    seal_files(log, [day(26)])
    seal = root / SEALS
    good = seal.read_bytes()
    seal.write_bytes(good + b"garbage\n")
    seal_files(log, [day(27)])  # the seal stream's writer chains on after the garbage
    problems: list[tuple[int, str]] = []
    assert [r["file"] for r in read_seal_records(seal, problems)] == [day(26), day(27)] and problems == []
    # the day sealed after the damaged line is still protected by its seal
    (root / day(27)).write_bytes((root / day(27)).read_bytes().split(b"\n", 1)[0] + b"\n")
    rep = verify(root)
    assert [(p.relpath, p.line, p.reason) for p in rep.damage] == [
        (SEALS, 2, "not a valid JSON object (edited or corrupted)"),
        (day(27), 1, "truncated: 1 lines, sealed with 2")]


def test_malformed_seal_records_are_reported_by_line_and_skipped(root: Path) -> None:
    log = EventLog(root, fsync="never", autoseal=False)
    log.append(ev(ts="2026-11-27T10:00:00Z"))
    seal_files(log, [day(27)])
    seal = root / SEALS
    [rec] = records(root)
    base = {k: v for k, v in rec.items() if k not in ("id", "prev", "v")}
    bad = [{**base, "lines": -1}, {**base, "bytes": "12"}, {**base, "file": 7}, {**base, "last": None},
           {**base, "lines": 1.5}, {**base, "bytes": False}, {**base, "file": "raw/telegram/x.jsonl"},
           {**base, "lines": "x" * 40}, {**base, "lines": 1}, ["seal:file"]]
    log.append_stream(SEALS, bad[:-1])
    seal.write_bytes(seal.read_bytes() + b'["seal:file"]\n')  # not an object: the chain check's to report
    problems: list[tuple[int, str]] = []
    assert [r["lines"] for r in read_seal_records(seal, problems)] == [1, 1]
    assert problems == [(2, "seal record with a bad `lines` ('-1')"), (3, "seal record with a bad `bytes` ('12')"),
                        (4, "seal record without a valid `file`"), (5, "seal record with a bad `last` hash"),
                        (6, "seal record with a bad `lines` ('1.5')"), (7, "seal record with a bad `bytes` ('False')"),
                        (8, "seal record without a valid `file`"),
                        (9, "seal record with a bad `lines` ('xxxxxxxxxxxxxxxxxxxx')")]
    assert read_seal_records(root / "seals/telegram/nope.jsonl") == []
    assert [r["lines"] for r in read_seal_records(seal)] == [1, 1]


def test_a_new_day_in_one_channel_does_not_seal_another_channels_chat_of_the_same_id(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(dict(ev(ts="2026-11-27T10:00:00Z"), channel="whatsapp"))
    log.append(ev(ts="2026-11-27T10:00:00Z"))
    log.append(ev(ts="2026-11-28T10:00:00Z"))  # telegram's 27th is sealed, whatsapp's chat 42 is not touched
    assert [r["file"] for r in records(root)] == [day(27)]
    assert records(root, "seals/whatsapp/42.jsonl") == []
