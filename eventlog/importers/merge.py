"""What the log already holds, so an import adds only what is new (idempotent, merge-safe).

Per chat, the day files that can hold the export's messages are streamed once; memory is one key per event in that
date range. Three kinds of key, because Telegram numbers messages two ways:
- supergroups and channels: one message_id per message for everyone — (direction, message_id) matches the tap's own
  events and earlier imports exactly;
- private chats and basic groups: every account numbers them itself, so the exporter's message_id is not the one the
  bot saw. Earlier imports match on (message_id, time) — the same exporter's numbering — and the tap's own events on
  their content: (direction, text as shown) at Telegram's own time (inbound: the update's `date`) or, for what the bot
  sent, within SENT_WINDOW seconds before the tap logged the call (the tap stamps after Telegram answers). Earlier
  imports' texts are keyed the same way, so another member's export of the same basic group is recognised too.
A supergroup export that includes the basic group it was migrated from lists that group's messages with ids shifted
by -10^9 (tdesktop AdjustMigrateMessageIds): negative ids are per-account numbers and take the second rule.
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

from ..store.layout import log_files
from ..store.reader import iter_lines
from ..store.schema import DEFAULT_ACCOUNT

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


def _id_key(direction: str, mid: int) -> int:
    return mid * 2 + (direction == "out")


class Known:
    """The keys of one chat's existing events, kept as small ints and bytes: a chat with a million events costs tens
    of MB, not hundreds. Which keys are collected depends on how the chat numbers its messages (module docstring)."""

    def __init__(self, shared_ids: bool) -> None:
        self.shared_ids = shared_ids
        self.ids: set[int] = set()  # shared-id chats: _id_key(direction, message_id)
        self.imported: set[int] = set()  # other chats, earlier imports: message_id << 36 | unix seconds
        self.exact: set[bytes] = set()  # other chats: direction + text digest + Telegram unix seconds
        self.sent: dict[bytes, list[int]] = {}  # other chats: text digest → unix seconds the tap logged a send
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
            if not isinstance(mid, int) or isinstance(mid, bool):
                return
            if self.shared_ids and mid > 0:
                self.ids.add(_id_key(direction, mid))
            elif isinstance(ev.get("ts"), str):
                secs = _unix(ev["ts"])
                self.imported.add(mid << 36 | secs)
                if isinstance(ev.get("text"), str):  # another member's export numbers the same messages differently
                    self.exact.add(_exact(direction, text_key(ev["text"]), secs))
            return
        if kind == "message:received":
            if ev.get("update_type") not in _MESSAGE_UPDATES:
                return  # a callback query names the bot's message, not a received one
            if self.shared_ids:
                if isinstance(mid, int):
                    self.ids.add(_id_key("in", mid))
                return
            raw = ev.get("raw")
            msg = raw.get(ev["update_type"]) if isinstance(raw, dict) else None
            if isinstance(msg, dict) and isinstance(msg.get("date"), int):
                text = v if isinstance(v := ev.get("text"), str) else ""  # media without a caption: ""
                self.exact.add(_exact("in", text_key(text), msg["date"]))
        elif kind == "message:sent":
            outcome = v if isinstance(v := ev.get("outcome"), dict) else {}
            if self.shared_ids:
                ids = [mid] if isinstance(mid, int) else [m for m in outcome.get("message_ids") or []
                                                          if isinstance(m, int)]
                self.ids.update(_id_key("out", m) for m in ids)
                return
            payload = v if isinstance(v := ev.get("payload"), dict) else {}
            if outcome.get("ok") is not False and isinstance(ev.get("ts"), str):
                text = v if isinstance(v := ev.get("text"), str) else ""
                self.sent.setdefault(text_key(text, payload.get("parse_mode")), []).append(_unix(ev["ts"]))

    def seal(self) -> None:
        for times in self.sent.values():
            times.sort()

    def has_id(self, direction: str, mid: int) -> bool:
        return _id_key(direction, mid) in self.ids

    def has(self, ev: dict[str, Any], secs: int) -> bool:
        """Is this imported event (Telegram time `secs`) already in the log?"""
        mid = ev["message_id"]
        direction = ev["direction"]
        if self.shared_ids and mid > 0:
            return _id_key(direction, mid) in self.ids
        if mid << 36 | secs in self.imported:
            return True
        if not (self.exact or self.sent):
            return False
        key = text_key(ev.get("text") or "")
        if _exact(direction, key, secs) in self.exact:
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

    def remember(self, ev: dict[str, Any], secs: int) -> None:
        """An event this import writes: a malformed export listing a message twice must not add it twice."""
        if self.shared_ids and ev["message_id"] > 0:
            self.ids.add(_id_key(ev["direction"], ev["message_id"]))
        else:
            self.imported.add(ev["message_id"] << 36 | secs)


def _exact(direction: str, digest: bytes, secs: int) -> bytes:
    return direction.encode() + digest + secs.to_bytes(8, "big", signed=True)


def load_known(root: Path, chat_id: str, first: int, last: int, shared_ids: bool,
               account: str = DEFAULT_ACCOUNT) -> Known:
    """Keys of one chat's events — of `account`'s chat of that id — on the days an export covers (one day of margin
    each side: the tap stamps events when it sees them, which can be past midnight of Telegram's own date)."""
    from datetime import datetime, timezone

    since = datetime.fromtimestamp(first, tz=timezone.utc).date() - timedelta(days=1)
    until = datetime.fromtimestamp(last, tz=timezone.utc).date() + timedelta(days=1)
    known = Known(shared_ids)
    for lf in log_files(root, chat_id, since, until, channel="telegram", accounts={account, DEFAULT_ACCOUNT}):
        for _, line in iter_lines(lf.path, lf.relpath):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # damage is verify's business; a line we cannot read cannot be a duplicate either
            if isinstance(ev, dict) and ev.get("account", DEFAULT_ACCOUNT) == account:  # (field: a log not migrated)
                known.add(ev)
    known.seal()
    return known


def bot_ids_in_log(root: Path, chat_ids: Iterable[str], account: str = DEFAULT_ACCOUNT) -> set[int]:
    """Ids the log shows to be this bot's: `my_chat_member` updates (always about the bot itself), replies to a bot in
    a private chat (the only bot there is ours), and the bot's own messages in earlier imports."""
    found: set[int] = set()
    for chat in chat_ids:
        for lf in log_files(root, chat, channel="telegram", accounts={account, DEFAULT_ACCOUNT}):
            hits = set()
            for _, line in iter_lines(lf.path, lf.relpath):
                if b'"is_bot":true' not in line:  # most lines are skipped without parsing
                    continue
                try:
                    ev = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(ev, dict) and ev.get("account", DEFAULT_ACCOUNT) == account:
                    hits.update(_bot_ids_of(ev))
            found |= hits
            if hits:
                break  # one day file that names the bot is enough for this chat
    return found


def _bot_ids_of(ev: Any) -> list[int]:
    if not isinstance(ev, dict):
        return []
    out = []
    frm = ev.get("from")
    if isinstance(ev.get("source"), str) and ev["source"].startswith("import:") and ev.get("direction") == "out" \
            and isinstance(frm, dict) and frm.get("is_bot") is True and isinstance(frm.get("id"), int):
        out.append(frm["id"])
    raw = v if isinstance(v := ev.get("raw"), dict) else {}
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


