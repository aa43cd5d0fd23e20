"""`eventlog verify`: walk the chains and the seals, report every damaged place as `file:line: reason`.

What the chain proves: each line's `prev` is the hash of the line before it, so an edited byte, a deleted, inserted,
duplicated or swapped line breaks it. What only the seal proves (the chain cannot): lines cut off the end of a file,
an edit of a file's last line, a whole file deleted. The open (unsealed) day file's tail is covered once it is sealed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable

import orjson

from . import schema
from .commitment import chain_hash, is_erased
from .layout import log_files, parse_relpath, seal_streams
from .schema import ACCOUNT_RE, DEFAULT_ACCOUNT
from .reader import Problem, iter_lines
from .seal import read_seal_records


@dataclass
class VerifyReport:
    files: int = 0
    lines: int = 0
    damage: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.damage


def verify_chain(path: Path, rel: str, emit: Callable[[Problem, bool], None],
                 day_file: tuple[str, str, date, str] | None) -> tuple[list[str], list[int]]:
    """Check one chained file. Returns (hash of each complete line, byte offset after each line)."""
    hashes: list[str] = []
    ids: dict[str, int] = {}
    expected = schema.genesis(rel)
    size = 0

    def damage(line: int, reason: str) -> None:
        emit(Problem(rel, line, reason), True)

    def torn(p: Problem) -> None:
        emit(p, False)

    objs: list[dict[str, Any] | None] = []
    ends: list[int] = []
    for n, line in iter_lines(path, rel, torn):
        size += len(line) + 1
        ends.append(size)
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            obj = None
        hashes.append(chain_hash(line, obj))
        if obj is not None and "salt" in obj and obj.get("v") == 2 and schema.encode(obj) != line:
            # the chain covers the commitment form; the bytes of a live line must be its canonical encoding
            damage(n, "line is not in canonical form (edited by hand)")
        objs.append(obj)
    where = {h: i + 1 for i, h in enumerate(hashes)}
    for n, obj in enumerate(objs, start=1):
        if obj is None:
            damage(n, "not a valid JSON object (edited or corrupted)")
            expected = hashes[n - 1]
            continue
        prev = obj.get("prev")
        if prev != expected:
            pos = where.get(prev) if isinstance(prev, str) else None
            if pos is not None and pos == n - 2:
                damage(n - 1, "line inserted or duplicated (the next line chains past it)")
            elif pos is not None:
                damage(n, f"line out of order (chains to line {pos}, not to line {n - 1}): swapped or moved")
            elif n == 1:
                damage(n, "first line does not chain from this file's genesis (file moved or renamed, or lines "
                          "deleted from its start)")
            elif objs[n - 2] is not None:
                damage(n - 1, f"line {n - 1} modified, or line(s) deleted between it and line {n} (chain broken)")
        v = obj.get("v")
        if v not in schema.VERSIONS or isinstance(v, bool):
            damage(n, f"unknown format version {v!r}")
        elif v == 2 and "salt" not in obj and schema_has_plain_content(obj):
            damage(n, "content without its salt (neither a live nor an erased line)")
        eid = obj.get("id")
        if isinstance(eid, str):
            if eid in ids:
                damage(n, f"duplicate id {eid} (also line {ids[eid]})")
            ids[eid] = n
        if day_file:
            channel, chat, day, account = day_file
            if obj.get("channel") != channel or str(obj.get("chat_id")) != chat:
                damage(n, "event belongs to another chat/channel than its file")
            got = obj.get("account", DEFAULT_ACCOUNT)
            if got != account:
                if account == DEFAULT_ACCOUNT and isinstance(got, str) and ACCOUNT_RE.fullmatch(got):
                    # written before accounts had files of their own: intact, but in the shared file
                    emit(Problem(rel, n, f"event of account {got!r} in the default account's file (written before "
                                         "accounts were kept apart; `eventlog migrate` moves it)"), False)
                else:
                    damage(n, f"event of account {str(got)[:64]!r} in account {account!r}'s file")
            ts = obj.get("ts")
            if obj.get("event") != "log:repair" and (not isinstance(ts, str) or ts[:10] != day.isoformat()):
                damage(n, f"ts {ts!r} is not on this file's day")
        expected = hashes[n - 1]
    return hashes, ends


def schema_has_plain_content(obj: dict[str, Any]) -> bool:
    from .commitment import has_content

    return has_content(obj) and not is_erased(obj)


def _seal_files(root: Path, chat: str | None) -> list[tuple[str, Path]]:
    """Every partition's seal stream (of one chat id, in any channel and account, if `chat` is given)."""
    name = None if chat is None else f"{chat}.jsonl"
    return [(rel, root / rel) for rel in seal_streams(root) if name is None or rel.rsplit("/", 1)[1] == name]


