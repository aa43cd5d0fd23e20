"""A throwaway PostgreSQL cluster for the lake's tests (issue 28): initdb on a temp dir, 127.0.0.1 only, a free port,
the socket in the temp dir, stopped and deleted after — also when the session fails (a finalizer and atexit), and a
cluster a killed run left behind is stopped and deleted by the next one.

The server binaries come from Debian's packages (/usr/lib/postgresql/<major>/bin, the highest major present). They are
not optional: a missing one fails the tests that need it with one line naming `make postgresql` (never a skip, so a
green run always includes the PostgreSQL catalog). PostgreSQL refuses to run as root, so as root the server runs as
the `postgres` OS user (`runuser`); the clients (psql, createdb) run as whoever we are and connect over TCP with
trust auth, as DuckDB's postgres extension does.

Also imported by tools/bench/lake.py (the cluster class only needs the standard library; the fixtures need pytest).
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PG_GLOB = "/usr/lib/postgresql/*/bin"
MISSING = ("the PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) are not installed under "
           "/usr/lib/postgresql/*/bin: run `make postgresql`")
PREFIX = "eventlog-pg-"
OWNER = "owner.pid"  # the pid of the process that started the cluster: a cluster whose owner is dead is stale
TOOLS = ("initdb", "pg_ctl", "postgres", "psql")


class PostgresMissing(RuntimeError):
    pass


def find_bin() -> Path:
    """The bin directory of the highest PostgreSQL major installed with every tool the cluster needs."""
    found = []
    for d in Path("/").glob(PG_GLOB.lstrip("/")):
        if all(os.access(d / t, os.X_OK) for t in TOOLS):
            with contextlib.suppress(ValueError):
                found.append((int(d.parent.name), d))
    if not found:
        raise PostgresMissing(MISSING)
    return max(found)[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not: a stopped postmaster is one for a moment)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Cluster:
    """One running cluster: `start()`, `createdb()`, `catalog(db)`, `psql(db, sql)`, `stop()` (idempotent)."""

    def __init__(self, base: Path | None = None) -> None:
        self.bin = find_bin()
        self.major = int(self.bin.parent.name)
        self.user = None if os.geteuid() != 0 else "postgres"
        if self.user is not None:
            try:
                self._pw = pwd.getpwnam(self.user)
            except KeyError:
                raise PostgresMissing("running as root, but there is no `postgres` OS user to run the server as: "
                                      "run `make postgresql`") from None
        reap_stale(Path(base or tempfile.gettempdir()))
        self.dir = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))  # mode 700
        (self.dir / OWNER).write_text(f"{os.getpid()}\n")
        self.data = self.dir / "data"
        self.sock = self.dir / "sock"
        self.log = self.dir / "server.log"
        self.port = 0
        self.running = False
        self._names = itertools.count(1)
        if self.user is not None:  # the server's user owns the whole temp dir (initdb wants its data dir its own)
            os.chown(self.dir, self._pw.pw_uid, self._pw.pw_gid)

    # -- server ----------------------------------------------------------------------------------------------------
    def _as_server(self, argv: list[str]) -> list[str]:
        return argv if self.user is None else ["runuser", "-u", self.user, "--", *argv]

    def _run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        p = subprocess.run(argv, capture_output=True, text=True, **kw)
        if p.returncode != 0:
            raise RuntimeError(f"{Path(argv[0]).name if argv[0] != 'runuser' else argv[4]} failed ({p.returncode}): "
                               f"{(p.stderr or p.stdout).strip()[-800:]}")
        return p

    def start(self) -> Cluster:
        self.sock.mkdir(mode=0o700)
        if self.user is not None:
            os.chown(self.sock, self._pw.pw_uid, self._pw.pw_gid)
        # --no-sync and fsync=off: a test cluster is thrown away, durability buys nothing here
        self._run(self._as_server([str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                                   "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]))
        for attempt in range(5):  # a free port can be taken between free_port() and the server's bind: try another
            self.port = free_port()
            opts = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.sock} -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50 -c shared_buffers=16MB")
            p = subprocess.run(self._as_server([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                                                "-w", "-t", "60", "-o", opts, "start"]),
                               capture_output=True, text=True)
            if p.returncode == 0:
                self.running = True
                return self
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "could not bind" not in log or attempt == 4:
                raise RuntimeError(f"pg_ctl start failed ({p.returncode}): {(p.stderr or p.stdout).strip()} "
                                   f"{log.strip()[-800:]}")
        raise AssertionError("unreachable")

    def stop(self) -> None:
        """Stop the server (immediate: nothing in it is kept) and delete the temp dir. Safe to call twice."""
        if self.running:
            subprocess.run(self._as_server([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                                            "-w", "stop"]), capture_output=True)
            self.running = False
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- clients ---------------------------------------------------------------------------------------------------
    def dsn(self, db: str = "postgres") -> str:
        """The libpq key=value string (what DuckDB's postgres extension and psql take)."""
        return f"dbname={db} host=127.0.0.1 port={self.port} user=postgres"

    def catalog(self, db: str) -> str:
        """The DuckLake CATALOG string `eventlog lake` takes for database `db`."""
        return f"postgres:{self.dsn(db)}"

    def psql(self, sql: str, db: str = "postgres") -> str:
        """Run `sql` (one or more statements) with psql over TCP; unaligned, tuples only; stops at the first error."""
        return self._run([str(self.bin / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(db),
                          "-c", sql]).stdout

    def createdb(self) -> str:
        name = f"t{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{name}"')
        return name

    def dropdb(self, name: str) -> None:
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def data_files(self, db: str) -> list[Path]:
        """Every file of database `db` under the data directory (base/<oid>/), for grepping its bytes."""
        oid = self.psql(f"SELECT oid FROM pg_database WHERE datname = '{db}'").strip()
        return [p for p in (self.data / "base" / oid).iterdir() if p.is_file()]


def reap_stale(base: Path) -> None:
    """Stop and delete the clusters a killed run left under `base` (their owner process is gone)."""
    for d in base.glob(PREFIX + "*"):
        try:
            owner = int((d / OWNER).read_text())
        except (OSError, ValueError):
            continue
        if _alive(owner):
            continue
        pid_file = d / "data" / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)  # immediate shutdown
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def running_cluster(base: Path | None = None) -> Iterator[Cluster]:
    """A started cluster, stopped and deleted on exit — and at interpreter exit if the with-block never ends."""
    c = Cluster(base)
    atexit.register(c.stop)
    try:
        yield c.start()
    finally:
        c.stop()
        atexit.unregister(c.stop)


# -- pytest fixtures (registered in tests/conftest.py) ---------------------------------------------------------------
try:
    import pytest
except ImportError:  # tools/bench/lake.py without the test extra: the cluster class alone
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def pg_cluster() -> Iterator[Cluster]:
        """One PostgreSQL cluster per test session (per xdist worker); fails, never skips, without the binaries."""
        try:
            with running_cluster() as cluster:
                yield cluster
        except PostgresMissing as e:
            pytest.fail(str(e), pytrace=False)

    @pytest.fixture
    def pg_db(pg_cluster: Cluster) -> Iterator[str]:
        """A fresh database for one test, dropped after it."""
        name = pg_cluster.createdb()
        yield name
        pg_cluster.dropdb(name)

    @pytest.fixture
    def pg_catalog(pg_cluster: Cluster, pg_db: str) -> str:
        """The DuckLake CATALOG string of a fresh database: `postgres:dbname=… host=127.0.0.1 port=… user=postgres`."""
        return pg_cluster.catalog(pg_db)
