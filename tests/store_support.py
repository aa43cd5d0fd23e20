"""Helpers shared by the store tests (a plain module: `conftest` names collide between test folders)."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "vectors"
EVENTLOG = [sys.executable, "-m", "eventlog"]


def encode_with_prev(event: dict, prev: str) -> bytes:
    """A prepared event's line with its chain field, as the writer would write it after `prev` (tests craft chained
    lines with it: a tampered tail, a line another writer appended, ...)."""
    from eventlog.store import schema

    event["prev"] = prev
    return schema.encode(event)


def current_head(root: Path) -> str | None:
    """The head as of the last checkpoint, without writing one."""
    from eventlog.store.head import read_checkpoints

    hashes = read_checkpoints(root)[1]
    return hashes[-1] if hashes else None


def ev(chat="42", ts="2026-11-30T10:00:00.000Z", text="hi", **extra):
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text, **extra}
