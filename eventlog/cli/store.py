"""Store commands: init, path, append, verify, seal, stats."""
from __future__ import annotations

import sys
from datetime import datetime, tzinfo
from pathlib import Path

import click

from ..store.layout import locations, root_source
from .common import account_option, chat_id_param, emit_json, ensure_root, handle_errors, root_option, since_until
from .main import cli
from .timeopts import cutoff, first_day_from, time_range


@cli.command()
@root_option
@handle_errors
def init(root: Path) -> None:
    """Create the log root (0700) and its top-level folders; harmless if they exist.

    \b
    Example:
      eventlog init --root ~/.openclaw/eventlog
    """
    from ..store.writer import EventLog

    for sub in ("", "raw", "seals", "dlp"):
        d = root / sub if sub else root
        existed = d.is_dir()
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not existed:
            EventLog(root)._fsync_dir(d.parent)
    click.echo(str(root))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per location.")
@root_option
@handle_errors
def path(root: Path, as_json: bool) -> None:
    """Print every location in use (root, log files, seals, DLP streams, key, allowlist, Parquet), then every
    environment variable the package reads, with its current value or "unset" (docs/environment.md).

    \b
    Example:
      eventlog path --json
    """
    from ..config import config_path
    from ..envvars import current

    rows = [("root", root, root_source(click.get_current_context().params.get("root_opt")))]
    rows += [(name, p, "") for name, p in locations(root)]
    cfg = config_path(root)
    rows.append(("config", cfg, "$EVENTLOG_CONFIG" if cfg != root / "config.toml" else ""))
    for name, p, note in rows:
        if as_json:
            emit_json({"type": "location", "name": name, "path": str(p), "exists": p.exists(),
                       **({"source": note} if note else {})})
        else:
            click.echo(f"{name:<14} {p}" + (f"   ({note})" if note else ""))
    if not as_json:
        click.echo("\nenvironment")
    for var, value in current():
        if as_json:
            emit_json({"type": "environment", "name": var.name, "value": value, "what": var.what})
        else:
            click.echo(f"  {var.name:<28} {'unset' if value is None else value}")


@cli.command()
@click.option("--fsync", type=click.Choice(["always", "batch", "never"]), default="batch", show_default=True,
              help="always: fsync each event before the next; batch: one fsync per input chunk; never: leave it to the OS.")
@click.option("--ack", is_flag=True, help="Print each event's id on stdout, flushed, once it is durable under --fsync.")
@click.option("--check", is_flag=True, help="Validate every line (and duplicate ids) and write nothing.")
@root_option
@handle_errors
def append(root: Path, fsync: str, ack: bool, check: bool) -> None:
    """Append events from stdin (JSON Lines). Each needs event, channel, chat_id and ts; v, id and prev are filled.

    \b
    What is atomic:
    - every line is written whole or not at all, in input order;
    - stdin a regular file (`< events.jsonl`): the whole input is one unit — every line is validated (JSON, event,
      duplicate ids) before the first is written; one bad line → exit 2 naming it, nothing written;
    - stdin a pipe or terminal (a stream): lines are written as they arrive; at the first bad line the command stops
      with exit 2 naming it: every line before it is written, it and every line after it are not;
    - --ack prints each written event's id, in input order, once it is durable under --fsync. On exit 2 for bad input
      every written line was acknowledged. After an I/O error (disk full, lock timeout) lines of the failing chunk
      may be written without an id; an acknowledged id is always written;
    - --check validates the whole input and writes nothing (for all-or-nothing from a pipe, check a copy first).
    Example: eventlog append --ack < events.jsonl"""
    from ..store.ingest import ingest
    from ..store.writer import EventLog

    out = sys.stdout.buffer

    def acknowledge(stored: list[dict]) -> None:
        out.write(b"".join(ev["id"].encode() + b"\n" for ev in stored))
        out.flush()

    def warn_repaired(rel: str) -> None:
        click.echo(f"eventlog: warning: {rel}: a torn last line (crash mid-write) was moved aside; "
                   "see its log:repair event", err=True)

    ingest(EventLog(root, fsync=fsync), sys.stdin.buffer, check=check,
           on_written=acknowledge if ack else lambda _: None, on_repaired=warn_repaired)


@cli.command()
@click.option("--chat", default=None, callback=chat_id_param, help="Only this chat id.")
@since_until
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: damage/warning records and a summary.")
@click.option("-q", "--quiet", is_flag=True, help="No output; the exit code says it all.")
@click.option("--head", "head_hash", default=None, metavar="HASH",
              help="Also prove the log still extends this head (from `eventlog head`); names what is missing.")
