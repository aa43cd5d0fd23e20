"""What the index holds for a message besides its words: the derived, indexed form (the stored event is unchanged).

A question names things the message text does not hold: who wrote it ("what did Caroline say about…"), when ("on 8
May", "в мае"), that a photo was shared, what it answered. So each message is indexed with two fields:

- **body**: the message text (or a media item's caption) — exactly what BM25 indexed before;
- **meta**: the sender's display name and username, the date in words and numbers (day, month name in English and
  Russian, year, ISO date, weekday), the media marker (`photo`, `voice`, …) with a file name, title or performer, and
  the text of the message it replies to (from the update's `reply_to_message`, or the same day file's message with that
  id for an imported reply).

Meta terms live in their own term space (tokens.meta_token_ids) and score at META_WEIGHT of a body term with no
length normalisation (rank.py). The body's postings and lengths are what they were, so a message holding the query's
words in its text scores as before; the meta field only adds to it (exact-word queries lose nothing: the project's
"exact" questions stay at hit@5 1.00). Dates are UTC days: the index units are UTC days and the
log has no per-chat zone yet.

The embedding sees the sender's name, the text and the media marker (`embed_text`), not the date: a vector does not
compare dates.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

META_WEIGHT = 1.0  # a meta term's weight against a body term (rank.py), measured: LoCoMo BM25 R@10 60.9 (0), 64.3 (1.0),
#                   65.1 (2.0); above 1 a sender or date match could outrank the query word in the text, so 1

_MONTHS_EN = ("january february march april may june july august september october november december").split()
_MONTHS_RU = ("января февраля марта апреля мая июня июля августа сентября октября ноября декабря").split()
_DAYS_EN = "monday tuesday wednesday thursday friday saturday sunday".split()
_DAYS_RU = "понедельник вторник среда четверг пятница суббота воскресенье".split()
_MEDIA_WORDS = ("file_name", "title", "performer", "sticker_emoji", "place_name")


def sender_words(ev: dict[str, Any]) -> list[str]:
    frm = ev.get("from")
    if not isinstance(frm, dict):
        return []
    out = []
    for k in ("name", "first_name", "last_name", "username"):
        v = frm.get(k)
        if isinstance(v, str) and v and v not in out:
            out.append(v)
    return out


def date_words(ms: int) -> str:
    if ms <= 0:
        return ""
    t = datetime.fromtimestamp(ms / 1000, timezone.utc)
    return (f"{t.day} {_MONTHS_EN[t.month - 1]} {_MONTHS_RU[t.month - 1]} {t.year} {t:%Y-%m-%d} "
            f"{_DAYS_EN[t.weekday()]} {_DAYS_RU[t.weekday()]}")


def media_words(ev: dict[str, Any]) -> str:
    media = ev.get("media")
    if not isinstance(media, dict):
        return ""
    kind = media.get("media_type") or media.get("type") or media.get("kind")
    words = [str(kind).replace("_", " ")] if isinstance(kind, str) else []
    words += [media[k] for k in _MEDIA_WORDS if isinstance(media.get(k), str)]
    return " ".join(words)


def reply_text(ev: dict[str, Any], earlier: dict[tuple[str, int], str]) -> str:
    raw = ev.get("raw")
    msg = raw.get("message") or raw.get("edited_message") if isinstance(raw, dict) else None
    rep = msg.get("reply_to_message") if isinstance(msg, dict) else None
    if isinstance(rep, dict):
        t = rep.get("text") or rep.get("caption")
        if isinstance(t, str):
            return t
    mid = ev.get("reply_to_message_id")
    if isinstance(mid, int):
        return earlier.get((str(ev.get("chat_id")), mid), "")
    return ""


def meta_text(ev: dict[str, Any], ms: int, earlier: dict[tuple[str, int], str]) -> str:
    """The meta field of a message event (see the module doc); `earlier`: (chat, message id) → text of the messages
    read before it in the same unit, for an imported reply."""
    parts = [*sender_words(ev), date_words(ms), media_words(ev), reply_text(ev, earlier)]
    return " ".join(p for p in parts if p)


def embed_text(ev: dict[str, Any], text: str) -> str:
    """What the embedding model reads for a message: "Name: text", with the media marker when there is one."""
    who = sender_words(ev)
    media = media_words(ev)
    body = f"{text} [{media}]" if media else text
    return f"{who[0]}: {body}" if who else body
