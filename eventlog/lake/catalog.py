"""The CATALOG and DATA strings, attaching the lake, the per-gateway push lock and the retry (docs/lake.md).

CATALOG is a DuckLake metadata string as `ATTACH 'ducklake:…'` takes it: `sqlite:FILE` (one host) or
`postgres:<libpq key=value …>` (many hosts). DATA is the DuckLake data path: a directory (`s3://…` is documented,
not tested here). Both are checked before DuckDB sees them, so a typo is one line, not a DuckDB stack of messages.
"""
from __future__ import annotations

import hashlib
import random
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

from .extensions import LakeError, _first_line, _literal, connect

if TYPE_CHECKING:
    import duckdb

ALIAS = "lake"
# libpq connection keywords a lake catalog may use (PostgreSQL docs, "Parameter Key Words"); anything else is a typo
PG_KEYS = frozenset({"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "connect_timeout",
                     "application_name", "sslmode", "sslrootcert", "sslcert", "sslkey", "options", "service",
                     "target_session_attrs", "keepalives", "keepalives_idle"})
PG_CONNECT_TIMEOUT = "10"  # seconds: an unreachable server is an error line, not a hang
_PAIR = re.compile(r"\s*([a-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)")
# What DuckDB says when another process holds the catalog or a concurrent commit won (lake-notes §6), or when two
# processes create a new lake at once (DuckLake's own tables in PostgreSQL, then ours): the push is idempotent, so
# the whole attempt is redone.
_TRANSIENT = ("database is locked", "conflict", "could not serialize", "deadlock detected",
              "duplicate key value violates unique constraint", "already exists")
RETRIES = 30
T = TypeVar("T")


@dataclass(frozen=True)
class Catalog:
    kind: str  # "sqlite" or "postgres"
    target: str  # the SQLite file (absolute), or the libpq string as given
    params: tuple[tuple[str, str], ...] = ()  # postgres: the parsed key=value pairs

    @property
    def uri(self) -> str:
        return f"ducklake:{self.kind}:{self.target}"

    def describe(self) -> str:
        """How messages name the catalog (never a password)."""
        if self.kind == "sqlite":
            return f"sqlite:{self.target}"
        return "postgres:" + " ".join(f"{k}={v}" for k, v in self.params if k != "password")


def parse_catalog(text: str) -> Catalog:
    """`sqlite:FILE` or `postgres:key=value …`; anything else raises LakeError."""
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("sqlite", "postgres") or not rest.strip():
        raise LakeError(f"bad catalog {text[:80]!r}: expected sqlite:FILE or postgres:dbname=… host=… port=… user=…")
    if kind == "sqlite":
        path = Path(rest).expanduser().absolute()
        if not path.parent.is_dir():
            raise LakeError(f"bad catalog {text[:80]!r}: no directory {path.parent}")
        if path.exists() and not path.is_file():
            raise LakeError(f"bad catalog {text[:80]!r}: {path} is not a file")
        return Catalog("sqlite", str(path))
    pairs, pos = [], 0
    rest = rest.strip()
    while pos < len(rest):
        m = _PAIR.match(rest, pos)
        if not m:
            raise LakeError(f"bad catalog: postgres:{rest[:80]!r} is not a list of libpq key=value pairs")
        key, value = m[1], m[2]
        if key not in PG_KEYS:
            raise LakeError(f"bad catalog: unknown libpq key {key!r} (known: {', '.join(sorted(PG_KEYS))})")
        if key == "port" and not (value.isdigit() and 0 < int(value) < 65536):
            raise LakeError(f"bad catalog: port {value[:20]!r} is not a port number")
        pairs.append((key, value))
        pos = m.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    keys = {k for k, _ in pairs}
    if "dbname" not in keys:
        raise LakeError("bad catalog: the postgres catalog needs dbname=…")
    if "connect_timeout" not in keys:
        pairs.append(("connect_timeout", PG_CONNECT_TIMEOUT))
    return Catalog("postgres", " ".join(f"{k}={v}" for k, v in pairs), tuple(pairs))


def check_data(data: str) -> str:
    """DATA as DuckLake gets it: an existing directory (absolute), or an s3:// URL (docs/lake.md: not tested here)."""
    if data.startswith("s3://"):
        return data
    path = Path(data).expanduser().absolute()
    if not path.is_dir():
        raise LakeError(f"no data directory {path} (create it, or give --data DIR)")
    return str(path) + "/"


def attach(catalog: Catalog, data: str, read_only: bool = False) -> "duckdb.DuckDBPyConnection":
    """A connection with the lake attached as `lake` (DATA_INLINING_ROW_LIMIT 0: lake-notes §2, every row goes to a
    data file, so an erasure can remove it). Read-only for sql and verify; a lake that does not exist is an error
    there, not a new empty one."""
    import duckdb

    names: tuple[str, ...] = ("ducklake", "sqlite_scanner" if catalog.kind == "sqlite" else "postgres_scanner")
    if data.startswith("s3://"):
        names += ("httpfs",)
    if read_only and catalog.kind == "sqlite" and not Path(catalog.target).is_file():
        raise LakeError(f"no lake at {catalog.describe()} (nothing was pushed there yet)")
    con = connect(names)
    options = f"DATA_PATH '{_literal(data)}', DATA_INLINING_ROW_LIMIT 0" + (", READ_ONLY" if read_only else "")
    try:
        con.execute(f"ATTACH '{_literal(catalog.uri)}' AS {ALIAS} ({options})")
    except duckdb.Error as exc:
        con.close()
        msg = _first_line(exc)
        if is_transient(exc):
            raise
        raise LakeError(f"cannot open the lake {catalog.describe()}: {msg}") from None
    return con


