"""Seals: for each closed day file, a chained record of its line count, size and last hash, one stream per partition
(seals/<channel>/<chat>.jsonl; another account's: seals/<channel>/accounts/<account>/<chat>.jsonl).

A seal makes truncation, deletion of a whole file and edits of the last lines visible — the chain alone cannot see those.
"""
from __future__ import annotations

import os
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import orjson

from .commitment import COMMIT_RE, chain_hash
from .growing import Growing, read_last_line
from .layout import log_files, parse_relpath, seal_relpath
from .schema import DEFAULT_ACCOUNT
from .lock import FileLock

if TYPE_CHECKING:
    from .writer import EventLog

_cache: dict[str, "_Index"] = {}
DAMAGED = "not sealed, chain damaged: "  # the outcome's prefix; `eventlog seal` exits 2 on it


def _now_ts() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def seal_record(rel: str, lines: int, size: int, last: str | None) -> dict[str, Any]:
    channel, chat, _, _ = parse_relpath(rel)  # type: ignore[misc]
    return {
        "event": "seal:file", "channel": channel, "chat_id": chat, "ts": _now_ts(),
        "file": rel, "lines": lines, "bytes": size, "last": last,
    }


def seal_problem(rec: Any) -> str | None:
    """Why a seal:file record is malformed, or None if it is usable."""
    if not isinstance(rec.get("file"), str) or parse_relpath(rec["file"]) is None:
        return "seal record without a valid `file`"
    for k in ("lines", "bytes"):
        v = rec.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            return f"seal record with a bad `{k}` ({str(v)[:20]!r})"
    if not isinstance(rec.get("last"), str) or not COMMIT_RE.fullmatch(rec["last"]):
        return "seal record with a bad `last` hash"
    return None


def _seal_record(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the seal:file record of one line, or None; why it is malformed, or None). Other events and lines that are no
    JSON yield (None, None): the chain check reports those."""
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None, None
    if not (isinstance(rec, dict) and rec.get("event") == "seal:file"):
        return None, None
    why = seal_problem(rec)
    return (rec, None) if why is None else (None, why)


def read_seal_records(path: Path, problems: list[tuple[int, str]] | None = None) -> Iterable[dict[str, Any]]:
    """Well-formed seal records of one seal file (complete lines only). Malformed ones are skipped, and reported as
    (line number, reason) into `problems` if given — verify turns them into damage."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        rec, why = _seal_record(line)
        if rec is not None:
            out.append(rec)
        elif why is not None and problems is not None:
            problems.append((n, why))
    return out


class _Index:
    """One chat's seal stream as far as it was read: relpath → latest record, and the latest sealed day."""
    __slots__ = ("pos", "index", "last_day")

    def __init__(self) -> None:
        self.pos = Growing()
        self.index: dict[str, dict[str, Any]] = {}
        self.last_day: date | None = None


def _indexed(root: Path, channel: str, chat: str, account: str = DEFAULT_ACCOUNT) -> _Index | None:
    key = f"{os.fspath(root)}/{seal_relpath(channel, chat, account)}"
    c = _cache.get(key) or _Index()
    got = c.pos.read(key)
    if got is None:
        _cache.pop(key, None)
        return None
    restarted, lines = got
    if restarted:
        c.index, c.last_day = {}, None
    for line in lines:
        rec, _ = _seal_record(line)
        if rec is not None:
            c.index[rec["file"]] = rec
            day = parse_relpath(rec["file"])[2]  # type: ignore[index]  # seal_problem checked it parses
            if c.last_day is None or day > c.last_day:
                c.last_day = day
    _cache[key] = c
    return c


def sealed_index(root: Path, channel: str, chat: str, account: str = DEFAULT_ACCOUNT) -> dict[str, dict[str, Any]]:
    """relpath → latest seal record, for one partition. Read incrementally (eventlog/store/growing.py): a seal costs
    what it appended, not the chat's whole seal stream. The dict is the cache's own: do not change it."""
    c = _indexed(root, channel, chat, account)
    return c.index if c is not None else {}


def measure(path: Path) -> tuple[int, int, str | None, bool]:
    """(complete lines, bytes of complete lines, hash of the last complete line, torn tail?) — streamed."""
    lines = 0
    size = 0
    last = b""
    carry = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            buf = carry + chunk
            parts = buf.split(b"\n")
            carry = parts.pop()
            if parts:
                lines += len(parts)
                size += sum(len(p) + 1 for p in parts)
                last = parts[-1]
    return lines, size, (chain_hash(last) if lines else None), bool(carry)


