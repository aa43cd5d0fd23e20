"""Where things live under the log root, and date-range → file-list pruning (the one tree walker).

Layout (UTC dates of the events' ts; docs/log-format.md):
  raw/<channel>/chats/<chat_id>/<yyyy>/<mm>/<dd>.jsonl                         the default account
  raw/<channel>/accounts/<account>/chats/<chat_id>/<yyyy>/<mm>/<dd>.jsonl      any other account of the gateway
A partition is (channel, account, chat): its own files, chain, locks and seal stream. A private chat's id is the user's
id, so one person writing to two of the gateway's bots must not land in one file.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple

from .schema import ACCOUNT_RE, CHANNEL_RE, CHAT_ID_RE, DEFAULT_ACCOUNT

DEFAULT_CHANNEL = "telegram"
RAW = "raw"


def resolve_root(root: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    """--root, else $EVENTLOG_ROOT, else $OPENCLAW_STATE_DIR/eventlog, else ~/.openclaw/eventlog."""
    env = os.environ if env is None else env
    if root:
        return Path(root).expanduser().absolute()
    if env.get("EVENTLOG_ROOT"):
        return Path(env["EVENTLOG_ROOT"]).expanduser().absolute()
    if env.get("OPENCLAW_STATE_DIR"):
        return (Path(env["OPENCLAW_STATE_DIR"]).expanduser() / "eventlog").absolute()
    home = env.get("HOME") or str(Path.home())
    return Path(home, ".openclaw", "eventlog").absolute()


def root_source(root: str | None = None, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if root:
        return "--root"
    for name in ("EVENTLOG_ROOT", "OPENCLAW_STATE_DIR"):
        if env.get(name):
            return "$" + name
    return "default (~/.openclaw/eventlog)"


def locations(root: Path) -> list[tuple[str, Path]]:
    """Every place the project keeps something under the root (`eventlog path`)."""
    return [
        ("raw", root / RAW),
        ("seals", root / "seals"),
        ("checkpoints", root / "seals" / "checkpoints.jsonl"),  # the head (eventlog head)
        ("migrations", root / "migrations"),  # records of eventlog migrate
        ("dlp-alerts", root / "dlp" / "alerts.jsonl"),
        ("dlp-reviews", root / "dlp" / "reviews.jsonl"),
        ("dlp-key", root / "dlp" / "key"),
        ("dlp-allowlist", root / "dlp" / "allowlist.json"),
        ("parquet", root / "parquet"),
        ("tap-state", root / "tap"),  # the runtime tap's seen update ids per account (duplicate marking)
        ("tail-cursors", root / "state" / "cursors"),  # eventlog tail --cursor NAME
        ("search-index", root / "index"),  # eventlog index / search: derived, rebuildable
        ("lake-gateway", root / "state" / "lake-gateway"),  # eventlog lake push: this root's gateway name and id
    ]


def chat_relpath(channel: str, chat_id: str, account: str = DEFAULT_ACCOUNT) -> str:
    """The directory of one partition's day files."""
    if account == DEFAULT_ACCOUNT:
        return f"{RAW}/{channel}/chats/{chat_id}"
    return f"{RAW}/{channel}/accounts/{account}/chats/{chat_id}"


def day_relpath(channel: str, chat_id: str, ts: str, account: str = DEFAULT_ACCOUNT) -> str:
    """Relative path of the day file for a validated channel/chat/account and a normalised ts."""
    return f"{chat_relpath(channel, chat_id, account)}/{ts[0:4]}/{ts[5:7]}/{ts[8:10]}.jsonl"


def seal_relpath(channel: str, chat_id: str, account: str = DEFAULT_ACCOUNT) -> str:
    """The seal stream of one partition: seals/<channel>/<chat>.jsonl, seals/<channel>/accounts/<account>/<chat>.jsonl."""
    if account == DEFAULT_ACCOUNT:
        return f"seals/{channel}/{chat_id}.jsonl"
    return f"seals/{channel}/accounts/{account}/{chat_id}.jsonl"


def seal_streams(root: str | os.PathLike[str]) -> list[str]:
    """Relpaths of every partition's seal stream that exists, sorted: seals/<channel>/<chat>.jsonl, then that
    channel's seals/<channel>/accounts/<account>/<chat>.jsonl."""
    seals = os.path.join(os.fspath(root), "seals")
    out = []
    for ch in _names(seals, dirs=True):
        out += [f"seals/{ch}/{n}" for n in _names(f"{seals}/{ch}", dirs=False)]
        for acc in subdirs(f"{seals}/{ch}/accounts", ACCOUNT_RE):
            if acc != DEFAULT_ACCOUNT:
                out += [f"seals/{ch}/accounts/{acc}/{n}" for n in _names(f"{seals}/{ch}/accounts/{acc}", dirs=False)]
    return out