def is_transient(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(t in text for t in _TRANSIENT)


def retrying(attempt: Callable[[], T], retries: int = RETRIES) -> T:
    """Run `attempt` (a whole idempotent unit: attach, read, write, commit) again while it fails on a locked SQLite
    catalog or a commit conflict (lake-notes §6: DuckLake's own retry does not cover them)."""
    import duckdb

    delay = 0.05
    for n in range(retries):
        try:
            return attempt()
        except duckdb.Error as exc:
            if not is_transient(exc) or n == retries - 1:
                raise LakeError(f"the lake: {_first_line(exc)}") from None
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 1.6, 2.0)
    raise AssertionError("unreachable")


def rollback(con: "duckdb.DuckDBPyConnection") -> None:
    """ROLLBACK after a failed statement or COMMIT; "no transaction is active" after a failed COMMIT is swallowed."""
    import duckdb

    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass


_LAKE_KEY = int.from_bytes(hashlib.sha256(b"eventlog-lake-stats").digest()[:8], "big", signed=True)


class LakeLock:
    """The lake-wide lock between every push's write transactions (shared) and a scrub's reset of the table
    statistics (exclusive): DuckLake folds a commit's file statistics into the table's min/max as its transaction saw
    them, so a push of another gateway that began before the reset and committed after it would write the erased
    bounds back. SQLite: flock(2) on a file beside the catalog; PostgreSQL: a session-level advisory lock taken on
    the push's side connection."""

    def __init__(self, catalog: Catalog, side: "duckdb.DuckDBPyConnection | None" = None) -> None:
        self.catalog = catalog
        self.side = side

    @property
    def path(self) -> str:
        return f"{self.catalog.target}.lake.lock"

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._held(False):
            yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._held(True):
            yield

    def try_exclusive(self) -> bool:
        """Whether the exclusive lock is free right now (taken and released at once): for tests and doctor."""
        if self.side is None:
            import fcntl
            import os

            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
            finally:
                os.close(fd)  # closing the descriptor releases the lock
        got = self.side.execute("SELECT * FROM postgres_query('el_lock', "
                                f"'SELECT pg_try_advisory_lock({_LAKE_KEY})')").fetchone()
        if got and got[0]:
            self._pg(f"pg_advisory_unlock({_LAKE_KEY})")
            return True
        return False

    @contextmanager
    def _held(self, exclusive: bool) -> Iterator[None]:
        if self.side is None:
            import fcntl
            import os

            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                yield
            finally:
                os.close(fd)
            return
        kind = "" if exclusive else "_shared"
        self._pg(f"pg_advisory_lock{kind}({_LAKE_KEY})")
        try:
            yield
        finally:
            self._pg(f"pg_advisory_unlock{kind}({_LAKE_KEY})")

    def _pg(self, call: str) -> None:
        assert self.side is not None
        self.side.execute(f"CALL postgres_execute('el_lock', 'SELECT {call}')")


@contextmanager
def gateway_lock(catalog: Catalog, gateway: str, timeout: float = 600.0) -> Iterator[LakeLock]:
    """One push per gateway at a time (DuckLake has no unique constraint: two pushes of one gateway would both add
    the same lines). SQLite: a lock file beside the catalog (the store's lock protocol). PostgreSQL: a
    transaction-level advisory lock on a side connection, held until the push ends. Yields the lake-wide lock
    (LakeLock) on the same side connection."""
    if catalog.kind == "sqlite":
        from ..store.lock import FileLock

        name = hashlib.sha256(gateway.encode()).hexdigest()[:16]
        with FileLock(f"{catalog.target}.push-{name}.lock", timeout=timeout):
            yield LakeLock(catalog)
        return
    import duckdb

    key = int.from_bytes(hashlib.sha256(b"eventlog-lake-push\0" + gateway.encode()).digest()[:8], "big", signed=True)
    side = connect(("postgres_scanner",))
    try:
        # READ COMMITTED: the extension's default REPEATABLE READ would hold the lock transaction's snapshot for the
        # whole push, and erase.scrub's VACUUM FULL would then keep every tuple deleted since (the erased text)
        side.execute(f"ATTACH '{_literal(catalog.target)}' AS el_lock (TYPE postgres, "
                     "ISOLATION_LEVEL 'READ COMMITTED')")
        side.execute("BEGIN")
        side.execute(f"CALL postgres_execute('el_lock', 'SELECT pg_advisory_xact_lock({key})')")
    except duckdb.Error as exc:
        side.close()
        raise LakeError(f"cannot reach the catalog {catalog.describe()}: {_first_line(exc)}") from None
    try:
        yield LakeLock(catalog, side)
    finally:
        rollback(side)
        side.close()
