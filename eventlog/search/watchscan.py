"""index.scan for a root with a watch (watch.py): the log's directory tree kept in memory, updated from inotify events
instead of walked and stat'ed for every query.

Every directory the stat-based scan visits is watched — raw/, each channel, chats/, each chat, year and month — and
the root itself (raw/ created, removed or replaced by another symlink). The first scan (or the first after the watch
asked for it: an overflow, a removed or moved directory) walks everything, every month whatever the query's range,
adding each directory's watch before listing it, and marks every day as touched (checked against its unit, as in a
new process). After that a query handles only the events queued since the last one:

- a name in a month directory that is a day file (`dd.jsonl`: an append, a truncation, a `touch`, a rewrite or
  compaction renamed over it, a deletion) touches that day, whose files index.stale_reason then checks;
  other names there (the writers' `.lock`, `.lock.want`, temporary files) change no day file and are ignored;
- a name in any other directory of the tree that could be a subdirectory the scan walks (a new chat, year or month;
  one removed or renamed) drops that subtree's days (touched) and walks it again as it now is (touched);
- raw/ named in the root: everything again.

No event: the days and their directories are the last scan's, not one stat made.

The same watch spares update's two other per-query checks: a day's projection (project.load's stat, for every day in
scope) is trusted while no event named a file of that day in the units directory (`projections_seen`), and the month
packs are not compared with the units again while neither directory changed (`packs_checked`).
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..store.layout import RAW
from ..store.schema import ACCOUNT_RE, CHANNEL_RE, CHAT_ID_RE
from . import pack, store, watch

_DAY = re.compile(r"\d\d\.jsonl")
# per level: channel, chats|accounts, chat, year, month; another account's subtree (store/layout.py) goes
# accounts → <account> (level 6) → chats (level 7) → chat (level 2 again)
_PATS = {0: CHANNEL_RE, 1: re.compile(r"chats|accounts"), 2: CHAT_ID_RE, 3: re.compile(r"\d{4}"), 4: re.compile(r"\d\d"),
         6: re.compile(r"(?!default$)" + ACCOUNT_RE.pattern), 7: re.compile(r"chats")}
_MONTH = 5  # the level of a month directory


def _below(level: int, name: str) -> int:
    """The level of directory `name` found at `level`."""
    if level == 1:
        return 2 if name == "chats" else 6
    return 2 if level == 7 else level + 1
KEY = "raw-tree"


@dataclass
class Tree:
    dirs: dict[str, tuple[int, list[str]]] = field(default_factory=dict)  # directory above a month → (level, subdirs)
    months: dict[str, list[str]] = field(default_factory=dict)  # month directory → its days
    day_dirs: dict[str, set[str]] = field(default_factory=dict)  # day → month directories holding it


_TREES: dict[str, Tree] = {}
LOCK = threading.RLock()


def _walk(w: watch.Watch, t: Tree, d: str, level: int, touched: set[str]) -> None:
    if not w.add(d, KEY):  # the watch first, then the listing: a change meanwhile is queued
        return
    try:
        if level == _MONTH:
            days = [e.name for e in os.scandir(d) if _DAY.fullmatch(e.name)]
        else:
            subs = sorted(e.name for e in os.scandir(d) if e.is_dir() and _PATS[level].fullmatch(e.name))
    except (FileNotFoundError, NotADirectoryError):
        return
    if level == _MONTH:
        ym = d[-7:-3] + "-" + d[-2:] + "-"
        t.months[d] = [ym + n[:2] for n in days]
        for day in t.months[d]:
            t.day_dirs.setdefault(day, set()).add(d)
            touched.add(day)
        return
    t.dirs[d] = (level, subs)
    for s in subs:
        _walk(w, t, f"{d}/{s}", _below(level, s), touched)


def _drop(t: Tree, d: str, touched: set[str]) -> None:
    """Forget directory `d` and everything below it (its days touched)."""
    below = d + "/"
    for m in [m for m in t.months if m == d or m.startswith(below)]:
        for day in t.months.pop(m):
            t.day_dirs.get(day, set()).discard(m)
            touched.add(day)
    for x in [x for x in t.dirs if x == d or x.startswith(below)]:
        del t.dirs[x]


def _day_file(w: watch.Watch, t: Tree, m: str, name: str, touched: set[str]) -> None:
    day = f"{m[-7:-3]}-{m[-2:]}-{name[:2]}"
    touched.add(day)
    days = t.months[m]
    there = os.path.isfile(f"{m}/{name}")
    if there and day not in days:
        days.append(day)
        t.day_dirs.setdefault(day, set()).add(m)
    elif not there and day in days:
        days.remove(day)
        t.day_dirs.get(day, set()).discard(m)


def changes(root: Path) -> tuple[dict[str, set[str]], set[str]] | None:
    """(day → its month directories, the days touched since the last call) of the whole log, or None when the root has
    no usable watch (the caller scans by stat)."""
    w = watch.current(root)
    if w is None:
        return None
    key, raw = str(root), os.path.join(str(root), RAW)
    touched: set[str] = set()
    with LOCK:
        try:
            ch = w.take(KEY)
            t = _TREES.get(key)
            if ch is not None and t is not None and key in ch and RAW in ch[key]:
                ch = None
            if ch is None or t is None:
                old = _TREES.pop(key, None)
                if old is not None:
                    touched.update(old.day_dirs)
                t = Tree()
                if not w.add(key, KEY):
                    return None  # no root: nothing to watch
                _walk(w, t, raw, 0, touched)
                _TREES[key] = t
                return t.day_dirs, touched
            for d, names in ch.items():
                if d in t.months:
                    for n in names:
                        if _DAY.fullmatch(n):
                            _day_file(w, t, d, n, touched)
                elif d in t.dirs:
                    level = t.dirs[d][0]
                    for n in names:
                        if _PATS[level].fullmatch(n):
                            sub = f"{d}/{n}"
                            _drop(t, sub, touched)
                            _walk(w, t, sub, _below(level, n), touched)
                            subs = set(t.dirs[d][1]) - {n}
                            if sub in t.dirs or sub in t.months:
                                subs.add(n)
                            t.dirs[d] = (level, sorted(subs))
            return t.day_dirs, touched
        except watch.Unavailable:
            _TREES.pop(key, None)
            watch.failed(root, w)
            return None


_PROJ_OK: dict[str, dict[str, str]] = {}  # root → day → data file whose projection was found, while watched


def projections_seen(root: Path) -> dict[str, str] | None:
    """day → data file whose projection a watched root has seen present and unchanged since (no event naming it in
    the units directory), or None without a watch (every day's projection is stat'ed)."""
    w, key = watch.current(root), str(root)
    if w is None:
        return None
    try:
        ch = w.take("projections")
        ok = _PROJ_OK.setdefault(key, {})
        if ch is None:
            ok.clear()
            if not w.add(str(store.units_dir(root)), "projections"):
                w.forget("projections")  # no units directory yet: try again next time
                return None
        for names in ch.values() if ch else ():
            for n in names:
                ok.pop(n[:10], None)  # any file of a day's unit (its projection, data file, record) named
        return ok
    except watch.Unavailable:
        watch.failed(root, w)
        return None


_PACKS_OK: dict[str, set[tuple[str, str, str]] | None] = {}  # root → (months, today) needing no pack work


def packs_checked(root: Path, months: tuple[str, str], done: bool = False) -> bool:
    """With a watch on the units and packs directories: True if pack.update found nothing to do for `months` today
    and neither directory changed since (no record, data file or pack written or removed). The watches are added
    before pack.update reads (a False answer); `done` then records its empty answer."""
    w, key = watch.current(root), str(root)
    if w is None:
        return False
    at = (*months, pack.today())
    try:
        if done:
            if _PACKS_OK.get(key) is not None:
                _PACKS_OK[key].add(at)  # type: ignore[union-attr]
            return True
        ch = w.take("packs")
        if ch is None or ch or _PACKS_OK.get(key) is None:
            _PACKS_OK[key] = None
            if all(w.add(str(store.units_dir(root, sub)), "packs") for sub in ("units", pack.PACK_DIR)):
                _PACKS_OK[key] = set()
            else:
                w.forget("packs")
            return False
        return at in _PACKS_OK[key]  # type: ignore[operator]
    except watch.Unavailable:
        watch.failed(root, w)
        return False
