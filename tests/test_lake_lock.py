"""The lake-wide lock (eventlog/lake/catalog.py LakeLock): every push transaction holds its shared side, a scrub's
statistics reset its exclusive side — so another gateway's push cannot begin before the reset and commit after it,
writing the erased bounds back (docs/lake.md). Checked from a second lock holder (another gateway's side
connection) at the moment each side is held, on a SQLite and on a PostgreSQL catalog."""
from __future__ import annotations

from pathlib import Path

import pytest

from lake_support import build_root, extensions_dir_fixture, lake_fixture, run_cli  # noqa: F401

from eventlog.lake import erase
from eventlog.lake import push as p
from eventlog.lake.catalog import gateway_lock, parse_catalog


@pytest.fixture(params=["sqlite", "postgres"])
def any_lake(request: pytest.FixtureRequest, tmp_path: Path, lake: tuple[str, str]) -> tuple[str, str]:
    if request.param == "sqlite":
        return lake
    data = tmp_path / "pgdata"
    data.mkdir()
    return request.getfixturevalue("pg_catalog"), str(data)


def _other_can_take_exclusive(catalog: str) -> bool:
    with gateway_lock(parse_catalog(catalog), "someone-else") as other:
        return other.try_exclusive()


def test_push_transactions_are_shared_and_the_stats_reset_is_exclusive(root: Path, any_lake: tuple[str, str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = any_lake[0]
    build_root(root, chats=("42", "43"), days=2, text="lock")
    at_commit: list[tuple[str, bool]] = []
    monkeypatch.setattr(p, "BEFORE_COMMIT", [lambda what, n: at_commit.append((what, _other_can_take_exclusive(
        catalog)))])
    p.push(root, parse_catalog(catalog), any_lake[1], "gw")
    assert at_commit and all(not free for _, free in at_commit), at_commit  # held shared at every commit
    assert {"gateway", "batch", "head"} <= {w for w, _ in at_commit}
    assert _other_can_take_exclusive(catalog)  # and released after

    during_reset: list[bool] = []
    real = erase.reset_stats

    def watched(*a, **kw):  # type: ignore[no-untyped-def]
        with gateway_lock(parse_catalog(catalog), "someone-else") as other:
            during_reset.append(other.try_exclusive())
        return real(*a, **kw)

    monkeypatch.setattr(erase, "reset_stats", watched)
    monkeypatch.setattr(p, "BEFORE_COMMIT", [])
    r = run_cli("forget", "--chat", "42", "--reason", "asked", "--yes", "--root", str(root))
    assert r.exit_code == 0, r.output
    after = p.push(root, parse_catalog(catalog), any_lake[1])
    assert after.scrub is not None and during_reset == [False]  # the reset ran under the exclusive side
    assert _other_can_take_exclusive(catalog)
