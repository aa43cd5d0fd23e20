"""Make a committed DELETE in the lake an erasure: no data file, inlined row, old snapshot, column statistic or free
catalog page keeps the deleted text (issue 28; each step below is one of docs/lake.md's measured leaks).

    scrub(con, lake="lake", content_tables=("lines",)) -> counts

`con` has the lake attached as `lake` (eventlog/lake/catalog.py) and the DELETE already committed; the caller holds
the push lock. The steps, in order, and what each one removes:

1. `ducklake_flush_inlined_data`: rows a small insert left in the catalog instead of Parquet (an attach with
   DATA_INLINING_ROW_LIMIT 0 makes none, but an older attach or another client may have): a DELETE only marks an
   inlined row ended, its text stays in the catalog.
2. `ducklake_rewrite_data_files(delete_threshold => 0)`: a DELETE writes a delete file beside the data file, which
   keeps the text and stays referenced. Every file with a deleted row is rewritten without it (a file whose rows are
   all deleted is simply dropped: partitioning by gateway and chat makes a chat's erasure cheap).
3. `ducklake_expire_snapshots(older_than => now())`: the old snapshots still reference the old files and rows. Time
   travel ends for the whole lake, every gateway (snapshots are lake-wide).
4. `ducklake_cleanup_old_files(cleanup_all)` and `ducklake_delete_orphaned_files(cleanup_all)`: the expired files
   are removed from DATA; then empty partition directories (whose names are chat ids) from a local DATA.
5. Table statistics: the catalog keeps a table-wide min/max of each column as full strings, recomputed only when
   a file is rewritten, so an erased string can stay the table's min or max. They are set to the live data's exact
   min/max — not NULL: the next insert would narrow NULL to its one file's range, and pruning would then lose rows.
6. VACUUM: deleted catalog rows stay as bytes in free pages (SQLite) or dead tuples (PostgreSQL). SQLite: DETACH,
   VACUUM the file, attach again with the same options. PostgreSQL: VACUUM FULL of each catalog table (a plain VACUUM
   leaves a dead tuple's bytes in the page until reused); its write-ahead log and backups are out of our reach.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

if TYPE_CHECKING:
    import duckdb

STAT_TYPES = ("varchar", "blob")  # the columns whose statistics are text (numbers and times leak no message)
STAT_ROUNDS = 5  # a push of another gateway committing between the read and the write: read and write again


def scrub(con: "duckdb.DuckDBPyConnection", lake: str = "lake", content_tables: Sequence[str] = ("lines",),
          exclusive: Callable[[], ContextManager[None]] | None = None) -> dict[str, int]:
    """Steps 1-6 above; counts of what each did: flushed rows, rewritten files, expired snapshots, removed files and
    directories, reset statistics, vacuumed catalog tables. `exclusive` (the push's LakeLock.exclusive) is held
    around the statistics reset, so no push's transaction spans it."""
    _name(lake)
    _catalog(con, lake)  # a lake attached under that name, or ValueError
    counts: dict[str, int] = {}
    for step in STEPS:
        if step is stats and exclusive is not None:
            with exclusive():
                counts.update(step(con, lake, content_tables))
        else:
            counts.update(step(con, lake, content_tables))
    return counts


def pending(con: "duckdb.DuckDBPyConnection", lake: str = "lake") -> bool:
    """Whether the lake still holds rows a DELETE ended: a delete file, an ended data file, or a file scheduled for
    deletion. A push killed between its DELETE's commit and the scrub leaves this state, and the push's own count
    of deleted lines is zero next time, so the next push asks the catalog instead."""
    _name(lake)
    meta = f"__ducklake_metadata_{lake}"
    return bool(_sum(con, f"SELECT (SELECT count(*) FROM {meta}.ducklake_delete_file) "
                          f"+ (SELECT count(*) FROM {meta}.ducklake_data_file WHERE end_snapshot IS NOT NULL) "
                          f"+ (SELECT count(*) FROM {meta}.ducklake_files_scheduled_for_deletion)"))


def flush(con: "duckdb.DuckDBPyConnection", lake: str, _tables: Sequence[str]) -> dict[str, int]:
    return {"flushed_rows": _sum(con, f"SELECT sum(rows_flushed) FROM ducklake_flush_inlined_data('{lake}')")}


def rewrite(con: "duckdb.DuckDBPyConnection", lake: str, _tables: Sequence[str]) -> dict[str, int]:
    return {"rewritten_files": _sum(con, "SELECT sum(files_processed) FROM "
                                         f"ducklake_rewrite_data_files('{lake}', delete_threshold => 0)")}


def expire(con: "duckdb.DuckDBPyConnection", lake: str, _tables: Sequence[str]) -> dict[str, int]:
    return {"expired_snapshots": _sum(con, "SELECT count(*) FROM "
                                           f"ducklake_expire_snapshots('{lake}', older_than => now())")}


def cleanup(con: "duckdb.DuckDBPyConnection", lake: str, _tables: Sequence[str]) -> dict[str, int]:
    files = (_sum(con, f"SELECT count(*) FROM ducklake_cleanup_old_files('{lake}', cleanup_all => true)")
             + _sum(con, f"SELECT count(*) FROM ducklake_delete_orphaned_files('{lake}', cleanup_all => true)"))
    return {"removed_files": files, "removed_dirs": _remove_empty_dirs(con, f"__ducklake_metadata_{lake}")}


def stats(con: "duckdb.DuckDBPyConnection", lake: str, tables: Sequence[str]) -> dict[str, int]:
    return {"reset_stats": reset_stats(con, lake, tables)}


def vacuum(con: "duckdb.DuckDBPyConnection", lake: str, _tables: Sequence[str]) -> dict[str, int]:
    kind, target = _catalog(con, lake)
    return {"vacuumed_tables": _vacuum(con, lake, kind, target)}


def reset_stats(con: "duckdb.DuckDBPyConnection", lake: str, content_tables: Sequence[str]) -> int:
    """Set each text column's table-wide min/max of `content_tables` to its live data's exact min/max (step 5); how
    many columns. An empty table gets '' for both: a bound of every string that holds no text."""
    meta = f"__ducklake_metadata_{lake}"
    n = 0
    for table in content_tables:
        _name(table)
        for _ in range(STAT_ROUNDS):
            before = _snapshot(con, lake)
            row = con.execute(f"SELECT table_id FROM {meta}.ducklake_table WHERE table_name = ? AND end_snapshot IS NULL",
                              [table]).fetchone()
            if row is None:
                break
            cols = con.execute(f"SELECT column_id, column_name FROM {meta}.ducklake_column WHERE table_id = ? AND "
                               "end_snapshot IS NULL AND parent_column IS NULL AND lower(column_type) IN "
                               f"({', '.join('?' * len(STAT_TYPES))})", [row[0], *STAT_TYPES]).fetchall()
            if not cols:
                break
            for c in cols:
                _name(c[1])
            exprs = ", ".join(f'min("{c}"), max("{c}")' for _, c in cols)
            live = con.execute(f'SELECT {exprs} FROM {lake}.main."{table}"').fetchone() or ()
            con.execute("BEGIN")
            try:
                for i, (cid, _) in enumerate(cols):
                    lo, hi = live[2 * i], live[2 * i + 1]
                    con.execute(f"UPDATE {meta}.ducklake_table_column_stats SET min_value = ?, max_value = ? "
                                "WHERE table_id = ? AND column_id = ?",
                                ["" if lo is None else _text(lo), "" if hi is None else _text(hi), row[0], cid])
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):  # after a failed COMMIT there is no transaction left
                    con.execute("ROLLBACK")
                raise
            if _snapshot(con, lake) == before:  # nothing committed in between: the bounds cover every live row
                n += len(cols)
                break
    return n


