"""Time as the user means it: a WHEN value (`--since/--until/--before/...`) in the user's zone → exact UTC instants.

A WHEN names a *period*: `today` is a day, `2026-11` a month, `this-week` a week (Monday first), `2h` or an RFC 3339
timestamp an instant (a period one millisecond long — the log's precision). `--since WHEN` starts at the period's
start, `--until WHEN` ends at its end (exclusive), so `--since monday --until yesterday` covers both days whole.

Forms: today, yesterday, now, Nm/Nh/Nd/Nw (minutes/hours/days/weeks before now), this-week, last-week, this-month,
last-month, a weekday name (monday… or mon…: the most recent one, today included), YYYY, YYYY-MM, YYYY-MM-DD,
RFC 3339 (`2026-11-30T12:00:00Z`, `…+03:00`; without an offset: in the zone).

Zone: `--tz ZONE`, else `$EVENTLOG_TZ`, else the config file's `tz` key, else the system's local zone (`$TZ`
respected, else /etc/localtime): IANA names (`Europe/Moscow`), `UTC`, or a fixed offset (`+03:00`). The log itself stays UTC: file names are UTC days, so a
period maps to the UTC day files that can hold it (`utc_days`), and the exact bounds are applied to each event's ts.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Mapping

from ..errors import EventlogError
from ..store.layout import utc_days  # noqa: F401  (the day files a period maps to: the layout's, re-exported)

MS = timedelta(milliseconds=1)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
FORMS = ("today, yesterday, now, 30m/12h/7d/2w, this-week, last-week, this-month, last-month, a weekday name, "
         "YYYY, YYYY-MM, YYYY-MM-DD, RFC 3339")
_REL = re.compile(r"(\d{1,9})\s*(m|min|h|d|w)")
_OFFSET = re.compile(r"(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d\d))?")
_MONTH = re.compile(r"(\d{4})-(\d\d)")
_YEAR = re.compile(r"\d{4}")


class BadTime(EventlogError):
    """A WHEN value or a zone that cannot be understood."""


@dataclass(frozen=True)
class Period:
    """[start, end) as aware UTC datetimes."""

    start: datetime
    end: datetime


def zone(name: str | None = None, env: Mapping[str, str] | None = None, configured: str | None = None,
         configured_in: str = "the config file") -> tzinfo:
    """--tz NAME, else $EVENTLOG_TZ, else the config file's `tz` (`configured`, read by the caller: eventlog/config.py),
    else the system's local zone ($TZ, else /etc/localtime, else UTC)."""
    env = os.environ if env is None else env
    if name is not None:
        return _named(name, "--tz")
    if env.get("EVENTLOG_TZ"):
        return _named(env["EVENTLOG_TZ"], "$EVENTLOG_TZ")
    if configured:
        return _named(configured, f"{configured_in}: tz")
    tz_env = env.get("TZ")
    if tz_env:
        try:
            return _named(tz_env.lstrip(":"), "$TZ")
        except BadTime:
            return timezone.utc  # what libc does with a TZ it cannot read
    return _system_zone()


def _system_zone() -> tzinfo:
    """/etc/localtime under its IANA name when it links into a zoneinfo tree (DuckDB needs a name, see duckdb_name)."""
    from zoneinfo import ZoneInfo

    try:
        target = os.path.realpath("/etc/localtime")
        key = target.partition("/zoneinfo/")[2]
        if key:
            try:
                return ZoneInfo(key)
            except (ValueError, OSError, LookupError):
                pass
        with open("/etc/localtime", "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        return timezone.utc


# Fixed offsets that are not whole hours have no Etc/GMT zone; each of these IANA zones has kept exactly that offset,
# without daylight saving, since 1990 at least (tests/test_when.py checks them against the zone database).
STEADY_ZONES = {330: "Asia/Kolkata", 345: "Asia/Kathmandu", 270: "Asia/Kabul", 390: "Asia/Yangon",
                570: "Australia/Darwin", -570: "Pacific/Marquesas"}


def duckdb_name(tz: tzinfo) -> str | None:
    """The zone as DuckDB's TimeZone setting takes it: an IANA name; for a fixed offset of whole hours the Etc/GMT
    zone (POSIX signs: +03:00 is Etc/GMT-3), for a half-hour one a zone that has kept it (STEADY_ZONES). DuckDB 1.5's
    ICU knows no `GMT+03:00`. None when there is no name (a zone file without a key); an offset with neither name
    comes back as `GMT±hh:mm`, which DuckDB refuses (query.connect: one line, exit 2)."""
    key = getattr(tz, "key", None)
    if isinstance(key, str) and key != "localtime":
        return key
    off = tz.utcoffset(None)
    if off is None:
        return None
    if not off:
        return "UTC"
    signed = int(off.total_seconds()) // 60 if off > timedelta(0) else -(int(-off.total_seconds()) // 60)
    if signed % 60 == 0 and -12 * 60 <= signed <= 14 * 60:
        return f"Etc/GMT{'-' if signed > 0 else '+'}{abs(signed) // 60}"
    if signed in STEADY_ZONES:
        return STEADY_ZONES[signed]
    mins = abs(signed)
    return f"GMT{'-' if signed < 0 else '+'}{mins // 60:02d}:{mins % 60:02d}"


def _named(name: str, what: str) -> tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    text = name.strip()
    if text.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    m = _OFFSET.fullmatch(text.lower())
    if m:
        h, mi = int(m[2]), int(m[3] or 0)
        if h > 23 or mi > 59:
            raise BadTime(f"{what}: offset out of range: {name!r}")
        delta = timedelta(hours=h, minutes=mi)
        return timezone(-delta if m[1] == "-" else delta)
    try:
        if not text or "\x00" in text or text.startswith("/") or ".." in text.split("/"):
            raise ValueError
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise BadTime(f"{what}: unknown time zone {name!r} (an IANA name like Europe/Moscow, UTC, or +03:00)") from None


def _local_midnight(day: date, tz: tzinfo) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=tz).astimezone(timezone.utc)


