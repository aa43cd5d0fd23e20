"""The SQL views over the log (`events`, `messages`, `dlp_alerts`, `dlp_reviews`), exactly as `--explain` prints them.

- The JSONL half reads an explicit schema (no auto-detection surprises); a torn or invalid line becomes an all-NULL row,
  which the view drops and `query.invalid_lines()` reports.
- The Parquet half reads the units the planner bound, minus the rows of files it excluded (changed since compaction).
- Bounds are exact UTC instants applied to every event's ts; values reach DuckDB as variables, never as SQL text.
"""
from __future__ import annotations

from pathlib import Path

from .planner import Scope, Sources
from ..store import render

# The `events` schema: (column, DuckDB type as read from JSONL). JSON-typed columns keep nested objects verbatim.
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("v", "INTEGER"), ("id", "VARCHAR"), ("ts", "TIMESTAMP"), ("event", "VARCHAR"), ("channel", "VARCHAR"),
    ("chat_id", "VARCHAR"), ("account", "VARCHAR"), ("direction", "VARCHAR"), ("update_type", "VARCHAR"),
    ("update_id", "BIGINT"), ("duplicate", "BOOLEAN"), ("message_id", "BIGINT"), ("from", "JSON"),
    ("text", "VARCHAR"), ("method", "VARCHAR"), ("payload", "JSON"), ("outcome", "JSON"), ("dlp", "JSON"),
    ("raw", "JSON"), ("prev", "VARCHAR"),
)
# Top-level fields of imported history (docs/import.md, "Fields"): read from JSONL like the others, and from the
# Parquet `extra` column (compaction keeps fields outside EVENT_COLUMNS there).
HISTORY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source", "VARCHAR"), ("chat_type", "VARCHAR"), ("reply_to_message_id", "BIGINT"), ("edited_ts", "TIMESTAMP"),
    ("media", "JSON"), ("forward", "JSON"), ("title", "JSON"), ("action", "VARCHAR"),
)
# The DLP streams' fields (docs/dlp.md), read with the same explicit-schema reader as the log.
_COMMON = (("v", "INTEGER"), ("id", "VARCHAR"), ("ts", "TIMESTAMP"), ("event", "VARCHAR"), ("channel", "VARCHAR"),
           ("chat_id", "VARCHAR"))
DLP_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "dlp_alerts": _COMMON + (
        ("account", "VARCHAR"), ("direction", "VARCHAR"), ("rule", "VARCHAR"), ("severity", "VARCHAR"),
        ("action", "VARCHAR"), ("fingerprint", "VARCHAR"), ("masked", "VARCHAR"), ("start", "BIGINT"),
        ("end", "BIGINT"), ("field", "VARCHAR"), ("method", "VARCHAR"), ("log_event", "VARCHAR"),
        ("message_id", "BIGINT"), ("source", "VARCHAR"), ("rules_version", "VARCHAR"), ("payload", "JSON"),
        ("prev", "VARCHAR")),
    "dlp_reviews": _COMMON + (
        ("alert", "VARCHAR"), ("verdict", "VARCHAR"), ("note", "VARCHAR"), ("reviewer", "VARCHAR"),
        ("prev", "VARCHAR")),
}


def q(name: str) -> str:
    """Quote an identifier (column names like `from` are SQL keywords)."""
    return '"' + name.replace('"', '""') + '"'


def _bounds_where(scope: Scope, ts_expr: str, suffix: str = "") -> str:
    """`suffix` "_s": compare the Parquet's ts text with the bounds as the log writes ts (string order is time
    order for the normalised form), so DuckDB can prune row groups by their statistics."""
    parts = []
    if scope.chats:
        parts.append("list_contains(getvariable('el_chats'), chat_id)")
    if scope.accounts:
        parts.append("list_contains(getvariable('el_accounts'), coalesce(account, 'default'))")
    if scope.since:
        parts.append(f"{ts_expr} >= getvariable('el_since{suffix}')")
    if scope.until:
        parts.append(f"{ts_expr} < getvariable('el_until{suffix}')")
    return (" WHERE " + " AND ".join(parts)) if parts else ""


def _struct_json(columns: tuple[tuple[str, str], ...] = EVENT_COLUMNS) -> str:
    return "{" + ",".join(f'"{c}":"{t}"' for c, t in columns) + "}"


