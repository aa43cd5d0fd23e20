"""DuckDB over the log: the `events`, `messages`, `dlp_alerts` and `dlp_reviews` views, read-only.

Why the views are built the way they are (measured on a 1 M-event, 73k-file log, see issue 4 and tools/bench/recall.py):
- DuckDB pays a fixed cost per JSONL file, so the file list is pruned (`--chat/--since/--until`) *before* DuckDB opens
  anything, and closed months are read from their verified Parquet compaction (eventlog/compact.py) instead.
- The JSONL half reads an explicit schema (no auto-detection surprises); a torn or invalid line becomes an all-NULL row
  (`ignore_errors`), which the view drops and `invalid_lines()` reports.
- Every user value (file lists, chats, bounds) reaches DuckDB as a bound parameter through `SET VARIABLE`, never by
  string formatting; user SQL runs only if every statement is a SELECT (or EXPLAIN of one), with file access limited to
  the log root and the configuration locked.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from .errors import EventlogError
from .layout import RAW
from .schema import CHANNEL_RE, CHAT_ID_RE

if TYPE_CHECKING:  # duckdb costs ~0.35 s to import: only commands that query pay it
    import duckdb

# The `events` schema: (column, DuckDB type as read from JSONL). JSON-typed columns keep nested objects verbatim.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("v", "INTEGER"), ("id", "VARCHAR"), ("ts", "TIMESTAMP"), ("event", "VARCHAR"), ("channel", "VARCHAR"),
    ("chat_id", "VARCHAR"), ("account", "VARCHAR"), ("direction", "VARCHAR"), ("update_type", "VARCHAR"),
    ("update_id", "BIGINT"), ("duplicate", "BOOLEAN"), ("message_id", "BIGINT"), ("from", "JSON"),
    ("text", "VARCHAR"), ("method", "VARCHAR"), ("payload", "JSON"), ("outcome", "JSON"), ("dlp", "JSON"),
    ("raw", "JSON"), ("prev", "VARCHAR"),
)
_YEAR = re.compile(r"\d{4}")
_MONTH = re.compile(r"\d\d")
DLP_FILES = {"dlp_alerts": "dlp/alerts.jsonl", "dlp_reviews": "dlp/reviews.jsonl"}
# The DLP streams' fields (docs/dlp.md), read with the same explicit-schema reader as the log.
_COMMON = (("v", "INTEGER"), ("id", "VARCHAR"), ("ts", "TIMESTAMP"), ("event", "VARCHAR"), ("channel", "VARCHAR"),
           ("chat_id", "VARCHAR"))
DLP_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "dlp_alerts": _COMMON + (
        ("account", "VARCHAR"), ("direction", "VARCHAR"), ("rule", "VARCHAR"), ("severity", "VARCHAR"),
        ("action", "VARCHAR"), ("fingerprint", "VARCHAR"), ("masked", "VARCHAR"), ("start", "BIGINT"),
        ("end", "BIGINT"), ("field", "VARCHAR"), ("method", "VARCHAR"), ("log_event", "VARCHAR"),
        ("message_id", "BIGINT"), ("source", "VARCHAR"), ("rules_version", "VARCHAR"), ("prev", "VARCHAR")),
    "dlp_reviews": _COMMON + (
        ("alert", "VARCHAR"), ("verdict", "VARCHAR"), ("note", "VARCHAR"), ("reviewer", "VARCHAR"),
        ("prev", "VARCHAR")),
}


class QueryError(EventlogError):
    """A query that is not allowed or does not run (bad SQL, a write, a missing parameter)."""


@dataclass(frozen=True)
class Scope:
    """Which part of the log a command looks at. `since`/`until` are inclusive UTC dates."""

    root: Path
    chats: tuple[str, ...] | None = None
    since: date | None = None
    until: date | None = None


@dataclass
class Sources:
    """The files a query reads: JSONL files not covered by a usable compaction, and Parquet files that are."""

    jsonl: list[str] = field(default_factory=list)  # absolute paths
    parquet: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # compaction units skipped because their sources changed
    covered: list[str] = field(default_factory=list)  # relpaths read from Parquet instead of JSONL
    dlp: dict[str, str] = field(default_factory=dict)  # view name → absolute path of an existing stream


def q(name: str) -> str:
    """Quote an identifier (column names like `from` are SQL keywords)."""
    return '"' + name.replace('"', '""') + '"'


def month_dirs(scope: Scope) -> Iterator[tuple[str, str, int, int]]:
    """(relpath, path, year, month) of every chat-month directory in scope, pruned by name like layout.log_files —
    one level coarser, so a compacted month can be vouched for by one stat of its directory instead of one per file.
    (Plain strings, not Path: this runs for every chat-month of the log on every query.)"""
    raw = os.path.join(str(scope.root), RAW)
    lo = (scope.since.year, scope.since.month) if scope.since else (0, 0)
    hi = (scope.until.year, scope.until.month) if scope.until else (9999, 12)
    for ch in _subdirs(raw, CHANNEL_RE):
        chats_dir = f"{raw}/{ch}/chats"
        chats = [c for c in scope.chats if CHAT_ID_RE.fullmatch(c)] if scope.chats else _subdirs(chats_dir,
                                                                                                 CHAT_ID_RE)
        for chat in chats:
            base = f"{chats_dir}/{chat}"
            for y in _subdirs(base, _YEAR):
                if not lo[0] <= int(y) <= hi[0]:
                    continue
                for m in _subdirs(f"{base}/{y}", _MONTH):
                    if lo <= (int(y), int(m)) <= hi:
                        yield f"{RAW}/{ch}/chats/{chat}/{y}/{m}", f"{base}/{y}/{m}", int(y), int(m)


def _subdirs(path: str, pattern: "re.Pattern[str]") -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if pattern.fullmatch(e.name) and e.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _day_files(path: str, rel: str, y: int, m: int, scope: Scope) -> dict[str, int]:
    """relpath → size of the day files in one chat-month directory within the scope's days."""
    out: dict[str, int] = {}
    try:
        entries = list(os.scandir(path))
    except FileNotFoundError:
        return out
    for e in entries:
        name = e.name
        if len(name) != 8 or not name.endswith(".jsonl") or not name[:2].isdigit():
            continue
        try:
            day = date(y, m, int(name[:2]))
        except ValueError:
            continue
        if (scope.since and day < scope.since) or (scope.until and day > scope.until):
            continue
        try:
            out[f"{rel}/{name}"] = e.stat().st_size
        except FileNotFoundError:
            continue
    return out


