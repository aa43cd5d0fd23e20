"""The one event accessor and renderer: who sent an event, its text, its time, its media marker.

grep, tail, search, export and the agent's lines all read these from here, so "who sent this" has one answer. The
tap writes `from` as `{id, is_bot, username?, name?}` (docs/log-format.md); events from `eventlog append` or an
import may carry anything, so every accessor checks types and never raises.
"""
from __future__ import annotations

from typing import Any, Callable

MESSAGE_EVENTS = ("message:received", "message:sent")
# The sender as a value (search's JSON, DLP reviews, the views' `sender`): the display name first, since live rows
# and imported history both carry it (an export has no handles), so one person is one value whatever the source.
SENDER_KEYS = ("name", "username", "id")
OUT_LABEL = "bot"  # an outbound message has no `from`: the tap sends as the bot

# -- media: one mapping for every source, rendered here in Python and (MEDIA_TYPE_SQL) in the views ------------------
# The Telegram message objects of an inbound update that can carry an attachment.
UPDATE_MESSAGES = ("message", "edited_message", "channel_post", "edited_channel_post")
# Bot API message fields that stand for an attachment → media type, in the order they are tested: a venue message
# also carries `location`, an animation also `document`.
MEDIA_FIELDS = ("venue", "location", "animation", "photo", "video", "video_note", "voice", "audio", "document",
                "sticker", "contact", "poll", "dice", "game", "invoice", "story", "paid_media")
# Telegram Desktop's `media_type` (and the importer's own kinds for keys without one) → the Bot API name.
IMPORT_MEDIA = {"voice_message": "voice", "video_message": "video_note", "video_file": "video",
                "audio_file": "audio", "file": "document", "todo_list": "checklist", "other": "media"}
# An outbound call that sends an attachment → its media type (`send<Kind>`).
SEND_MEDIA = {"sendPhoto": "photo", "sendVideo": "video", "sendAnimation": "animation", "sendAudio": "audio",
              "sendVoice": "voice", "sendVideoNote": "video_note", "sendDocument": "document",
              "sendSticker": "sticker", "sendLocation": "location", "sendVenue": "venue", "sendContact": "contact",
              "sendPoll": "poll", "sendDice": "dice", "sendMediaGroup": "album", "sendPaidMedia": "paid_media"}
# The emoji a sticker or dice shows: `[sticker 👍]`.
EMOJI_MEDIA = ("sticker", "dice")

def _value(frm: dict[str, Any], key: str) -> str | None:
    v = frm.get(key)
    if isinstance(v, bool) or not isinstance(v, (str, int)) or v == "":
        return None
    return str(v)


def sender(ev: dict[str, Any]) -> str | None:
    """The sender's display name, else username, else id (the first that is a non-empty string or an integer); None
    when the event names no sender."""
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return None
    for k in SENDER_KEYS:
        if (v := _value(frm, k)) is not None:
            return v
    return None


def sent_by(ev: dict[str, Any], who: str) -> bool:
    """`--from WHO` (any case, a leading @ ignored): WHO is the sender's username or id exactly, or the start of their
    display name or of one of its words — `ann`, `Ann Lee`, `lee` and `An` all find "Ann Lee"."""
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return False
    w = " ".join(who.lstrip("@").casefold().split())
    if not w:
        return False
    if any((v := _value(frm, k)) is not None and v.casefold() == w for k in ("username", "id")):
        return True
    name = _value(frm, "name")
    if name is None:
        return False
    words = name.casefold().split()
    return " ".join(words).startswith(w) or any(x.startswith(w) for x in words)


def who(ev: dict[str, Any]) -> str:
    """The sender as a person reads it: `@username`, else the name, else the id; `bot` for an outbound message;
    `?` for a message that names no sender; "" for an event that is not a message (tap:start, …)."""
    frm = ev.get("from")
    if isinstance(frm, dict):
        if (u := _value(frm, "username")) is not None:
            return "@" + u
        if (v := sender(ev)) is not None:
            return v
    if ev.get("direction") == "out":
        return OUT_LABEL
    return "?" if ev.get("event") in MESSAGE_EVENTS else ""


def text(ev: dict[str, Any]) -> str:
    """The message text (or caption), "" when there is none (or it was erased)."""
    t = ev.get("text")
    return t if isinstance(t, str) else ""


def _message_obj(ev: dict[str, Any]) -> dict[str, Any] | None:
    raw = ev.get("raw")
    if isinstance(raw, dict):
        for k in UPDATE_MESSAGES:
            if isinstance(m := raw.get(k), dict):
                return m
    return None


def media_type(ev: dict[str, Any]) -> str | None:
    """The kind of attachment an event carries, by its Bot API name (`photo`, `voice`, `sticker`, …): an import's
    `media.media_type`, else the first attachment field of the inbound Telegram message, else the outbound
    `send<Kind>` method; None without one."""
    media = ev.get("media")
    if isinstance(media, dict) and isinstance(kind := media.get("media_type"), str) and kind:
        return IMPORT_MEDIA.get(kind, kind)
    msg = _message_obj(ev)
    if msg is not None:
        for f in MEDIA_FIELDS:
            if f in msg:
                return f
    method = ev.get("method")
    return SEND_MEDIA.get(method) if isinstance(method, str) else None


