"""Which files a query reads: every day file in scope exactly once — from its Parquet unit when the unit's record of
that file still matches the file's identity (eventlog/recall/freshness.py), else from the JSONL. Never neither, never both.

Scope bounds are exact UTC instants ([since, until)); file pruning uses the UTC day files that can hold them
(file names are UTC days of ts, `when.utc_days`), and the views apply the exact bounds to each event's ts.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import EventlogError
from ..store import layout
from ..store.schema import ACCOUNT_RE, CHAT_ID_RE, DEFAULT_ACCOUNT
from . import freshness
from .when import check_order, utc_days

DLP_FILES = {"dlp_alerts": "dlp/alerts.jsonl", "dlp_reviews": "dlp/reviews.jsonl"}


@dataclass(frozen=True)
class Scope:
    """Which part of the log a command looks at: chats, and [since, until) as aware datetimes (None: unbounded).
    `tz` is the user's zone, used only to display timestamps."""

    root: Path
    chats: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    tz: tzinfo | None = None
    accounts: tuple[str, ...] | None = None  # OpenClaw accounts (None: all; "default": events without one)

    def days(self) -> tuple[date | None, date | None]:
        """First and last UTC day file in scope."""
        return utc_days(self.since, self.until)


@dataclass
class Sources:
    """The files a query reads."""

    jsonl: list[str] = field(default_factory=list)  # absolute paths of day files read as JSONL
    parquet: list[str] = field(default_factory=list)  # Parquet units with at least one covered file in scope
    covered: list[str] = field(default_factory=list)  # relpaths read from Parquet instead of JSONL
    excluded: list[str] = field(default_factory=list)  # relpaths whose Parquet rows must not be read (changed/gone)
    stale: list[str] = field(default_factory=list)  # units with a changed file (those files come from JSONL)
    dlp: dict[str, str] = field(default_factory=dict)  # view name → absolute path of an existing stream


def scope_from(root: Path, chats: Iterable[str] | None, since: datetime | None, until: datetime | None,
               tz: tzinfo | None = None, accounts: Iterable[str] | None = None) -> Scope:
    check_order(since, until)
    chats_t = tuple(chats) if chats else None
    for c in chats_t or ():
        if not CHAT_ID_RE.fullmatch(c) or c in (".", ".."):
            raise EventlogError(f"--chat {c!r}: not a chat id")
    accounts_t = tuple(accounts) if accounts else None
    for a in accounts_t or ():
        if not ACCOUNT_RE.fullmatch(a):
            raise EventlogError(f"--account {a[:64]!r}: not an OpenClaw account id")
    return Scope(root=root, chats=chats_t, since=since, until=until, tz=tz, accounts=accounts_t)


def _day_files(path: str, rel: str, y: int, m: int, first: date | None, last: date | None
               ) -> Iterator[tuple[str, os.stat_result]]:
    """(relpath, stat) of the regular day files of one chat-month directory within [first, last]: the stat comes
    with the listing (DirEntry), so binding a file by its identity costs no extra call."""
    for e, _ in layout.day_entries(path, y, m, first, last):
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            yield f"{rel}/{e.name}", e.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue


def plan(scope: Scope) -> Sources:
    """Bind every day file in scope exactly once: Parquet if its unit's record of it matches its identity, else JSONL.
    Parquet rows of a unit's files that are not covered (changed, gone, racy) are excluded by `file`."""
    from .compact import load_units

    first, last = scope.days()
    units = {u.name: u for u in load_units(scope.root, first, last)}
    src = Sources()
    jsonl: list[str] = []
    covered: dict[str, set[str]] = {}
    stale: set[str] = set()
    months = ((first.year, first.month) if first else None, (last.year, last.month) if last else None)
    # the default account's files may still hold other accounts' lines (a log not migrated yet): the views filter rows
    accounts = None if scope.accounts is None else {*scope.accounts, DEFAULT_ACCOUNT}
    for rel, path, y, m in layout.month_dirs(scope.root, scope.chats or None, *months, accounts=accounts):
        unit = units.get(f"{y:04d}-{m:02d}")
        for frel, st in _day_files(path, rel, y, m, first, last):
            if unit is not None and freshness.same(unit.sources.get(frel), freshness.stat_key(st)):
                covered.setdefault(unit.name, set()).add(frel)
            else:
                jsonl.append(frel)
    for name in sorted(covered):
        unit = units[name]
        src.parquet.append(str(unit.parquet))
        src.covered.extend(sorted(covered[name]))
        # Every other file of the unit that the bounds could let through must not come from it.
        src.excluded.extend(sorted(f for f in unit.sources if f not in covered[name] and _maybe_in(f, scope)))
    for name, unit in units.items():
        # Changed or vanished since compaction (racy files, never trusted, are read from JSONL silently).
        if any(key is not None and f not in covered.get(name, ()) and _maybe_in(f, scope)
               for f, key in unit.sources.items()):
            stale.add(name)
    src.stale = sorted(stale)
    src.jsonl = [str(scope.root / rel) for rel in sorted(jsonl)]
    for view, rel in DLP_FILES.items():
        if (scope.root / rel).is_file():
            src.dlp[view] = str(scope.root / rel)
    return src


def _maybe_in(relpath: str, scope: Scope) -> bool:
    """Whether rows of this day file could pass the scope's chat and day bounds."""
    parts = relpath.split("/")
    if len(parts) != 7:
        return True
    if scope.chats and parts[3] not in scope.chats:
        return False
    first, last = scope.days()
    try:
        day = date(int(parts[4]), int(parts[5]), int(parts[6][:2]))
    except ValueError:
        return True
    return not ((first and day < first) or (last and day > last))