def _in_days(rel: str, scope: Scope) -> bool:
    if not scope.since and not scope.until:
        return True
    day = date(int(rel[-16:-12]), int(rel[-11:-9]), int(rel[-8:-6]))
    return not ((scope.since and day < scope.since) or (scope.until and day > scope.until))


def plan(scope: Scope) -> Sources:
    """Prune to the scope's day files, then swap in every compaction unit whose sources are unchanged.

    A chat-month directory whose mtime equals the one its unit recorded is taken as unchanged without listing it:
    every writer (Python and JS) creates and removes `<file>.lock` in that directory for each append
    (docs/log-format.md), so any append, new day file or torn-tail repair moves the directory's mtime. Other
    directories are listed and their files' sizes compared with the unit's record."""
    from .compact import usable_units  # compact imports this module's schema

    units = {u.name: u for u in usable_units(scope.root, scope.since, scope.until)}
    src = Sources()
    jsonl: list[str] = []
    stale: set[str] = set()
    unit_files: dict[str, list[str]] = {}
    seen_dirs: dict[str, set[str]] = {}
    for rel, path, y, m in month_dirs(scope):
        unit = units.get(f"{y:04d}-{m:02d}")
        if unit is None:
            jsonl.extend(_day_files(path, rel, y, m, scope))
            continue
        seen_dirs.setdefault(unit.name, set()).add(rel)
        files = unit.dir_files(rel)
        try:
            fresh = unit.dirs.get(rel) is not None and os.stat(path).st_mtime_ns == unit.dirs[rel]
        except FileNotFoundError:
            fresh = False
        if fresh:
            days_bound = scope.since or scope.until
            unit_files.setdefault(unit.name, []).extend([f for f in files if _in_days(f, scope)] if days_bound
                                                        else files)
            continue
        current = _day_files(path, rel, y, m, scope)
        for f, size in current.items():
            if f in unit.sources:
                if unit.sources[f] != size:
                    stale.add(unit.name)
                unit_files.setdefault(unit.name, []).append(f)
            else:  # a day file the unit never saw (e.g. a chat's first event in a compacted month): read beside it
                jsonl.append(f)
        if any(f not in current and _in_days(f, scope) for f in files):
            stale.add(unit.name)  # a compacted file disappeared
    for name, unit in units.items():
        # A compacted chat-month directory that vanished (in scope) also makes the unit unusable.
        gone = set(unit.dirs_all()) - seen_dirs.get(name, set())
        if any(unit.in_scope_dir(d, scope) for d in gone):
            stale.add(name)
        if name in stale:
            src.stale.append(name)
            jsonl.extend(unit_files.get(name, []))
        elif unit_files.get(name):
            src.parquet.append(str(unit.parquet))
            src.covered.extend(unit_files[name])
    src.jsonl = [str(scope.root / rel) for rel in sorted(jsonl)]
    src.covered.sort()
    for view, rel in DLP_FILES.items():
        if (scope.root / rel).is_file():
            src.dlp[view] = str(scope.root / rel)
    return src