def _vacuum(con: "duckdb.DuckDBPyConnection", lake: str, kind: str, target: str) -> int:
    if kind == "sqlite":
        options = _attach_options(con, lake)
        con.execute(f"DETACH {lake}")
        try:
            db = sqlite3.connect(target, timeout=60, isolation_level=None)
            try:
                tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
                db.execute("VACUUM")
            finally:
                db.close()
        finally:
            con.execute(f"ATTACH '{_lit('ducklake:sqlite:' + target)}' AS {lake} ({options})")
        return int(tables)
    meta = f"__ducklake_metadata_{lake}"
    tables = [r[0] for r in con.execute(
        f"SELECT * FROM postgres_query('{meta}', 'SELECT quote_ident(schemaname) || ''.'' || quote_ident(tablename) "
        "FROM pg_tables WHERE schemaname = current_schema()')").fetchall()]
    for t in tables:
        con.execute(f"CALL postgres_execute('{meta}', 'VACUUM FULL {_lit(t)}', use_transaction => false)")
    return len(tables)


def _catalog(con: "duckdb.DuckDBPyConnection", lake: str) -> tuple[str, str]:
    """("sqlite", file) or ("postgres", libpq string) of the attached lake."""
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = ? AND type = 'ducklake'",
                      [lake]).fetchone()
    if row is None:
        raise ValueError(f"no DuckLake attached as {lake}")
    kind, _, target = str(row[0]).removeprefix("ducklake:").partition(":")
    return kind, target


