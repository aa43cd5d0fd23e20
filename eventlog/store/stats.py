"""`eventlog stats`: events and bytes per channel / account / chat / day, counted from newlines (no JSON parsing), so
an account's events are those in its files (a log written before accounts had files of their own: `eventlog migrate`)."""
from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Iterator

from ..errors import EventlogError
from .layout import log_files

BY = ("channel", "account", "chat", "day")


def _count_lines(path: Path) -> tuple[int, int]:
    lines = size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines, size


def stats(root: Path, by: str = "chat", chat: str | None = None, since: date | None = None,
          until: date | None = None, accounts: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Rows {channel, [account], [chat_id], [day], files, events, bytes}, sorted; `by` = channel | account | chat |
    day. A chat is (account, chat id): one user's private chat with two of the gateway's bots is two rows."""
    if by not in BY:
        raise EventlogError(f"--by must be one of {', '.join(BY)}")
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for lf in log_files(root, chat, since, until, accounts=accounts):
        key: tuple[Any, ...] = (lf.channel,)
        row = {"channel": lf.channel}
        if by != "channel":
            key += (lf.account,)
            row["account"] = lf.account
        if by in ("chat", "day"):
            key += (lf.chat_id,)
            row["chat_id"] = lf.chat_id
        if by == "day":
            key += (lf.day.isoformat(),)
            row["day"] = lf.day.isoformat()
        agg = groups.setdefault(key, {**row, "files": 0, "events": 0, "bytes": 0})
        lines, size = _count_lines(lf.path)
        agg["files"] += 1
        agg["events"] += lines
        agg["bytes"] += size
    yield from groups.values()
