"""What the log already holds, so an import adds only what is new (idempotent, merge-safe).

Per chat, the day files that can hold the export's messages are streamed once; memory is one key per event in that
date range. Three kinds of key, because Telegram numbers messages two ways:
- supergroups and channels: one message_id per message for everyone — (direction, message_id) matches the tap's own
  events and earlier imports exactly;
- private chats and basic groups: every account numbers them itself, so the exporter's message_id is not the one the
  bot saw. Earlier imports match on (message_id, time) — the same exporter's numbering — and the tap's own events on
  their content: (direction, text as shown) at Telegram's own time (inbound: the update's `date`) or, for what the bot
  sent, within SENT_WINDOW seconds before the tap logged the call (the tap stamps after Telegram answers).
"""
from __future__ import annotations

import hashlib
import html
import re
from bisect import bisect_left
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable

import orjson

from ..layout import log_files
from ..reader import iter_lines

SENT_WINDOW = 30
_MESSAGE_UPDATES = {"message", "edited_message", "channel_post", "edited_channel_post", "business_message",
                    "edited_business_message"}
_TAG = re.compile(r"<[^>]*>")
_MD_ESCAPE = re.compile(r"\\(.)")
_SPACE = re.compile(r"\s+")


def _unix(ts: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())


def text_key(text: str, parse_mode: str | None = None) -> bytes:
    """A digest of the text as shown: markup of a sent payload removed, whitespace collapsed."""
    if parse_mode and parse_mode.upper() == "HTML":
        text = html.unescape(_TAG.sub("", text))
    elif parse_mode and parse_mode.lower().startswith("markdown"):
        text = _MD_ESCAPE.sub(r"\1", re.sub(r"(?<!\\)[*_~`|]", "", text))
    return hashlib.blake2b(_SPACE.sub(" ", text).strip().encode(), digest_size=12).digest()


