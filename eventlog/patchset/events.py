"""The patch set's system events (channel `system`, chat `eventlog`), written through the store's writer.

`patch:reapplied` / `patch:failed` come from `eventlog patch guard`; `tap:start` comes from the runtime tap in the
gateway (tap.mjs, through writer.mjs). All their fields are metadata (versions, hashes, outcomes): no content field.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Iterator

import orjson

from eventlog.store.layout import log_files
from eventlog.store.reader import iter_lines
from eventlog.store.writer import EventLog

CHANNEL = "system"
CHAT = "eventlog"


def now_ts() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record(root: Path, event: str, **fields: Any) -> dict[str, Any]:
    """Append one system event; returns it as written (with id, ts)."""
    ev = {"event": event, "channel": CHANNEL, "chat_id": CHAT, "ts": now_ts(), **fields}
    return EventLog(root).append(ev)


def _day_files(root: Path) -> list[Path]:
    return [lf.path for lf in log_files(root, CHAT, channel=CHANNEL)]  # by day, oldest first


def latest(root: Path, kinds: tuple[str, ...]) -> dict[str, Any] | None:
    """The newest system event of one of these kinds (by ts, then id), or None. Day files are per UTC day of `ts`,
    so the newest file that holds a match holds the newest match: older files are never opened."""
    for path in reversed(_day_files(root)):
        found = [ev for ev in _events_of(root, path) if ev.get("event") in kinds]
        if found:
            return max(found, key=lambda ev: (str(ev.get("ts")), str(ev.get("id"))))
    return None


def _events_of(root: Path, path: Path) -> Iterator[dict[str, Any]]:
    for _n, line in iter_lines(path, str(path.relative_to(root))):
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            yield ev