def _extra(c: str, t: str) -> str:
    """A history column of the Parquet half, from `extra`."""
    if t == "JSON":
        return f"json_extract(extra, '$.{c}') AS {q(c)}"
    return f"TRY_CAST(json_extract_string(extra, '$.{c}') AS {t}) AS {q(c)}"


def file_parts_sql(root: Path, var: str = "el_jsonl") -> str:
    """Each JSONL file of `var` as (file: its relpath, parts: its content split at newlines). The last part (empty, or
    a torn tail) is not a line. read_text + split instead of read_json: measured 0.27 ms per file against 0.54 ms for
    read_json with explicit columns (the per-file cost dominates on a log of small day files)."""
    return (f"SELECT substr(filename, {len(str(root)) + 2}) AS file, string_split(content, chr(10)) AS parts "
            f"FROM read_text(getvariable('{var}'))")


def _lines_sql(root: Path, var: str = "el_jsonl") -> str:
    """Every complete line of the JSONL files with its file and line number."""
    return ("SELECT file, unnest(range(1, len(parts))) AS line, unnest(list_slice(parts, 1, len(parts) - 1)) AS body "
            f"FROM ({file_parts_sql(root, var)})")


# The message a message replies to: inbound from the update (`reply_to_message`), outbound from the payload
# (`reply_to_message_id`, or Bot API 7's `reply_parameters`), imported from the top-level field. An erased
# `raw`/`payload` ({"c": …}) yields NULL.
_REPLY_TO = ("coalesce(TRY_CAST(json_extract_string(raw, '$.message.reply_to_message.message_id') AS BIGINT), "
             "TRY_CAST(json_extract_string(raw, '$.edited_message.reply_to_message.message_id') AS BIGINT), "
             "TRY_CAST(json_extract_string(payload, 'reply_to_message_id') AS BIGINT), "
             "TRY_CAST(json_extract_string(payload, '$.reply_parameters.message_id') AS BIGINT), reply_to_message_id)")
IS_EDIT = ("coalesce(update_type IN ('edited_message', 'edited_channel_post') "
            "OR method IN ('editMessageText', 'editMessageCaption'), false)")
# The Telegram chat object of an inbound update, whichever kind of update it is.
_CHAT_OBJ = ("coalesce(raw->'message'->'chat', raw->'edited_message'->'chat', raw->'channel_post'->'chat', "
             "raw->'edited_channel_post'->'chat', raw->'callback_query'->'message'->'chat', "
             "raw->'my_chat_member'->'chat', raw->'message_reaction'->'chat')")
# Telegram Desktop's chat types (importers/telegram_desktop.py) → the Bot API's.
_CHAT_TYPES = {"bot_chat": "private", "personal_chat": "private", "private_group": "group",
               "private_supergroup": "supergroup", "public_supergroup": "supergroup",
               "private_channel": "channel", "public_channel": "channel"}
# Service records of an import that name the chat's title (a topic's title is not the chat's).
_TITLE_ACTIONS = ("create_group", "edit_group_title", "create_channel")
_MSG = "msg"  # the inbound message object (render.MESSAGE_SQL), one column of the messages view's inner row
_FROM = '"from"'
# Who sent an outbound message, as the tap records it from Telegram's reply (the sent message's `from`: the bot).
_BOT = "(CASE WHEN direction = 'out' THEN outcome->'from' END)"


def _str(expr: str) -> str:
    """A JSON string value as text; NULL for anything else (an erased field's {"c": …}, a number, an object)."""
    return f"CASE WHEN json_type({expr}) = 'VARCHAR' THEN nullif(json_extract_string({expr}, '$'), '') END"


def _user_name(user: str) -> str:
    """A Bot API User's display name, as the tap writes `from.name`: first and last name."""
    return f"nullif(trim(concat_ws(' ', json_extract_string({user}, 'first_name'), json_extract_string({user}, 'last_name'))), '')"


def _text(obj: str, key: str) -> str:
    """`obj->>'key'`, spelled as the function: DuckDB 1.5 parses `->>` looser than AND/OR/NOT (`a OR j->>'k' IS NULL`
    is `(a OR j) ->> …`), so no view uses the operator (tests/test_recall_views.py checks)."""
    return f"json_extract_string({obj}, '{key}')"


def _get(obj: str, *keys: str) -> str:
    """`obj->'k1'->'k2'…`: a JSON path step by step."""
    return obj + "".join(f"->'{k}'" for k in keys)