def _names(path: str, dirs: bool) -> list[str]:
    """Sorted subdirectories (dirs) or *.jsonl regular files of `path`."""
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    if dirs:
        return sorted(e.name for e in entries if e.is_dir())
    return sorted(e.name for e in entries if e.name.endswith(".jsonl") and e.is_file())


@dataclass(frozen=True, order=True)
class LogFile:
    day: date
    channel: str
    chat_id: str
    path: Path
    relpath: str
    account: str = DEFAULT_ACCOUNT


class DayPath(NamedTuple):
    """What a day file's relative path names (indexable as the (channel, chat_id, day) it was before accounts)."""
    channel: str
    chat_id: str
    day: date
    account: str

    @property
    def seal(self) -> str:
        return seal_relpath(self.channel, self.chat_id, self.account)


_DAY_FILE = re.compile(r"(\d{4})/(\d\d)/(\d\d)\.jsonl")


def parse_relpath(relpath: str) -> DayPath | None:
    """(channel, chat_id, day, account) of a day file's relative path, or None if it is not one."""
    parts = relpath.split("/")
    if len(parts) == 9 and parts[2] == "accounts" and parts[4] == "chats":
        account = parts[3]
        if account == DEFAULT_ACCOUNT or not ACCOUNT_RE.fullmatch(account):
            return None  # the default account has one place only: raw/<channel>/chats/
        del parts[2:4]
    else:
        account = DEFAULT_ACCOUNT
    if len(parts) != 7 or parts[0] != RAW or parts[2] != "chats":
        return None
    m = _DAY_FILE.fullmatch("/".join(parts[4:]))
    if not m or not CHANNEL_RE.fullmatch(parts[1]) or not CHAT_ID_RE.fullmatch(parts[3]):
        return None
    try:
        return DayPath(parts[1], parts[3], date(int(m[1]), int(m[2]), int(m[3])), account)
    except ValueError:
        return None


def _rel_parts(rel: str) -> tuple[str, str, str]:
    """(channel, account, chat) of a chat-month directory's relpath from month_dirs."""
    p = rel.split("/")
    return (p[1], p[3], p[5]) if p[2] == "accounts" else (p[1], DEFAULT_ACCOUNT, p[3])


# -- the one tree walker: the planner, the index, follow, verify and forget all list the log through these --------
Lister = Callable[[str, "re.Pattern[str]"], list[str]]
_Y = re.compile(r"\d{4}")
_MD = re.compile(r"\d\d")


