"""`eventlog stats`: events and bytes per channel / chat / day.

A day file whose whole UTC day lies in the asked period and in one day of the zone is counted from its newlines (no
JSON parsing). Only the others — the files at the period's edges, and under a zone other than UTC every file, since a
UTC day then spans two local days — are read line by line for each event's ts.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..errors import EventlogError
from .layout import LogFile, log_files, utc_days

BY = ("channel", "chat", "day")


def _count_lines(path: Path) -> tuple[int, int]:
    lines = size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines, size


def _ts(line: bytes) -> datetime | None:
    try:
        ev = orjson.loads(line)
        ts = ev.get("ts") if isinstance(ev, dict) else None
        return datetime.fromisoformat(ts.replace("Z", "+00:00")) if isinstance(ts, str) else None
    except (orjson.JSONDecodeError, ValueError):
        return None


def _by_event(lf: LogFile, since: datetime | None, until: datetime | None, tz: tzinfo
              ) -> Iterator[tuple[str, int, int]]:
    """(local day, events, bytes) of one file, event by event. A line without a readable ts (a torn tail, damage)
    counts at its file's UTC day start, as a whole-file count would have counted it."""
    start = datetime(lf.day.year, lf.day.month, lf.day.day, tzinfo=timezone.utc)
    per_day: dict[str, list[int]] = {}
    with open(lf.path, "rb") as f:
        for line in f:
            t = _ts(line) or start
            if (since and t < since) or (until and t >= until):
                continue
            agg = per_day.setdefault(t.astimezone(tz).date().isoformat(), [0, 0])
            agg[0] += line.endswith(b"\n")
            agg[1] += len(line)
    for day, (n, size) in per_day.items():
        yield day, n, size


def _whole(lf: LogFile, since: datetime | None, until: datetime | None, tz: tzinfo, by_day: bool) -> str | None:
    """The local day of the whole file when its newline count answers (None: read it event by event)."""
    start = datetime(lf.day.year, lf.day.month, lf.day.day, tzinfo=timezone.utc)
    end = start + timedelta(days=1)
    if (since and start < since) or (until and end > until):
        return None
    local = start.astimezone(tz).date()
    if by_day and (end - timedelta(microseconds=1)).astimezone(tz).date() != local:
        return None
    return local.isoformat()


def stats(root: Path, by: str = "chat", chat: str | None = None, since: datetime | None = None,
          until: datetime | None = None, tz: tzinfo = timezone.utc) -> Iterator[dict[str, Any]]:
    """Rows {channel, [chat_id], [day], files, events, bytes}, sorted; `by` = channel | chat | day; `since`/`until`
    exact instants [since, until); `day` is the day in zone `tz`. `files` counts the day files read."""
    if by not in BY:
        raise EventlogError(f"--by must be one of {', '.join(BY)}")
    first, last = utc_days(since, until)
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for lf in log_files(root, chat, first, last):
        key: tuple[Any, ...] = (lf.channel,)
        row = {"channel": lf.channel}
        if by in ("chat", "day"):
            key += (lf.chat_id,)
            row["chat_id"] = lf.chat_id
        whole = _whole(lf, since, until, tz, by == "day")
        if whole is not None:
            lines, size = _count_lines(lf.path)
            parts: Iterator[tuple[str, int, int]] = iter([(whole, lines, size)])
        else:
            parts = _by_event(lf, since, until, tz)
        counted = False
        for day, lines, size in parts:
            k, r = (key + (day,), {**row, "day": day}) if by == "day" else (key, row)
            agg = groups.setdefault(k, {**r, "files": 0, "events": 0, "bytes": 0})
            agg["files"] += not counted or by == "day"
            agg["events"] += lines
            agg["bytes"] += size
            counted = True
    yield from (groups[k] for k in sorted(groups))
