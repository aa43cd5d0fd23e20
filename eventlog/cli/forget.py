"""Store v2 commands: forget (erasure and retention), migrate (v1 → v2), head (the hash to keep elsewhere)."""
from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path

import click

from ..errors import EventlogError
from ..recall.when import iso
from .common import CliError, emit_json, ensure_root, handle_errors, root_option, user_config
from .main import cli
from .timeopts import cutoff, first_day_from


@cli.command()
@click.option("--chat", default=None, help="Forget this chat id (in every channel).")
@cutoff("--before", "Forget the day files wholly before the start of WHEN (the older flag; --until is WHEN's end).",
        old_is_start=True)
@click.option("--retention", is_flag=True,
              help="Forget everything older than retention_days (config file or $EVENTLOG_RETENTION_DAYS).")
@click.option("--reason", required=True, help="Why (recorded in the log:erased event).")
@click.option("--yes", is_flag=True, help="Do it without asking (needed when stdin is not a terminal).")
@click.option("--json", "as_json", is_flag=True, help="The plan (or the result) as JSON Lines.")
@root_option
@handle_errors
def forget(root: Path, chat: str | None, until: datetime | None, tz: tzinfo, retention: bool, reason: str, yes: bool,
           as_json: bool) -> None:
    """Erase the content of a chat and/or of old days everywhere under the root: log lines (the hash chain, seals and
    earlier heads keep verifying), the agent's recall:query calls about them, DLP alerts' fingerprints and previews,
    review notes and allowlist entries, index units and Parquet. Ids, times and the chain stay. Writes a log:erased
    event.

    Erasure works on whole UTC day files: --until WHEN erases the day files that lie wholly before the end of WHEN;
    events of WHEN that share a day file with later events are kept, and the command says so.

    Exit 0 when the selection is erased (or already was), 1 when it matches no day file, 2 on error.

    Example: eventlog forget --chat 42 --reason "user asked (ticket 1234)" --yes"""
    from ..ops.forget import forget as run
    from ..ops.forget import plan

    ensure_root(root)
    before = first_day_from(until)
    if until is not None and before is not None and until > datetime(before.year, before.month, before.day,
                                                                      tzinfo=timezone.utc):
        click.echo(f"eventlog: note: the events from {before.isoformat()}T00:00Z to {iso(until)} are kept: they share "
                   "that UTC day's file with later events (forget erases whole day files)", err=True)
    if retention:
        cfg = user_config(root)
        days = cfg.get("retention_days")
        if days is None:
            raise EventlogError(f"--retention: no retention_days in {cfg.path} (or $EVENTLOG_RETENTION_DAYS)")
        cutoff = datetime.now(timezone.utc).date() - timedelta(days=days)
        before = min(before, cutoff) if before else cutoff
    p = plan(root, chat, before)
    scope = {"chat": chat, "before": before.isoformat() if before else None}
    if not p.files:  # like grep: the selection matched nothing (a mistyped chat id shows here)
        click.echo(f"eventlog: nothing to forget: no day files for chat {chat or 'any'} before "
                   f"{scope['before'] or 'any day'}", err=True)
        sys.exit(1)
    if not yes:
        if as_json:
            emit_json({"type": "plan", **scope, "files": len(p.files), "events": p.events, "queries": p.queries})
        else:
            click.echo(f"would erase {p.events} event(s) in {len(p.files)} day file(s) "
                       f"(chat {chat or 'all'}, before {scope['before'] or 'any day'}) and {p.queries} recall:query "
                       "event(s) about them", err=True)
        if not sys.stdin.isatty():
            raise CliError("nothing erased: add --yes to erase")
        if not click.confirm("erase?", err=True):
            sys.exit(1)
    rep = run(root, chat=chat, before=before, reason=reason,
              progress=None if as_json else (lambda rel: click.echo(f"erasing {rel}", err=True)))
    if as_json:
        emit_json({"type": "erased", **scope, "files": rep.files, "events": rep.events, "queries": rep.queries,
                   "alerts": rep.alerts,
                   "reviews": rep.reviews, "resealed": rep.resealed, "derived": rep.derived,
                   "log_event": rep.event["id"] if rep.event else None})
    else:
        click.echo(f"erased {rep.events} event(s) in {rep.files} file(s), {rep.reviews} review note(s); "
                   f"resealed {rep.resealed}; derived: "
                   + ", ".join(f"{k} {v}" for k, v in rep.derived.items()), err=True)
        legacy = rep.derived.get("dlp", {}).get("legacy_fingerprints", 0)  # (--json: in derived.dlp)
        if legacy:
            click.echo(f"eventlog: {legacy} alert(s) of the erased scope were written before fingerprints became "
                       "erasable and keep theirs; docs/dlp.md (Files under the log root) says what to do", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per migrated file and a summary.")
@root_option
@handle_errors
def migrate(root: Path, as_json: bool) -> None:
    """Bring a log to the current format: v1 lines to v2 (content commitments, so they can be erased), and other
    accounts' lines out of the default account's files into their own (docs/log-format.md, Layout; refused on a log
    that does not verify). Safe to interrupt and re-run; each rewritten file is recorded in migrations/v2.jsonl.
    Exit 2 if a damaged file was left alone.

    Example: eventlog migrate --root ~/.openclaw/eventlog"""
    from ..store.migrate import migrate as run

    ensure_root(root)
    rep = run(root, progress=None if as_json else (lambda rel: click.echo(f"migrating {rel}", err=True)))
    if as_json:
        for rec in rep.files:
            emit_json({"type": "migrated", **{k: v for k, v in rec.items() if k not in ("event", "channel", "chat_id")}})
        emit_json({"type": "summary", "files": len(rep.files), "lines": rep.lines, "resealed": len(rep.resealed),
                   "skipped": rep.skipped, "moved": rep.moved})
    else:
        click.echo(f"{len(rep.files)} file(s) migrated ({rep.lines} lines), {len(rep.resealed)} resealed"
                   + (f", {rep.moved} line(s) moved to their accounts' files" if rep.moved else ""), err=True)
    for problem in rep.problems:
        click.echo(f"eventlog: {problem}", err=True)
    if rep.skipped:
        sys.exit(2)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="{head, checkpoints, streams} as one JSON object.")
@root_option
@handle_errors
def head(root: Path, as_json: bool) -> None:
    """Print the head hash: one hash committing to every seal stream and the DLP streams (a checkpoint is appended
    first if any of them changed). Keep it somewhere else; `eventlog verify --head HASH` proves the log still
    extends it.

    Example: eventlog head >> ~/eventlog-heads.txt"""
    from ..store.head import checkpoint, read_checkpoints
    from ..store.writer import EventLog

    ensure_root(root)
    h = checkpoint(EventLog(root))
    if h is None:
        raise EventlogError("nothing to commit to yet: no seal or DLP stream (run `eventlog seal` first)")
    if as_json:
        state, hashes = read_checkpoints(root)
        emit_json({"type": "head", "head": h, "checkpoints": len(hashes), "streams": len(state)})
    else:
        click.echo(h)
