"""`--since/--until/--tz` for commands that select by time, as exact instants in the user's zone (eventlog/recall/when.py)."""
from __future__ import annotations

import functools
from typing import Any, Callable

import click

from ..errors import EventlogError
from .common import fail

WHEN_HELP = ("today, yesterday, 30m/12h/7d/2w, this-week, last-week, this-month, last-month, monday…, YYYY-MM, "
             "YYYY-MM-DD, RFC 3339")


def time_range(f: Callable) -> Callable:
    """Adds --since WHEN, --until WHEN, --tz ZONE; the command receives `since`/`until` (aware datetimes or None,
    [since, until)) and `tz`."""

    @click.option("--tz", "tz_name", default=None, metavar="ZONE",
                  help="Time zone for WHEN values and displayed times (default: $EVENTLOG_TZ, else the system's).")
    @click.option("--until", "until_text", default=None, metavar="WHEN",
                  help=f"Up to the end of WHEN, in --tz ({WHEN_HELP}).")
    @click.option("--since", "since_text", default=None, metavar="WHEN",
                  help=f"From the start of WHEN, in --tz ({WHEN_HELP}).")
    @functools.wraps(f)
    def wrapper(*args: Any, since_text: str | None, until_text: str | None, tz_name: str | None, **kwargs: Any) -> Any:
        from ..recall import when

        try:
            tz = when.zone(tz_name)
            since = when.since(since_text, tz) if since_text is not None else None
            until = when.until(until_text, tz) if until_text is not None else None
            when.check_order(since, until)
        except EventlogError as exc:
            fail(str(exc))
        return f(*args, since=since, until=until, tz=tz, **kwargs)

    return wrapper
