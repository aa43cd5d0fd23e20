import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "vectors"
EVENTLOG = [sys.executable, "-m", "eventlog"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir(mode=0o700)
    return r


def ev(chat="42", ts="2026-11-30T10:00:00.000Z", text="hi", **extra):
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text, **extra}


@pytest.fixture(autouse=True)
def _no_ambient_root(monkeypatch, tmp_path):
    # No test may fall back to a real ~/.openclaw or an operator's $EVENTLOG_ROOT: each passes its root explicitly.
    monkeypatch.delenv("EVENTLOG_ROOT", raising=False)
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
