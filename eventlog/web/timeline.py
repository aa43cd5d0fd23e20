"""One chat's timeline, a page at a time, never the whole chat.

A page is the `limit` messages before (or after) a cursor `(ts, id)`. Only the day files that can hold it are bound:
walking back (or forward) from the cursor's UTC day, days are added until their lines — an upper bound of their
messages — reach limit + 1; if the query then finds fewer (edits and other events take lines too), twice as many
lines are wanted, and so on until the chat has no more days. The query is one `ORDER BY ts DESC, id DESC LIMIT` over
the `messages` view (eventlog/recall/views.py) of a read-only DuckDB connection over those files. So the first screen
of a 100,000-message chat reads the newest day files, not the chat.

Streamed replies and edits: an edit (`editMessageText` of the bot's own message, an inbound `edited_message`) is not
a row of its own; it is folded into the message it edits, whose shown text is then the last version's, with the
earlier ones as `versions`. Edits are looked up in the page's days and the day after its last (a streamed reply's
previews come within seconds; an edit a week later shows on the page of its own time only as a fold of a message
that is not there, so it is left out).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Callable

from ..errors import EventlogError
from ..recall.query import MEMORY_LIMIT, connect, duckdb_errors, scope_from
from ..store.layout import log_files

DEFAULT_LIMIT = 100
MAX_LIMIT = 500
_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
_COLUMNS = ("id", "ts", "channel", "account", "direction", "event", "message_id", "sender", "text", "media",
            "method", "ok", "dlp_action", "reply_to_message_id", "forward_from", "edited_ts", "source")


class BadCursor(EventlogError):
    """A `before=` / `after=` value that is not `<ts>~<id>`."""


@dataclass(frozen=True)
class Cursor:
    ts: datetime  # aware, UTC
    id: str

    def __str__(self) -> str:
        return self.ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z~" + self.id

    @classmethod
    def parse(cls, text: str) -> "Cursor":
        ts_text, sep, ident = text.rpartition("~")
        try:
            ts = datetime.fromisoformat(ts_text.replace("Z", "+00:00"))
        except ValueError:
            ts = None
        if not sep or ts is None or ts.tzinfo is None or not _ID.fullmatch(ident):
            raise BadCursor(f"not a timeline cursor: {text[:80]!r} (want <RFC 3339 ts>~<event id>)")
        return cls(ts.astimezone(timezone.utc), ident)


@dataclass
class Page:
    messages: list[dict[str, Any]]  # oldest first
    older: str | None  # cursor for the page before this one (None: this is the chat's start)
    newer: str | None  # cursor for the page after this one (None: this is the newest)
    files: int = 0  # day files the page's query bound (the bench checks it stays small)
    days: list[str] = field(default_factory=list)  # UTC days of those files


def _days_of(root: Path, chat_id: str, channel: str | None, account: str | None) -> list[tuple[date, int]]:
    """(UTC day, total bytes) of the chat's day files, across the accounts/channels asked for, sorted by day."""
    sizes: dict[date, int] = {}
    for lf in log_files(root, chat_id, channel=channel, accounts=[account] if account else None):
        try:
            sizes[lf.day] = sizes.get(lf.day, 0) + lf.path.stat().st_size
        except FileNotFoundError:
            continue
    return sorted(sizes.items())


def _lines(root: Path, chat_id: str, day: date, channel: str | None, account: str | None) -> int:
    n = 0
    for lf in log_files(root, chat_id, day, day, channel=channel, accounts=[account] if account else None):
        try:
            with open(lf.path, "rb") as f:
                n += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        except FileNotFoundError:
            continue
    return n


def _utc_start(d: date) -> datetime:
    return datetime.combine(d, time(), timezone.utc)


def _naive(t: datetime) -> datetime:
    return t.astimezone(timezone.utc).replace(tzinfo=None)


def _query(root: Path, chat_id: str, channel: str | None, account: str | None, first: date, last: date,
           cursor: Cursor | None, backwards: bool, limit: int, tz: tzinfo) -> tuple[list[dict[str, Any]],
                                                                                list[dict[str, Any]], int]:
    """(base messages in page order, edits of them, files bound) over the UTC days [first, last]. One SELECT: the
    scope's messages are read once (a MATERIALIZED CTE: reading JSONL dominates), then the page and its edits come
    from that; only the `events` and `messages` views are bound (binding all of them costs more than the page)."""
    scope = scope_from(root, [chat_id], _utc_start(first), _utc_start(last + timedelta(days=1)), tz,
                       [account] if account else None)
    con, src = connect(scope, memory_limit=MEMORY_LIMIT, views=("events", "messages"))
    try:
        with duckdb_errors():
            where = ["NOT is_edit"]
            params: dict[str, Any] = {"n": limit + 1}
            keep = "NOT coalesce(duplicate, false)"
            if channel:
                keep += " AND channel = $channel"
                params["channel"] = channel
            if cursor is not None:
                op = "<" if backwards else ">"
                where.append(f"(ts {op} $cts OR (ts = $cts AND id {op} $cid))")
                params.update(cts=_naive(cursor.ts), cid=cursor.id)
            order = "DESC" if backwards else "ASC"
            cols = ", ".join(_COLUMNS)
            cur = con.execute(
                f"WITH p AS MATERIALIZED (SELECT {cols}, is_edit, edits_message_id FROM messages WHERE {keep}),\n"
                f"  base AS (SELECT * FROM p WHERE {' AND '.join(where)} ORDER BY ts {order}, id {order} LIMIT $n)\n"
                f"SELECT * FROM base\n"
                "UNION ALL\n"
                "SELECT * FROM p WHERE is_edit AND edits_message_id IN (SELECT message_id FROM base)", params)
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()
    key = lambda m: (m["ts"], m["id"])  # noqa: E731
    base = sorted((m for m in rows if not m["is_edit"]), key=key, reverse=backwards)
    edits = sorted((m for m in rows if m["is_edit"]), key=key)
    return base, edits, len(src.jsonl) + len(src.covered)


