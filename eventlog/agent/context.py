"""The conversation around one event: `eventlog agent context ID` and the `eventlog_context` tool.

An event id is a ULID whose first 48 bits are the time it was written, which is within a day of the event's `ts` for
everything the tap writes — so the day files of that date (±1 day) are read first, and only if the id is not there
every file in scope (imported history can carry old `ts` values under new ids). Then the message events (with a text)
before and after it are taken from the same chat, continuing into earlier/later day files when one day runs out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

import orjson

from ..errors import EventlogError
from ..store.layout import LogFile, log_files
from ..store.reader import iter_lines
from ..store.schema import DEFAULT_ACCOUNT
from ..recall.grep import MESSAGE_EVENTS

ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MAX_AROUND = 20


class ContextError(EventlogError):
    """A malformed id."""


@dataclass
class Around:
    target: dict[str, Any]
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]


def ulid_date(eid: str) -> date:
    ms = 0
    for c in eid[:10]:
        ms = ms * 32 + _B32.index(c)
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).date()


def _is_message(ev: Any) -> bool:
    return isinstance(ev, dict) and ev.get("event") in MESSAGE_EVENTS and isinstance(ev.get("text"), str)


def _account_ok(ev: Any, accounts: tuple[str, ...] | None) -> bool:
    """The event belongs to one of `accounts` (None: any). By the field, not the file: a log written before accounts
    had files of their own holds other accounts' lines in the default account's file (`eventlog migrate`)."""
    return accounts is None or (isinstance(ev, dict) and ev.get("account", DEFAULT_ACCOUNT) in accounts)


def _listed(accounts: tuple[str, ...] | None) -> list[str] | None:
    return None if accounts is None else [*accounts, DEFAULT_ACCOUNT]


def _find(root: Path, eid: str, chats: tuple[str, ...] | None, accounts: tuple[str, ...] | None = None
          ) -> tuple[LogFile, int, dict[str, Any]] | None:
    d = ulid_date(eid)
    chat_list = list(chats) if chats else None
    near = list(log_files(root, chat=chat_list, since=d - timedelta(days=1), until=d + timedelta(days=1),
                          accounts=_listed(accounts)))
    seen = {lf.path for lf in near}
    rest = (lf for lf in log_files(root, chat=chat_list, accounts=_listed(accounts)) if lf.path not in seen)
    return _find_in(near, eid, accounts) or _find_in(rest, eid, accounts)


def around(root: Path, eid: str, *, before: int = 5, after: int = 5, chats: tuple[str, ...] | None = None,
           accounts: tuple[str, ...] | None = None) -> Around | None:
    """The event `eid` (only from `chats` and `accounts` when given) and up to before/after message events of its
    chat — the same chat of the same account — in order."""
    eid = eid.strip().strip("[]").strip().upper()  # the model may copy the brackets the hit line shows
    if not ULID.match(eid):
        raise ContextError(f"not an event id (a 26-character ULID): {eid[:40]!r}")
    hit = _find(root, eid, chats, accounts)
    return None if hit is None else _around(root, *hit, before, after)


Listings = dict[tuple[str, str, str], list[LogFile]]  # (channel, account, chat) → its day files by day


def around_event(root: Path, ev: dict[str, Any], *, before: int, after: int, listings: Listings | None = None
                 ) -> Around | None:
    """`around` for an event a search already holds (a hit: id, ts, chat_id, channel, account): its day file is the
    one its ts names, so no file is searched for the id — imported history carries ids minted long after its ts.
    Only that chat of that account is read: a hit's neighbours share its scope. `listings`: the chats' day files
    listed by an earlier call (the hits of one search share their chat; listing a year of day files costs more than
    reading the hit's day)."""
    eid, ts, chat = ev.get("id"), ev.get("ts"), ev.get("chat_id")
    if not isinstance(eid, str) or not ULID.match(eid) or not isinstance(chat, str):
        return None
    own = (str(ev.get("account", DEFAULT_ACCOUNT)),)
    hit = None
    try:
        day = date.fromisoformat(ts[:10]) if isinstance(ts, str) else None
    except ValueError:
        day = None
    if day is not None:
        hit = _find_in(log_files(root, chat=[chat], since=day, until=day, channel=ev.get("channel"),
                                 accounts=_listed(own)), eid, own)
    if hit is None:
        hit = _find(root, eid, (chat,), own)
    return None if hit is None else _around(root, *hit, before, after, listings)


def _find_in(files: Iterable[LogFile], eid: str, accounts: tuple[str, ...] | None
             ) -> tuple[LogFile, int, dict[str, Any]] | None:
    needle = b'"id":"' + eid.encode() + b'"'
    for lf in files:
        if lf.channel == "system":
            continue
        for num, line in iter_lines(lf.path):
            if needle in line:
                ev = _load(line)
                if isinstance(ev, dict) and ev.get("id") == eid and _account_ok(ev, accounts):
                    return lf, num, ev
    return None


def _around(root: Path, lf: LogFile, num: int, target: dict[str, Any], before: int, after: int,
            listings: Listings | None = None) -> Around:
    before, after = max(0, min(before, MAX_AROUND)), max(0, min(after, MAX_AROUND))
    own = (target.get("account", DEFAULT_ACCOUNT),)  # the target's partition: its account's chat, nobody else's
    prev: list[dict[str, Any]] = []
    nxt: list[dict[str, Any]] = []
    # Same file: everything before the line, everything after it. Erased lines (commitment form) have no text.
    for n, line in iter_lines(lf.path):
        if n == num:
            continue
        ev = _load(line)
        if not _is_message(ev) or not _account_ok(ev, own):
            continue
        (prev if n < num else nxt).append(ev)
    prev = prev[-before:] if before else []
    nxt = nxt[:after]
    if len(prev) == before and len(nxt) == after:
        return Around(target, prev, nxt)  # the day file held them: no listing of the chat's days
    key = (lf.channel, str(own[0]), lf.chat_id)
    files = listings.get(key) if listings is not None else None
    if files is None:
        # by day: a non-default account's chat is listed after the default account's files of the same chat id (a log
        # from before accounts had files of their own keeps their lines there, picked by the account field)
        files = sorted((f for f in log_files(root, chat=[lf.chat_id], accounts=_listed(own))
                        if f.channel == lf.channel), key=lambda f: f.day)
        if listings is not None:
            listings[key] = files
    idx = next(i for i, f in enumerate(files) if f.path == lf.path)
    i = idx - 1
    while len(prev) < before and i >= 0:
        msgs = [e for e in (_load(ln) for _, ln in iter_lines(files[i].path)) if _is_message(e) and _account_ok(e, own)]
        prev = msgs[-(before - len(prev)):] + prev
        i -= 1
    i = idx + 1
    while len(nxt) < after and i < len(files):
        msgs = [e for e in (_load(ln) for _, ln in iter_lines(files[i].path)) if _is_message(e) and _account_ok(e, own)]
        nxt += msgs[:after - len(nxt)]
        i += 1
    return Around(target, prev, nxt)


def _load(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def current_message(root: Path, chat: str, requester: str, days: int = 2,
                    accounts: tuple[str, ...] | None = None) -> str | None:
    """Id of the newest message this sender sent to this chat — the one the agent is answering right now (the tap
    logs every inbound message before the agent sees it), so a search can leave the question itself out. Only the
    chat's newest `days` day files are read."""
    files = sorted(f for f in log_files(root, chat=[chat], accounts=_listed(accounts)) if f.channel != "system")[-days:]
    for lf in reversed(files):
        last = None
        for _, line in iter_lines(lf.path):
            if b'"message:received"' not in line:
                continue
            ev = _load(line)
            frm = ev.get("from") if isinstance(ev, dict) else None
            if _is_message(ev) and ev.get("event") == "message:received" and isinstance(frm, dict) \
                    and str(frm.get("id")) == str(requester) and _account_ok(ev, accounts):
                last = ev.get("id")
        if last:
            return last
    return None
