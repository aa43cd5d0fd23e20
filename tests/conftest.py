import os
import shutil
import sys
import time
from datetime import date
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from gen_corpus import generate  # noqa: E402

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
