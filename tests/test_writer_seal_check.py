"""Appending to a sealed (closed) day: the writer accepts exactly the states an interrupted writer or an interrupted
erasure leaves behind, refuses damaged data (`DamagedLog`, nothing written), and afterwards the seal covers the day
again (`verify` clean, no warning). Torn tails are moved aside under a unique name, never lost.

Added for issue 15: mutation testing of eventlog/store/writer.py (`_check_against_seal`, `_repair`) left the fallback that
finds the sealed part by its line count (a day erased and not yet resealed), several lines after the seal, and the
refusals of a bad line after the seal untested.
"""
from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from eventlog.store import schema
from eventlog.store.commitment import chain_hash, erase_line
from eventlog.errors import DamagedLog
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import encode_with_prev, ev

DAY = "raw/telegram/chats/42/2026/11/29.jsonl"


def make(root: Path, n: int) -> EventLog:
    log = EventLog(root, fsync="never")
    for i in range(1, n + 1):
        log.append(ev(ts=f"2026-11-29T10:00:0{i}Z", text=f"line {i}"))
    log.append(ev(ts="2026-11-30T10:00:00Z", text="next day"))  # seals the 29th
    rep = verify(root)
    assert rep.ok and not rep.warnings
    return log


def lines(root: Path) -> list[bytes]:
    return (root / DAY).read_bytes().split(b"\n")[:-1]


def write(root: Path, ls: list[bytes], tail: bytes = b"") -> None:
    (root / DAY).write_bytes(b"".join(x + b"\n" for x in ls) + tail)


def after(prev_line: bytes, text: str, second: int = 50) -> bytes:
    """A line chained on from `prev_line`: what a writer killed between extending a sealed day and resealing leaves."""
    return encode_with_prev(schema.prepare(ev(ts=f"2026-11-29T10:00:{second}Z", text=text)),
                                   chain_hash(prev_line))


def append_later(root: Path, text: str = "later") -> None:
    EventLog(root, fsync="never").append(ev(ts="2026-11-29T11:00:00Z", text=text))


def clean(root: Path) -> None:
    rep = verify(root)
    assert rep.ok and rep.warnings == [], (rep.damage, rep.warnings)


def refused(root: Path) -> None:
    before = (root / DAY).read_bytes()
    with pytest.raises(DamagedLog, match=f"^{re.escape(DAY)}: does not match its seal"):
        append_later(root)
    assert (root / DAY).read_bytes() == before


@pytest.mark.parametrize("n, erase", [(1, 0), (6, 2), (6, 5)])
def test_appending_to_a_sealed_day_erased_before_resealing(root: Path, n: int, erase: int) -> None:
    """`eventlog forget` rewrote the day (same chain hashes, fewer bytes) and stopped before resealing: the byte count
    in the seal no longer ends a line, the line count does."""
    make(root, n)
    ls = lines(root)
    ls[erase] = erase_line(ls[erase])
    write(root, ls)
    assert verify(root).ok and len(verify(root).warnings) == 1  # "size differs from the seal"
    append_later(root)
    assert len(lines(root)) == n + 1
    clean(root)


@pytest.mark.parametrize("extra", [1, 2])
def test_an_erased_day_with_lines_after_its_seal(root: Path, extra: int) -> None:
    make(root, 6)
    ls = lines(root)
    for i in range(extra):
        ls.append(after(ls[-1], f"late {i}", 50 + i))
    ls[1] = erase_line(ls[1])
    write(root, ls)
    append_later(root)
    assert len(lines(root)) == 6 + extra + 1
    clean(root)


def test_two_lines_after_the_seal_are_taken_into_the_next_seal(root: Path) -> None:
    make(root, 3)
    ls = lines(root)
    ls.append(after(ls[-1], "late 1", 50))
    ls.append(after(ls[-1], "late 2", 51))
    write(root, ls)
    assert [w.line for w in verify(root).warnings] == [4]
    append_later(root)
    clean(root)


def test_a_torn_tail_after_the_seal_is_moved_aside_and_the_append_goes_on(root: Path) -> None:
    make(root, 3)
    write(root, lines(root), tail=b'{"event":"mess')
    append_later(root)
    clean(root)
    aside = list((root / DAY).parent.glob("29.jsonl.torn-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == b'{"event":"mess'


@pytest.mark.parametrize("forged", [0, 1], ids=["first", "second"])
def test_a_line_after_the_seal_that_does_not_chain_is_refused(root: Path, forged: int) -> None:
    """Two lines after the seal; the `forged` one chains to the second sealed line (not to the line before it), the
    other chains on correctly."""
    make(root, 3)
    ls = lines(root)
    for k in range(2):
        ls.append(after(ls[1] if k == forged else ls[-1], "forged" if k == forged else "late", 50 + k))
    write(root, ls)
    refused(root)


@pytest.mark.parametrize("bad", [b"not json", b"[1,2]", b'"a string"'])
def test_a_line_after_the_seal_that_is_not_an_event_is_refused(root: Path, bad: bytes) -> None:
    make(root, 3)
    ls = lines(root)
    write(root, ls + [bad])
    refused(root)
    ls.append(after(ls[-1], "late", 50))
    write(root, ls + [bad])  # also as the second line after the seal
    refused(root)


def test_the_last_sealed_line_edited_with_lines_after_the_seal_is_refused(root: Path) -> None:
    """The lines after the seal still chain from the original last line: they must not vouch for an edited one."""
    make(root, 3)
    ls = lines(root)
    ls.append(after(ls[-1], "late", 50))
    ls[2] = ls[2].replace(b"line 3", b"line X")
    write(root, ls)
    refused(root)


def test_an_erased_day_cut_short_is_refused(root: Path) -> None:
    make(root, 6)
    ls = lines(root)
    ls[1] = erase_line(ls[1])
    write(root, ls[:5])
    refused(root)


def test_torn_tails_are_moved_aside_under_unique_names_and_logged(root: Path) -> None:
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-29T10:00:00Z", text="first"))
    torn = []
    for i in range(2):
        with open(root / DAY, "ab") as f:
            f.write(f'{{"torn":{i}'.encode())
        torn.append(f'{{"torn":{i}'.encode())
        res = EventLog(root, fsync="never").append_many([ev(ts=f"2026-11-29T10:00:0{i + 1}Z", text=f"after {i}")])
        assert res.repaired == [DAY]
    aside = sorted((root / DAY).parent.glob("29.jsonl.torn-*"))
    assert len(aside) == 2
    assert all(re.fullmatch(r"29\.jsonl\.torn-[0-9A-HJKMNP-TV-Z]{26}", p.name) for p in aside)
    repairs = [orjson.loads(x) for x in lines(root) if b'"log:repair"' in x]
    assert sorted(r["moved_to"] for r in repairs) == [p.name for p in aside]
    for r in repairs:
        got = (root / DAY).parent.joinpath(r["moved_to"]).read_bytes()
        assert r["torn_bytes"] == len(got) and r["torn_sha256"] == schema.line_hash(got) and got in torn
    assert {(root / DAY).parent.joinpath(r["moved_to"]).read_bytes() for r in repairs} == set(torn)
    clean(root)
