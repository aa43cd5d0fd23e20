import os
import time
from pathlib import Path

import pytest

from env_support import KEEP, PREFIXES

# The caller's environment must not steer the suite (design.md, convention 15): every product variable is cleared
# (tests/env_support.py says which are kept) and TZ is pinned to UTC. The suite passes under any TZ because it pins it
# (issue 24); CI runs the fast suite once under a non-UTC zone to check that nothing escapes the pin.


def _product_variables() -> list[str]:
    return [name for name in os.environ if name.startswith(PREFIXES) and name not in KEEP]


def pytest_configure(config: pytest.Config) -> None:
    """Once per process (each xdist worker too), before collection and before any module or session fixture: those
    run ahead of the per-test fixture below, so without this they would build their corpora in the caller's zone."""
    for name in _product_variables():
        del os.environ[name]
    os.environ["TZ"] = "UTC"
    time.tzset()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir(mode=0o700)
    return r


@pytest.fixture(autouse=True)
def _pinned_environment(monkeypatch: pytest.MonkeyPatch):
    """No test may fall back to a real ~/.openclaw, an operator's $EVENTLOG_ROOT or rules, or the machine's zone: each
    passes its root explicitly, and time is read in UTC unless a test sets a zone itself (undone after it)."""
    for name in _product_variables():
        monkeypatch.delenv(name)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
