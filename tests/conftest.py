import os
import shutil
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from env_support import KEEP, PREFIXES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from gen_corpus import generate  # noqa: E402

# The caller's environment must not steer the suite (design.md, convention 15): every product variable is cleared
# (tests/env_support.py says which are kept) and TZ is pinned to UTC. The suite passes under any TZ because it pins it
# (issue 24); CI runs the fast suite once under a non-UTC zone to check that nothing escapes the pin.


def _product_variables() -> list[str]:
    return [name for name in os.environ if name.startswith(PREFIXES) and name not in KEEP]


def pytest_addoption(parser: pytest.Parser) -> None:
    # tests/web/test_serve_chromium.py writes the docs' screenshots there (docs/web.md "Screenshots"); by default only into
    # its tmp_path, so `make test` leaves the tree clean.
    parser.addoption("--screenshots", metavar="DIR", default=None,
                     help="write the web page's screenshots (web-alerts.png, web-timeline.png) into DIR")


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


# A corpus that crosses a month boundary (2026-09-01 … 2026-10-10), 6 chats: test_query.py and test_compact.py.
CORPUS = {"chats": 6, "days": 40, "end": date(2026, 10, 10), "seed": 7}


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("corpus") / "root"
    summary = generate(root, **CORPUS)
    return root, summary


@pytest.fixture
def corpus(corpus_dir, tmp_path) -> tuple[Path, dict]:
    """A private copy (tests compact and append)."""
    src, summary = corpus_dir
    dst = tmp_path / "root"
    shutil.copytree(src, dst)
    # Written an hour ago, not just now: compaction gives files modified in the last 2 s no identity (the racy rule of
    # eventlog/recall/freshness.py), which would make "fresh" depend on how fast the session fixture ran before this test.
    old = time.time() - 3600
    for p in dst.rglob("*.jsonl"):
        os.utime(p, (old, old))
    return dst, summary


# A throwaway PostgreSQL cluster for the lake's catalog (tests/pg_support.py): pg_cluster (session), pg_db, pg_catalog.
from pg_support import pg_catalog, pg_cluster, pg_db  # noqa: E402, F401
