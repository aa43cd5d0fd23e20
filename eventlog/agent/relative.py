"""Relative dates in the question itself ("what did we decide yesterday", "что было на прошлой неделе"): the period it
names, relative to the asking moment, through the one time grammar (eventlog/recall/when.py) — this module only maps
the phrases a person writes to when.py's names. The tool restricts its search to that period when the model passed no
since/until, and searches everything again (saying so) when the period holds no hit."""
from __future__ import annotations

import re
from datetime import datetime, tzinfo

from ..recall import when

# phrase (as written, lowercase) → when.py's name for the period
_PHRASES = (
    (r"\b(today|this morning|tonight)\b|сегодня", "today"),
    (r"\byesterday\b|вчера", "yesterday"),
    (r"\blast week\b|прошл\w* недел\w*", "last-week"),
    (r"\bthis week\b|(эт\w*|текущ\w*) недел\w*", "this-week"),
    (r"\blast month\b|прошл\w* месяц\w*", "last-month"),
    (r"\bthis month\b|(эт\w*|текущ\w*) месяц\w*", "this-month"),
)
_COMPILED = tuple((re.compile(p), name) for p, name in _PHRASES)


def question_period(query: str, tz: tzinfo, now: datetime | None = None) -> tuple[str, datetime, datetime] | None:
    """(the phrase's period name, its start, its end: aware instants [start, end) in zone `tz`) of the first relative
    date the question names, or None."""
    low = query.lower().replace("ё", "е")
    for rx, name in _COMPILED:
        if rx.search(low):
            p = when.period(name, tz, now)
            return name, p.start, p.end
    return None
