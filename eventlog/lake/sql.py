"""`eventlog lake sql`: the views of `eventlog sql` over the lake's lines, each row with its gateway.

The `events` view parses each shipped line (`lines.event`, the line as stored) with recall's own column list and
erased-text rule; messages, edits, replies and chats are recall's views keyed by gateway as well (recall/views.py,
derived_views), so a chat id two gateways share stays two chats. The lake is attached READ_ONLY and the connection is
locked down as `eventlog sql`'s: external access off but for the lake's data path, configuration locked.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..recall.views import derived_views, event_columns_sql, events_struct
from . import schema
from .catalog import Catalog, attach

if TYPE_CHECKING:
    import duckdb

VIEWS = ("events", "messages", "edits", "replies", "chats")


def view_sql() -> dict[str, str]:
    """The CREATE VIEW statements over `lake.lines` (name → SQL)."""
    events = (
        "CREATE VIEW events AS\n"
        f"SELECT gateway, {event_columns_sql()}, file, line FROM (\n"
        f"  SELECT gateway, file, line, event AS body, json_transform(event, '{events_struct()}') AS e\n"
        "  FROM lake.lines WHERE json_valid(event))\n"
        "WHERE e.id IS NOT NULL AND e.ts IS NOT NULL")
    return {"events": events, **derived_views(gateway=True)}


def connect(catalog: Catalog, data: str) -> "duckdb.DuckDBPyConnection":
    """A connection with the lake attached read-only and the views defined, ready for user SQL."""
    con = attach(catalog, data, read_only=True)
    try:
        schema.check(con)
        con.execute("SET TimeZone = 'UTC'")
        for stmt in view_sql().values():
            con.execute(stmt)
        if not data.startswith("s3://"):
            con.execute("SET allowed_directories = $d", {"d": [data]})
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con
