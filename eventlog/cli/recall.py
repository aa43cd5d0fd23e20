"""Recall commands: sql, grep, tail, compact. Parse → call the library → render; nothing else lives here."""
from __future__ import annotations

import os
import signal
import sys
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Callable

import click

from .common import CliError, account_option, ensure_root, handle_errors, output_name, output_to, root_option
from .main import cli
from .timeopts import cutoff, first_day_from, time_range

_chat_option = click.option("--chat", "chats", multiple=True, metavar="CHAT_ID",
                            help="Only this chat (repeatable). Prunes the files read.")


@cli.command()
@click.argument("query")
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE",
              help="Bind $NAME in the query to VALUE (a string literal: DuckDB casts it where it is compared; "
                   "CAST($NAME AS INT) for arithmetic). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default=None,
              help="Output format (default: table on a terminal, json otherwise).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json (JSON Lines).")
@click.option("-o", "--output", default=None, metavar="FILE",
              help="Write the result to FILE (0600, atomically: replaced only when the query succeeded; refused inside "
                   "the log root; `-` is standard output). Required for parquet on a terminal.")
@click.option("--explain", is_flag=True, help="Print the SQL the views expand to (and the files bound), run nothing.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=300, show_default=True,
              metavar="SECONDS", help="Stop the query after this long (exit 2); 0: no limit. Ctrl-C stops it too.")
@click.option("--memory-limit", default="400MB", show_default=True, metavar="SIZE",
              help="DuckDB's memory limit (e.g. 1GB); beyond it DuckDB spills to a private temp directory or fails.")
@_chat_option
@account_option
@time_range
@root_option
@handle_errors
def sql(query: str, params: tuple[tuple[str, str], ...], fmt: str | None, as_json: bool, output: str | None,
        explain: bool, timeout_s: float, memory_limit: str, chats: tuple[str, ...], accounts: tuple[str, ...],
        since: datetime | None, until: datetime | None, tz: tzinfo, root: Path) -> None:
    """Run a read-only DuckDB QUERY over the log (`-` reads it from stdin).

    Views: events (every event, explicit schema), messages (received and sent, flattened, with reply_to_message_id
    and is_edit/edits_message_id), edits (each edit beside the message it edits), chats (type, title, first/last
    seen, counts by direction), dlp_alerts, dlp_reviews. Exit 0 when the result has rows, 1 when empty, 2 on error
    or --timeout, 130 on Ctrl-C (143 on SIGTERM): either signal stops the query inside DuckDB.

    \b
    Examples:
      eventlog sql "SELECT title, received, sent FROM chats ORDER BY received DESC" --since this-week
      eventlog sql "SELECT ts, sender, text FROM messages" --chat 100007 --since yesterday --tz Europe/Berlin
    """
    from ..recall import query as q
    from ..recall.output import write_result

    ensure_root(root)
    if query == "-":
        try:
            query = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"the query on stdin is not UTF-8 (byte {exc.start})") from None
    scope = q.scope_from(root, chats, since, until, tz, accounts)
    fmt = "json" if as_json else fmt or ("table" if sys.stdout.isatty() and output in (None, "-") else "json")
    src = q.plan(scope)
    if explain:
        click.echo(q.explain_text(scope, src), nl=False)
        return
    bound = dict(params)
    with q.duckdb_errors():
        try:
            with q.bounded(timeout_s) as guard:
                con, src = q.connect(scope, src, memory_limit=memory_limit)
                guard.con = con
                cur = q.execute(con, query, bound)
                with output_to(output or "-", root, binary=fmt == "parquet") as f:
                    rows = write_result(cur, fmt, f, tz=tz)
        except q.Interrupted as exc:
            if exc.signum == signal.SIGINT:
                raise KeyboardInterrupt from None  # exit 130, one line (cli/main.py)
            click.echo("eventlog: terminated", err=True)
            sys.exit(128 + exc.signum)
        _report_skipped(q.invalid_lines(con, src, root))
    for unit in src.stale:
        click.echo(f"eventlog: compaction {unit} is stale (day files changed since it was built); those files were "
                   "read from JSONL — run `eventlog compact`", err=True)
    sys.exit(0 if rows else 1)


def _report_skipped(bad: list[tuple[str, int]]) -> None:
    for rel, n in bad[:10]:
        click.echo(f"eventlog: {rel}: skipped {n} torn or invalid line(s) (see `eventlog verify`)", err=True)
    if len(bad) > 10:
        click.echo(f"eventlog: … and {len(bad) - 10} more file(s) with skipped lines", err=True)


