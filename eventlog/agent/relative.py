"""Relative dates in the question itself ("what did we decide yesterday", "что было на прошлой неделе"): the period it
names, relative to the asking moment, through the one time grammar (eventlog/recall/when.py) — this module only maps
the phrases a person writes to when.py's periods. A ranked search (`eventlog search`, the agent tool's hybrid/bm25)
is restricted to that period when no since/until was given, and searches everything again (saying so) when the
period holds no hit — `search_question`, the one place both callers go through, so they rank alike.
"""
from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..recall import when

if TYPE_CHECKING:
    from ..search import SearchQuery, SearchResult

# phrase (as written, lowercase, ё as е) → when.py's name for the period. Checked in order: "позавчера" before
# "вчера", "day before yesterday" before "yesterday".
_PHRASES = (
    (r"\bday before yesterday\b|позавчера", "2-days-ago"),
    (r"\b(today|this morning|tonight)\b|сегодня", "today"),
    (r"\byesterday\b|вчера", "yesterday"),
    (r"\blast week\b|прошл\w* недел\w*", "last-week"),
    (r"\bthis week\b|(эт\w*|текущ\w*) недел\w*", "this-week"),
    (r"\blast month\b|прошл\w* месяц\w*", "last-month"),
    (r"\bthis month\b|(эт\w*|текущ\w*) месяц\w*", "this-month"),
    (r"\blast year\b|прошл\w* год\w*", "last-year"),
    (r"\bthis year\b|(эт\w*|текущ\w*) год\w*", "this-year"),
)
_COMPILED = tuple((re.compile(p), name) for p, name in _PHRASES)
# "3 days ago", "2 weeks ago", "5 дней назад", "неделю назад" (one): that day, that Monday-to-Sunday week
_AGO = re.compile(r"\b(\d{1,3}|a|one|two|three)\s+(day|week)s?\s+ago\b|"
                  r"(?:\b(\d{1,3}|один|одну|два|две|три)\s+)?(дн\w*|день|недел\w*)\s+назад")
_NUMBER = {"a": 1, "one": 1, "two": 2, "three": 3, "один": 1, "одну": 1, "два": 2, "две": 2, "три": 3}
MAX_AGO_DAYS = 3660  # a number past this is not a date the question means


def question_period(query: str, tz: tzinfo, now: datetime | None = None) -> tuple[str, datetime, datetime] | None:
    """(the phrase's period name, its start, its end: aware instants [start, end) in zone `tz`) of the first relative
    date the question names, or None."""
    low = query.lower().replace("ё", "е")
    now = now or datetime.now(timezone.utc)
    ago = _AGO.search(low)
    for rx, name in _COMPILED:
        m = rx.search(low)
        if m and (ago is None or m.start() <= ago.start()):
            return _named(name, tz, now)
    if ago:
        n_txt = ago[1] or ago[3]
        n = 1 if n_txt is None else _NUMBER.get(n_txt) or int(n_txt)
        week = (ago[2] or ago[4]).startswith(("week", "недел"))
        if 0 < n * (7 if week else 1) <= MAX_AGO_DAYS:
            day = now.astimezone(tz).date() - timedelta(days=n * (7 if week else 1))
            if week:
                first = day - timedelta(days=day.weekday())
                p, last = when.period(first.isoformat(), tz), when.period((first + timedelta(days=6)).isoformat(), tz)
                return f"{n}-weeks-ago", p.start, last.end
            p = when.period(day.isoformat(), tz)
            return f"{n}-days-ago", p.start, p.end
    return None


def _named(name: str, tz: tzinfo, now: datetime) -> tuple[str, datetime, datetime]:
    if name.endswith("-year"):
        year = now.astimezone(tz).year - (name == "last-year")
        p = when.period(str(year), tz)
    elif name == "2-days-ago":
        p = when.period((now.astimezone(tz).date() - timedelta(days=2)).isoformat(), tz)
    else:
        p = when.period(name, tz, now)
    return name, p.start, p.end


def search_question(root: Path, q: SearchQuery, tz: tzinfo, *, now: datetime | None = None,
                    exclude: str | None = None, **kw: Any) -> tuple[SearchResult, str | None]:
    """`eventlog.search.search(root, q, **kw)` with the question's relative date: when `q` has no since/until and its
    text names a period, the search is restricted to it; when that finds nothing (`exclude`, the question being
    answered, does not count) it is searched again without, and the note says which. (result, note or None)."""
    from ..search import search

    rel = question_period(q.text, tz, now) if q.since is None and q.until is None and q.mode not in (
        "text", "fuzzy") else None
    if rel is None:
        return search(root, q, **kw), None
    name, start, end = rel
    span = f"{name} ({when.iso(start)}..{when.iso(end)})"
    res = search(root, replace(q, since=start, until=end), **kw)
    if any(h.id != exclude for h in res.hits):
        return res, f"searched {span}, the period the question names; pass since/until to search other days"
    return search(root, q, **kw), f"nothing in {span}, the period the question names; searched every day"
