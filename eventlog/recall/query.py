"""DuckDB over the log, read-only: connect (views from eventlog/recall/views.py over the files eventlog/recall/planner.py bound),
run user SQL only if every statement is a SELECT (or EXPLAIN of one), report skipped lines, explain.

Every user value (file lists, chats, bounds) reaches DuckDB as a bound variable (`SET VARIABLE`), never by string
formatting; file access is then limited to the log root and the configuration locked.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import orjson

from ..errors import EventlogError
from .planner import Scope, Sources, plan, scope_from  # noqa: F401  (the public query API)
from .views import file_parts_sql, view_sql
from .when import duckdb_name, iso

if TYPE_CHECKING:  # duckdb costs ~0.35 s to import: only commands that query pay it
    import duckdb


TIMEOUT_S = 300  # `eventlog sql --timeout` default: a year of chat is scanned in seconds; 0 means no limit
MEMORY_LIMIT = "400MB"  # `--memory-limit` default: DuckDB spills to its private temp directory beyond it


class QueryError(EventlogError):
    """A query that is not allowed or does not run (bad SQL, a write, a missing parameter)."""


class Interrupted(Exception):
    """The query was stopped by SIGINT or SIGTERM (`signum`): the CLI exits 130 or 143, as a shell would."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def connect(scope: Scope, src: Sources | None = None, memory_limit: str | None = None,
            views: tuple[str, ...] | None = None) -> tuple["duckdb.DuckDBPyConnection", Sources]:
    """An in-memory DuckDB connection with the views defined over `scope`, locked down for untrusted SQL; with
    `memory_limit` (DuckDB's syntax: "400MB", "2GB") DuckDB's own memory stays below it. `views`: only these (in
    view_sql's order, so `messages` needs `events` named too) — binding every view costs ~0.3 s, more than a small
    query (the web page's timeline asks for events and messages only)."""
    import duckdb

    src = src if src is not None else plan(scope)
    con = duckdb.connect(":memory:", config={"threads": max(1, os.cpu_count() or 1)})
    # The session's zone is the user's: the views' `day`, now(), current_date and TIMESTAMPTZ values are local time
    # (ts itself stays a UTC TIMESTAMP, as in the log). A zone DuckDB has no name for stays UTC.
    zone = (duckdb_name(scope.tz) if scope.tz is not None else None) or "UTC"
    try:
        con.execute("SET TimeZone = $z", {"z": zone})
    except duckdb.Error:
        raise QueryError(f"DuckDB does not know the time zone {zone!r}: give --tz with another name for it") from None
    con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout, into the result
    if memory_limit is not None:
        try:
            con.execute("SET memory_limit = $m", {"m": memory_limit})
        except duckdb.Error as exc:
            raise QueryError(f"--memory-limit {memory_limit!r}: {_one_line(exc)}") from None
    variables: dict[str, Any] = {"el_jsonl": src.jsonl, "el_parquet": src.parquet, "el_excluded": src.excluded}
    if scope.chats:
        variables["el_chats"] = list(scope.chats)
    if scope.accounts:
        variables["el_accounts"] = list(scope.accounts)
    if scope.since:
        variables["el_since"] = _naive_utc(scope.since)
        variables["el_since_s"] = iso(scope.since)
    if scope.until:
        variables["el_until"] = _naive_utc(scope.until)
        variables["el_until_s"] = iso(scope.until)
    for view, path in src.dlp.items():
        variables["el_" + view] = path
    for name, value in variables.items():
        if isinstance(value, list):
            _set_list(con, name, value)
        else:
            con.execute(f"SET VARIABLE {name} = $v", {"v": value})
    for name, stmt in view_sql(scope, src).items():
        if views is None or name in views:
            con.execute(stmt)
    # DuckDB lets queries read its temp directory (default: `.tmp` in the current directory) even with external
    # access off: give it a private, empty one instead.
    con.execute("SET temp_directory = $d", {"d": _private_tmp()})
    allowed = sorted({str(scope.root.resolve()) + "/", str(scope.root) + "/"})
    con.execute("SET allowed_directories = $d", {"d": allowed})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con, src