@root_option
@handle_errors
def verify(root: Path, chat: str | None, since, until, as_json: bool, quiet: bool, head_hash: str | None) -> None:
    """Check hash chains and seals; print `file:line: reason` for every damaged place. Exit 0 clean, 2 damaged.

    Example: eventlog verify --head 3f1c…e9 (the hash `eventlog head` printed last week)"""
    from ..store.verify import verify as run

    ensure_root(root)

    def emit(problem, is_damage: bool) -> None:
        if quiet:
            return
        if as_json:
            emit_json({"type": "damage" if is_damage else "warning", "file": problem.relpath,
                       "line": problem.line, "reason": problem.reason})
        elif is_damage:
            click.echo(str(problem))
        else:
            click.echo(f"warning: {problem}", err=True)

    report = run(root, chat, since, until, emit)
    if head_hash is not None:
        from ..store.head import verify_head

        for problem in verify_head(root, head_hash):
            report.damage.append(problem)
            emit(problem, True)
    if as_json and not quiet:
        emit_json({"type": "summary", "files": report.files, "lines": report.lines,
                   "damaged": len(report.damage), "warnings": len(report.warnings), "ok": report.ok})
    elif not quiet:
        click.echo(f"{report.files} files, {report.lines} lines: "
                   + ("ok" if report.ok else f"{len(report.damage)} damaged place(s)"), err=True)
    if not report.ok:
        sys.exit(2)


@cli.command()
@click.option("--chat", default=None, callback=chat_id_param, help="Only this chat id.")
@cutoff("--through", "The same as --until (the older name).")
@click.option("--json", "as_json", is_flag=True)
@root_option
@handle_errors
def seal(root: Path, chat: str | None, until: datetime | None, tz: tzinfo, as_json: bool) -> None:
    """Seal closed day files: record line count, size and last hash under seals/ (done automatically when a later day
    is written to the same chat). --until seals the UTC day files that lie wholly before the end of WHEN (default:
    up to yesterday, UTC). A file whose hash chain does not verify is not sealed (exit 2, naming file:line): a seal
    would commit to the damage.

    \b
    Examples:
      eventlog seal
      eventlog seal --until yesterday --tz Europe/Berlin
      eventlog seal --chat 100007 --json
    """
    from datetime import date, timedelta

    from ..store.seal import DAMAGED, seal_closed
    from ..store.writer import EventLog

    ensure_root(root)
    first = first_day_from(until)
    results = seal_closed(EventLog(root), chat, max(first, date.min + timedelta(days=1)) - timedelta(days=1) if first
                          else None)
    sealed = 0
    refused = [outcome[len(DAMAGED):] for _, outcome in results if outcome.startswith(DAMAGED)]
    for rel, outcome in results:
        sealed += outcome == "sealed"
        if outcome.startswith(DAMAGED) and not as_json:
            continue
        if as_json:
            emit_json({"type": "seal", "file": rel, "outcome": outcome})
        elif outcome != "already sealed":
            click.echo(f"{rel}: {outcome}")
    if not as_json:
        click.echo(f"{sealed} sealed, {len(results) - sealed} unchanged or skipped", err=True)
    for where in refused:
        click.echo(f"eventlog: not sealed: {where} (run `eventlog verify`)", err=True)
    if refused:
        sys.exit(2)


@cli.command()
@click.option("--by", type=click.Choice(["channel", "account", "chat", "day"]), default="chat", show_default=True,
              help="Group by channel, account, chat, or chat and day (the day in the zone: --tz, $EVENTLOG_TZ, config, "
                   "system).")
@click.option("--chat", default=None, callback=chat_id_param, help="Only this chat id.")
@account_option
@time_range
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one row per group.")
@root_option
@handle_errors
def stats(root: Path, by: str, chat: str | None, accounts: tuple[str, ...], since: datetime | None,
          until: datetime | None, tz: tzinfo, as_json: bool) -> None:
    """Events and bytes per channel, account, chat or day, counting the events in [--since, --until) exactly. Exit 1
    if the range holds no events.

    \b
    Examples:
      eventlog stats --by day --since this-month --tz Europe/Moscow
      eventlog stats --by account --since 2026-11-01
      eventlog stats --by chat --json
    """
    from ..store.stats import stats as run

    ensure_root(root)
    total = 0
    for row in run(root, by, chat, since, until, tz, list(accounts) or None):
        total += row["events"]
        if as_json:
            emit_json({"type": "stats", **row})
        else:
            key = "  ".join(str(row[k]) for k in ("channel", "account", "chat_id", "day") if k in row)
            click.echo(f"{key:<40} {row['events']:>10} events {row['bytes']:>14} bytes")
    if not total:
        sys.exit(1)

