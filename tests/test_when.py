"""`eventlog/recall/when.py`: what each WHEN form means, in the user's zone (the issue's example: UTC+3 at 01:30 on Dec 1)."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from eventlog.recall import when
from eventlog.errors import EventlogError

NOW = datetime(2026, 11, 30, 22, 30, tzinfo=timezone.utc)  # Tue Dec 1, 01:30 in Moscow (UTC+3); a Monday in UTC
MSK = when.zone("Europe/Moscow")


def z(s: str) -> datetime:
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


@pytest.mark.parametrize("text,start,end", [
    ("today", "2026-11-30T21:00:00Z", "2026-12-01T21:00:00Z"),
    ("yesterday", "2026-11-29T21:00:00Z", "2026-11-30T21:00:00Z"),  # Nov 30 in Moscow, not Nov 29
    ("1h", "2026-11-30T21:30:00Z", "2026-11-30T21:30:00.001Z"),
    ("90m", "2026-11-30T21:00:00Z", "2026-11-30T21:00:00.001Z"),
    ("2d", "2026-11-28T22:30:00Z", "2026-11-28T22:30:00.001Z"),
    ("this-week", "2026-11-29T21:00:00Z", "2026-12-06T21:00:00Z"),  # Monday Nov 30 .. Sunday Dec 6
    ("last-week", "2026-11-22T21:00:00Z", "2026-11-29T21:00:00Z"),
    ("this-month", "2026-11-30T21:00:00Z", "2026-12-31T21:00:00Z"),
    ("last-month", "2026-10-31T21:00:00Z", "2026-11-30T21:00:00Z"),
    ("tuesday", "2026-11-30T21:00:00Z", "2026-12-01T21:00:00Z"),  # today is Tuesday in Moscow: today
    ("mon", "2026-11-29T21:00:00Z", "2026-11-30T21:00:00Z"),
    ("wednesday", "2026-11-24T21:00:00Z", "2026-11-25T21:00:00Z"),  # the most recent one
    ("2026-11", "2026-10-31T21:00:00Z", "2026-11-30T21:00:00Z"),
    ("2026-11-15", "2026-11-14T21:00:00Z", "2026-11-15T21:00:00Z"),
    ("2026-11-15T12:00:00Z", "2026-11-15T12:00:00Z", "2026-11-15T12:00:00.001Z"),
    ("2026-11-15T12:00:00", "2026-11-15T09:00:00Z", "2026-11-15T09:00:00.001Z"),  # no offset: in the zone
    ("2026-11-15T12:00:00+01:00", "2026-11-15T11:00:00Z", "2026-11-15T11:00:00.001Z"),
])
def test_forms(text, start, end):
    p = when.period(text, MSK, NOW)
    assert (p.start, p.end) == (z(start), z(end))


def test_zone_sources(monkeypatch):
    assert when.zone("+05:30").utcoffset(None).total_seconds() == 5.5 * 3600
    assert when.zone(None, {"EVENTLOG_TZ": "Asia/Tokyo", "TZ": "UTC"}).key == "Asia/Tokyo"
    assert when.zone(None, {"TZ": ":Europe/Berlin"}).key == "Europe/Berlin"
    assert when.zone(None, {"TZ": "garbage/zone"}) == timezone.utc  # what libc does
    with pytest.raises(EventlogError):
        when.zone("Nowhere/Land")
    with pytest.raises(EventlogError):
        when.zone(None, {"EVENTLOG_TZ": "Nowhere/Land"})


def test_utc_days_cover_the_period():
    p = when.period("2026-12-01", MSK)
    assert when.utc_days(p.start, p.end) == (z("2026-11-30T00:00:00Z").date(), z("2026-12-01T00:00:00Z").date())


def test_fixed_offsets_have_names_duckdb_knows():
    """DuckDB 1.5's ICU knows no `GMT+03:00` (what duckdb_name gave): each whole-hour offset maps to its Etc/GMT zone
    (POSIX signs: +03:00 is Etc/GMT-3) and each half-hour one in STEADY_ZONES to a zone DuckDB shows at that offset."""
    import duckdb
    from datetime import timedelta

    con = duckdb.connect()
    offsets = [h * 60 for h in range(-12, 15) if h] + list(when.STEADY_ZONES)
    for mins in offsets:
        name = when.duckdb_name(timezone(timedelta(minutes=mins)))
        assert name is not None and not name.startswith("GMT"), mins
        con.execute("SET TimeZone = $z", {"z": name})
        shown = con.execute("SELECT date_part('timezone', TIMESTAMPTZ '2026-06-01 00:00:00+00')").fetchone()[0]
        assert shown == mins * 60, (mins, name, shown)


def test_steady_zones_kept_their_offset():
    """The half-hour zones stand in for a fixed offset only if they never moved: every month 1990-2037, no DST."""
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    for mins, key in when.STEADY_ZONES.items():
        tz = ZoneInfo(key)
        for year in range(1990, 2038):
            for month in range(1, 13):
                t = datetime(year, month, 15, 12, tzinfo=timezone.utc).astimezone(tz)
                assert t.utcoffset() == timedelta(minutes=mins) and not t.dst(), (key, t)
