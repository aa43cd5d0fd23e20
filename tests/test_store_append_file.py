"""`eventlog append` from a file at scale (issue 30, item 1): a batch of more day files than one critical section
holds, the writer keeping only encoded lines (`ids_only`), the validation pass bounded to what it validated, seal
records made without a second validation, and the work of a partition's batch counted at two sizes."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from eventlog.store import batch, schema
from eventlog.store.ingest import ingest
from eventlog.store.seal import seal_record, sealed_index
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog


def ev(chat: int, day: int, k: int = 0) -> dict[str, Any]:
    return {"event": "message:received", "channel": "telegram", "chat_id": str(100 + chat),
            "ts": f"2025-01-{day:02d}T12:00:{k:02d}.000Z", "text": f"c{chat} d{day} k{k}", "raw": {"n": [k, day]}}


def lines_of(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.relative_to(root).as_posix(): [orjson.loads(x) for x in p.read_bytes().splitlines()]
            for p in sorted((root / "raw").rglob("*.jsonl"))}


@pytest.mark.parametrize("chunk", [1, 4, 5, 4096])
def test_a_call_of_more_files_than_one_batch_writes_each_line_once(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   chunk: int) -> None:
    # A partition's earlier day, written by an earlier batch of the same call, is on disk and unsealed: the later
    # batch seals it and must not write it again (it did: every line of it twice).
    monkeypatch.setattr(batch, "CHUNK", chunk)
    events = [ev(c, d, k) for d in range(1, 7) for c in range(3) for k in range(2)]
    log = EventLog(root, fsync="never")
    result = log.append_many(events)
    assert len(result.events) == len(events)
    files = lines_of(root)
    assert len(files) == 18 and all(len(v) == 2 for v in files.values())
    assert sorted(x["text"] for v in files.values() for x in v) == sorted(e["text"] for e in events)
    assert verify(root).ok
    for c in range(3):  # every day before the newest is sealed, with its two lines
        index = sealed_index(root, "telegram", str(100 + c))
        assert sorted(r["file"][-16:] for r in index.values()) == [f"2025/01/0{d}.jsonl" for d in range(1, 6)]
        assert all(r["lines"] == 2 for r in index.values())


def test_ids_only_writes_the_same_lines_and_returns_ids(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    events = [ev(c, d, k) for d in range(1, 4) for c in range(2) for k in range(3)]
    full = EventLog(root, fsync="never").append_many(events)
    lean = EventLog(other, fsync="never").append_many(events, ids_only=True)
    assert all(set(e) == {"id", "prev"} for e in lean.events)
    a, b = lines_of(root), lines_of(other)
    assert list(a) == list(b)
    strip = ("id", "prev", "salt")  # made per writer
    for rel in a:
        assert [{k: v for k, v in x.items() if k not in strip} for x in a[rel]] == \
               [{k: v for k, v in x.items() if k not in strip} for x in b[rel]]
        assert [x["id"] for x in b[rel]] == [e["id"] for e in lean.events if e["id"] in {y["id"] for y in b[rel]}]
    assert [e["id"] for e in full.events] == [x["id"] for e in events for rel in a for x in a[rel]
                                              if x["text"] == e["text"]]
    assert verify(other).ok


def test_a_file_is_written_only_as_far_as_it_was_validated(root: Path, tmp_path: Path) -> None:
    f = tmp_path / "in.jsonl"
    f.write_bytes(b"".join(orjson.dumps(ev(0, 1, k)) + b"\n" for k in range(3)))

    class GrowsBetweenPasses(io.BufferedReader):
        """Another program appends to the input after it was validated, before it is written."""

        def seek(self, pos: int, whence: int = 0) -> int:
            if pos == 0 and self.tell() > 0:
                with open(f, "ab") as out:
                    out.write(b"{not json\n" + orjson.dumps(ev(0, 1, 9)) + b"\n")
            return super().seek(pos, whence)
    acked: list[str] = []
    with GrowsBetweenPasses(io.FileIO(f, "rb")) as fp:
        n = ingest(EventLog(root, fsync="never"), fp, on_written=lambda evs: acked.extend(e["id"] for e in evs))
    assert n == 3 and len(acked) == 3
    assert f.read_bytes().count(b"\n") == 5
    assert [x["text"] for v in lines_of(root).values() for x in v] == ["c0 d1 k0", "c0 d1 k1", "c0 d1 k2"]


def test_a_seal_record_is_what_prepare_makes_of_it() -> None:
    rec = seal_record("raw/telegram/chats/-100155/2025/01/02.jsonl", 3, 300, "ab" * 32)
    ours = batch._prepared(rec)
    theirs = schema.prepare(rec)
    assert schema.ULID_RE.fullmatch(ours["id"])
    assert {**ours, "id": theirs["id"]} == theirs


def test_a_file_of_many_chats_in_time_order_verifies(root: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import eventlog.store.ingest as ing

    monkeypatch.setattr(ing, "FILE_CHUNK", 700)  # several write batches, each partition in each of them
    monkeypatch.setattr(batch, "CHUNK", 7)
    f = tmp_path / "in.jsonl"
    events = [ev(c, d, k) for d in range(1, 9) for k in range(2) for c in range(4)]
    f.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    with open(f, "rb") as fp:
        assert ingest(EventLog(root), fp) == len(events)
    assert verify(root).ok
    files = lines_of(root)
    assert len(files) == 32 and all([x["raw"]["n"][0] for x in v] == [0, 1] for v in files.values())
    assert sum(len(v) for v in files.values()) == len(events)
