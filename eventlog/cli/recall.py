"""Recall commands: sql, grep, tail, compact. Parse → call the library → render; nothing else lives here."""
from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import click

from ..errors import EventlogError
from .common import ensure_root, fail, handle_errors, root_option, since_until
from .main import cli

_chat_option = click.option("--chat", "chats", multiple=True, metavar="CHAT_ID",
                            help="Only this chat (repeatable). Prunes the files read.")


@cli.command()
@click.argument("query")
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE",
              help="Bind $NAME in the query (integers bind as BIGINT, anything else as text). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default=None,
              help="Output format (default: table on a terminal, json otherwise).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json (JSON Lines).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the result to this file (required for parquet on a terminal).")
@click.option("--explain", is_flag=True, help="Print the SQL the views expand to (and the files bound), run nothing.")
@_chat_option
@since_until
@root_option
@handle_errors
def sql(query: str, params: tuple[tuple[str, str], ...], fmt: str | None, as_json: bool, output: str | None,
        explain: bool, chats: tuple[str, ...], since: date | None, until: date | None, root: Path) -> None:
    """Run a read-only DuckDB QUERY over the log (`-` reads it from stdin).

    Views: events (every event, explicit schema), messages (received and sent, flattened), dlp_alerts, dlp_reviews.
    Exit 0 when the result has rows, 1 when it is empty, 2 on error.
    """
    from .. import query as q

    ensure_root(root)
    if query == "-":
        query = sys.stdin.read()
    scope = q.scope_from(root, chats, since, until)
    fmt = "json" if as_json else fmt or ("table" if sys.stdout.isatty() and not output else "json")
    src = q.plan(scope)
    if explain:
        click.echo(q.explain_text(scope, src), nl=False)
        return
    if fmt == "parquet" and not output and sys.stdout.isatty():
        raise EventlogError("--format parquet writes binary: give -o FILE or redirect stdout")
    bound = {name: (int(v) if v.lstrip("-").isdigit() and len(v) < 19 else v) for name, v in params}
    con, src = q.connect(scope, src)
    cur = q.execute(con, query, bound)
    if output:
        with open(output, "wb") as f:
            rows = q.write_result(cur, fmt, f)
    else:
        rows = q.write_result(cur, fmt, sys.stdout.buffer)
        sys.stdout.flush()
    _report_skipped(q.invalid_lines(con, src, root))
    for unit in src.stale:
        click.echo(f"eventlog: compaction {unit} is stale (a day file changed); read JSONL instead — "
                   "run `eventlog compact`", err=True)
    sys.exit(0 if rows else 1)


def _report_skipped(bad: list[tuple[str, int]]) -> None:
    for rel, n in bad[:10]:
        click.echo(f"eventlog: {rel}: skipped {n} torn or invalid line(s) (see `eventlog verify`)", err=True)
    if len(bad) > 10:
        click.echo(f"eventlog: … and {len(bad) - 10} more file(s) with skipped lines", err=True)


@cli.command()
@click.option("--before", default=None, metavar="DATE",
              help="Compact day files dated before this UTC day (default: today, so every closed day).")
@click.option("--rebuild", is_flag=True, help="Rebuild every unit from the JSONL, even unchanged ones.")
@click.option("--check", is_flag=True, help="Re-verify every published unit against its record; compact nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per unit.")
@root_option
@handle_errors
def compact(before: str | None, rebuild: bool, check: bool, as_json: bool, root: Path) -> None:
    """Copy closed days into Parquet (one file per month) so SQL over long ranges is fast. The JSONL stays canonical:
    a unit is checked (row count + content hash) before it is used, and is rebuilt whenever its day files change."""
    from .. import compact as c
    from ..layout import parse_when
    from .common import emit_json

    ensure_root(root)
    if check:
        problems = c.verify_units(root)
        for p in problems:
            click.echo(f"eventlog: {p}", err=True)
        if not problems:
            click.echo(f"{len(c.load_units(root))} unit(s) verified")
        sys.exit(2 if problems else 0)
    results = c.compact(root, parse_when(before) if before else None, rebuild, c.text_progress())
    for r in results:
        if as_json:
            emit_json({"type": "unit", "unit": r.unit, "action": r.action, "rows": r.rows, "files": r.files,
                       "skipped_lines": r.skipped_lines})
        else:
            click.echo(f"{r.unit}  {r.action:<8} {r.rows:>9} rows  {r.files:>6} files"
                       + (f"  ({r.skipped_lines} torn/invalid lines skipped)" if r.skipped_lines else ""))
    if not results:
        fail("no closed day files to compact", 1)
