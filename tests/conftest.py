from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir(mode=0o700)
    return r


@pytest.fixture(autouse=True)
def _no_ambient_root(monkeypatch, tmp_path):
    # No test may fall back to a real ~/.openclaw or an operator's $EVENTLOG_ROOT: each passes its root explicitly.
    monkeypatch.delenv("EVENTLOG_ROOT", raising=False)
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
