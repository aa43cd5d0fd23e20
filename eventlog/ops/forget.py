"""`eventlog forget`: erase the content of a chat (or of everything before a day) everywhere the project keeps it.

- Day files: every line with content is replaced by its commitment form (commitment.py): same chain hash, so the
  chain, the seals' hashes and every earlier head still verify. One file at a time, under its lock, atomically
  (temporary file + fsync + rename + directory fsync); a sealed day gets a new seal record (its byte size changed).
  Torn tails and their `.torn-*` copies, and temporaries of killed runs, hold content too: they are deleted.
- Every store derived from the log or pointing into it — the DLP streams (alerts keep their masked previews, reviews
  of alerts in scope lose their `note`), the search index, the Parquet units and vocabularies — is reached through
  the registry in erasure.py, planned with the day files and purged after them; this module imports none of them.
- A `log:erased` system event records who, why (in `note`, itself erasable), the range and the counts — no content.
Idempotent: a run killed anywhere leaves a log that verifies, and running the same command again finishes the job.
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import orjson

from ..errors import BadEvent, EventlogError
from ..store.commitment import erase_line, live_ids
from ..store.erased import ErasedScope, erasing
from ..store.fsutil import replace_file
from ..store.layout import LogFile, log_files, parse_relpath
from ..store.lock import FileLock
from .erasure import erase_derived, plan_derived
from .trail import Select, all_ids, concerns, selected_lines, trail_files

_LEFTOVERS = (".torn-", ".forget-", ".migrate-")


@dataclass
class ForgetPlan:
    chat: str | None
    before: date | None
    files: list[LogFile] = field(default_factory=list)
    events: int = 0  # lines that still hold content
    ids: set[str] = field(default_factory=set)  # their ids
    alerts: int = 0  # DLP alerts in scope with content (rare: alerts carry masked previews)
    reviews: int = 0  # reviews of alerts in scope with content (their notes)
    queries: int = 0  # the agent's recall:query events about the scope, outside its files (trail.py)
    select: Select | None = None


@dataclass
class ForgetReport:
    files: int = 0
    events: int = 0
    torn_dropped: int = 0
    leftovers: int = 0
    resealed: int = 0
    queries: int = 0
    reviews: int = 0
    alerts: int = 0
    derived: dict[str, dict[str, int]] = field(default_factory=dict)
    event: dict[str, Any] | None = None


def _scope_files(root: Path, chat: str | None, before: date | None) -> list[LogFile]:
    if chat is None and before is None:
        raise EventlogError("say what to forget: --chat ID, --before WHEN, or both (or --retention)")
    if before == date.min:  # 0001-01-01: no day is before it (and date.min - 1 day overflows)
        return []
    until = before - timedelta(days=1) if before else None
    return list(log_files(root, chat, until=until))


def plan(root: Path, chat: str | None = None, before: date | None = None) -> ForgetPlan:
    """What `forget` would erase (nothing is changed). Raises if v1 content is in the way (migrate first)."""
    p = ForgetPlan(chat, before, _scope_files(root, chat, before))
    for lf in p.files:
        for eid in live_ids(lf.path, lf.relpath):
            p.events += 1
            if eid:
                p.ids.add(eid)
    p.select = concerns(chat, all_ids(p.files))
    skip = {lf.relpath for lf in p.files}
    p.queries = sum(selected_lines(lf, p.select) for lf in trail_files(root, skip))
    planned = plan_derived(root, ErasedScope(chat, before, files=frozenset(lf.relpath for lf in p.files),
                                             event_ids=frozenset(p.ids)))
    p.alerts = sum(c.get("alerts", 0) for c in planned.values())
    p.reviews = sum(c.get("reviews", 0) for c in planned.values())
    return p


def _erase_bytes(data: bytes, rel: str, select: Select | None = None) -> tuple[bytes, int, int]:
    """(erased file bytes without any torn tail, lines erased, torn bytes dropped). With `select`, only the live lines
    it picks are erased (the agent's trail in the system stream) and a torn tail is left to the writer's repair."""
    end = data.rfind(b"\n") + 1
    out, n = [], 0
    for i, line in enumerate(data[:end].split(b"\n")[:-1], 1):
        if select is not None and not _picked(line, select):
            out.append(line + b"\n")
            continue
        try:
            new = erase_line(line)
        except (BadEvent, orjson.JSONDecodeError, TypeError) as exc:
            if b'"salt":"' in line or not isinstance(exc, orjson.JSONDecodeError):
                raise EventlogError(f"{rel}:{i}: cannot erase: {exc}") from None
            new = None  # a damaged line without content stays as it is (verify reports it)
        n += new is not None
        out.append((new if new is not None else line) + b"\n")
    if select is not None:
        return b"".join(out) + data[end:], n, 0
    return b"".join(out), n, len(data) - end


def _picked(line: bytes, select: Select) -> bool:
    if b'"salt":"' not in line:
        return False
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(obj, dict) and select(obj)


def _reseal(log: Any, rel: str) -> bool:
    """A sealed day rewritten by an erasure: same lines and hashes, other size — record the new size."""
    from ..store.seal import measure, seal_record, sealed_index

    parsed = parse_relpath(rel)
    sealed = sealed_index(log.root, parsed.channel, parsed.chat_id, parsed.account).get(rel) if parsed else None
    if sealed is None or parsed is None:
        return False
    lines, size, last, _ = measure(log.root / rel)
    if not lines or (sealed["bytes"] == size and sealed["lines"] == lines and sealed["last"] == last):
        return False
    log.append_stream(parsed.seal, [seal_record(rel, lines, size, last)])
    return True


def _erase_file(log: Any, lf: LogFile, report: ForgetReport, select: Select | None = None) -> bool:
    """Erase one day file in place (atomically, under its lock), or with `select` only the lines it picks. True if
    its bytes changed."""
    changed = False
    with FileLock(f"{lf.path}.lock"):
        for leftover in lf.path.parent.iterdir() if select is None else ():
            if leftover.name.startswith(lf.path.name) and any(t in leftover.name for t in _LEFTOVERS):
                leftover.unlink(missing_ok=True)  # moved-aside torn tails and killed runs' temporaries hold content
                report.leftovers += 1
        try:
            data = lf.path.read_bytes()
        except FileNotFoundError:
            return False
        new, n, torn = _erase_bytes(data, lf.relpath, select)
        if n or torn:
            replace_file(lf.path, new, "forget")
            log._tails.pop(lf.relpath, None)
            report.files += 1
            report.queries += n if select is not None else 0
            report.torn_dropped += torn
            changed = True
        if _reseal(log, lf.relpath):  # also finishes a run killed between the rename and the reseal
            report.resealed += 1
    return changed


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def operator() -> str:
    try:
        return os.environ.get("EVENTLOG_OPERATOR") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def forget(root: Path, *, chat: str | None = None, before: date | None = None, reason: str,
           by: str | None = None, progress: Callable[[str], None] | None = None) -> ForgetReport:
    from ..store.head import checkpoint
    from ..store.writer import EventLog

    if not reason.strip():
        raise EventlogError("--reason must say why (it is recorded in the log:erased event)")
    p = plan(root, chat, before)  # refuses before touching anything if v1 content is in scope
    log = EventLog(root)
    report = ForgetReport(events=p.events, alerts=p.alerts, reviews=p.reviews)
    if p.events or p.alerts or p.reviews or p.queries:
        # Recorded first, with the planned counts: a run killed half-way has still left its record, and the run that
        # finishes the job records what was left.
        report.event = log.append({
            "event": "log:erased", "channel": "system", "chat_id": "eventlog", "ts": _now(),
            "note": reason, "from": {"operator": by or operator()},
            "scope": {"chat": chat, "before": before.isoformat() if before else None},
            "files": len(p.files), "events": p.events, "alerts": p.alerts, "reviews": p.reviews,
            "queries": p.queries,
        })
    with erasing(root):  # no derived build publishes meanwhile; one that read the log before does not publish after
        report.derived = _erase_all(root, log, p, report, progress)
    checkpoint(log)
    return report


def _erase_all(root: Path, log: Any, p: ForgetPlan, report: ForgetReport,
               progress: Callable[[str], None] | None) -> dict[str, dict[str, int]]:
    changed: set[str] = set()
    for lf in p.files:
        if progress:
            progress(lf.relpath)
        if _erase_file(log, lf, report):
            changed.add(lf.relpath)
    if p.queries:
        # the log:erased event just written is on the system stream too: selected lines only, never it
        for lf in trail_files(root, {lf.relpath for lf in p.files}):
            if _erase_file(log, lf, report, p.select):
                changed.add(lf.relpath)
    return erase_derived(root, ErasedScope(p.chat, p.before, frozenset(changed),
                                           frozenset(lf.relpath for lf in p.files), frozenset(p.ids)))
