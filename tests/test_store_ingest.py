"""`eventlog append`'s ingest policy as a library (eventlog/store/ingest.py), without the CLI: a regular file is one
unit, a stream is written up to its first bad line, acknowledgements follow durability, --check writes nothing."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from eventlog.errors import BadEvent
from eventlog.store.ingest import file_offset, ingest, read_batches
from eventlog.store.writer import EventLog


def line(text: str, **kw) -> bytes:
    return orjson.dumps({"event": "message:received", "channel": "telegram", "chat_id": "1",
                         "ts": "2026-11-01T10:00:00.000Z", "text": text, **kw}) + b"\n"


def stored(root: Path) -> list[str]:
    """The texts of the messages in the log (not its log:repair events)."""
    return [ev["text"] for p in sorted((root / "raw").rglob("*.jsonl")) for x in p.read_bytes().splitlines()
            if (ev := orjson.loads(x))["event"] == "message:received"] if (root / "raw").exists() else []


class Pipe(io.RawIOBase):
    """A stream that is not a regular file, delivering one chunk per read (as a pipe delivers writes)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


def test_a_regular_file_is_one_unit(root: Path, tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(line("a") + line("b") + b"{not json\n" + line("c"))
    with open(f, "rb") as fp, pytest.raises(BadEvent, match=r"stdin line 3: .*nothing was written"):
        ingest(EventLog(root, fsync="never"), fp)
    assert stored(root) == []
    f.write_bytes(line("a") + b"\n" + line("b"))  # a blank line is skipped, not bad
    acked: list[str] = []
    with open(f, "rb") as fp:
        n = ingest(EventLog(root, fsync="never"), fp, on_written=lambda evs: acked.extend(e["id"] for e in evs))
    assert n == 2 and stored(root) == ["a", "b"] and len(acked) == 2


def test_a_file_is_checked_from_where_it_stands(root: Path, tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b"skipped by the caller\n" + line("a"))
    with open(f, "rb") as fp:
        fp.readline()
        assert file_offset(fp) == len(b"skipped by the caller\n")
        assert ingest(EventLog(root, fsync="never"), fp) == 1
    assert stored(root) == ["a"]


def test_a_stream_is_written_up_to_its_first_bad_line(root: Path) -> None:
    acked: list[list[str]] = []
    pipe = Pipe([line("a") + line("b"), line("c") + line("no ts", ts=5) + line("d")])
    assert file_offset(pipe) is None
    with pytest.raises(BadEvent, match=r"stdin line 4: .*the 3 line\(s\) before it were written"):
        ingest(EventLog(root, fsync="never"), pipe, on_written=lambda evs: acked.append([e["text"] for e in evs]))
    assert stored(root) == ["a", "b", "c"]
    assert acked == [["a", "b"], ["c"]]  # one acknowledgement per batch that one read() delivered


def test_check_writes_nothing_and_finds_duplicate_ids(root: Path) -> None:
    log = EventLog(root, fsync="never")
    ingest(log, Pipe([line("a", id="01JA0000000000000000000001")]))
    assert ingest(log, Pipe([line("b"), line("c")]), check=True) == 0
    assert stored(root) == ["a"]
    with pytest.raises(BadEvent, match="stdin line 2: duplicate id"):
        ingest(log, Pipe([line("b", id="01JA0000000000000000000002"), line("c", id="01JA0000000000000000000002")]),
               check=True)
    with pytest.raises(BadEvent, match="stdin line 1: "):  # against what the files hold
        ingest(log, Pipe([line("b", id="01JA0000000000000000000001")]), check=True)
    assert stored(root) == ["a"]


def test_an_overlong_line_is_refused_after_the_lines_before_it(root: Path) -> None:
    from eventlog.store.schema import MAX_LINE

    batches = list(read_batches(Pipe([line("a")])))
    assert batches == [(1, [line("a")[:-1]])]
    with pytest.raises(BadEvent, match=f"stdin line 2: line longer than {MAX_LINE} bytes"):
        ingest(EventLog(root, fsync="never"), Pipe([line("a") + b"x" * (MAX_LINE + 1)]))
    assert stored(root) == ["a"]


def test_a_torn_tail_is_reported_when_repaired(root: Path) -> None:
    log = EventLog(root, fsync="never")
    ingest(log, Pipe([line("a")]))
    day = next((root / "raw").rglob("*.jsonl"))
    with open(day, "ab") as f:
        f.write(b'{"torn')
    repaired: list[str] = []
    ingest(EventLog(root, fsync="never"), Pipe([line("b")]), on_repaired=repaired.append)
    assert repaired == [day.relative_to(root).as_posix()] and stored(root) == ["a", "b"]
    assert any(p.name != day.name for p in day.parent.iterdir()), "the torn tail was moved aside, not dropped"
