"""The one event accessor and renderer: who sent an event, its text, its time, its media marker.

grep, tail, search, export and the agent's lines all read these from here, so "who sent this" has one answer. The
tap writes `from` as `{id, is_bot, username?, name?}` (docs/log-format.md); events from `eventlog append` or an
import may carry anything, so every accessor checks types and never raises.
"""
from __future__ import annotations

from typing import Any, Callable

MESSAGE_EVENTS = ("message:received", "message:sent")
SENDER_KEYS = ("username", "name", "id")
OUT_LABEL = "bot"  # an outbound message has no `from`: the tap sends as the bot
# Inbound Telegram message fields that stand for an attachment, in the order a marker names them.
MEDIA_FIELDS = ("photo", "video", "animation", "video_note", "voice", "audio", "document", "sticker", "location",
                "venue", "contact", "poll", "dice")

# The SQL twin of `sender` over the events view's `"from"` JSON column (the messages view's `sender`).
SENDER_SQL = ("coalesce(nullif(\"from\"->>'username', ''), nullif(\"from\"->>'name', ''), \"from\"->>'id')")


def _value(frm: dict[str, Any], key: str) -> str | None:
    v = frm.get(key)
    if isinstance(v, bool) or not isinstance(v, (str, int)) or v == "":
        return None
    return str(v)


def sender(ev: dict[str, Any]) -> str | None:
    """The sender's username, else name, else id (the first that is a non-empty string or an integer); None when
    the event names no sender."""
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return None
    for k in SENDER_KEYS:
        if (v := _value(frm, k)) is not None:
            return v
    return None


def sent_by(ev: dict[str, Any], who: str) -> bool:
    """`--from WHO`: WHO (a leading @ ignored, any case) is the sender's username, name or id."""
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return False
    w = who.lstrip("@").lower()
    return any((v := _value(frm, k)) is not None and v.lower() == w for k in SENDER_KEYS)


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


def media_marker(ev: dict[str, Any]) -> str | None:
    """`(photo)`, `(voice)`, … for an event that carries an attachment: an import's `media.media_type`, else the first
    attachment field of the inbound Telegram message; None without one."""
    media = ev.get("media")
    if isinstance(media, dict) and isinstance(media.get("media_type"), str) and media["media_type"]:
        return f"({media['media_type']})"
    raw = ev.get("raw")
    if isinstance(raw, dict):
        for obj in raw.values():
            if isinstance(obj, dict):
                for f in MEDIA_FIELDS:
                    if f in obj:
                        return f"({f})"
    return None


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