def subdirs(path: str, pattern: "re.Pattern[str]") -> list[str]:
    """Sorted names of `path`'s subdirectories that match `pattern`. A symbolic link is not followed (d_type
    answers, no stat per entry): the log is the tree the writers made."""
    try:
        return sorted(e.name for e in os.scandir(path) if pattern.fullmatch(e.name) and e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def account_dirs(raw: str, channel: str, accounts: Iterable[str] | None = None, listdir: Lister = subdirs
                 ) -> list[tuple[str, str]]:
    """(account, relpath below raw/ of its chats/ directory) of one channel's accounts, the default first."""
    wanted = None if accounts is None else set(accounts)
    out = [(DEFAULT_ACCOUNT, f"{channel}/chats")] if wanted is None or DEFAULT_ACCOUNT in wanted else []
    for acc in listdir(f"{raw}/{channel}/accounts", ACCOUNT_RE):
        if acc != DEFAULT_ACCOUNT and (wanted is None or acc in wanted):
            out.append((acc, f"{channel}/accounts/{acc}/chats"))
    return out


def month_dirs(root: str | os.PathLike[str], chats: Iterable[str] | None = None, lo: tuple[int, int] | None = None,
               hi: tuple[int, int] | None = None, channel: str | None = None, listdir: Lister = subdirs,
               accounts: Iterable[str] | None = None) -> Iterator[tuple[str, str, int, int]]:
    """(relpath, path, year, month) of every chat-month directory, pruned by name: `chats` (None: every chat),
    months in [lo, hi] as (year, month), one `channel`, `accounts` (None: every account). Paths are strings (pathlib
    costs on hot paths). `listdir` lets a long-lived caller cache listings (the search index keys them by directory
    mtime)."""
    raw = os.path.join(os.fspath(root), RAW)
    chat_list = None if chats is None else [c for c in chats if CHAT_ID_RE.fullmatch(c)]
    acc_list = None if accounts is None else list(accounts)
    for ch in [channel] if channel else listdir(raw, CHANNEL_RE):
        for _, sub in account_dirs(raw, ch, acc_list, listdir):
            chats_dir = f"{raw}/{sub}"
            for chat in chat_list if chat_list is not None else listdir(chats_dir, CHAT_ID_RE):
                base = f"{chats_dir}/{chat}"
                for y in listdir(base, _Y):
                    if (lo and int(y) < lo[0]) or (hi and int(y) > hi[0]):
                        continue
                    for m in listdir(f"{base}/{y}", _MD):
                        ym = (int(y), int(m))
                        if (lo and ym < lo) or (hi and ym > hi):
                            continue
                        yield f"{RAW}/{sub}/{chat}/{y}/{m}", f"{base}/{y}/{m}", ym[0], ym[1]


def day_entries(path: str, y: int, m: int, first: date | None = None, last: date | None = None
                ) -> Iterator[tuple[os.DirEntry[str], date]]:
    """(entry, day) of every `dd.jsonl` of one chat-month directory with a real date in [first, last], in listing
    order; the caller decides whether it needs the entry to be a regular file (`entry.is_file(...)`)."""
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return
    for e in entries:
        name = e.name
        if len(name) != 8 or not name.endswith(".jsonl") or not name[:2].isdigit():
            continue
        try:
            day = date(y, m, int(name[:2]))
        except ValueError:
            continue
        if (first and day < first) or (last and day > last):
            continue
        yield e, day


def log_files(
    root: Path,
    chat: str | list[str] | None = None,
    since: date | None = None,
    until: date | None = None,
    channel: str | None = None,
    accounts: Iterable[str] | None = None,
) -> Iterator[LogFile]:
    """Day files under root, pruned by directory names before any file is opened. `since`/`until` are inclusive UTC
    dates; `accounts` None: every account. Sorted by (channel, account — the default first —, chat, day)."""
    chats = [chat] if isinstance(chat, str) else chat
    lo = (since.year, since.month) if since else None
    hi = (until.year, until.month) if until else None
    for rel, path, y, m in month_dirs(root, chats, lo, hi, channel, accounts=accounts):
        ch, acc, chat_id = _rel_parts(rel)
        found = sorted((e.name, day) for e, day in day_entries(path, y, m, since, until)
                       if e.is_file(follow_symlinks=False))
        for name, day in found:
            frel = f"{rel}/{name}"
            yield LogFile(day, ch, chat_id, root / frel, frel, acc)


def log_files_under(root: Path, directory: str | os.PathLike[str], chats: Iterable[str] | None = None
                    ) -> Iterator[LogFile]:
    """The day files below one directory of the tree (raw/, a channel, an account, a chat, a year or a month
    directory), pruned as `log_files` prunes: a watcher that sees a new directory lists just that subtree. Nothing
    outside raw/."""
    try:
        parts = list(Path(directory).relative_to(root).parts)
    except ValueError:
        return
    accounts: list[str] | None = None
    if len(parts) >= 3 and parts[2] == "accounts":
        if len(parts) == 3:
            raw = os.path.join(os.fspath(root), RAW)
            accounts = [a for a, _ in account_dirs(raw, parts[1]) if a != DEFAULT_ACCOUNT]
        elif parts[3] == DEFAULT_ACCOUNT or not ACCOUNT_RE.fullmatch(parts[3]) or (len(parts) > 4 and parts[4] != "chats"):
            return
        else:
            accounts = [parts[3]]
        del parts[2:5]
        parts[2:2] = ["chats"] if len(parts) > 2 else []
    elif len(parts) >= 3:
        accounts = [DEFAULT_ACCOUNT]
    if not parts or parts[0] != RAW or len(parts) > 6 or (len(parts) >= 3 and parts[2] != "chats"):
        return
    channel = parts[1] if len(parts) > 1 else None
    if channel is not None and not CHANNEL_RE.fullmatch(channel):
        return
    chat_list = list(chats) if chats is not None else None
    if len(parts) > 3:
        chat_list = [parts[3]] if chat_list is None or parts[3] in chat_list else []
    since = until = None
    if len(parts) > 4:
        if not (_Y.fullmatch(parts[4]) and (len(parts) < 6 or _MD.fullmatch(parts[5]))):
            return
        y = int(parts[4])
        m = int(parts[5]) if len(parts) > 5 else None
        if m is not None and not 1 <= m <= 12:
            return
        since = date(y, m or 1, 1)
        until = (date(y + (m or 12) // 12, (m or 12) % 12 + 1, 1) - timedelta(days=1))
    yield from log_files(root, chat_list, since, until, channel, accounts)


def utc_days(start: datetime | None, end: datetime | None) -> tuple[date | None, date | None]:
    """The first and last day files (UTC days of ts) that can hold an event in [start, end). What a user's time
    means is eventlog/recall/when.py's; this is only the layout's side of it."""
    first = start.astimezone(timezone.utc).date() if start else None
    last = (end.astimezone(timezone.utc) - timedelta(microseconds=1)).date() if end else None
    return first, last
