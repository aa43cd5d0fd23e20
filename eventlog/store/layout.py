"""Where things live under the log root, and date-range → file-list pruning.

Layout: raw/<channel>/chats/<chat_id>/<yyyy>/<mm>/<dd>.jsonl (UTC dates of the events' ts).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, Mapping

from ..errors import EventlogError
from .schema import CHANNEL_RE, CHAT_ID_RE

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
    ]


def day_relpath(channel: str, chat_id: str, ts: str) -> str:
    """Relative path of the day file for a validated channel/chat and a normalised ts."""
    return f"{RAW}/{channel}/chats/{chat_id}/{ts[0:4]}/{ts[5:7]}/{ts[8:10]}.jsonl"


def seal_relpath(channel: str, chat_id: str) -> str:
    return f"seals/{channel}/{chat_id}.jsonl"


@dataclass(frozen=True, order=True)
class LogFile:
    day: date
    channel: str
    chat_id: str
    path: Path
    relpath: str


_DAY_FILE = re.compile(r"(\d{4})/(\d\d)/(\d\d)\.jsonl")


def parse_relpath(relpath: str) -> tuple[str, str, date] | None:
    """(channel, chat_id, day) of a day file's relative path, or None if it is not one."""
    parts = relpath.split("/")
    if len(parts) != 7 or parts[0] != RAW or parts[2] != "chats":
        return None
    m = _DAY_FILE.fullmatch("/".join(parts[4:]))
    if not m or not CHANNEL_RE.fullmatch(parts[1]) or not CHAT_ID_RE.fullmatch(parts[3]):
        return None
    try:
        return parts[1], parts[3], date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def _dirs(path: Path, pattern: re.Pattern[str]) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir() and pattern.fullmatch(e.name))
    except FileNotFoundError:
        return []


_Y = re.compile(r"\d{4}")
_MD = re.compile(r"\d\d")


def log_files(
    root: Path,
    chat: str | list[str] | None = None,
    since: date | None = None,
    until: date | None = None,
    channel: str | None = None,
) -> Iterator[LogFile]:
    """Day files under root, pruned by directory names before any file is opened. `since`/`until` are inclusive UTC
    dates. Sorted by (channel, chat, day)."""
    rawdir = root / RAW
    channels = [channel] if channel else _dirs(rawdir, CHANNEL_RE)
    chats_filter = [chat] if isinstance(chat, str) else chat
    for ch in channels:
        chats_dir = rawdir / ch / "chats"
        chats = chats_filter if chats_filter is not None else _dirs(chats_dir, CHAT_ID_RE)
        for chat_id in chats:
            if not CHAT_ID_RE.fullmatch(chat_id):
                continue
            base = chats_dir / chat_id
            for y in _dirs(base, _Y):
                yi = int(y)
                if (since and yi < since.year) or (until and yi > until.year):
                    continue
                for m in _dirs(base / y, _MD):
                    mi = (yi, int(m))
                    if (since and mi < (since.year, since.month)) or (until and mi > (until.year, until.month)):
                        continue
                    try:
                        names = sorted(e.name for e in os.scandir(base / y / m) if e.is_file())
                    except FileNotFoundError:
                        continue
                    for name in names:
                        if len(name) != 8 or not name.endswith(".jsonl") or not name[:2].isdigit():
                            continue
                        try:
                            day = date(yi, int(m), int(name[:2]))
                        except ValueError:
                            continue
                        if (since and day < since) or (until and day > until):
                            continue
                        rel = f"{RAW}/{ch}/chats/{chat_id}/{y}/{m}/{name}"
                        yield LogFile(day, ch, chat_id, root / rel, rel)


_REL = re.compile(r"(\d+)\s*([dhw])")


def parse_when(text: str, *, now: datetime | None = None) -> date:
    """A --since/--until value → UTC date: YYYY-MM-DD, RFC 3339, 'today', 'yesterday', or a relative '7d', '36h', '2w'."""
    now = now or datetime.now(timezone.utc)
    t = text.strip().lower()
    if t == "today":
        return now.date()
    if t == "yesterday":
        return now.date() - timedelta(days=1)
    m = _REL.fullmatch(t)
    if m:
        n, unit = int(m[1]), m[2]
        delta = {"d": timedelta(days=n), "h": timedelta(hours=n), "w": timedelta(weeks=n)}[unit]
        return (now - delta).date()
    try:
        if len(t) == 10:
            return date.fromisoformat(t)
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).astimezone(timezone.utc).date()
    except ValueError:
        raise EventlogError(f"not a date: {text!r} (use YYYY-MM-DD, RFC 3339, today, yesterday, or 7d/36h/2w)") from None
