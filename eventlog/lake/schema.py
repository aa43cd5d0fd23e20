"""The lake's tables (schema `main` of the attached lake, docs/lake.md "Tables"), versioned by `meta.format`."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from .extensions import LakeError

if TYPE_CHECKING:
    import duckdb

FORMAT = "1"
# one row per log line of a shipped day file: `event` is the line exactly as stored (the chain recomputes from it)
LINES = (("gateway", "VARCHAR"), ("channel", "VARCHAR"), ("account", "VARCHAR"), ("chat", "VARCHAR"),
         ("file", "VARCHAR"), ("line", "INTEGER"), ("id", "VARCHAR"), ("prev", "VARCHAR"), ("ts", "VARCHAR"),
         ("hash", "VARCHAR"), ("event", "VARCHAR"))
# the shipped state of each day file (its seal, a digest of the bytes shipped, the stat that lets a push skip it),
# written in the same transaction as its lines
FILES = (("gateway", "VARCHAR"), ("file", "VARCHAR"), ("channel", "VARCHAR"), ("account", "VARCHAR"),
         ("chat", "VARCHAR"), ("lines", "BIGINT"), ("bytes", "BIGINT"), ("last", "VARCHAR"), ("digest", "VARCHAR"),
         ("size", "BIGINT"), ("mtime_ns", "BIGINT"), ("pushed_at", "VARCHAR"))
TABLES = {
    "meta": (("key", "VARCHAR"), ("value", "VARCHAR")),
    "gateways": (("gateway", "VARCHAR"), ("root_id", "VARCHAR"), ("host", "VARCHAR"), ("first_push", "VARCHAR")),
    "files": FILES,
    "lines": LINES,
    # the root's head (`eventlog head`) after each push that changed it: `lake verify --head` starts from it
    "heads": (("gateway", "VARCHAR"), ("head", "VARCHAR"), ("pushed_at", "VARCHAR"), ("files", "BIGINT"),
              ("lines", "BIGINT")),
}
LINE_COLUMNS = tuple(c for c, _ in LINES)
FILE_COLUMNS = tuple(c for c, _ in FILES)
_ARROW: dict[str, pa.DataType] = {"VARCHAR": pa.string(), "INTEGER": pa.int32(), "BIGINT": pa.int64()}
LINES_ARROW = pa.schema([(c, _ARROW[t]) for c, t in LINES])
FILES_ARROW = pa.schema([(c, _ARROW[t]) for c, t in FILES])


def _present(con: "duckdb.DuckDBPyConnection") -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' "
                                      "AND schema_name = 'main'").fetchall()}


def ensure(con: "duckdb.DuckDBPyConnection") -> None:
    """Create the tables in a new lake (one transaction; `lines` partitioned by gateway and chat, so erasing a chat
    drops whole data files: lake-notes §3), or check an existing lake's format."""
    have = _present(con)
    if not have:
        con.execute("BEGIN")
        for name, cols in TABLES.items():
            con.execute(f"CREATE TABLE lake.{name} (" + ", ".join(f"{c} {t}" for c, t in cols) + ")")
        con.execute("ALTER TABLE lake.lines SET PARTITIONED BY (gateway, chat)")
        con.execute("INSERT INTO lake.meta VALUES ('format', $f)", {"f": FORMAT})
        con.execute("COMMIT")
        return
    check(con, have)


def check(con: "duckdb.DuckDBPyConnection", have: set[str] | None = None) -> None:
    """A lake this version reads: every table there, `meta.format` = 1."""
    have = _present(con) if have is None else have
    if not have:
        raise LakeError("the lake is empty (nothing was pushed there yet)")
    missing = sorted(set(TABLES) - have)
    if missing:
        raise LakeError(f"not an eventlog lake (no table {', '.join(missing)}), or one damaged")
    row = con.execute("SELECT value FROM lake.meta WHERE key = 'format'").fetchone()
    if row is None or row[0] != FORMAT:
        raise LakeError(f"lake format {row[0] if row else None!r}: this eventlog reads format {FORMAT}")
