"""`eventlog export`: one chat (optionally a time range) to a file — jsonl (the log's own lines, verbatim), csv or
parquet (the `messages` view), md (a readable transcript). Written atomically, mode 0600 (output.atomic_output)."""
from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path
from typing import BinaryIO

import orjson

from ..errors import EventlogError
from ..store.layout import log_files
from ..store.schema import DEFAULT_ACCOUNT
from ..store import render
from . import views
from .planner import scope_from
from .when import iso, utc_days

FORMATS = ("jsonl", "csv", "parquet", "md")
_ORDER = "SELECT * EXCLUDE (file, line) FROM messages ORDER BY ts, id"
# md renders each message with the event renderer, so it reads the fields the renderer needs (`from`; `raw`, `media`,
# `method` and `payload` for the media marker) from the events view, with the messages view's filter and edit test.
_JSON_FIELDS = ("from", "raw", "media", "payload")
_MD = (f"SELECT ts, event, direction, text, method, {', '.join(views.q(c) for c in _JSON_FIELDS)}, "
       f"{views.IS_EDIT} AS is_edit FROM events WHERE event IN {render.MESSAGE_EVENTS!r} ORDER BY ts, id")


def export(root: Path, chat: str, since: datetime | None, until: datetime | None, fmt: str, out: BinaryIO,
           tz: tzinfo | None = None, accounts: tuple[str, ...] | None = None) -> int:
    """Write the chat's events (jsonl) or messages (csv, parquet, md) in [since, until) to `out`; returns the count.
    `accounts`: only those OpenClaw accounts' chat of that id (None: every account's)."""
    if fmt not in FORMATS:
        raise EventlogError(f"--format must be one of {', '.join(FORMATS)}")
    scope = scope_from(root, [chat], since, until, tz, accounts)
    if fmt == "jsonl":
        return _jsonl(root, chat, since, until, out, scope.accounts)
    from . import query
    from .output import local_ts, write_result

    with query.duckdb_errors():
        con, _ = query.connect(scope)
        if fmt in ("csv", "parquet"):
            return write_result(con.execute(_ORDER), fmt, out, tz=tz)
        cur = con.execute(_MD)
        names = [d[0] for d in cur.description]
        out.write(f"# Chat {chat}\n\n".encode())
        n = 0
        while rows := cur.fetchmany(4096):
            for r in rows:
                m = dict(zip(names, r, strict=True))
                ev = {**m, **{k: _json(m[k]) for k in _JSON_FIELDS}}
                text = render.body(ev).replace("\n", "  \n  ")
                who = render.who(ev)
                ts = local_ts(m["ts"], tz) if tz is not None else iso(_utc(m["ts"]))
                edit = " (edit)" if m["is_edit"] else ""
                out.write(f"- **{ts}** {who} ({m['direction'] or '-'}){edit}: {text}\n".encode())
                n += 1
        return n


def _json(v: str | None) -> object:
    return orjson.loads(v) if v is not None else None


def _utc(t: datetime) -> datetime:
    from datetime import timezone

    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def _jsonl(root: Path, chat: str, since: datetime | None, until: datetime | None, out: BinaryIO,
           accounts: tuple[str, ...] | None) -> int:
    from ..store.reader import iter_lines

    lo, hi = (iso(since) if since else None), (iso(until) if until else None)
    first, last = utc_days(since, until)
    n = 0
    # the default account's files may still hold other accounts' lines (not migrated yet): filtered by the field
    listed = None if accounts is None else [*accounts, DEFAULT_ACCOUNT]
    for lf in log_files(root, chat=[chat], since=first, until=last, accounts=listed):
        for _, line in iter_lines(lf.path, lf.relpath):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            ts = ev.get("ts") if isinstance(ev, dict) else None
            if not isinstance(ts, str) or (lo and ts < lo) or (hi and ts >= hi):
                continue
            if accounts is not None and ev.get("account", DEFAULT_ACCOUNT) not in accounts:
                continue
            out.write(line + b"\n")
            n += 1
    return n
