"""`eventlog migrate`: bring a log root to the current format, file by file, crash-safe, with a record of what it did:
v1 lines to v2 (below), then other accounts' lines out of the default account's files (eventlog/store/split.py).

Only files that hold a v1 line *with content* need it (a v1 line's chain covers its plaintext, so it could not be
erased without breaking the chain); seal streams and the checkpoint file hold no content and are left alone, so heads
taken before a migration that touched no DLP stream stay valid. For each such file, under its lock:
1. rewrite every line as v2 (a salt added where there is content, `prev` re-chained from the same genesis) into a
   temporary file next to it, fsynced;
2. append a record `{file, old_lines, old_bytes, old_last, new_lines, new_bytes, new_last}` to migrations/v2.jsonl
   (a chained stream) — before anything is replaced;
3. rename the temporary file over the original and fsync the directory;
4. if the day was sealed, append a seal record for the new file.
A kill between 3 and 4 leaves a seal that names the old chain: `verify` accepts it (a warning) because the migration
record says old → new and the file matches "new"; the next `eventlog migrate` appends the seal. A kill anywhere else
leaves either the old file or the new one, both of which verify.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import orjson

from ..errors import DamagedLog, EventlogError
from . import schema, split
from .commitment import chain_hash, has_content, new_salt
from .fsutil import replace_file
from .layout import log_files, parse_relpath
from .lock import FileLock

MIGRATIONS = "migrations/v2.jsonl"
STREAMS = ("dlp/alerts.jsonl", "dlp/reviews.jsonl")


@dataclass
class MigrateReport:
    files: list[dict[str, Any]] = field(default_factory=list)  # one migration record per file rewritten
    resealed: list[str] = field(default_factory=list)  # files whose seal was renewed (now or after an earlier kill)
    skipped: list[str] = field(default_factory=list)  # damaged files left alone (reasons in `problems`)
    problems: list[str] = field(default_factory=list)
    lines: int = 0
    moved: int = 0  # lines moved to their account's files
    split: list[str] = field(default_factory=list)  # default-account files they were moved out of


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def latest_records(root: Path) -> dict[str, dict[str, Any]]:
    """file → its latest migration record."""
    path = root / MIGRATIONS
    out: dict[str, dict[str, Any]] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return out
    for line in data.split(b"\n")[:-1]:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(rec, dict) and rec.get("event") == "log:migrate_file" and isinstance(rec.get("file"), str):
            out[rec["file"]] = rec
    return out


def _needs(path: Path) -> bool:
    with open(path, "rb") as f:
        for line in f:
            if b'"v":1' in line and (obj := _obj(line.rstrip(b"\n"))) is not None and obj.get("v") == 1 \
                    and has_content(obj):
                return True
    return False


def _obj(line: bytes) -> dict[str, Any] | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _rewrite(path: Path, rel: str) -> tuple[bytes, dict[str, Any]]:
    """(new file bytes, record) — refuses a file whose chain does not verify (migrating would launder the damage)."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    old = data[:end].split(b"\n")[:-1]
    expected = schema.genesis(rel)
    prev = expected
    out = []
    for n, line in enumerate(old, 1):
        obj = _obj(line)
        if obj is None or obj.get("prev") != expected:
            raise DamagedLog(f"{rel}:{n}: chain broken; not migrated (run `eventlog verify`)")
        expected = chain_hash(line, obj)
        if obj.get("v") == 1:
            obj["v"] = 2
            if has_content(obj) and "salt" not in obj:
                obj["salt"] = new_salt()
        obj["prev"] = prev
        new = schema.encode(obj)
        prev = chain_hash(new, obj)
        out.append(new + b"\n")
    body = b"".join(out)
    record = {"event": "log:migrate_file", "channel": "system", "chat_id": "eventlog", "ts": _now(), "file": rel,
              "old_lines": len(old), "old_bytes": end, "old_last": expected, "new_lines": len(out),
              "new_bytes": len(body), "new_last": prev}
    return body + data[end:], record  # a torn tail stays a torn tail (the next append moves it aside)


def _reseal(log: Any, rel: str, rec: dict[str, Any] | None) -> bool:
    """Append a seal for a migrated day whose seal still names its old chain. True if one was written."""
    from .seal import measure, seal_record, sealed_index

    parsed = parse_relpath(rel)
    if not parsed or rec is None:
        return False
    sealed = sealed_index(log.root, parsed.channel, parsed.chat_id, parsed.account).get(rel)
    if sealed is None or sealed["last"] != rec["old_last"] or sealed["lines"] != rec["old_lines"]:
        return False
    lines, size, last, _ = measure(log.root / rel)
    if lines < rec["new_lines"]:
        return False
    log.append_stream(parsed.seal, [seal_record(rel, lines, size, last)])
    return True


def migrate(root: Path, progress: Callable[[str], None] | None = None) -> MigrateReport:
    from .head import checkpoint
    from .verify import verify
    from .writer import EventLog

    log = EventLog(root)
    report = MigrateReport()
    if split.pending(root):
        # moving lines between files re-chains both: on a damaged root that would launder the damage
        damaged = verify(root).damage
        if damaged:
            raise EventlogError(f"the log does not verify ({len(damaged)} damaged place(s), first {damaged[0]}); "
                                "nothing migrated (run `eventlog verify`)")
    done = latest_records(root)
    targets = [(lf.relpath, lf.path) for lf in log_files(root)] + [(r, root / r) for r in STREAMS if (root / r).is_file()]
    for rel, path in targets:
        with FileLock(f"{path}.lock"):
            for leftover in path.parent.glob(f"{path.name}.migrate-*"):  # a killed run's temporary file
                leftover.unlink(missing_ok=True)
            try:
                if not _needs(path):
                    if _reseal(log, rel, done.get(rel)):
                        report.resealed.append(rel)
                    continue
                data, rec = _rewrite(path, rel)
            except FileNotFoundError:
                continue
            except DamagedLog as exc:
                report.skipped.append(rel)
                report.problems.append(str(exc))
                continue
            if progress:
                progress(rel)
            log.append_stream(MIGRATIONS, [rec])  # the record first: verify reads a half-done file by it
            replace_file(path, data, "migrate")
            log._tails.pop(rel, None)
            report.files.append(rec)
            report.lines += rec["new_lines"]
            if _reseal(log, rel, rec):
                report.resealed.append(rel)
    _split_accounts(log, report, progress)
    if report.files or report.resealed:
        checkpoint(log)
        log.append([{"event": "log:migrated", "channel": "system", "chat_id": "eventlog", "ts": _now(),
                     "to_version": schema.VERSION, "files": len(report.files), "lines": report.lines,
                     "resealed": len(report.resealed), "skipped": len(report.skipped), "moved": report.moved}][0])
    return report


def _split_accounts(log: Any, report: MigrateReport, progress: Callable[[str], None] | None) -> None:
    """Other accounts' lines out of the default account's files, then reseal what was sealed."""
    from .seal import seal_files

    sp = split.SplitReport()
    for lf in split.pending(log.root):
        if progress:
            progress(lf.relpath)
        try:
            split.split_file(log, lf, _now(), MIGRATIONS, sp)
        except DamagedLog as exc:
            report.skipped.append(lf.relpath)
            report.problems.append(str(exc))
    report.files += sp.records
    report.moved += sp.moved
    report.split += sp.sources
    report.problems += sp.problems
    resealed = [rel for rel, outcome in seal_files(log, sorted(set(sp.sealed))) if outcome == "sealed"]
    report.resealed += resealed
