"""The one set of time options: `--since/--until/--tz` (and `--tz` alone for commands that only show times), parsed by
eventlog/recall/when.py in the user's zone, the same for every command.

The zone: `--tz`, else `$EVENTLOG_TZ`, else the config file's `tz` key, else the system's local zone (when.zone).
"""
from __future__ import annotations

import functools
from datetime import date, datetime, timezone, tzinfo
from pathlib import Path
from typing import Any, Callable

import click

from ..errors import EventlogError
from ..recall import when
from .common import command_root, fail, user_config

WHEN_HELP = when.FORMS  # the grammar's own list of its forms
TZ_HELP = "Time zone for WHEN values and shown times (default: $EVENTLOG_TZ, else the config's tz, else the system's)."


def user_zone(tz_name: str | None, root: Path) -> tzinfo:
    """when.zone with the config file's `tz` (read only when neither --tz nor $EVENTLOG_TZ decides)."""
    import os

    configured = where = None
    if tz_name is None and not os.environ.get("EVENTLOG_TZ"):
        cfg = user_config(root)
        configured, where = cfg.get("tz"), str(cfg.path)
    return when.zone(tz_name, configured=configured, configured_in=where or "the config file")


_tz_option = click.option("--tz", "tz_name", default=None, metavar="ZONE", help=TZ_HELP)
_since_option = click.option("--since", "since_text", default=None, metavar="WHEN",
                             help=f"From the start of WHEN, in the zone ({WHEN_HELP}).")
_until_option = click.option("--until", "until_text", default=None, metavar="WHEN",
                             help=f"Up to the end of WHEN, in the zone ({WHEN_HELP}).")


def time_range(f: Callable) -> Callable:
    """Adds --since WHEN, --until WHEN, --tz ZONE; the command receives `since`/`until` (aware datetimes or None,
    [since, until)) and `tz`."""

    @_since_option
    @_until_option
    @_tz_option
    @functools.wraps(f)
    def wrapper(*args: Any, since_text: str | None, until_text: str | None, tz_name: str | None, **kwargs: Any) -> Any:
        try:
            tz = user_zone(tz_name, command_root(kwargs.get("root_opt")))
            since = when.since(since_text, tz) if since_text is not None else None
            until = when.until(until_text, tz) if until_text is not None else None
            when.check_order(since, until)
        except EventlogError as exc:
            fail(str(exc))
        return f(*args, since=since, until=until, tz=tz, **kwargs)

    return wrapper


def zone_only(f: Callable) -> Callable:
    """Adds --tz ZONE to a command that shows times but selects none; it receives `tz`."""

    @_tz_option
    @functools.wraps(f)
    def wrapper(*args: Any, tz_name: str | None, **kwargs: Any) -> Any:
        try:
            tz = user_zone(tz_name, command_root(kwargs.get("root_opt")))
        except EventlogError as exc:
            fail(str(exc))
        return f(*args, tz=tz, **kwargs)

    return wrapper


def cutoff(old: str | None = None, old_help: str = "", old_is_start: bool = False) -> Callable[[Callable], Callable]:
    """--until WHEN and --tz ZONE for commands that act on everything up to a point (forget, compact, seal): the
    command receives `until` (the end of WHEN, an aware instant, or None) and `tz`. `old` is the command's earlier,
    documented flag, kept with the same grammar: `--before WHEN` means before the *start* of WHEN (old_is_start),
    `--through WHEN` up to its end (an alias of --until)."""

    def deco(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapper(*args: Any, until_text: str | None, tz_name: str | None, old_text: str | None = None,
                    **kwargs: Any) -> Any:
            if until_text is not None and old_text is not None:
                fail(f"--until and {old} are the same bound: give one")
            try:
                tz = user_zone(tz_name, command_root(kwargs.get("root_opt")))
                until: datetime | None = None
                if until_text is not None:
                    until = when.until(until_text, tz)
                elif old_text is not None:
                    p = when.period(old_text, tz)
                    until = p.start if old_is_start else p.end
            except EventlogError as exc:
                fail(str(exc))
            return f(*args, until=until, tz=tz, **kwargs)

        wrapper = _tz_option(wrapper)  # shown in --help as --until, the older flag, --tz
        if old is not None:
            wrapper = click.option(old, "old_text", default=None, metavar="WHEN", help=old_help)(wrapper)
        return _until_option(wrapper)

    return deco


def first_day_from(until: datetime | None) -> date | None:
    """The first UTC day file that is not wholly before `until`: the day files dated before it hold only events
    before `until`, and the commands that act on whole day files (compact, forget, seal) stop there."""
    return until.astimezone(timezone.utc).date() if until else None