def _days(first: date, n_days: int, tz: tzinfo) -> Period:
    return Period(_local_midnight(first, tz), _local_midnight(first + timedelta(days=n_days), tz))


def _month(y: int, m: int, tz: tzinfo) -> Period:
    nxt = date(y + (m == 12), m % 12 + 1, 1) if (y, m) != (9999, 12) else None
    start = _local_midnight(date(y, m, 1), tz)
    return Period(start, _local_midnight(nxt, tz) if nxt else datetime.max.replace(tzinfo=timezone.utc))


def _instant(t: datetime) -> Period:
    """An instant at the log's precision (ms), so every bound compares the same as a timestamp and as ts text."""
    t = t.astimezone(timezone.utc)
    t = t.replace(microsecond=t.microsecond - t.microsecond % 1000)
    return Period(t, t + MS)


def period(text: str, tz: tzinfo, now: datetime | None = None) -> Period:
    """The period a WHEN value names, in zone `tz` (see the module doc). Raises BadTime (one line) otherwise."""
    try:
        return _period(text, tz, now)
    except BadTime:
        raise
    except (ValueError, OverflowError):
        raise BadTime(f"time out of range: {_show(text)}") from None


def _show(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "…")


def _period(text: str, tz: tzinfo, now: datetime | None) -> Period:
    now = (now or datetime.now(timezone.utc)).astimezone(tz)
    t = text.strip().lower()
    today = now.date()
    if t == "today":
        return _days(today, 1, tz)
    if t == "yesterday":
        return _days(today - timedelta(days=1), 1, tz)
    if t == "now":
        return _instant(now)
    if t in ("this-week", "last-week"):
        monday = today - timedelta(days=today.weekday()) - timedelta(weeks=t == "last-week")
        return _days(monday, 7, tz)
    if t in ("this-month", "last-month"):
        y, m = today.year, today.month
        if t == "last-month":
            y, m = (y - 1, 12) if m == 1 else (y, m - 1)
        return _month(y, m, tz)
    for i, name in enumerate(WEEKDAYS):
        if t in (name, name[:3]):
            return _days(today - timedelta(days=(today.weekday() - i) % 7), 1, tz)
    rel = _REL.fullmatch(t)
    if rel:
        n, unit = int(rel[1]), rel[2]
        delta = {"m": timedelta(minutes=n), "min": timedelta(minutes=n), "h": timedelta(hours=n),
                 "d": timedelta(days=n), "w": timedelta(weeks=n)}[unit]
        return _instant(now - delta)
    if _YEAR.fullmatch(t):
        y = int(t)
        if y < 1:
            raise BadTime(f"time out of range: {_show(text)}")
        return Period(_local_midnight(date(y, 1, 1), tz), _month(y, 12, tz).end)
    mo = _MONTH.fullmatch(t)
    if mo:
        if not 1 <= int(mo[2]) <= 12 or int(mo[1]) < 1:
            raise BadTime(f"not a month: {_show(text)}")
        return _month(int(mo[1]), int(mo[2]), tz)
    if len(t) == 10 and t[4:5] == "-":
        try:
            return _days(date.fromisoformat(t), 1, tz)
        except ValueError:
            raise BadTime(f"not a date: {_show(text)}") from None
    try:
        parsed = datetime.fromisoformat(text.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        raise BadTime(f"not a time: {_show(text)} (use {FORMS})") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=tz)
    return _instant(parsed)


def since(text: str, tz: tzinfo, now: datetime | None = None) -> datetime:
    """The first instant of `--since WHEN`."""
    return period(text, tz, now).start


def until(text: str, tz: tzinfo, now: datetime | None = None) -> datetime:
    """The exclusive end of `--until WHEN`."""
    return period(text, tz, now).end


def check_order(start: datetime | None, end: datetime | None) -> None:
    if start and end and start >= end:
        raise BadTime(f"--since {iso(start)} is not before --until {iso(end)}")


def iso(t: datetime) -> str:
    """RFC 3339 UTC with milliseconds — the log's own format."""
    t = t.astimezone(timezone.utc)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
            f"{t.microsecond // 1000:03d}Z")
