"""Telegram Desktop's machine-readable export (result.json): what its records mean, and how one becomes an event.

Every fact here comes from Telegram Desktop's own writer, telegramdesktop/tdesktop @ 929032d598f7c521adc1869152463cf9e1160533
(Telegram/SourceFiles/export/output/export_output_json.cpp, export/data/export_data_types.cpp, data/data_peer_id.h);
docs/import.md cites the lines. The Bot API chat-id rule is TDLib's (tdlib/td, td/telegram/DialogId.cpp).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .jsonstream import BadExport

SOURCE = "import:telegram-desktop"
# DialogInfo::Type → the export's "type" string (export_output_json.cpp, writeDialogStart)
USER_TYPES = {"personal_chat", "bot_chat", "saved_messages", "replies", "verification_codes"}
BASIC_GROUP_TYPES = {"private_group"}
CHANNEL_TYPES = {"private_supergroup", "public_supergroup", "private_channel", "public_channel"}
CHAT_TYPES = USER_TYPES | BASIC_GROUP_TYPES | CHANNEL_TYPES
# A Bot API supergroup/channel id is -(10^12 + bare id) (TDLib DialogId: ZERO_CHANNEL_ID = -1000000000000).
CHANNEL_SHIFT = 1_000_000_000_000
MAX_UNIX = 253402300799  # 9999-12-31T23:59:59Z: the log's timestamps have four-digit years
_PEER = re.compile(r"(user|chat|channel)([0-9]{1,15})")
# Message fields that describe attached media (SerializeMessage, the media match): kept as markers, never bytes.
MEDIA_KEYS = frozenset(("photo", "photo_file_size", "file", "file_name", "file_size", "thumbnail", "thumbnail_file_size",
              "media_type", "sticker_emoji", "mime_type", "duration_seconds", "width", "height", "performer",
              "title", "media_spoiler", "self_destruct_period_seconds", "contact_information", "contact_vcard",
              "location_information", "live_location_period_seconds", "place_name", "address", "game_title",
              "game_description", "game_link", "invoice_information", "poll", "todo_list", "giveaway_information",
              "giveaway_results", "paid_stars_amount"))


def bot_api_chat_id(chat_type: str, bare_id: int) -> int:
    """The export's chat `id` is the bare peer id (PeerToBareId masks the type bits away; the type is in "type").
    Bot API: a user is its id, a basic group -id, a supergroup or channel -(10^12 + id), i.e. the "-100…" form."""
    if chat_type in BASIC_GROUP_TYPES:
        return -bare_id
    if chat_type in CHANNEL_TYPES:
        return -(CHANNEL_SHIFT + bare_id)
    return bare_id


_peers: dict[str, int] = {}  # a chat has few senders: each peer string is parsed once


def peer_to_bot_api(peer: Any) -> int | None:
    """`from_id` / `actor_id` / `reply_to_peer_id` strings ("user123", "chat123", "channel123") → Bot API id."""
    if not isinstance(peer, str):
        return None
    hit = _peers.get(peer)
    if hit is not None:
        return hit
    m = _PEER.fullmatch(peer)
    if not m:
        return None
    bare = int(m[2])
    out = bare if m[1] == "user" else -bare if m[1] == "chat" else -(CHANNEL_SHIFT + bare)
    if len(_peers) < 100_000:
        _peers[peer] = out
    return out


def flatten_text(value: Any) -> str:
    """The text as Telegram shows it. tdesktop cuts the message text at the entity offsets (UTF-16 units, in
    ParseText) into consecutive parts that cover it exactly once, and writes them either as one string or as an array
    mixing plain strings and {type, text, …} objects; the visible text is their concatenation. A link's visible text is
    its `text` (the URL of a text_link sits in `href`, not shown); a custom emoji shows its fallback emoji."""
    if isinstance(value, str):
        return value
    return "".join(p if isinstance(p, str) else p["text"] for p in value)


_days: dict[int, str] = {}


def iso(unix: int) -> str:
    """UTC RFC 3339 with milliseconds; the date part is cached per day (an import formats a million of these)."""
    day, rest = divmod(unix, 86400)
    prefix = _days.get(day)
    if prefix is None:
        prefix = datetime.fromtimestamp(day * 86400, tz=timezone.utc).strftime("%Y-%m-%dT")
        if len(_days) < 100_000:
            _days[day] = prefix
    h, rest = divmod(rest, 3600)
    return f"{prefix}{h:02d}:{rest // 60:02d}:{rest % 60:02d}.000Z"


def _text_ok(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, list) and all(
        isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str)) for p in value)


def _unix(rec: dict[str, Any], key: str, where: str) -> int | None:
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, str) and 0 < len(v) <= 12 and v.isascii()
                                                              and v.isdigit())):
        raise BadExport(f"{where}: {key} is not a unix time: {str(v)[:30]!r}")
    if not 0 <= int(v) <= MAX_UNIX:
        raise BadExport(f"{where}: {key} is out of range: {v}")
    return int(v)


def check_record(rec: Any, where: str) -> tuple[str, int | None]:
    """Validate one record of a `messages` array; returns (type, date_unixtime). Raises BadExport.

    The common shape (string date, known sender, plain text and entities) is checked inline; anything else, and every
    error, takes `_check_record`, which says what is wrong."""
    if rec.__class__ is dict and rec.get("id").__class__ is int:
        kind = rec.get("type")
        date = rec.get("date_unixtime")
        if (kind == "message" or kind == "service") and date.__class__ is str and 0 < len(date) <= 12 \
                and date.isascii() and date.isdigit() and int(date) <= MAX_UNIX and rec.get("edited_unixtime") is None:
            text = rec.get("text", "")
            ents = rec.get("text_entities")
            sender = rec.get("from_id" if kind == "message" else "actor_id")
            if (sender is None or (sender.__class__ is str and sender in _peers)) \
                    and rec.get("from_id" if kind == "service" else "actor_id") is None \
                    and rec.get("reply_to_peer_id") is None and rec.get("reply_to_message_id", 0).__class__ is int \
                    and rec.get("message_id", 0).__class__ is int and text.__class__ is str and ents.__class__ is list \
                    and ((not ents and text == "") or (len(ents) == 1 and ents[0].__class__ is dict
                                                       and ents[0].get("text") == text
                                                       and ents[0].get("type").__class__ is str)):
                return kind, int(date)
    return _check_record(rec, where)


def _check_record(rec: Any, where: str) -> tuple[str, int | None]:
    if not isinstance(rec, dict):
        raise BadExport(f"{where}: a message record is not a JSON object")
    mid = rec.get("id")
    if isinstance(mid, bool) or not isinstance(mid, int):
        raise BadExport(f"{where}: record without an integer id")
    where = f"{where}, message {mid}"
    kind = rec.get("type")
    if kind == "unsupported":  # tdesktop writes only {id, type} for media it cannot export
        return kind, None
    if kind not in ("message", "service"):
        raise BadExport(f"{where}: unknown record type {str(kind)[:40]!r} (known: message, service, unsupported)")
    date = _unix(rec, "date_unixtime", where)
    if date is None:
        if "date" in rec:
            raise BadExport(f"{where}: no date_unixtime — an export from an old Telegram Desktop, whose `date` is "
                            "local time without a zone; export again with a current version")
        raise BadExport(f"{where}: record without a date")
    _unix(rec, "edited_unixtime", where)
    for key in ("from_id", "actor_id", "reply_to_peer_id"):
        if key in rec and rec[key] is not None and peer_to_bot_api(rec[key]) is None:
            raise BadExport(f"{where}: {key} is not a peer id like 'user123': {str(rec[key])[:30]!r}")
    for key in ("reply_to_message_id", "message_id"):
        if key in rec and (isinstance(rec[key], bool) or not isinstance(rec[key], int)):
            raise BadExport(f"{where}: {key} is not an integer")
    text = rec.get("text", "")
    if not _text_ok(text):
        raise BadExport(f"{where}: `text` is neither a string nor an array of strings and text objects")
    ents = rec.get("text_entities")
    if ents is not None:
        if not isinstance(ents, list) or not all(isinstance(e, dict) and isinstance(e.get("text"), str)
                                                 and isinstance(e.get("type"), str) for e in ents):
            raise BadExport(f"{where}: `text_entities` is not an array of {{type, text}} objects")
        joined = ents[0]["text"] if len(ents) == 1 else "".join(e["text"] for e in ents)
        if joined != (text if isinstance(text, str) else flatten_text(text)):
            raise BadExport(f"{where}: `text` and `text_entities` disagree")
    return kind, date


@dataclass
class ChatInfo:
    """What pass 1 learned about one chat of the export."""

    index: int
    section: str | None  # None (single-chat export), "chats" or "left_chats"
    name: str | None = None
    type: str | None = None
    export_id: int | None = None
    records: int = 0
    messages: int = 0
    services: int = 0
    unsupported: int = 0
    first: int | None = None  # unix seconds
    last: int | None = None
    senders: dict[str, int] = field(default_factory=dict)  # from_id → messages


@dataclass
class ChatPlan:
    """How one chat is imported (or why it is not)."""

    info: ChatInfo
    chat_id: str | None = None  # Bot API chat id, as stored in the log
    bot_peer: str | None = None  # "user<bot id>": whose messages are message:sent
    skip: str | None = None  # reason, when the chat is left out

    @property
    def shared_ids(self) -> bool:
        """Supergroups and channels number messages per chat, so every member (and the bot) sees the same
        message_id. Private chats and basic groups number them per account: the exporter's ids are not the bot's."""
        return self.info.type in CHANNEL_TYPES


def _sender(rec: dict[str, Any], id_key: str, name_key: str, bot_peer: str | None) -> dict[str, Any] | None:
    peer = rec.get(id_key)
    if peer is None and rec.get(name_key) is None:
        return None
    out: dict[str, Any] = {}
    if peer is not None:
        out["id"] = peer_to_bot_api(peer)
    if rec.get(name_key) is not None:
        out["name"] = rec[name_key]
    if bot_peer is not None and peer == bot_peer:
        out["is_bot"] = True
    return out


def _service_text(rec: dict[str, Any]) -> str:
    """A one-line rendering of a service record, in the spirit of Telegram's own ("Alice pinned a message")."""
    actor = rec.get("actor") or "Someone"
    action = rec.get("action")
    title = rec.get("title")
    members = [m or "Deleted Account" for m in rec.get("members") or [] if isinstance(m, (str, type(None)))]
    if action is None and isinstance(rec.get("information_text"), str):
        return rec["information_text"]
    if action == "invite_members" and members == [actor]:
        return f"{actor} joined the group"
    if action == "remove_members" and members == [actor]:
        return f"{actor} left the group"
    phrases: dict[Any, str] = {  # keyed by the export's action, which may be missing (None)
        "create_group": f"{actor} created the group «{title}»",
        "edit_group_title": f"{actor} changed the group name to «{title}»",
        "edit_group_photo": f"{actor} changed the group photo",
        "delete_group_photo": f"{actor} removed the group photo",
        "invite_members": f"{actor} added {', '.join(members)}",
        "remove_members": f"{actor} removed {', '.join(members)}",
        "join_group_by_link": f"{actor} joined the group via invite link",
        "join_group_by_request": f"{actor} was accepted into the group",
        "create_channel": f"Channel «{title}» created",
        "migrate_to_supergroup": f"{actor} converted this group to a supergroup",
        "migrate_from_group": f"Group «{title}» was converted to a supergroup",
        "pin_message": f"{actor} pinned a message",
        "clear_history": "History was cleared",
        "topic_created": f"{actor} created the topic «{title}»",
    }
    return phrases.get(action, f"{actor}: {str(action).replace('_', ' ')}")