def _bounds_where(scope: Scope, ts_expr: str) -> str:
    parts = []
    if scope.chats:
        parts.append("list_contains(getvariable('el_chats'), chat_id)")
    if scope.since:
        parts.append(f"{ts_expr} >= getvariable('el_since')")
    if scope.until:
        parts.append(f"{ts_expr} < getvariable('el_until')")
    return (" WHERE " + " AND ".join(parts)) if parts else ""


def _struct_json(columns: tuple[tuple[str, str], ...] = EVENT_COLUMNS) -> str:
    return "{" + ",".join(f'"{c}":"{t}"' for c, t in columns) + "}"


def _lines_sql(root: Path, var: str = "el_jsonl") -> str:
    """Every complete line of the JSONL files with its file and line number. read_text + split instead of read_json:
    measured 0.27 ms per file against 0.54 ms for read_json with explicit columns (the per-file cost dominates on a
    log of small day files). The part after the last newline (empty, or a torn tail) is not a line."""
    return (f"SELECT substr(filename, {len(str(root)) + 2}) AS file, unnest(range(1, len(parts))) AS line, "
            "unnest(list_slice(parts, 1, len(parts) - 1)) AS body FROM (SELECT filename, "
            f"string_split(content, chr(10)) AS parts FROM read_text(getvariable('{var}')))")


def view_sql(scope: Scope, src: Sources) -> dict[str, str]:
    """The CREATE VIEW statements (name → SQL), exactly as `--explain` prints them."""
    parts: list[str] = []
    if src.jsonl:
        unpack = ", ".join(f"e.{q(c)} AS {q(c)}" for c, _ in EVENT_COLUMNS)
        parts.append(
            f"SELECT {unpack}, file, line FROM (\n"
            f"  SELECT file, line, json_transform(body, '{_struct_json()}') AS e\n"
            f"  FROM ({_lines_sql(scope.root)}) WHERE json_valid(body))\n"
            "WHERE e.id IS NOT NULL AND e.ts IS NOT NULL" + _bounds_where(scope, "e.ts").replace(" WHERE ", " AND ")
        )
    if src.parquet:
        casts = ", ".join(
            f"CAST({q(c)} AS {t}) AS {q(c)}" if c in ("ts",) or t == "JSON" else q(c) for c, t in EVENT_COLUMNS
        )
        parts.append(f"SELECT {casts}, file, line FROM read_parquet(getvariable('el_parquet'))"
                     + _bounds_where(scope, "ts"))
    if not parts:
        parts.append("SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {q(c)}" for c, t in EVENT_COLUMNS)
                     + ", CAST(NULL AS VARCHAR) AS file, CAST(NULL AS INTEGER) AS line WHERE false")
    views = {"events": "CREATE VIEW events AS\n" + "\nUNION ALL\n".join(parts)}
    views["messages"] = (
        "CREATE VIEW messages AS\n"
        "SELECT ts, channel, chat_id, direction, event, message_id, update_type,\n"
        "  coalesce(\"from\"->>'username', \"from\"->>'name', \"from\"->>'id') AS sender,\n"
        "  CAST(\"from\"->>'id' AS BIGINT) AS sender_id, \"from\"->>'name' AS sender_name,\n"
        "  CAST(\"from\"->>'is_bot' AS BOOLEAN) AS is_bot, text, method,\n"
        "  CAST(outcome->>'ok' AS BOOLEAN) AS ok, dlp->>'action' AS dlp_action, duplicate, id, file, line\n"
        "FROM events WHERE event IN ('message:received', 'message:sent')"
    )
    for view, columns in DLP_COLUMNS.items():
        if view in src.dlp:
            unpack = ", ".join(f"e.{q(c)} AS {q(c)}" for c, _ in columns)
            views[view] = (f"CREATE VIEW {view} AS SELECT {unpack}, line FROM (SELECT line, json_transform(body, "
                           f"'{_struct_json(columns)}') AS e FROM ({_lines_sql(scope.root, 'el_' + view)}) "
                           "WHERE json_valid(body)) WHERE e.id IS NOT NULL")
        else:  # an absent stream is an empty view with the same columns, so queries still plan
            views[view] = (f"CREATE VIEW {view} AS SELECT "
                           + ", ".join(f"CAST(NULL AS {t}) AS {q(c)}" for c, t in columns)
                           + ", CAST(NULL AS BIGINT) AS line WHERE false")
    return views