class Known:
    """The keys of one chat's existing events."""

    def __init__(self) -> None:
        self.ids: set[tuple[str, int]] = set()  # (direction, message_id): shared-id chats
        self.imported: set[tuple[int, int]] = set()  # (message_id, unix seconds) of earlier imports
        self.exact: set[tuple[str, bytes, int]] = set()  # (direction, text digest, Telegram unix seconds)
        self.sent: dict[bytes, list[int]] = {}  # text digest → unix seconds the tap logged a send
        self.events = 0

    def add(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind not in ("message:received", "message:sent", "chat:service"):
            return
        self.events += 1
        direction = ev.get("direction") or ("out" if kind == "message:sent" else "in")
        mid = ev.get("message_id")
        source = ev.get("source")
        if isinstance(source, str) and source.startswith("import:"):
            if isinstance(mid, int) and isinstance(ev.get("ts"), str):
                secs = _unix(ev["ts"])
                self.imported.add((mid, secs))
                self.ids.add((direction, mid))
                if isinstance(ev.get("text"), str):
                    self.exact.add((direction, text_key(ev["text"]), secs))
            return
        if kind == "message:received":
            if ev.get("update_type") not in _MESSAGE_UPDATES:
                return  # a callback query names the bot's message, not a received one
            if isinstance(mid, int):
                self.ids.add(("in", mid))
            raw = ev.get("raw")
            msg = raw.get(ev["update_type"]) if isinstance(raw, dict) else None
            if isinstance(msg, dict) and isinstance(msg.get("date"), int):
                text = ev.get("text") if isinstance(ev.get("text"), str) else ""  # media without a caption: ""
                self.exact.add(("in", text_key(text), msg["date"]))
        elif kind == "message:sent":
            outcome = ev.get("outcome") if isinstance(ev.get("outcome"), dict) else {}
            ids = [mid] if isinstance(mid, int) else [m for m in outcome.get("message_ids") or [] if isinstance(m, int)]
            for m in ids:
                self.ids.add(("out", m))
            payload = ev.get("payload") if isinstance(ev.get("payload"), dict) else {}
            if outcome.get("ok") is not False and isinstance(ev.get("ts"), str):
                text = ev.get("text") if isinstance(ev.get("text"), str) else ""
                key = text_key(text, payload.get("parse_mode"))
                self.sent.setdefault(key, []).append(_unix(ev["ts"]))

    def seal(self) -> None:
        for times in self.sent.values():
            times.sort()

    def has(self, ev: dict[str, Any], secs: int, shared_ids: bool) -> bool:
        """Is this imported event (Telegram time `secs`) already in the log?"""
        mid = ev["message_id"]
        direction = ev["direction"]
        if shared_ids:
            return (direction, mid) in self.ids
        if (mid, secs) in self.imported:
            return True
        if not (self.exact or self.sent):
            return False
        key = text_key(ev.get("text") or "")
        if (direction, key, secs) in self.exact:
            return True
        if direction == "out" and ev["event"] == "message:sent":
            times = self.sent.get(key)
            if times:
                moments = [secs] + ([_unix(ev["edited_ts"])] if ev.get("edited_ts") else [])
                for t in moments:
                    i = bisect_left(times, t)
                    if i < len(times) and times[i] - t <= SENT_WINDOW:
                        return True
        return False

    def remember(self, ev: dict[str, Any], secs: int, shared_ids: bool) -> None:
        """An event this import writes: a malformed export listing a message twice must not add it twice."""
        if shared_ids:
            self.ids.add((ev["direction"], ev["message_id"]))
        else:
            self.imported.add((ev["message_id"], secs))


def load_known(root: Path, chat_id: str, first: int, last: int) -> Known:
    """Keys of one chat's events on the days an export covers (one day of margin each side: the tap stamps events
    when it sees them, which can be past midnight of Telegram's own date)."""
    from datetime import datetime, timezone

    since = datetime.fromtimestamp(first, tz=timezone.utc).date() - timedelta(days=1)
    until = datetime.fromtimestamp(last, tz=timezone.utc).date() + timedelta(days=1)
    known = Known()
    for lf in log_files(root, chat_id, since, until, channel="telegram"):
        for _, line in iter_lines(lf.path, lf.relpath):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # damage is verify's business; a line we cannot read cannot be a duplicate either
            if isinstance(ev, dict):
                known.add(ev)
    known.seal()
    return known


def bot_ids_in_log(root: Path, chat_ids: Iterable[str]) -> set[int]:
    """Ids the log shows to be this bot's: `my_chat_member` updates (always about the bot itself), replies to a bot in
    a private chat (the only bot there is ours), and the bot's own messages in earlier imports."""
    found: set[int] = set()
    for chat in chat_ids:
        for lf in log_files(root, chat, channel="telegram"):
            for _, line in iter_lines(lf.path, lf.relpath):
                if b'"is_bot":true' not in line:
                    continue
                try:
                    ev = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                found.update(_bot_ids_of(ev))
    return found


def _bot_ids_of(ev: Any) -> list[int]:
    if not isinstance(ev, dict):
        return []
    out = []
    frm = ev.get("from")
    if isinstance(ev.get("source"), str) and ev["source"].startswith("import:") and ev.get("direction") == "out" \
            and isinstance(frm, dict) and frm.get("is_bot") is True and isinstance(frm.get("id"), int):
        out.append(frm["id"])
    raw = ev.get("raw") if isinstance(ev.get("raw"), dict) else {}
    member = (raw.get("my_chat_member") or {}).get("new_chat_member") if isinstance(raw.get("my_chat_member"), dict) \
        else None
    user = member.get("user") if isinstance(member, dict) else None
    if isinstance(user, dict) and user.get("is_bot") is True and isinstance(user.get("id"), int):
        out.append(user["id"])
    msg = raw.get("message")
    if isinstance(msg, dict) and (msg.get("chat") or {}).get("type") == "private":
        reply = msg.get("reply_to_message")
        frm = reply.get("from") if isinstance(reply, dict) else None
        if isinstance(frm, dict) and frm.get("is_bot") is True and isinstance(frm.get("id"), int):
            out.append(frm["id"])
    return out


