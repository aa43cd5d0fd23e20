"""Helpers shared by the lake tests: roots built with the project's own writer and sealed by the store's seal."""
from __future__ import annotations

import os
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from store_support import ev

try:  # a failure, never a skip: `make venv` installs the extra, and a skipped lake test would hide a broken install
    import duckdb_extension_ducklake  # noqa: F401
except ImportError as exc:  # pragma: no cover - only on a venv without the extra
    raise ImportError("the lake tests need the lake extra: pip install -e '.[lake]' (make venv does)") from exc

FIRST = date(2026, 11, 1)


def build_root(root: Path, chats: tuple[str, ...] = ("42", "43"), days: int = 3, per_day: int = 3,
               first: date = FIRST, text: str = "hello", seal: bool = True) -> list[str]:
    """A root with `per_day` messages per chat and day, days sealed through the last one; returns the day relpaths."""
    from eventlog.store.seal import seal_closed
    from eventlog.store.writer import EventLog

    log = EventLog(root, fsync="never", autoseal=False)
    for d in range(days):
        day = first + timedelta(days=d)
        for chat in chats:
            for i in range(per_day):
                log.append(ev(chat=chat, ts=f"{day.isoformat()}T10:00:{i:02d}.000Z", text=f"{text} {chat} {day} {i}"))
    if seal:
        seal_closed(log, through=first + timedelta(days=days - 1))
    return sorted(str(p.relative_to(root)) for p in (root / "raw").rglob("*.jsonl"))


def lake_args(tmp: Path) -> tuple[str, str]:
    """(CATALOG, DATA) of a SQLite lake under tmp."""
    data = tmp / "lakedata"
    data.mkdir(exist_ok=True)
    return f"sqlite:{tmp / 'catalog.sqlite'}", str(data)


def data_bytes(data: str) -> bytes:
    """Every byte of every file under DATA."""
    out = b""
    for dirpath, _, names in os.walk(data):
        for n in names:
            out += Path(dirpath, n).read_bytes()
    return out


@pytest.fixture(scope="session", name="_extensions_dir")
def extensions_dir_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir per test process: the extensions (~70 MB) are installed into it once, never into ~/.duckdb."""
    return tmp_path_factory.mktemp("eventlog-data")


@pytest.fixture(name="lake")
def lake_fixture(tmp_path: Path, _extensions_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(CATALOG, DATA) of an empty SQLite lake under tmp_path, with $EVENTLOG_DATA_DIR on the session's data dir."""
    monkeypatch.setenv("EVENTLOG_DATA_DIR", str(_extensions_dir))
    return lake_args(tmp_path)


def query(catalog: str, data: str, sql: str, params: dict | None = None) -> list[tuple]:
    """Rows of `sql` over the lake attached read-only (the tests' own look at what a push left)."""
    from eventlog.lake.catalog import attach, parse_catalog

    con = attach(parse_catalog(catalog), data, read_only=True)
    try:
        return con.execute(sql, params or {}).fetchall()
    finally:
        con.close()


def run_cli(*args: str) -> Any:
    from click.testing import CliRunner

    from eventlog.cli.main import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)