def _emoji(ev: dict[str, Any], kind: str) -> str | None:
    media, msg, payload = ev.get("media"), _message_obj(ev), ev.get("payload")
    for v in ((media or {}).get("sticker_emoji") if isinstance(media, dict) else None,
              (msg.get(kind) or {}).get("emoji") if msg is not None and isinstance(msg.get(kind), dict) else None,
              payload.get("emoji") if isinstance(payload, dict) else None):
        if isinstance(v, str) and v:
            return v
    return None


def media_marker(ev: dict[str, Any]) -> str | None:
    """`[photo]`, `[voice]`, `[sticker 👍]`, … for an event that carries an attachment (media_type); None without one."""
    kind = media_type(ev)
    if kind is None:
        return None
    emoji = _emoji(ev, kind) if kind in EMOJI_MEDIA else None
    return "[" + kind.replace("_", " ") + (f" {emoji}" if emoji else "") + "]"


def sql_case(expr: str, table: dict[str, str], default: str) -> str:
    """`CASE expr WHEN key THEN value … ELSE default END` for a table of plain identifiers (no quoting needed)."""
    return f"CASE {expr} " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in table.items()) + f" ELSE {default} END"


def media_type_sql(msg: str) -> str:
    """The SQL twin of `media_type` over the events view's columns; `msg` is the inbound message object (MESSAGE_SQL)."""
    imp = "json_extract_string(media, 'media_type')"
    return ("CASE WHEN json_type(media->'media_type') = 'VARCHAR' AND " + imp + " <> '' THEN "
            + sql_case(imp, IMPORT_MEDIA, imp) + " "
            + " ".join(f"WHEN ({msg}->'{f}') IS NOT NULL THEN '{f}'" for f in MEDIA_FIELDS)
            + " ELSE " + sql_case("method", SEND_MEDIA, "NULL") + " END")


def media_marker_sql(kind: str, msg: str) -> str:
    """The SQL twin of `media_marker`, given the media type column `kind`."""
    emoji = ("nullif(coalesce(CASE WHEN json_type(media->'sticker_emoji') = 'VARCHAR' THEN json_extract_string(media, 'sticker_emoji') END, "
             f"CASE {kind} " + " ".join(f"WHEN '{k}' THEN json_extract_string({msg}, '$.{k}.emoji')" for k in EMOJI_MEDIA)
             + " END, json_extract_string(payload, 'emoji')), '')")
    return (f"CASE WHEN {kind} IS NOT NULL THEN '[' || replace({kind}, '_', ' ') || coalesce(CASE WHEN {kind} IN "
            f"{EMOJI_MEDIA!r} THEN ' ' || {emoji} END, '') || ']' END")


MESSAGE_SQL = "coalesce(" + ", ".join(f"raw->'{k}'" for k in UPDATE_MESSAGES) + ")"


def body(ev: dict[str, Any]) -> str:
    """What a transcript shows for a message: its text, else its media marker, else `(no text)`."""
    return text(ev) or media_marker(ev) or "(no text)"


def ts_label(ev: dict[str, Any], show: Callable[[str], str] = str) -> str:
    """The event's time through `show` (e.g. output.local_ts in the user's zone); a non-string ts as it is."""
    ts = ev.get("ts")
    return show(ts) if isinstance(ts, str) else str(ts)


def one_line(s: str) -> str:
    """A text on one output line: newlines shown as `\\n`."""
    return s.replace("\n", "\\n")


Style = Callable[[str, str], str]  # (text, role) → text; role is "head" or "match" (the CLI colours them)


def _unstyled(s: str, role: str) -> str:
    return s


def grep_line(ev: dict[str, Any], spans: list[tuple[int, int]], is_match: bool, show_ts: Callable[[str], str] = str,
              style: Style = _unstyled) -> str:
    """`<chat> <time> <in|out> <who>: <text>` (`-` instead of `:` for a context line), the matched spans styled."""
    t = text(ev)
    if not t:  # a media-only message (listed by a filter, or context): its marker; spans can only be empty here
        t, spans = media_marker(ev) or "", []
    out, pos = [], 0
    for s, e in spans:
        out += [t[pos:s], style(t[s:e], "match")]
        pos = e
    out.append(t[pos:])
    head = f"{ev.get('chat_id')} {ts_label(ev, show_ts)} {ev.get('direction') or '?':<3} {who(ev)}"
    return style(head, "head") + f"{':' if is_match else '-'} {one_line(''.join(out))}"


def tail_line(ev: dict[str, Any], show_ts: Callable[[str], str] = str, style: Style = _unstyled) -> str:
    """`<chat> <time> <event> <in|out|-> <who>: <text or media marker>`; no `: …` for an event without either."""
    head = (f"{ev.get('chat_id')} {ts_label(ev, show_ts)} {ev.get('event')} {ev.get('direction') or '-'} "
            f"{who(ev)}").rstrip()
    shown = text(ev) or media_marker(ev)
    return style(head, "head") + (": " + one_line(shown) if shown else "")
