"""The account split of `eventlog migrate`: lines of another account out of the default account's day files.

Before accounts had partitions of their own, every account's events of one chat id shared
raw/<channel>/chats/<chat>/… (one chain, one lock). Each such line moves to its account's day file of the same day
(docs/log-format.md, Layout); both sides are re-chained from their own genesis. Per default-account file, under the
locks of it and its targets:
1. build the new target files (their lines, if any, plus the moved ones, in ts order) and the new source file;
2. append a `log:migrate_file` record per rewritten file to migrations/v2.jsonl (old → new chain), before anything is
   replaced — `verify` accepts a seal that names a file's old chain while such a record says old → new;
3. replace the targets, then the source (a source emptied by the move is removed: its record has new_lines 0);
4. reseal what was sealed.
A kill after a target is replaced and before the source is leaves the moved lines in both; the next run finds their
ids in the target and only drops them from the source. So the set of event ids is the same before and after, and a
second run changes nothing.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import DamagedLog
from . import schema
from .commitment import chain_hash
from .fsutil import fsync_dir, replace_file
from .layout import LogFile, day_relpath, log_files
from .lock import FileLock
from .schema import ACCOUNT_RE, DEFAULT_ACCOUNT


@dataclass
class SplitReport:
    records: list[dict[str, Any]] = field(default_factory=list)  # one log:migrate_file record per rewritten file
    moved: int = 0  # lines moved to an account's file
    sources: list[str] = field(default_factory=list)  # default-account files lines were moved out of
    sealed: list[str] = field(default_factory=list)  # files rewritten while sealed: the caller reseals them
    problems: list[str] = field(default_factory=list)


def _foreign(line: bytes) -> bool:
    """Cheap pre-check: a line that could belong to another account (confirmed by parsing)."""
    return b'"account":' in line and b'"account":"default"' not in line


def pending(root: Path) -> list[LogFile]:
    """Default-account day files holding a line of another account."""
    out = []
    for lf in log_files(root, accounts=[DEFAULT_ACCOUNT]):
        with open(lf.path, "rb") as f:
            if any(_foreign(line) and _account(line) != DEFAULT_ACCOUNT for line in f):
                out.append(lf)
    return out


def _account(line: bytes) -> Any:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return DEFAULT_ACCOUNT
    return obj.get("account", DEFAULT_ACCOUNT) if isinstance(obj, dict) else DEFAULT_ACCOUNT


def _complete(path: Path) -> tuple[list[bytes], int, bytes]:
    """(complete lines, their byte count, torn tail) of a file; a missing file is empty."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0, b""
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1], end, data[end:]


def _objects(rel: str, lines: list[bytes]) -> list[dict[str, Any]]:
    """The parsed lines of a file whose chain must hold (migrating would launder damage)."""
    expected = schema.genesis(rel)
    out = []
    for n, line in enumerate(lines, 1):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or obj.get("prev") != expected:
            raise DamagedLog(f"{rel}:{n}: chain broken; not migrated (run `eventlog verify`)")
        expected = chain_hash(line, obj)
        out.append(obj)
    return out


def _chain(rel: str, objs: list[dict[str, Any]]) -> tuple[bytes, str | None]:
    """The file's bytes with every line re-chained from its genesis, and the last chain hash."""
    prev = schema.genesis(rel)
    out = []
    for obj in objs:
        obj["prev"] = prev
        line = schema.encode(obj)
        prev = chain_hash(line, obj)
        out.append(line + b"\n")
    return b"".join(out), (prev if objs else None)


def _record(rel: str, lines: list[bytes], size: int, body: bytes, last: str | None, now: str) -> dict[str, Any]:
    return {"event": "log:migrate_file", "channel": "system", "chat_id": "eventlog", "ts": now, "file": rel,
            "reason": "accounts", "old_lines": len(lines), "old_bytes": size,
            "old_last": chain_hash(lines[-1]) if lines else None, "new_lines": body.count(b"\n"),
            "new_bytes": len(body), "new_last": last}


def split_file(log: Any, lf: LogFile, now: str, migrations: str, report: SplitReport) -> None:
    """Move one default-account file's lines of other accounts to their accounts' files (module docstring)."""
    from .seal import sealed_index

    with contextlib.ExitStack() as locks:
        locks.enter_context(FileLock(f"{lf.path}.lock"))
        lines, size, torn = _complete(lf.path)
        keep: list[dict[str, Any]] = []
        moving: dict[str, list[dict[str, Any]]] = {}
        for n, obj in enumerate(_objects(lf.relpath, lines), 1):
            acc = obj.get("account", DEFAULT_ACCOUNT)
            if acc == DEFAULT_ACCOUNT:
                keep.append(obj)
            elif isinstance(acc, str) and ACCOUNT_RE.fullmatch(acc):
                moving.setdefault(acc, []).append(obj)
            else:
                report.problems.append(f"{lf.relpath}:{n}: account {str(acc)[:64]!r} is not an account id; left here")
                keep.append(obj)
        if not moving:
            return
        day = lf.day.isoformat()
        targets = sorted((day_relpath(lf.channel, lf.chat_id, day, acc), acc) for acc in moving)
        for rel, _ in targets:  # the source's lock first, then the targets' in name order (writers hold one at a time)
            (log.root / rel).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            locks.enter_context(FileLock(f"{log.root}/{rel}.lock"))
        src_sealed = lf.relpath in sealed_index(log.root, lf.channel, lf.chat_id)
        writes: list[tuple[str, bytes]] = []  # targets first: a kill between them leaves lines twice, never none
        records = []
        for rel, acc in targets:
            t_lines, t_size, t_torn = _complete(log.root / rel)
            there = _objects(rel, t_lines)
            ids = {o.get("id") for o in there}
            new = [o for o in moving[acc] if o.get("id") not in ids]  # a killed run moved these already
            if not new:
                continue
            body, last = _chain(rel, sorted(there + new, key=lambda o: str(o.get("ts", ""))))  # stable sort
            writes.append((rel, body + t_torn))  # a torn tail stays one (the next append moves it aside)
            records.append(_record(rel, t_lines, t_size, body, last, now))
            report.moved += len(new)
            if src_sealed or rel in sealed_index(log.root, lf.channel, lf.chat_id, acc):
                report.sealed.append(rel)
        body, last = _chain(lf.relpath, keep)
        writes.append((lf.relpath, body + torn))
        records.append(_record(lf.relpath, lines, size, body, last, now))
        if src_sealed and body:
            report.sealed.append(lf.relpath)
        log.append_stream(migrations, records)  # the records first: verify reads a half-done move by them
        for rel, data in writes:
            if data:
                replace_file(log.root / rel, data, "migrate")
            else:  # every line moved: the file goes (its record says new_lines 0; verify accepts its old seal)
                os.unlink(log.root / rel)
                fsync_dir((log.root / rel).parent)
            log._tails.pop(rel, None)
    report.records += records
    report.sources.append(lf.relpath)