def build_event(plan: ChatPlan, rec: dict[str, Any], export_sha256: str) -> dict[str, Any] | None:
    """The event for one validated record (None for `unsupported`). Content — what people wrote and who they are — goes
    only into text, raw, from, forward, media and title; everything else is metadata."""
    kind = rec["type"]
    if kind == "unsupported":
        return None
    assert plan.chat_id is not None
    ev: dict[str, Any] = {
        "channel": "telegram", "chat_id": plan.chat_id, "ts": iso(int(rec["date_unixtime"])),
        "message_id": rec["id"], "source": SOURCE, "export_sha256": export_sha256, "chat_type": plan.info.type,
    }
    if kind == "service":
        actor = _sender(rec, "actor_id", "actor", plan.bot_peer)
        ev.update(event="chat:service", direction="out" if actor and actor.get("is_bot") else "in",
                  action=rec.get("action") or "custom", text=_service_text(rec))
        if actor:
            ev["from"] = actor
        if isinstance(rec.get("title"), str):
            ev["title"] = rec["title"]
        if isinstance(rec.get("message_id"), int):
            ev["pinned_message_id" if rec.get("action") == "pin_message" else "target_message_id"] = rec["message_id"]
    else:
        sender = _sender(rec, "from_id", "from", plan.bot_peer)
        out = plan.bot_peer is not None and rec.get("from_id") == plan.bot_peer
        ev.update(event="message:sent" if out else "message:received", direction="out" if out else "in",
                  text=flatten_text(rec.get("text", "")))
        if sender:
            if isinstance(rec.get("author"), str):
                sender["signature"] = rec["author"]
            if isinstance(rec.get("via_bot"), str):
                sender["via_bot"] = rec["via_bot"]
            ev["from"] = sender
        if isinstance(rec.get("reply_to_message_id"), int):
            ev["reply_to_message_id"] = rec["reply_to_message_id"]
            if rec.get("reply_to_peer_id"):
                ev["reply_to_chat_id"] = peer_to_bot_api(rec["reply_to_peer_id"])
        if "forwarded_from" in rec or "saved_from" in rec:
            ev["forward"] = {("from" if k == "forwarded_from" else k): rec[k] for k in ("forwarded_from", "saved_from")
                             if k in rec}
        media = {k: rec[k] for k in MEDIA_KEYS.intersection(rec)}
        if media:
            media.setdefault("media_type", _media_kind(media))
            ev["media"] = media
    if rec.get("edited_unixtime") is not None:
        ev["edited_ts"] = iso(int(rec["edited_unixtime"]))
    ev["raw"] = rec
    return ev


def _media_kind(media: dict[str, Any]) -> str:
    for key, kind in (("photo", "photo"), ("poll", "poll"), ("contact_information", "contact"),
                      ("location_information", "location"), ("place_name", "venue"), ("game_title", "game"),
                      ("invoice_information", "invoice"), ("todo_list", "todo_list"), ("file", "file")):
        if key in media:
            return kind
    return "other"
