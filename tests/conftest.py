import os
import time
from pathlib import Path

import pytest

# The caller's environment must not steer the suite (design.md, convention 15): every product variable is cleared
# and TZ is pinned to UTC, except the variables naming the toolchain the Makefile installed and exported for the tests
# (Node 26 and the OpenClaw install, and the cache they live in). The suite passes under any TZ because it pins it
# (issue 24); CI runs the fast suite once under a non-UTC zone to check that nothing escapes the pin.
KEEP = {"EVENTLOG_NODE", "EVENTLOG_OPENCLAW_DIR", "EVENTLOG_CACHE", "XDG_CACHE_HOME"}
PREFIXES = ("EVENTLOG_", "OPENCLAW_", "XDG_")
E2E = Path(__file__).resolve().parent / "e2e"


def _product_variables() -> list[str]:
    return [name for name in os.environ if name.startswith(PREFIXES) and name not in KEEP]


def pytest_configure(config: pytest.Config) -> None:
    """Once per process (each xdist worker too), before collection and before any module or session fixture: those
    run ahead of the per-test fixture below, so without this they would build their corpora in the caller's zone."""
    for name in _product_variables():
        del os.environ[name]
    os.environ["TZ"] = "UTC"
    time.tzset()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `pytest -n 2 --dist loadgroup` every test of tests/e2e/ runs on one worker: they share the session's
    gateways (tests/e2e/conftest.py), which take 25-50 s and ~1.2 GB each to start, and pick their ports by
    bind-then-close (eventlog.smoke.harness.free_port). Without xdist the marker is inert."""
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("e2e"))


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