def connect(scope: Scope, src: Sources | None = None) -> tuple["duckdb.DuckDBPyConnection", Sources]:
    """An in-memory DuckDB connection with the views defined over `scope`, locked down for untrusted SQL."""
    import duckdb

    src = src if src is not None else plan(scope)
    con = duckdb.connect(":memory:", config={"threads": max(1, os.cpu_count() or 1)})
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")  # DuckDB draws it on stdout, into the result
    variables: dict[str, Any] = {"el_jsonl": src.jsonl, "el_parquet": src.parquet}
    if scope.chats:
        variables["el_chats"] = list(scope.chats)
    if scope.since:
        variables["el_since"] = scope.since.isoformat()
    if scope.until:
        variables["el_until"] = (scope.until + timedelta(days=1)).isoformat()
    for view, path in src.dlp.items():
        variables["el_" + view] = path
    for name, value in variables.items():
        con.execute(f"SET VARIABLE {name} = $v", {"v": value})
    for stmt in view_sql(scope, src).values():
        con.execute(stmt)
    allowed = sorted({str(scope.root.resolve()) + "/", str(scope.root) + "/"})
    con.execute("SET allowed_directories = $d", {"d": allowed})
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con, src


@contextmanager
def duckdb_errors() -> Iterator[None]:
    """DuckDB raises while binding views, executing, and lazily while results are fetched: one clean error each."""
    import duckdb

    try:
        yield
    except duckdb.Error as exc:
        raise QueryError(_one_line(exc)) from None


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
    """(relpath, count) of torn or invalid JSONL lines in the query's files (the views skipped them; not fatal)."""
    if not src.jsonl:
        return []
    rows = con.execute(
        f"SELECT file, count(*) FROM (\n{_lines_sql(root)}\n"
        "UNION ALL SELECT substr(filename, " + str(len(str(root)) + 2) + "), 0, content[-1:] FROM "
        "read_text(getvariable('el_jsonl')) WHERE content <> '' AND content[-1:] <> chr(10))\n"
        "WHERE line = 0 OR NOT json_valid(body) OR body->>'id' IS NULL OR TRY_CAST(body->>'ts' AS TIMESTAMP) IS NULL\n"
        "GROUP BY ALL ORDER BY file"
    ).fetchall()
    return [(f, int(n)) for f, n in rows]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else exc.__class__.__name__


def explain_text(scope: Scope, src: Sources) -> str:
    """What `--explain` prints: the bound variables (file counts, bounds) and the view definitions."""
    lines = [f"-- {len(src.jsonl)} JSONL file(s) in el_jsonl, {len(src.parquet)} Parquet file(s) in el_parquet"]
    if src.stale:
        lines.append("-- stale compactions read from JSONL instead: " + ", ".join(src.stale))
    if scope.chats:
        lines.append("-- el_chats = " + ", ".join(scope.chats))
    if scope.since:
        lines.append(f"-- el_since = {scope.since.isoformat()} (inclusive)")
    if scope.until:
        lines.append(f"-- el_until = {(scope.until + timedelta(days=1)).isoformat()} (exclusive)")
    lines.extend(s + ";" for s in view_sql(scope, src).values())
    return "\n".join(lines) + "\n"


def scope_from(root: Path, chats: Iterable[str] | None, since: date | None, until: date | None) -> Scope:
    chats_t = tuple(chats) if chats else None
    if since and until and since > until:
        raise EventlogError(f"--since {since} is after --until {until}")
    return Scope(root=root, chats=chats_t, since=since, until=until)