def _attach_options(con: "duckdb.DuckDBPyConnection", lake: str) -> str:
    """The options to attach the lake again as it was: its data path, no inlining (eventlog/lake/catalog.py)."""
    data = con.execute(f"SELECT value FROM __ducklake_metadata_{lake}.ducklake_metadata WHERE key = 'data_path' "
                       "AND scope IS NULL").fetchone()
    return (f"DATA_PATH '{_lit(data[0])}', " if data else "") + "DATA_INLINING_ROW_LIMIT 0"


def _remove_empty_dirs(con: "duckdb.DuckDBPyConnection", meta: str) -> int:
    """Empty directories under a local DATA path, deepest first (partition directories are named after chat ids)."""
    row = con.execute(f"SELECT value FROM {meta}.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL").fetchone()
    if row is None or "://" in row[0] or not Path(row[0]).is_dir():
        return 0
    top = Path(row[0])
    n = 0
    for d, subdirs, files in os.walk(top, topdown=False):
        if Path(d) != top and not files and not any((Path(d) / s).exists() for s in subdirs):
            try:
                os.rmdir(d)
                n += 1
            except OSError:  # a concurrent push wrote a file there
                pass
    return n


def _snapshot(con: "duckdb.DuckDBPyConnection", lake: str) -> int:
    return _sum(con, f"SELECT max(snapshot_id) FROM __ducklake_metadata_{lake}.ducklake_snapshot")


def _sum(con: "duckdb.DuckDBPyConnection", sql: str) -> int:
    # fetchall, not fetchone: the maintenance functions write, and a result left unread is a statement (and its
    # autocommit) not finished — the next statement drops it, and the flush or rewrite is silently lost (measured)
    rows = con.execute(sql).fetchall()
    return int(rows[0][0] or 0) if rows else 0


def _text(v: object) -> str:
    return v.decode("latin-1") if isinstance(v, bytes) else str(v)


STEPS = (flush, rewrite, expire, cleanup, stats, vacuum)  # the order matters: each needs the one before


def _name(s: str) -> None:
    """Identifiers go into SQL text (DuckDB binds no names): only plain ones."""
    if not s.replace("_", "").isalnum() or not s.isascii():
        raise ValueError(f"not a plain identifier: {s!r}")


def _lit(s: str) -> str:
    return s.replace("'", "''")
