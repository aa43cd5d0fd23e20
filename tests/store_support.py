"""Helpers shared by the store tests (a plain module: `conftest` names collide between test folders)."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "vectors"
EVENTLOG = [sys.executable, "-m", "eventlog"]


def ev(chat="42", ts="2026-11-30T10:00:00.000Z", text="hi", **extra):
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text, **extra}
