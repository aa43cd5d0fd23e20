"""The throwaway PostgreSQL cluster of tests/pg_support.py: it starts, serves on loopback only, and leaves nothing."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import pg_support
from pg_support import Cluster, PostgresMissing, running_cluster

TESTS = Path(__file__).resolve().parent


def listeners(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} print them) of the sockets listening on `port`."""
    out = []
    for name in ("tcp", "tcp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.rsplit(":", 1)
            if state == "0A" and int(p, 16) == port:  # 0A = LISTEN
                out.append(addr)
    return out


def eventually(cond, seconds: float = 10) -> bool:
    """Whether cond() becomes true within `seconds` (a stopped server's process and port go a moment after)."""
    for _ in range(int(seconds * 10)):
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_cluster_serves_loopback_only(pg_cluster: Cluster, pg_db: str, pg_catalog: str) -> None:
    assert pg_cluster.psql("SELECT 6 * 7", pg_db).strip() == "42"
    assert pg_cluster.psql("SHOW listen_addresses").strip() == "127.0.0.1"
    assert pg_cluster.psql("SHOW server_version_num").strip().startswith(str(pg_cluster.major))
    # the kernel's view, not the server's word: one listener on this port, bound to 127.0.0.1 (no 0.0.0.0, no ::)
    assert listeners(pg_cluster.port) == ["0100007F"]
    # the Unix socket lives in the cluster's temp dir, not in /var/run/postgresql
    assert (pg_cluster.sock / f".s.PGSQL.{pg_cluster.port}").exists()
    assert pg_catalog == f"postgres:dbname={pg_db} host=127.0.0.1 port={pg_cluster.port} user=postgres"
    assert oct(pg_cluster.dir.stat().st_mode & 0o777) == "0o700"


def test_each_test_gets_a_fresh_database(pg_cluster: Cluster, pg_db: str) -> None:
    pg_cluster.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (1)", pg_db)
    other = pg_cluster.createdb()
    try:
        assert other != pg_db
        assert pg_cluster.psql("SELECT count(*) FROM pg_tables WHERE tablename = 't'", other).strip() == "0"
    finally:
        pg_cluster.dropdb(other)
    assert other not in pg_cluster.psql("SELECT datname FROM pg_database")


def test_stopped_and_deleted_after() -> None:
    with running_cluster() as c:
        port, d = c.port, c.dir
        pid = int((c.data / "postmaster.pid").read_text().split()[0])
        assert accepts(port)
    assert not d.exists()
    assert not accepts(port)
    assert eventually(lambda: not pg_support._alive(pid))


def test_deleted_when_the_process_fails() -> None:
    """An exception out of the with-block (the session failing) still stops and deletes the cluster."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pg_support import running_cluster\n"
            "with running_cluster() as c:\n    print(c.dir, c.port, flush=True)\n    raise SystemExit(3)\n")
    p = subprocess.run([sys.executable, "-c", code, str(TESTS)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr
    d, port = p.stdout.split()
    assert not Path(d).exists()
    assert not accepts(int(port))


def test_a_killed_runs_cluster_is_reaped_by_the_next() -> None:
    """SIGKILL runs no finalizer: the next Cluster() finds the dead owner's cluster, stops it and deletes it."""
    # not under tmp_path: as root the server runs as `postgres`, which cannot enter pytest's root-only temp tree
    base = Path(tempfile.mkdtemp(prefix="pg-reap-"))
    os.chmod(base, 0o755)
    code = ("import sys, os; sys.path.insert(0, sys.argv[1]); from pathlib import Path; from pg_support import Cluster\n"
            "c = Cluster(Path(sys.argv[2])).start(); print(c.dir, c.port, flush=True); os.kill(os.getpid(), 9)\n")
    p = subprocess.run([sys.executable, "-c", code, str(TESTS), str(base)], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr
    d, port = p.stdout.split()
    assert Path(d).exists() and accepts(int(port))  # left behind
    try:
        pg_support.reap_stale(base)
        assert not Path(d).exists()
        assert eventually(lambda: not accepts(int(port)))
    finally:
        pg_support.reap_stale(base)
        shutil.rmtree(base, ignore_errors=True)


def test_missing_binaries_fail_naming_make_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_support, "PG_GLOB", "/nonexistent/postgresql/*/bin")
    with pytest.raises(PostgresMissing, match=r"run `make postgresql`"):
        Cluster()