def verify(root: Path, chat: str | None = None, since: date | None = None, until: date | None = None,
           emit: Callable[[Problem, bool], None] | None = None) -> VerifyReport:
    """Verify day files (pruned), their seals, the seal streams and (unfiltered) the dlp streams."""
    report = VerifyReport()

    def record(p: Problem, is_damage: bool) -> None:
        (report.damage if is_damage else report.warnings).append(p)
        if emit:
            emit(p, is_damage)

    measured: dict[str, tuple[list[str], list[int]]] = {}
    for lf in log_files(root, chat, since, until):
        report.files += 1
        res = verify_chain(lf.path, lf.relpath, record, (lf.channel, lf.chat_id, lf.day, lf.account))
        measured[lf.relpath] = res
        report.lines += len(res[0])

    migrated = _migrated(root)
    for rel, path in _seal_files(root, chat):
        report.files += 1
        report.lines += len(verify_chain(path, rel, record, None)[0])
        latest: dict[str, dict[str, Any]] = {}
        bad: list[tuple[int, str]] = []
        for rec in read_seal_records(path, bad):
            latest[rec["file"]] = rec
        for n, why in bad:
            record(Problem(rel, n, why), True)
        for frel, rec in latest.items():
            parsed = parse_relpath(frel)
            if not parsed or (since and parsed[2] < since) or (until and parsed[2] > until):
                continue
            got = measured.get(frel)
            if got is None:
                mig = migrated.get(frel)
                moved_out = mig is not None and mig.get("new_lines") == 0 and mig.get("old_last") == rec["last"]
                if not (root / frel).exists() and not moved_out:  # moved_out: its lines went to their accounts
                    record(Problem(frel, 0, f"sealed file is missing ({rec['lines']} lines sealed)"), True)
                continue
            damaged = any(p.relpath == frel for p in report.damage)
            _check_seal(frel, rec, got, migrated.get(frel), record, damaged)
    if chat is None:
        dlp = root / "dlp"
        if dlp.is_dir():
            for name in sorted(os.listdir(dlp)):
                if name.endswith(".jsonl"):
                    report.files += 1
                    report.lines += len(verify_chain(dlp / name, f"dlp/{name}", record, None)[0])
        from .head import CHECKPOINTS
        from .migrate import MIGRATIONS

        for rel in (CHECKPOINTS, MIGRATIONS):  # chained streams of their own
            if (root / rel).is_file():
                report.files += 1
                report.lines += len(verify_chain(root / rel, rel, record, None)[0])
    return report


def against_seal(hashes: list[str], ends: list[int], lines: int, last: str, size: int) -> list[str]:
    """How a chained file stands against a seal of `lines` lines whose last has chain hash `last` and ends at byte
    `size`, given verify_chain's (hashes, ends) of the file: [] when it is exactly the seal's; else "truncated" (fewer
    lines) or "modified" (line `lines` is not the sealed one) alone, or any of "resized" (the sealed lines are
    unchanged but end elsewhere: an erasure stopped before resealing) and "extended" (lines after the seal). The one
    comparison for `verify` (which warns on the last two) and `lake push` (which ships only an exact sealed part)."""
    if len(hashes) < lines:
        return ["truncated"]
    if hashes[lines - 1] != last:
        return ["modified"]
    return (["resized"] if ends[lines - 1] != size else []) + (["extended"] if len(hashes) > lines else [])


def _check_seal(frel: str, rec: dict[str, Any], got: tuple[list[str], list[int]], mig: dict[str, Any] | None,
                record: Callable[[Problem, bool], None], damaged: bool = False) -> None:
    """A day file against its latest seal: line `lines` must have chain hash `last`. The byte count is checked too,
    but a mismatch with matching hashes is only a warning (an erasure stopped before resealing). A file whose chain is
    damaged is never offered `eventlog seal` (which refuses it): resealing would commit to the damage."""
    hint = "; its chain is damaged: restore it, do not reseal" if damaged else "; `eventlog seal` reseals"
    hashes, ends = got
    n = rec["lines"]
    if (mig and mig.get("old_lines") == n and mig.get("old_last") == rec["last"]
            and len(hashes) >= mig.get("new_lines", 0) > 0 and hashes[mig["new_lines"] - 1] == mig.get("new_last")):
        record(Problem(frel, 0, "migrated to v2, seal not renewed yet (run `eventlog migrate` again)"), False)
        return
    found = against_seal(hashes, ends, n, rec["last"], rec["bytes"])
    if "truncated" in found:
        record(Problem(frel, len(hashes), f"truncated: {len(hashes)} lines, sealed with {n}"), True)
    if "modified" in found:
        record(Problem(frel, n, f"sealed part modified (line {n} no longer matches the seal)"), True)
    if "resized" in found:
        record(Problem(frel, n, "sealed lines unchanged but their size differs from the seal (an erasure "
                                f"stopped before resealing{hint})"), False)
    if "extended" in found:
        record(Problem(frel, n + 1, f"{len(hashes) - n} line(s) after the seal, not resealed yet (a writer "
                                    "stopped while extending a closed day, or lines added by hand"
                                    f"{hint})"), False)


def _migrated(root: Path) -> dict[str, dict[str, Any]]:
    """file → its latest migration record (eventlog/store/migrate.py writes them before replacing a file)."""
    from .migrate import latest_records

    return latest_records(root)
