"""`eventlog stats`: events and bytes per channel / account / chat / day.

An account's events are those in its files (a log written before accounts had files of their own: `eventlog migrate`).
A day file whose whole UTC day lies in the asked period and in one day of the zone is counted from its newlines (no
JSON parsing). Only the others — the files at the period's edges, and under a zone other than UTC every file, since a
UTC day then spans two local days — are read line by line for each event's ts.
"""
from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..errors import BadEvent, EventlogError
from .layout import LogFile, log_files, utc_days
from .schema import DEFAULT_ACCOUNT, normalize_ts

BY = ("channel", "account", "chat", "day")


def _count_lines(path: Path) -> tuple[int, int]:
    lines = size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines, size


_TS_KEY = b'"ts":"'
_TS_LEN = len("2026-12-01T21:30:00.000Z")  # the writer's canonical ts (schema.normalize_ts)


def _ts(line: bytes) -> str | None:
    """The event's ts as written. A line holding the key once holds it at the top level (a `"ts":"` inside a string
    value is escaped, so only a key matches): sliced, no JSON parse — the parse is most of the cost. Otherwise parse."""
    i = line.find(_TS_KEY)
    if i >= 0 and line.find(_TS_KEY, i + 1) < 0:
        end = i + len(_TS_KEY) + _TS_LEN
        if line[end:end + 1] == b'"':
            return line[i + len(_TS_KEY):end].decode("ascii", "replace")
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    ts = ev.get("ts") if isinstance(ev, dict) else None
    try:
        return normalize_ts(ts)
    except BadEvent:
        return None


def _iso(t: datetime) -> str:
    return normalize_ts(t.astimezone(timezone.utc).isoformat())


def _local_days(day_start: datetime, tz: tzinfo) -> tuple[list[str], list[str]]:
    """Where a UTC day's events change local date in `tz`: (the instants as ts text, sorted; the local date before the
    first and after each). ts text compares as time, so each event is placed by bisecting its ts."""
    first = day_start.astimezone(tz).date()
    last = (day_start + timedelta(days=1) - timedelta(microseconds=1)).astimezone(tz).date()
    cuts, labels = [], [first.isoformat()]
    d = first
    while d < last:
        d += timedelta(days=1)
        cuts.append(_iso(datetime(d.year, d.month, d.day, tzinfo=tz)))
        labels.append(d.isoformat())
    return cuts, labels


def _by_event(lf: LogFile, since: datetime | None, until: datetime | None, tz: tzinfo
              ) -> Iterator[tuple[str, int, int]]:
    """(local day, events, bytes) of one file, event by event. A line without a readable ts (a torn tail, damage)
    counts at its file's UTC day start, as a whole-file count would have counted it."""
    start = datetime(lf.day.year, lf.day.month, lf.day.day, tzinfo=timezone.utc)
    lo, hi, at_start = (_iso(since) if since else None), (_iso(until) if until else None), _iso(start)
    cuts, labels = _local_days(start, tz)
    per_day: dict[str, list[int]] = {}
    with open(lf.path, "rb") as f:
        for line in f:
            ts = _ts(line) or at_start
            if (lo and ts < lo) or (hi and ts >= hi):
                continue
            agg = per_day.setdefault(labels[bisect_right(cuts, ts)], [0, 0])
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
          until: datetime | None = None, tz: tzinfo = timezone.utc, accounts: list[str] | None = None
          ) -> Iterator[dict[str, Any]]:
    """Rows {channel, [account], [chat_id], [day], files, events, bytes}, sorted; `by` = channel | account | chat |
    day; `since`/`until` exact instants [since, until); `day` is the day in zone `tz`. `files` counts the day files
    read. A chat is (account, chat id): one user's private chat with two of the gateway's bots is two rows."""
    if by not in BY:
        raise EventlogError(f"--by must be one of {', '.join(BY)}")
    first, last = utc_days(since, until)
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for lf in log_files(root, chat, first, last, accounts=accounts):
        key: tuple[Any, ...] = (lf.channel,)
        row = {"channel": lf.channel}
        if by != "channel":
            key += (lf.account != DEFAULT_ACCOUNT, lf.account)  # the default account first, as the tree lists it
            row["account"] = lf.account
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