@cli.command()
@cutoff("--before", "Compact the day files wholly before the start of WHEN (the older flag; --until is WHEN's end).",
        old_is_start=True)
@click.option("--rebuild", is_flag=True, help="Rebuild every unit from the JSONL, even unchanged ones.")
@click.option("--check", is_flag=True, help="Re-verify every published unit against its record; compact nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per unit.")
@root_option
@handle_errors
def compact(until: datetime | None, tz: tzinfo, rebuild: bool, check: bool, as_json: bool, root: Path) -> None:
    """Copy closed days into Parquet (one file per month) so SQL over long ranges is fast. The JSONL stays canonical:
    a unit is checked (row count + content hash) before it is published; a query reads a day file from it only
    while the file's identity (size, mtime, ctime, inode) is unchanged, else from JSONL. Units are UTC months of
    UTC day files: --until compacts the day files that lie wholly before the end of WHEN (default: every closed day).

    \b
    Examples:
      eventlog compact                 # every closed UTC day
      eventlog compact --until last-month
      eventlog compact --check         # exit 2 if any unit cannot be loaded or verified
    """
    from ..recall import compact as c
    from .common import bar, emit_json, progress_meter

    ensure_root(root)
    if check:
        problems, good = c.verify_units(root)
        for p in problems:
            click.echo(f"eventlog: {p}", err=True)
        changed = sum(len(c.changed_sources(root, u)) for u in good)
        click.echo(f"{len(good)} unit(s) verified, {len(problems)} unusable"
                   + (f"; {changed} compacted day file(s) changed since (read from JSONL until "
                      "`eventlog compact`)" if changed else ""))
        sys.exit(2 if problems else 0)
    meter = progress_meter()

    def show(done: int, total: int, label: str) -> None:
        if meter is not None and total:
            meter.show(f"compacting {bar(done, total)} {done}/{total} {label:8}", last=done == total)

    results = c.compact(root, first_day_from(until), rebuild, show)
    for r in results:
        if as_json:
            emit_json({"type": "unit", "unit": r.unit, "action": r.action, "rows": r.rows, "files": r.files,
                       "skipped_lines": r.skipped_lines})
        else:
            click.echo(f"{r.unit}  {r.action:<8} {r.rows:>9} rows  {r.files:>6} files"
                       + (f"  ({r.skipped_lines} torn/invalid lines skipped)" if r.skipped_lines else ""))
    if not results:
        raise CliError("no closed day files to compact", 1)


@cli.command()
@click.argument("pattern", required=False)
@click.option("-i", "--ignore-case", is_flag=True, help="Case-insensitive, Unicode simple case folding as Python's re.IGNORECASE (Ё/ё; ß is not ss).")
@click.option("-E", "--regex", is_flag=True, help="PATTERN is a regular expression (Python `re` syntax; the search's "
              "checks share a 10 s budget — a catastrophically backtracking regex is an error, exit 2).")
@click.option("--fuzzy", is_flag=False, flag_value=str(80.0), default=None, metavar="[SCORE]",
              help="Fuzzy word match (typos, word forms), rapidfuzz ratio ≥ SCORE (default 80).")
@click.option("-w", "--word-regexp", "word", is_flag=True, help="Only matches with no word character on either side.")
@click.option("-v", "--invert-match", "invert", is_flag=True, help="Messages that do NOT match.")
@click.option("-l", "--files-with-matches", "files_only", is_flag=True,
              help="Print only the day files (relative to the root) that hold a match.")
@click.option("-C", "--context", type=click.IntRange(0, 1000), default=0, metavar="N",
              help="Show N messages before and after each match (same chat and day).")
@click.option("-B", "--before-context", "before", type=click.IntRange(0, 1000), default=None, metavar="N",
              help="Show N messages before each match.")
@click.option("-A", "--after-context", "after", type=click.IntRange(0, 1000), default=None, metavar="N",
              help="Show N messages after each match.")
@click.option("-m", "--max-count", "max_count", type=click.IntRange(0), default=None, metavar="NUM",
              help="At most NUM matches per chat (a chat is what rg's file is).")
@click.option("--from", "sender", default=None, metavar="USER",
              help="Only messages from this username (@ optional) or id, or a display name by its start or any word's "
                   "start.")
