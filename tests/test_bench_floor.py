"""tools/bench/store_floor.py's `minimum` variant bounds writer / floor (issue 30 item 5): the bound means something
only if its lines are v2 lines a reader accepts — they chain from the stream's genesis, keep every field they were
given, and carry a salt exactly when they hold content."""
from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from eventlog.store.commitment import CONTENT
from eventlog.store.verify import verify_chain

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench() -> object:
    before = list(sys.path)
    sys.path.insert(0, str(REPO / "tools" / "bench"))
    try:
        import store as store_bench  # it puts its own directories on sys.path too
        import store_floor
    finally:
        sys.path[:] = before
    return store_bench, store_floor


def events(store_bench: object) -> list[dict]:
    evs = store_bench.make_events(40, 3)  # type: ignore[attr-defined]
    # lines with no content field: no salt, and the line is its own commitment form
    evs[5:5] = [{"event": "member:joined", "channel": "telegram", "account": "default", "chat_id": "-100123",
                 "ts": "2026-11-30T12:00:00.500Z", "direction": "in", "update_id": 42}]
    evs.append({"event": "message:received", "channel": "telegram", "chat_id": "7", "ts": "2026-11-30T13:00:00Z",
                "text": "", "note": {"k": [1, "два"]}})
    return evs


def test_the_minimum_writes_lines_that_verify(bench: tuple, tmp_path: Path) -> None:
    store_bench, store_floor = bench
    evs = events(store_bench)
    rel = "streams/floor.jsonl"
    path = tmp_path / "floor.jsonl"
    store_floor.write_floor(evs, str(path), "minimum", stream=rel)
    problems: list = []
    hashes, _ = verify_chain(path, rel, lambda p, fatal: problems.append((p, fatal)), None)
    assert problems == [] and len(hashes) == len(evs)
    lines = [orjson.loads(ln) for ln in path.read_bytes().splitlines()]
    assert len({ln["id"] for ln in lines}) == len(evs)
    for ev, ln in zip(evs, lines, strict=True):
        assert {k: ln[k] for k in ev} == ev and ln["v"] == 2
        assert ("salt" in ln) == (not CONTENT.isdisjoint(ev))


def test_a_broken_chain_is_caught(bench: tuple, tmp_path: Path) -> None:
    """The check above can fail: the same lines under another stream's genesis do not verify."""
    store_bench, store_floor = bench
    path = tmp_path / "floor.jsonl"
    store_floor.write_floor(events(store_bench), str(path), "minimum", stream="streams/other.jsonl")
    problems: list = []
    verify_chain(path, "streams/floor.jsonl", lambda p, fatal: problems.append((p, fatal)), None)
    assert problems and problems[0][1]


def test_every_variant_writes_one_line_per_event(bench: tuple, tmp_path: Path) -> None:
    store_bench, store_floor = bench
    evs = events(store_bench)
    for variant in store_floor.VARIANTS:
        path = tmp_path / f"{variant}.jsonl"
        store_floor.write_floor(evs, str(path), variant)
        assert len(path.read_bytes().splitlines()) == len(evs), variant
    with pytest.raises(ValueError):
        store_floor.write_floor(evs, str(tmp_path / "x.jsonl"), "per_line")