# Who forwarded content came from: an import's `forward.from` (a name, as exported), else the inbound message's
# `forward_origin` (Bot API 7) or the older `forward_from` / `forward_sender_name` / `forward_from_chat`.
_FORWARD_FROM = ("coalesce(" + ", ".join((
    _str(_get("forward", "from")), _str(_get("forward", "saved_from")),
    _user_name(_get(_MSG, "forward_origin", "sender_user")), _text(_get(_MSG, "forward_origin"), "sender_user_name"),
    _text(_get(_MSG, "forward_origin", "sender_chat"), "title"), _text(_get(_MSG, "forward_origin", "chat"), "title"),
    _user_name(_get(_MSG, "forward_from")), _text(_MSG, "forward_sender_name"),
    _text(_get(_MSG, "forward_from_chat"), "title"))) + ")")


# The outbound calls whose versions make up one reply: a send, and the edits of the message it sent.
_REPLY_METHODS = tuple(["sendMessage", "editMessageText", "editMessageCaption"] + sorted(render.SEND_MEDIA))


def _messages(g: str = "") -> str:
    """The `messages` view: each message event's fields, live and imported alike (docs/recall.md). Row-local on purpose:
    a window or a join over the scope to resolve people would hold every selected column of every row in memory, or
    scan the scope twice, for every query. `g`: "gateway, " in the lake (eventlog/lake/sql.py), else empty."""
    own = (
        f"SELECT {g}ts, channel, chat_id, coalesce(account, 'default') AS account, direction, event, message_id,\n"
        f"    update_type, TRY_CAST({_text(_FROM, 'id')} AS BIGINT) AS from_id, {_str(_get(_FROM, 'name'))} AS from_name,\n"
        f"    {_str(_get(_FROM, 'username'))} AS from_username, TRY_CAST({_text(_FROM, 'is_bot')} AS BOOLEAN) AS from_is_bot,\n"
        f"    TRY_CAST({_text(_BOT, 'id')} AS BIGINT) AS bot_id, {_str(_get(_BOT, 'name'))} AS bot_name,\n"
        f"    {_str(_get(_BOT, 'username'))} AS bot_username,\n"
        f"    text, media_type, {render.media_marker_sql('media_type', _MSG)} AS media, method,\n"
        "    CAST(json_extract_string(outcome, 'ok') AS BOOLEAN) AS ok, json_extract_string(dlp, 'action') AS dlp_action,"
        " duplicate,\n"
        f"    {_REPLY_TO} AS reply_to_message_id, {_FORWARD_FROM} AS forward_from,\n"
        f"    {IS_EDIT} AS is_edit,\n"
        f"    CASE WHEN {IS_EDIT} THEN coalesce(TRY_CAST(json_extract_string(payload, 'message_id') AS BIGINT), message_id) END"
        " AS edits_message_id,\n"
        f"    CASE WHEN {IS_EDIT} THEN ts ELSE edited_ts END AS edited_ts, source, id, file, line\n"
        f"  FROM (SELECT *, {render.media_type_sql(_MSG)} AS media_type FROM (SELECT *, {render.MESSAGE_SQL} AS {_MSG} FROM events\n"
        f"    WHERE event IN {render.MESSAGE_EVENTS!r}))")
    sender = (
        "SELECT *, coalesce(from_id, bot_id) AS sender_id, coalesce(from_name, bot_name) AS sender_name,\n"
        "    coalesce(from_username, bot_username) AS sender_username, coalesce(from_is_bot, direction = 'out') AS is_bot\n"
        f"  FROM ({own})")
    return (
        "CREATE VIEW messages AS\n"
        f"SELECT {g}ts, channel, chat_id, account, direction, event, message_id, update_type,\n"
        "  coalesce(sender_name, sender_username, CAST(sender_id AS VARCHAR)) AS sender,\n"
        "  sender_id, sender_name, sender_username, is_bot, text, media, media_type, method, ok, dlp_action,\n"
        "  duplicate, reply_to_message_id, forward_from, is_edit, edits_message_id, edited_ts, source,\n"
        "  CAST(ts AT TIME ZONE 'UTC' AS DATE) AS day,  -- the day in the session's (the user's) zone: query.connect\n"
        "  id, file, line\n"
        f"FROM ({sender})")