@click.option("--direction", type=click.Choice(["in", "out"]), default=None, help="Only received (in) or sent (out).")
@click.option("-c", "--count", "count_only", is_flag=True, help="Print the number of matching messages per chat "
              "(CHANNEL/CHAT:N).")
@click.option("--count-total", "count_total", is_flag=True, help="Print one number: all matching messages.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: {type: match|context|count, file, line, spans, event}.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
              help="Highlight matches (auto: on a terminal, unless $NO_COLOR is set).")
@_chat_option
@account_option
@time_range
@root_option
@handle_errors
def grep(pattern: str | None, ignore_case: bool, regex: bool, fuzzy: str | None, word: bool, invert: bool,
         files_only: bool, context: int, before: int | None, after: int | None, max_count: int | None,
         sender: str | None, direction: str | None, count_only: bool, count_total: bool, as_json: bool, color: str,
         chats: tuple[str, ...], accounts: tuple[str, ...], since: datetime | None, until: datetime | None, tz: tzinfo,
         root: Path) -> None:
    """Search message texts (not JSON keys or other fields). Literal by default. PATTERN may be left out when a
    filter (--from, --direction, --chat, --since, --until) says what to list.

    Exit 0 when something matched, 1 when nothing did, 2 on error — like grep.

    \b
    Examples:
      eventlog grep -i -w deploy --since monday --tz Europe/Berlin
      eventlog grep --from alice --since today -c
      eventlog grep deploy --account ops
    """
    from ..recall import grep as r
    from ..recall.planner import scope_from
    from .common import emit_json

    ensure_root(root)
    scope_from(root, chats, since, until)  # validates --chat
    if regex and fuzzy is not None:
        raise CliError("-E and --fuzzy cannot be combined")
    try:
        score = float(fuzzy) if fuzzy is not None else r.DEFAULT_FUZZY_SCORE
    except ValueError:
        # `--fuzzy WORD` (no SCORE): click took the pattern as the option's value.
        assert fuzzy is not None  # float(None) is never tried
        if pattern is not None:
            raise CliError(f"--fuzzy SCORE must be a number from 0 to 100, not {fuzzy[:40]!r}") from None
        pattern, score = fuzzy, r.DEFAULT_FUZZY_SCORE
    if pattern is None:
        if not (sender or direction or chats or since or until):
            raise CliError("give a PATTERN, or a filter (--from, --direction, --chat, --since, --until)")
        if fuzzy is not None or regex:
            raise CliError("-E and --fuzzy need a PATTERN")
        pattern = ""
    if not 0 <= score <= 100:
        raise CliError("--fuzzy SCORE must be from 0 to 100")
    q = r.GrepQuery(pattern, "fuzzy" if fuzzy is not None else "regex" if regex else "literal", ignore_case, score,
                    chats or None, since, until, sender, direction, word, invert, accounts or None)
    problems = lambda msg: click.echo(f"eventlog: {msg}", err=True)  # noqa: E731
    if count_total:
        n = sum(r.count_by_chat(root, q, problems, max_count).values())
        emit_json({"type": "count", "count": n}) if as_json else click.echo(str(n))
        sys.exit(0 if n else 1)
    if count_only:
        counts = r.count_by_chat(root, q, problems, max_count)
        for (channel, account, chat), n in counts.items():
            if as_json:
                emit_json({"type": "count", "channel": channel, "account": account, "chat_id": chat, "count": n})
            else:  # the partition as the layout names it: telegram/42, telegram/accounts/b/42
                click.echo(f"{channel}/{chat}:{n}" if account == "default" else f"{channel}/accounts/{account}/{chat}:{n}")
        sys.exit(0 if counts else 1)
    hits = r.limit_per_chat(r.search(root, q, problems), max_count)
    if files_only:
        seen = None
        for h in hits:
            if h.relpath != seen:
                seen = h.relpath
                emit_json({"type": "file", "file": h.relpath}) if as_json else click.echo(h.relpath)
        sys.exit(0 if seen else 1)
    from ..recall.output import local_ts  # only what lists messages needs these (a count is one rg and a sum)
    from ..store import render

    no_color = bool(os.environ.get("NO_COLOR"))
    paint = color == "always" or (color == "auto" and sys.stdout.isatty() and not as_json and not no_color)
    style = _style(paint)
    n_before = context if before is None else before
    n_after = context if after is None else after
    found = False
    first = True
    for group in r.with_context(root, hits, n_before, q, n_after):
        found = found or any(h.kind == "match" for h in group)
        if (n_before or n_after) and not first and not as_json:
            click.echo("--")
        first = False
        for h in group:
            if as_json:
                emit_json({"type": h.kind, "file": h.relpath, "line": h.line, "spans": h.spans, "event": h.event})
            else:
                click.echo(render.grep_line(h.event, h.spans, h.kind == "match", lambda ts: local_ts(ts, tz), style),
                           color=paint)
    sys.exit(0 if found else 1)