def _set_list(con: "duckdb.DuckDBPyConnection", name: str, values: list[str]) -> None:
    """SET VARIABLE name to a list of strings, bound as one JSON string, not a Python list: duckdb 1.5.5 converts a
    list parameter element by element and tries `import pandas` twice per element (measured: 3.8 s for the 71,761
    day files of a year of 200 chats), and an empty list gets no element type."""
    con.execute(f"SET VARIABLE {name} = from_json($v, '[\"VARCHAR\"]')", {"v": orjson.dumps(values).decode()})


@contextmanager
def duckdb_errors() -> Iterator[None]:
    """DuckDB raises while binding views, executing, and lazily while results are fetched: one clean error each.
    Does not import duckdb itself: `bounded` must be the first to (see there)."""
    import sys

    try:
        yield
    except Exception as exc:
        duckdb = sys.modules.get("duckdb")
        if duckdb is not None and isinstance(exc, duckdb.Error):
            raise QueryError(_one_line(exc)) from None
        raise


class Guard:
    """What `bounded` interrupts: set `con` to the connection as soon as it exists."""

    con: "duckdb.DuckDBPyConnection | None" = None


@contextmanager
def bounded(timeout_s: float = 0) -> Iterator[Guard]:
    """Run the block (connecting, executing, fetching) under a time limit and interruptible: SIGINT/SIGTERM or the
    deadline call `guard.con.interrupt()`. Why a thread: DuckDB keeps the main thread inside C for the whole query,
    where Python's signal handlers never run (Ctrl-C was ignored until the query ended), so the signals are blocked
    — before connecting, so that DuckDB's own threads inherit the mask and cannot swallow them — and one watcher
    takes them with sigtimedwait. Raises Interrupted for a signal, QueryError for the deadline; outside the main
    thread (a library caller's worker) the deadline alone applies."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    main = threading.current_thread() is threading.main_thread()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs) if main else None
    # duckdb 1.5 starts a thread when imported (measured): imported here, under the mask, that thread blocks the
    # signals too. Imported before (once by duckdb_errors), it took SIGTERM, whose default action killed the process.
    import duckdb  # noqa: F401
    stop, guard = threading.Event(), Guard()
    why: list[int] = []  # the signal that stopped the query, or 0 for the deadline
    deadline = time.monotonic() + timeout_s if timeout_s else None

    def watch() -> None:
        while not stop.is_set():
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            got = None
            if main:
                got = signal.sigtimedwait(sigs, wait)
            else:
                stop.wait(wait)
            if not why and (got is not None or deadline is not None and time.monotonic() >= deadline):
                why.append(got.si_signo if got is not None else 0)
            if why and guard.con is not None:
                guard.con.interrupt()  # again each turn: an interrupt between two statements would be lost

    watcher = threading.Thread(target=watch, name="eventlog-sql-watch", daemon=True)
    watcher.start()
    failed = False
    try:
        yield guard
    except Exception:
        if not why:
            raise
        failed = True
    finally:
        stop.set()
        watcher.join()
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    if why and why[0]:
        raise Interrupted(why[0])
    if failed:
        raise QueryError(f"the query took longer than {timeout_s:g} s and was stopped (--timeout)")


def check_readonly(con: "duckdb.DuckDBPyConnection", sql: str) -> list[str]:
    """Split user SQL into statements; refuse anything but SELECT / EXPLAIN SELECT (no COPY, ATTACH, CREATE, SET…)."""
    import duckdb

    try:
        stmts = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None
    if not stmts:
        raise QueryError("empty query")
    out = []
    for st in stmts:
        kind = st.type
        text = st.query.strip()
        if kind == duckdb.StatementType.EXPLAIN:
            inner = text.split(None, 1)[1] if " " in text else ""
            if inner.upper().startswith("ANALYZE"):
                inner = inner[7:]
            inner_stmts = con.extract_statements(inner) if inner.strip() else []
            if len(inner_stmts) != 1 or inner_stmts[0].type != duckdb.StatementType.SELECT:
                raise QueryError("read-only: only EXPLAIN of a SELECT is allowed")
        elif kind != duckdb.StatementType.SELECT:
            raise QueryError(f"read-only: {kind.name} statements are not allowed (only SELECT)")
        out.append(text)
    return out


def execute(con: "duckdb.DuckDBPyConnection", sql: str, params: dict[str, Any] | None = None) -> "duckdb.DuckDBPyConnection":
    """Run user SQL read-only; every statement but the last runs for effect, the last one's result is returned."""
    import duckdb

    stmts = check_readonly(con, sql)
    try:
        for text in stmts[:-1]:
            con.execute(text, _params_for(text, params))
        return con.execute(stmts[-1], _params_for(stmts[-1], params))
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None