def event_columns_sql() -> str:
    """The `events` view's columns from `e` (a row json_transform'ed from `body`, the line's text)."""
    unpack = ", ".join(f"e.{q(c)} AS {q(c)}" for c, _ in EVENT_COLUMNS + HISTORY_COLUMNS)
    # An erased text (store format v2: {"c": "<hash>"}) is NULL, as in Parquet — never the commitment's JSON.
    return unpack.replace('e."text" AS "text"', "CASE WHEN left(e.\"text\", 1) = '{' AND json_type(body, '$.text') "
                          "<> 'VARCHAR' THEN NULL ELSE e.\"text\" END AS \"text\"")


def events_struct() -> str:
    """The json_transform structure of a log line."""
    return _struct_json(EVENT_COLUMNS + HISTORY_COLUMNS)


def derived_views(gateway: bool = False) -> dict[str, str]:
    """messages, edits, replies and chats over `events`; with `gateway` (the lake) every row, join and group keeps
    its gateway, so a chat id two gateways share stays two chats."""
    g = "gateway, " if gateway else ""
    views = {"messages": _messages(g)}
    # Every edit beside the message it edits; an imported message that was edited (the export keeps only its last
    # version) is one edit whose original text is unknown. One scan of `messages`, not a join of it to itself: each
    # scan of a year's 71,761 uncompacted day files holds ~150 MB outside DuckDB's memory limit (the join and the
    # imported branch took `SELECT * FROM edits` to 719 MB there). A window over every message's key — the message it
    # edits, else its own id — orders the original (not an edit) before its edits; it is the original only when it is
    # one (first_value of a row that is not an edit). Several originals of one id (a duplicate delivery): the first by
    # time, then id, once — the join repeated every edit per original.
    k = "CASE WHEN is_edit THEN edits_message_id ELSE message_id END"
    first = ("first_value(CASE WHEN NOT is_edit THEN {c} END) OVER (PARTITION BY " + g + "channel, chat_id, account, k"
             " ORDER BY is_edit, ts, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)")
    views["edits"] = (
        "CREATE VIEW edits AS\n"
        f"SELECT {g}channel, chat_id, account, k AS message_id, edited_ts, direction, via, new_text, original_ts,\n"
        "  original_text,\n"
        f"  CASE WHEN is_edit THEN row_number() OVER (PARTITION BY {g}channel, chat_id, account, k, is_edit"
        " ORDER BY ts, id) ELSE 1 END AS version,\n"
        "  id\n"
        f"FROM (SELECT {g}channel, chat_id, account, k, is_edit, ts, id, direction, text AS new_text,\n"
        "    CASE WHEN is_edit THEN ts ELSE edited_ts END AS edited_ts,\n"
        "    CASE WHEN is_edit THEN coalesce(method, update_type) ELSE source END AS via,\n"
        f"    CASE WHEN NOT is_edit THEN ts WHEN k IS NOT NULL THEN {first.format(c='ts')} END AS original_ts,\n"
        f"    CASE WHEN is_edit AND k IS NOT NULL THEN {first.format(c='text')} END AS original_text\n"
        f"  FROM (SELECT {g}channel, chat_id, account, is_edit, ts, id, direction, text, edited_ts, method, update_type,"
        f" source, {k} AS k FROM messages))\n"
        "WHERE is_edit OR edited_ts IS NOT NULL"
    )
    # What the bot said: each outbound message once, with the text of its last version (a streamed reply is a
    # sendMessage and the editMessageText previews that followed it).
    views["replies"] = (
        "CREATE VIEW replies AS\n"
        f"SELECT {g}channel, chat_id, account, coalesce(edits_message_id, message_id) AS message_id, min(ts) AS ts,\n"
        "  max(ts) AS final_ts, arg_max(text, (ts, id)) FILTER (WHERE text IS NOT NULL) AS text,\n"
        "  arg_max(media, (ts, id)) FILTER (WHERE media IS NOT NULL) AS media,\n"
        "  count(*) AS versions, arg_min(reply_to_message_id, (ts, id)) AS reply_to_message_id,\n"
        "  any_value(sender) AS sender, any_value(sender_id) AS sender_id, any_value(source) AS source,\n"
        "  arg_min(id, (ts, id)) AS id\n"
        "FROM messages\n"
        f"WHERE direction = 'out' AND event = 'message:sent' AND coalesce(ok, true)\n"
        f"  AND (method IS NULL OR method IN {_REPLY_METHODS!r})\n"
        f"GROUP BY {g}channel, chat_id, account, coalesce(edits_message_id, message_id), "
        "CASE WHEN coalesce(edits_message_id, message_id) IS NULL THEN id END"
    )
    views["chats"] = (
        "CREATE VIEW chats AS\n"
        f"SELECT {g}channel, chat_id, account,\n"
        "  arg_max(type, ts) FILTER (WHERE type IS NOT NULL) AS type,\n"
        "  arg_max(title, ts) FILTER (WHERE title IS NOT NULL) AS title,\n"
        "  arg_max(json_extract_string(c, 'username'), ts) FILTER (WHERE json_extract_string(c, 'username') IS NOT NULL) AS username,\n"
        "  min(ts) AS first_seen, max(ts) AS last_seen,\n"
        "  count(*) FILTER (WHERE direction = 'in') AS received, count(*) FILTER (WHERE direction = 'out') AS sent,\n"
        "  count(*) AS events\n"
        f"FROM (SELECT {g}channel, chat_id, coalesce(account, 'default') AS account, ts, direction, {_CHAT_OBJ} AS c,\n"
        f"    coalesce(json_extract_string(c, 'type'), {render.sql_case('chat_type', _CHAT_TYPES, 'chat_type')}) AS type,\n"
        f"    coalesce(json_extract_string(c, 'title'), CASE WHEN action IN {_TITLE_ACTIONS!r} THEN {_str('title')} END) AS title\n"
        "  FROM events WHERE channel <> 'system')\n"
        f"GROUP BY {g}channel, chat_id, account"
    )
    return views