def _style(paint: bool) -> Callable[[str, str], str]:
    """The renderer's roles in colour: the line head magenta, a matched span bold red; plain without paint."""
    colours: dict[str, dict[str, Any]] = {"head": {"fg": "magenta"}, "match": {"fg": "red", "bold": True}}
    return (lambda s, role: click.style(s, **colours[role])) if paint else (lambda s, role: s)


@cli.command()
@click.option("-f", "--follow", is_flag=True, help="Keep printing events as they are appended (Ctrl-C to stop).")
@click.option("-n", "--lines", "count", type=click.IntRange(0), default=10, show_default=True,
              help="How many of the last events to print first.")
@click.option("--cursor", default=None, metavar="NAME",
              help="Print what is new since the last run with this NAME, and remember what was shown "
                   "(<root>/state/cursors/NAME.json). The first run starts from -n/--since.")
@click.option("--json", "as_json", is_flag=True, help="One event object per line (JSON Lines).")
@_chat_option
@time_range
@root_option
@handle_errors
def tail(follow: bool, count: int, cursor: str | None, as_json: bool, chats: tuple[str, ...], since: datetime | None,
         until: datetime | None, tz: tzinfo, root: Path) -> None:
    """Print the last events of the log, and with -f every event as it is appended — new chats and the switch to a
    new day file included. Event-driven (inotify via watchdog), no polling. --since prints every event from then
    (instead of the last -n), in time order; --until stops before it (not with -f).

    \b
    Examples:
      eventlog tail --cursor mine        # what is new since I last looked
      eventlog tail -f --since 1h --tz Europe/Berlin
    """
    from ..recall import follow as fw
    from ..store import render
    from ..recall.output import local_ts
    from ..recall.tail import TailQuery
    from ..recall.tail import tail as run_tail
    from .common import emit_json

    ensure_root(root)
    paint = sys.stdout.isatty() and not as_json and not os.environ.get("NO_COLOR")
    style = _style(paint)

    def show(e: "fw.Emitted") -> None:
        if as_json:
            emit_json(e.event)
        else:
            click.echo(render.tail_line(e.event, lambda ts: local_ts(ts, tz), style), color=paint)
        sys.stdout.flush()

    shown = run_tail(root, TailQuery(count, since, until, chats or None, cursor, follow), show,
                     lambda n: click.echo(f"eventlog: following {n} file(s) under {root} (Ctrl-C to stop)", err=True))
    sys.exit(0 if shown or follow else 1)


@cli.command()
@click.option("--chat", required=True, metavar="CHAT_ID", help="The chat to export.")
@account_option
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet", "md"]), default="jsonl",
              show_default=True, help="jsonl: the log's own lines; csv/parquet: the messages view; md: a transcript.")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="Where to write (0600, atomically; refused inside the log root; `-` is standard output).")
@time_range
@root_option
@handle_errors
def export(chat: str, accounts: tuple[str, ...], fmt: str, output: str, since: datetime | None,
           until: datetime | None, tz: tzinfo, root: Path) -> None:
    """Export one chat (optionally a time range) to a file. Exit 0 when something was written, 1 when the range
    is empty (the file is still written), 2 on error.

    \b
    Examples:
      eventlog export --chat 100007 --since last-month --until last-month --format md -o november.md
      eventlog export --chat 100007 --format csv -o chat.csv --tz Europe/Berlin
      eventlog export --chat 100007 --account ops -o ops-chat.jsonl
    """
    from ..recall.export import export as run_export

    ensure_root(root)
    with output_to(output, root, binary=fmt == "parquet") as f:
        n = run_export(root, chat, since, until, fmt, f, tz, accounts or None)
    click.echo(f"eventlog: {n} {'event' if fmt == 'jsonl' else 'message'}(s) written to {output_name(output)}",
               err=True)
    sys.exit(0 if n else 1)