def _params_for(text: str, params: dict[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    used = {k: v for k, v in params.items() if ("$" + k) in text}
    return used or None


def invalid_lines(con: "duckdb.DuckDBPyConnection", src: Sources, root: Path) -> list[tuple[str, int]]:
    """(relpath, count) of torn or invalid JSONL lines in the query's files (the views skipped them; not fatal). Only
    the files changed since an earlier run counted them are read (recall/linecounts.py)."""
    if not src.jsonl:
        return []
    from . import linecounts

    return linecounts.invalid_lines(root, src.jsonl, lambda paths: _count_invalid(con, root, paths), _COUNT)


# Skipped lines per file. One scan of the files (a second one for torn tails held ~100 MB more on the 71,761 day
# files of a year of 200 chats): each file's complete lines are checked — not JSON, or no id, or no ts a TIMESTAMP
# takes (a CASE: an OR evaluates every side) — and the part after its last newline, when not empty, is a torn tail
# (one more skipped line). A file that holds only a torn tail keeps one NULL row so that it is counted. The text is
# also the rule the remembered counts were made by (recall/linecounts.py: another rule ignores them).
_COUNT = (
    "SELECT file, count(*) FILTER (WHERE CASE WHEN body IS NULL THEN false WHEN NOT json_valid(body) THEN true "
    "ELSE json_extract_string(body, 'id') IS NULL OR TRY_CAST(json_extract_string(body, 'ts') AS TIMESTAMP) IS NULL "
    "END) + max(torn::INTEGER) AS n FROM (\n"
    "SELECT file, parts[-1] <> '' AS torn, unnest(CASE WHEN len(parts) > 1"
    " THEN list_slice(parts, 1, len(parts) - 1) ELSE [NULL] END) AS body\n"
    "FROM ({parts}))\n"
    "GROUP BY file")


def _count_invalid(con: "duckdb.DuckDBPyConnection", root: Path, paths: list[str]) -> dict[str, int]:
    """relpath → torn or invalid lines, for every file of `paths` (0 included)."""
    _set_list(con, "el_count", paths)
    rows = con.execute(_COUNT.format(parts=file_parts_sql(root, "el_count"))).fetchall()
    return {f: int(n) for f, n in rows}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def explain_text(scope: Scope, src: Sources) -> str:
    """What `--explain` prints: the bound variables (file counts, bounds) and the view definitions."""
    lines = [f"-- {len(src.jsonl) + len(src.covered)} day file(s) in scope, each bound once: {len(src.jsonl)} JSONL "
             f"file(s) in el_jsonl, {len(src.covered)} read from {len(src.parquet)} Parquet unit(s) in el_parquet"]
    if src.excluded:
        lines.append(f"-- el_excluded: {len(src.excluded)} compacted file(s) changed since compaction, read from JSONL")
    if src.stale:
        lines.append("-- units with changed files (run `eventlog compact`): " + ", ".join(src.stale))
    if scope.chats:
        lines.append("-- el_chats = " + ", ".join(scope.chats))
    if scope.accounts:
        lines.append("-- el_accounts = " + ", ".join(scope.accounts))
    if scope.since:
        lines.append(f"-- el_since = {iso(scope.since)} (inclusive)")
    if scope.until:
        lines.append(f"-- el_until = {iso(scope.until)} (exclusive)")
    lines.extend(s + ";" for s in view_sql(scope, src).values())
    return "\n".join(lines) + "\n"


def _naive_utc(t: Any) -> Any:
    """DuckDB's TIMESTAMP is naive UTC (the session runs in UTC)."""
    from datetime import timezone

    return t.astimezone(timezone.utc).replace(tzinfo=None)


_TMP: list[str] = []


def _private_tmp() -> str:
    import atexit
    import shutil
    import tempfile

    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="eventlog-duckdb-"))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return _TMP[0]