def _still_sealed(path: Path, rec: dict[str, Any]) -> bool:
    """The file is exactly as its seal says at its end: the sealed size, and the sealed last line ending there. One
    stat and one line read, so `eventlog seal` over a year of sealed days does not read every byte of them again (an
    edit further up is `verify`'s to find: it rehashes every day)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if os.fstat(fd).st_size != rec["bytes"]:
            return False
        last, end = read_last_line(fd, rec["bytes"])
        return end == rec["bytes"] and last is not None and chain_hash(last) == rec["last"]
    finally:
        os.close(fd)


def chain_damage(path: Path, rel: str) -> str | None:
    """`file:line: reason` of the first place where the file's chain does not verify, or None."""
    from .reader import Problem
    from .verify import verify_chain

    found: list[Problem] = []
    verify_chain(path, rel, lambda p, is_damage: found.append(p) if is_damage else None, parse_relpath(rel))
    return str(min(found, key=lambda p: p.line)) if found else None


def seal_state(log: "EventLog", rel: str, current: dict[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """(outcome, the seal record to append or None) for one day file, whose lock the caller holds. `current`: its
    latest seal record, if any."""
    path = log.root / rel
    if not path.exists():
        return "missing", None
    if current and _still_sealed(path, current):
        return "already sealed", None
    broken = chain_damage(path, rel)
    if broken:  # a seal would commit to the damage: verify keeps reporting it, the seal no longer would
        return f"{DAMAGED}{broken}", None
    lines, size, last, torn = measure(path)
    if torn:
        return "torn tail: not sealed until the next append repairs it", None
    if not lines:
        return "empty", None
    if current and current["lines"] == lines and current["bytes"] == size and current["last"] == last:
        return "already sealed", None
    return "sealed", seal_record(rel, lines, size, last)


def seal_files(log: "EventLog", rels: Iterable[str]) -> list[tuple[str, str]]:
    """Seal the given day files (skipping unchanged seals). Returns (relpath, outcome) pairs."""
    out = []
    for rel in rels:
        parsed = parse_relpath(rel)
        if not parsed:
            out.append((rel, "not a day file"))
            continue
        with FileLock(f"{log.root}/{rel}.lock"):
            current = sealed_index(log.root, parsed.channel, parsed.chat_id, parsed.account).get(rel)
            outcome, record = seal_state(log, rel, current)
            if record is not None:
                log.append_stream(parsed.seal, [record])
            out.append((rel, outcome))
    if any(outcome == "sealed" for _, outcome in out):
        log.sealed()  # every seal moves the head (docs/log-format.md, Head)
    return out


def unsealed_before(log: "EventLog", channel: str, chat: str, day: date, account: str = DEFAULT_ACCOUNT
                    ) -> tuple[date | None, list[str]]:
    """(the first day auto-seal considers, None: any; the partition's day files on disk before `day` from then on that
    have no seal): what a new day file `day` closes. Empty when the partition's newest seal is not before `day`
    (a backfill of an earlier day seals nothing)."""
    if day == date.min:  # 0001-01-01: nothing before it (and date.min - 1 day overflows)
        return None, []
    c = _indexed(log.root, channel, chat, account)
    index = c.index if c is not None else {}
    since = c.last_day if c is not None else None
    if since is not None:
        if since >= day:
            return day, []
        since += timedelta(days=1)
    return since, [f.relpath for f in log_files(log.root, chat, since=since, until=day - timedelta(days=1),
                                                 channel=channel, accounts=[account]) if f.relpath not in index]


def seal_before(log: "EventLog", channel: str, chat: str, day: date, account: str = DEFAULT_ACCOUNT) -> None:
    """Auto-seal: when a partition gets a new day file, seal its earlier day files that are not sealed yet. (The
    writer does this for a whole batch at once, under the locks it holds: eventlog/store/batch.py.)"""
    _, pending = unsealed_before(log, channel, chat, day, account)
    if pending:
        seal_files(log, pending)


def seal_closed(log: "EventLog", chat: str | None = None, through: date | None = None) -> list[tuple[str, str]]:
    """`eventlog seal`: every day file up to `through` (default: yesterday, UTC)."""
    through = through or (datetime.now(timezone.utc).date() - timedelta(days=1))
    return seal_files(log, [f.relpath for f in log_files(log.root, chat, until=through)])
