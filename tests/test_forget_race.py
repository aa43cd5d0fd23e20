"""Issue 26 item 2: erasure and derived builds exclude each other. A `forget` that lands while `eventlog index` (or
`compact`) is between reading the log and publishing — driven through the library's publish hook, not by sleeping —
leaves no unit built from the erased bytes; and every run removes the data files no unit names."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.ops.forget import forget
from eventlog.search import store as units
from eventlog.search.tokens import token_ids
from eventlog.store import erased
from eventlog.store.writer import EventLog

from store_support import ev

CANARY = "zebracanary"
DAYS = ("2026-10-03", "2026-10-04", "2026-11-02")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    for day in DAYS:
        log.append(ev(chat="42", ts=f"{day}T10:00:00Z", text=f"the {CANARY} of {day}"))
        log.append(ev(chat="43", ts=f"{day}T11:00:00Z", text=f"giraffe report {day}"))
    return root


@pytest.fixture()
def forget_at_first_publish(monkeypatch: pytest.MonkeyPatch):
    """Runs `forget --chat 42` the first time a derived store is about to publish `prefix…`; counts the calls."""
    seen: list[str] = []

    def arm(prefix: str) -> list[str]:
        def hook(root: Path, what: str) -> None:
            if what.startswith(prefix):
                seen.append(what)
                if len(seen) == 1:
                    forget(root, chat="42", reason="asked while indexing")
        monkeypatch.setattr(erased, "BEFORE_PUBLISH", [hook])
        return seen
    return arm


def _canary_bytes(root: Path, sub: str) -> list[str]:
    tok = np.int64(token_ids(CANARY)[0]).tobytes()
    return [str(p) for p in (root / sub).rglob("*") if p.is_file() and tok in p.read_bytes()]


def _index_leaks(root: Path) -> list[str]:
    """Units or packs holding the canary's token, or standing for bytes of chat 42 the log no longer has."""
    out = _canary_bytes(root, "index")
    for sub in ("units", "packs"):
        for rec in units.load_records(root, any_version=True, subdir=sub).values():
            if sub == "units" and not units._still_current(root, rec):
                out.append(f"{sub}/{rec['day']} built from bytes the log no longer has")
    return out


def test_forget_during_index_publishes_nothing_it_erased(root: Path, forget_at_first_publish):
    seen = forget_at_first_publish("units/")
    r = run("index", "--no-vectors", "--root", str(root))
    assert r.exit_code == 0, r.output
    assert seen, "the publish step was reached"
    assert not _index_leaks(root), _index_leaks(root)
    # the dropped day is simply stale: the next run builds it from the erased log, and search still works
    assert run("index", "--no-vectors", "--root", str(root)).exit_code == 0
    assert not _index_leaks(root)
    assert run("search", "giraffe", "--root", str(root), "--mode", "text").exit_code == 0
    assert run("search", CANARY, "--root", str(root), "--mode", "text").exit_code == 1


def test_forget_during_compact_publishes_nothing_it_erased(root: Path, forget_at_first_publish):
    seen = forget_at_first_publish("parquet/")
    assert run("compact", "--root", str(root), "--before", "2026-11-01").exit_code == 0
    assert seen
    import pyarrow.parquet as pq

    for f in (root / "parquet").glob("*.parquet"):
        assert CANARY not in str(pq.read_table(f).to_pylist()), f


def test_every_run_removes_data_files_no_unit_names(root: Path):
    assert run("index", "--no-vectors", "--root", str(root)).exit_code == 0
    assert run("compact", "--root", str(root), "--before", "2026-11-01").exit_code == 0
    old = time.time() - 3600
    orphans = [root / "index/units/2026-10-03.0123456789abcdef.bin", root / "index/packs/2026-10.0123456789ab.bin",
               root / "parquet/2026-10.01KB0000000000000000000000.parquet"]
    for p in orphans:
        p.write_bytes(f"the {CANARY} left behind".encode())
        os.utime(p, (old, old))
    # nothing is stale: nothing is rebuilt, and still the orphans go
    assert run("index", "--no-vectors", "--root", str(root)).exit_code == 0
    assert run("compact", "--root", str(root), "--before", "2026-11-01").exit_code == 0
    assert [p for p in orphans if p.exists()] == []
    assert run("verify", "--root", str(root)).exit_code == 0
    assert run("search", "giraffe", "--root", str(root), "--mode", "text").exit_code == 0