def view_sql(scope: Scope, src: Sources) -> dict[str, str]:
    """The CREATE VIEW statements (name → SQL), exactly as `--explain` prints them."""
    parts: list[str] = []
    if src.jsonl:
        unpack = event_columns_sql()
        parts.append(
            f"SELECT {unpack}, file, line FROM (\n"
            f"  SELECT file, line, body, json_transform(body, '{events_struct()}') AS e\n"
            f"  FROM ({_lines_sql(scope.root)}) WHERE json_valid(body))\n"
            "WHERE e.id IS NOT NULL AND e.ts IS NOT NULL" + _bounds_where(scope, "e.ts").replace(" WHERE ", " AND ")
        )
    if src.parquet:
        casts = ", ".join(
            f"CAST({q(c)} AS {t}) AS {q(c)}" if c in ("ts",) or t == "JSON" else q(c) for c, t in EVENT_COLUMNS
        )
        where = _bounds_where(scope, "ts", "_s")
        if src.excluded:
            where += (" AND " if where else " WHERE ") + "NOT list_contains(getvariable('el_excluded'), file)"
        casts += ", " + ", ".join(_extra(c, t) for c, t in HISTORY_COLUMNS)
        parts.append(f"SELECT {casts}, file, line FROM read_parquet(getvariable('el_parquet'))" + where)
    if not parts:
        parts.append("SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {q(c)}" for c, t in EVENT_COLUMNS + HISTORY_COLUMNS)
                     + ", CAST(NULL AS VARCHAR) AS file, CAST(NULL AS INTEGER) AS line WHERE false")
    views = {"events": "CREATE VIEW events AS\n" + "\nUNION ALL\n".join(parts)}
    views.update(derived_views())
    for view, columns in DLP_COLUMNS.items():
        if view in src.dlp:
            # an alert keeps what is derived from the secret in its payload (eventlog/dlp/alerts.py), older ones on top
            unpack = ", ".join(f"coalesce(e.{q(c)}, json_extract_string(e.payload, '{c}')) AS {q(c)}" if c in ("fingerprint", "masked")
                               else f"e.{q(c)} AS {q(c)}" for c, _ in columns)
            views[view] = (f"CREATE VIEW {view} AS SELECT {unpack}, line FROM (SELECT line, json_transform(body, "
                           f"'{_struct_json(columns)}') AS e FROM ({_lines_sql(scope.root, 'el_' + view)}) "
                           "WHERE json_valid(body)) WHERE e.id IS NOT NULL")
        else:  # an absent stream is an empty view with the same columns, so queries still plan
            views[view] = (f"CREATE VIEW {view} AS SELECT "
                           + ", ".join(f"CAST(NULL AS {t}) AS {q(c)}" for c, t in columns)
                           + ", CAST(NULL AS BIGINT) AS line WHERE false")
    return views