def _aware(t: Any) -> datetime | None:
    return t.replace(tzinfo=timezone.utc) if isinstance(t, datetime) else None


def _iso(t: datetime | None) -> str | None:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" if t is not None else None


def _shape(m: dict[str, Any], edits: list[dict[str, Any]], tz: tzinfo, redact: Callable[[Any], Any]
           ) -> dict[str, Any]:
    ts = _aware(m["ts"])
    assert ts is not None  # the views drop rows without a ts
    local = ts.astimezone(tz)
    texts = [m["text"]] + [e["text"] for e in edits]
    final = next((t for t in reversed(texts) if t is not None), None)
    earlier = [{"ts": _iso(_aware(x["ts"])), "text": redact(x["text"])}
               for x in ([m] + edits)[:-1] if x["text"] is not None] if edits else []
    return {
        "id": m["id"], "ts": _iso(ts), "local_ts": local.isoformat(timespec="seconds"),
        "day": local.date().isoformat(), "time": local.strftime("%H:%M:%S"),
        "channel": m["channel"], "account": m["account"], "direction": m["direction"], "event": m["event"],
        "message_id": m["message_id"], "sender": redact(m["sender"]), "text": redact(final),
        "media": m["media"] or next((e["media"] for e in reversed(edits) if e["media"]), None),
        "reply_to_message_id": m["reply_to_message_id"], "forward_from": redact(m["forward_from"]),
        "edited": bool(edits) or m["edited_ts"] is not None, "imported": m["source"] is not None,
        "source": m["source"], "ok": m["ok"], "dlp_action": m["dlp_action"], "method": m["method"],
        "versions": earlier,
    }


def page(root: Path, chat_id: str, *, redact: Callable[[Any], Any], account: str | None = None,
         channel: str | None = None, before: str | None = None, after: str | None = None,
         limit: int = DEFAULT_LIMIT, tz: tzinfo = timezone.utc) -> Page:
    """The `limit` messages of one chat before the cursor `before` (or after `after`; neither: the newest), oldest
    first, in `tz`'s days, every text passed through `redact` (web.redact.Redactor(root).text; required, so no
    caller gets the log's plaintext by forgetting it)."""
    if before and after:
        raise BadCursor("give before= or after=, not both")
    limit = max(1, min(int(limit), MAX_LIMIT))
    given = before or after
    cursor = Cursor.parse(given) if given else None
    backwards = after is None
    scope_from(root, [chat_id], None, None, tz, [account] if account else None)  # validates the chat id and account
    all_days = _days_of(root, chat_id, channel, account)
    if cursor is not None:
        cday = cursor.ts.date()
        all_days = [d for d in all_days if (d[0] <= cday if backwards else d[0] >= cday)]
    order = list(reversed(all_days)) if backwards else all_days
    want, taken, lines = limit + 1, 0, 0
    base: list[dict[str, Any]] = []
    edits: list[dict[str, Any]] = []
    files = 0
    chosen: list[date] = []
    while taken < len(order):
        while taken < len(order) and lines < want:
            lines += _lines(root, chat_id, order[taken][0], channel, account)
            taken += 1
        chosen = sorted(d for d, _ in order[:taken])
        # the edits of the page's last messages may be in the day after (a reply streamed across midnight)
        last = chosen[-1] + timedelta(days=1)
        base, edits, files = _query(root, chat_id, channel, account, chosen[0], last, cursor, backwards, limit, tz)
        if len(base) > limit or taken >= len(order):
            break
        want *= 2
    more = len(base) > limit
    base = base[:limit]
    if backwards:
        base.reverse()
    folded: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for e in edits:
        folded.setdefault((e["channel"], e["account"], int(e["edits_message_id"])), []).append(e)
    msgs = []
    for m in base:
        key = (m["channel"], m["account"], int(m["message_id"])) if m["message_id"] is not None else None
        mine = [e for e in folded.get(key, []) if e["ts"] >= m["ts"]] if key else []
        msgs.append(_shape(m, mine, tz, redact))
    first_c = str(Cursor(_aware(base[0]["ts"]), base[0]["id"])) if base else None  # type: ignore[arg-type]
    last_c = str(Cursor(_aware(base[-1]["ts"]), base[-1]["id"])) if base else None  # type: ignore[arg-type]
    if backwards:
        older = first_c if more else None
        newer = last_c if cursor is not None else None
    else:
        older = first_c if base else str(cursor)
        newer = last_c if more else None
    return Page(msgs, older, newer, files, [d.isoformat() for d in chosen])
