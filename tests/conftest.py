import os
import time
from pathlib import Path

import pytest

# The caller's environment must not steer the suite (design.md, convention 15): every product variable is cleared
# before each test, except the ones naming the toolchain the Makefile installed and exported for the tests (Node 26 and
# the OpenClaw install, and the cache they live in).
KEEP = {"EVENTLOG_NODE", "EVENTLOG_OPENCLAW_DIR", "EVENTLOG_CACHE", "XDG_CACHE_HOME"}
PREFIXES = ("EVENTLOG_", "OPENCLAW_", "XDG_")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir(mode=0o700)
    return r


@pytest.fixture(autouse=True)
def _pinned_environment(monkeypatch: pytest.MonkeyPatch):
    """No test may fall back to a real ~/.openclaw, an operator's $EVENTLOG_ROOT or rules, or the machine's zone: each
    passes its root explicitly, and time is read in UTC unless a test sets a zone itself."""
    for name in list(os.environ):
        if name.startswith(PREFIXES) and name not in KEEP:
            monkeypatch.delenv(name)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
