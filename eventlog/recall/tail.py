"""`eventlog tail`: what to show first — the last N events, every event since WHEN, or what is new since a named
cursor — then, with follow, every event as it is appended. The cursor records what was shown, also when following
stops (Ctrl-C)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

from ..errors import EventlogError
from .follow import Cursor, Emitted, Follower, events_since, last_events
from .planner import scope_from


@dataclass
class TailQuery:
    count: int = 10  # the last `count` events first (when neither a cursor with history nor `since` says otherwise)
    since: datetime | None = None  # every event since (aware), in time order, instead of the last `count`
    until: datetime | None = None  # only events before (aware, exclusive); not with follow
    chats: tuple[str, ...] | None = None
    cursor: str | None = None  # <root>/state/cursors/NAME.json; its first run starts from `count` / `since`
    follow: bool = False


def tail(root: Path, q: TailQuery, on_event: Callable[[Emitted], None],
         on_following: Callable[[int], None] = lambda files: None) -> int:
    """Hand the first events to `on_event` and return how many there were; with `q.follow`, then keep handing it
    every appended event until interrupted (KeyboardInterrupt propagates, after the cursor is saved).
    `on_following` hears the number of files watched once following starts."""
    scope_from(root, q.chats, None, None)  # validates the chat ids
    if q.follow and q.until is not None:
        raise EventlogError("--until and -f do not go together: following prints what is appended from now on")
    chats: Iterable[str] | None = q.chats or None
    cur = Cursor(root, q.cursor) if q.cursor else None
    if cur is not None and cur.exists:
        new, offsets = cur.new_events(chats)
        first: Iterable[Emitted] = new
    else:
        # a new cursor starts where the log ends now: what is shown first is then "seen"
        offsets = cur.end_offsets(chats) if cur is not None else {}
        first = (events_since(root, q.since, chats, q.until) if q.since
                 else last_events(root, q.count, chats, q.until))
    shown = 0
    for e in first:  # events_since streams (one UTC day in memory at a time): counted, not kept
        on_event(e)
        shown += 1
    if cur is not None:
        cur.save(offsets)
    if not q.follow:
        return shown
    f = Follower(root, on_event, chats)
    on_following(f.start(offsets or None))
    try:
        f.run()
    finally:
        f.stop()
        if cur is not None:
            cur.save({**offsets, **f.offsets})
    return shown
