"""`eventlog lake push|verify|sql` with a PostgreSQL catalog (tests/pg_support.py's throwaway cluster): two gateways
pushing at once from two processes, then again; a shared chat id kept apart; verify clean; a later day pushed alone;
`forget` reaching the lake with no canary byte under DATA, in any catalog table or in the database's files; an
unreachable server as one line and exit 2. The same checks on a SQLite catalog: tests/test_lake_push.py."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from lake_support import FIRST, build_root, data_bytes, extensions_dir_fixture, query, run_cli  # noqa: F401
from pg_support import Cluster
from store_support import REPO


@pytest.fixture
def pg_lake(pg_catalog: str, tmp_path: Path, _extensions_dir: Path, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[str, str]:
    """(CATALOG, DATA): a fresh PostgreSQL database as the catalog, a directory as the data path."""
    monkeypatch.setenv("EVENTLOG_DATA_DIR", str(_extensions_dir))
    data = tmp_path / "lakedata"
    data.mkdir()
    return pg_catalog, str(data)


def _push_all(lake: tuple[str, str], roots: list[tuple[Path, str]], data_dir: Path) -> list[dict]:
    """`eventlog lake push --json` of every (root, gateway) at once, one process each; their summaries."""
    cmd = [sys.executable, "-m", "eventlog", "lake", "push", "--catalog", lake[0], "--data", lake[1], "--json"]
    env = {**os.environ, "EVENTLOG_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen(cmd + ["--root", str(r), "--gateway", g], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for r, g in roots]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), [o[1].decode()[-600:] for o in outs]
    return [json.loads(o[0]) for o in outs]


def _verify(lake: tuple[str, str], root: Path, gateway: str) -> None:
    r = run_cli("lake", "verify", "--catalog", lake[0], "--data", lake[1], "--gateway", gateway, "--root", str(root))
    assert r.exit_code == 0, r.output + r.stderr


@pytest.mark.slow  # ≈ 30 s: six pushes in subprocesses, each loading DuckDB's extensions
def test_two_gateways_push_at_once_then_again_and_a_later_day(tmp_path: Path, pg_lake: tuple[str, str],
                                                             _extensions_dir: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    build_root(a, chats=("42", "7"), days=4, text="from a")
    build_root(b, chats=("42",), days=4, text="from b")  # chat 42 on both gateways
    first = _push_all(pg_lake, [(a, "alpha"), (b, "beta")], _extensions_dir)
    assert sorted(s["lines_added"] for s in first) == [12, 24]
    again = _push_all(pg_lake, [(a, "alpha"), (b, "beta")], _extensions_dir)
    assert [s["lines_added"] for s in again] == [0, 0]
    rows = query(*pg_lake, "SELECT gateway, chat, count(*), count(DISTINCT id), bool_and(event LIKE '%from ' || "
                           "CASE gateway WHEN 'alpha' THEN 'a' ELSE 'b' END || '%') FROM lake.lines "
                           "GROUP BY ALL ORDER BY ALL")
    assert rows == [("alpha", "42", 12, 12, True), ("alpha", "7", 12, 12, True), ("beta", "42", 12, 12, True)]
    assert query(*pg_lake, "SELECT count(*) FROM (SELECT gateway, id FROM lake.lines GROUP BY ALL "
                           "HAVING count(*) > 1)") == [(0,)]
    _verify(pg_lake, a, "alpha")
    _verify(pg_lake, b, "beta")
    # a later day on one gateway: only its two files ship; the other gateway's rows are untouched
    build_root(a, chats=("42", "7"), days=1, first=FIRST + timedelta(days=4), text="from a later")
    (later,) = _push_all(pg_lake, [(a, "alpha")], _extensions_dir)
    assert (later["files_new"], later["lines_added"], later["files_unchanged"]) == (2, 6, 8)
    assert query(*pg_lake, "SELECT gateway, count(*) FROM lake.lines GROUP BY ALL ORDER BY ALL") == \
        [("alpha", 30), ("beta", 12)]
    _verify(pg_lake, a, "alpha")
    # the cross-gateway views: chat 42's messages from both, told apart by gateway
    r = run_cli("lake", "sql", "SELECT gateway, count(*) AS n FROM messages WHERE chat_id = '42' GROUP BY ALL "
                "ORDER BY ALL", "--catalog", pg_lake[0], "--data", pg_lake[1], "--json")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(x) for x in r.stdout.splitlines()] == [{"gateway": "alpha", "n": 15},
                                                              {"gateway": "beta", "n": 12}]


@pytest.mark.slow  # ≈ 15-30 s: two pushes, a forget, a scrub with VACUUM FULL
def test_forget_reaches_a_postgres_lake(root: Path, pg_lake: tuple[str, str], pg_cluster: Cluster,
                                        pg_db: str) -> None:
    canary = "canary-pg-31x"
    build_root(root, chats=("42", "43"), days=2, text=canary)
    r = run_cli("lake", "push", "--catalog", pg_lake[0], "--data", pg_lake[1], "--gateway", "gw", "--root", str(root))
    assert r.exit_code == 0, r.stderr
    assert f"{canary} 42".encode() in data_bytes(pg_lake[1])  # the positive control
    r = run_cli("forget", "--chat", "42", "--reason", "asked", "--yes", "--root", str(root))
    assert r.exit_code == 0, r.output
    r = run_cli("lake", "push", "--catalog", pg_lake[0], "--data", pg_lake[1], "--json", "--root", str(root))
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["lines_deleted"] == 6 and summary["scrub"]["vacuumed_tables"] > 0, summary
    needle = f"{canary} 42"
    assert needle.encode() not in data_bytes(pg_lake[1])
    tables = pg_cluster.psql("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'", pg_db).split()
    assert "ducklake_table_column_stats" in tables
    for t in tables:
        assert needle not in pg_cluster.psql(f"SELECT t::text FROM {t} t", pg_db), t
    pg_cluster.psql("CHECKPOINT", pg_db)
    assert [p for p in pg_cluster.data_files(pg_db) if needle.encode() in p.read_bytes()] == []
    # the other chat is whole, the lake verifies, and equality lookups find the remaining rows
    rows = query(*pg_lake, "SELECT chat, count(*) FROM lake.lines GROUP BY ALL ORDER BY ALL")
    assert rows == [("42", 6), ("43", 6)]
    _verify(pg_lake, root, "gw")
    (ev43,) = query(*pg_lake, "SELECT min(event) FROM lake.lines WHERE chat = '43'")[0:1]
    assert query(*pg_lake, "SELECT count(*) FROM lake.lines WHERE event = $e", {"e": ev43[0]}) == [(1,)]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["push", "verify", "sql"])
def test_an_unreachable_server_is_one_line_and_exit_2(root: Path, tmp_path: Path, command: str,
                                                      _extensions_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLOG_DATA_DIR", str(_extensions_dir))
    build_root(root, days=1)
    (tmp_path / "d").mkdir()
    catalog = f"postgres:dbname=lake host=127.0.0.1 port={_closed_port()} user=postgres"
    args = {"push": ["push"], "verify": ["verify", "--gateway", "gw"], "sql": ["sql", "SELECT 1"]}[command]
    root_args = [] if command == "sql" else ["--root", str(root)]
    r = run_cli("lake", *args, "--catalog", catalog, "--data", str(tmp_path / "d"), *root_args)
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output, r.stderr
    assert "127.0.0.1" in r.stderr or "catalog" in r.stderr, r.stderr


def test_a_database_that_does_not_exist_is_one_line_and_exit_2(root: Path, pg_lake: tuple[str, str],
                                                               pg_cluster: Cluster) -> None:
    build_root(root, days=1)
    catalog = pg_cluster.catalog("no_such_db")
    r = run_cli("lake", "push", "--catalog", catalog, "--data", pg_lake[1], "--gateway", "gw", "--root", str(root))
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and "no_such_db" in r.stderr, r.stderr
