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
