"""`eventlog lake push|sql|verify`: many gateways' sealed days in one DuckLake (docs/lake.md). Parse → call
eventlog/lake → render."""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any, Callable

import click

from .common import CliError, emit_json, ensure_root, handle_errors, output_to, root_option
from .main import cli


@cli.group()
def lake() -> None:
    """Ship sealed days into a DuckLake shared by many gateways; query and verify it there.

    \b
    Examples:
      eventlog lake push --catalog sqlite:/srv/lake/catalog.sqlite --data /srv/lake/data
      eventlog lake push --catalog 'postgres:dbname=lake host=db.internal user=eventlog' --data /srv/lake/data
      eventlog lake sql "SELECT gateway, count(*) FROM messages GROUP BY gateway" --catalog … --data …
      eventlog lake verify --catalog … --data … --head "$(tail -1 ~/eventlog-heads.txt)"
    """


def _lake_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--data", required=True, metavar="DATA",
                     help="The DuckLake data path: a directory (s3://… documented in docs/lake.md).")(f)
    return click.option("--catalog", required=True, metavar="CATALOG",
                        help="The DuckLake catalog: sqlite:FILE (one host) or 'postgres:dbname=… host=… port=… "
                             "user=…' (many).")(f)


_gateway_option = click.option("--gateway", default=None, metavar="NAME",
                               help="This root's gateway name in the lake (default: the one stored in the root by its "
                                    "first push, else the host name).")


@lake.command("push")
@_lake_options
@_gateway_option
@click.option("--json", "as_json", is_flag=True, help="The push's summary as one JSON object.")
@root_option
@handle_errors
def push_cmd(catalog: str, data: str, gateway: str | None, as_json: bool, root: Path) -> None:
    """Ship every sealed day of the root into the lake: new days added, days rewritten since (forget, retention)
    replaced and their old rows scrubbed, days gone deleted. Idempotent; a killed push is completed by the next.
    A root that does not verify ships nothing (exit 2).

    \b
    Example:
      eventlog lake push --catalog sqlite:/srv/lake/catalog.sqlite --data /srv/lake/data --json
    """
    from ..lake.catalog import check_data, parse_catalog
    from ..lake.push import push

    ensure_root(root)
    cat = parse_catalog(catalog)
    report = push(root, cat, check_data(data), gateway)
    if as_json:
        emit_json(report.as_json())
        return
    click.echo(f"gateway {report.gateway}: {report.files_new} new, {report.files_replaced} replaced, "
               f"{report.files_deleted} deleted, {report.files_unchanged} unchanged day file(s); "
               f"{report.lines_added} line(s) added, {report.lines_deleted} deleted")


@lake.command("sql")
@click.argument("query")
@_lake_options
@click.option("-p", "--param", "params", nargs=2, multiple=True, metavar="NAME VALUE",
              help="Bind $NAME in the query to VALUE (as `eventlog sql -p`). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default=None,
              help="Output format (default: table on a terminal, json otherwise).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json (JSON Lines).")
@click.option("-o", "--output", default=None, metavar="FILE", help="Write the result to FILE (as `eventlog sql -o`).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), default=300, show_default=True,
              metavar="SECONDS", help="Stop the query after this long (exit 2); 0: no limit.")
@handle_errors
def sql_cmd(query: str, catalog: str, data: str, params: tuple[tuple[str, str], ...], fmt: str | None,
            as_json: bool, output: str | None, timeout_s: float) -> None:
    """Run a read-only DuckDB QUERY over the lake (`-` reads it from stdin): the views of `eventlog sql` (events,
    messages, edits, replies, chats) over every gateway's shipped days, each with a `gateway` column. Exit 0 when
    the result has rows, 1 when empty, 2 on error.

    \b
    Example:
      eventlog lake sql "SELECT gateway, chat_id, count(*) FROM messages GROUP BY ALL" --catalog … --data …
    """
    from ..lake.catalog import check_data, parse_catalog
    from ..lake.sql import connect
    from ..recall import query as q
    from ..recall.output import write_result

    if query == "-":
        try:
            query = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"the query on stdin is not UTF-8 (byte {exc.start})") from None
    cat = parse_catalog(catalog)
    fmt = "json" if as_json else fmt or ("table" if sys.stdout.isatty() and output in (None, "-") else "json")
    with q.duckdb_errors():
        try:
            with q.bounded(timeout_s) as guard:
                con = connect(cat, check_data(data))
                guard.con = con
                cur = q.execute(con, query, dict(params))
                with output_to(output or "-", None, binary=fmt == "parquet") as f:
                    rows = write_result(cur, fmt, f)
        except q.Interrupted as exc:
            if exc.signum == signal.SIGINT:
                raise KeyboardInterrupt from None
            click.echo("eventlog: terminated", err=True)
            sys.exit(128 + exc.signum)
    sys.exit(0 if rows else 1)


@lake.command("verify")
@_lake_options
@_gateway_option
@click.option("--head", "head", default=None, metavar="HASH",
              help="Also prove the root extends HASH (kept from `eventlog head`) and that a push recorded it.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per difference, then a summary object.")
@root_option
@handle_errors
def verify_cmd(catalog: str, data: str, gateway: str | None, head: str | None, as_json: bool, root: Path) -> None:
    """Check the lake against the root: every line of every sealed day is there exactly once, with the same id,
    prev, chain hash and bytes, and the chain recomputed from the shipped events matches. Exit 0 when it does, 2
    naming each difference.

    \b
    Example:
      eventlog lake verify --catalog sqlite:/srv/lake/catalog.sqlite --data /srv/lake/data --head HASH
    """
    from ..lake.catalog import check_data, parse_catalog
    from ..lake.verify import verify_lake

    ensure_root(root)
    report = verify_lake(root, parse_catalog(catalog), check_data(data), gateway, head)
    if as_json:
        for p in report.problems:
            emit_json({"type": "difference", "where": p.where, "reason": p.reason})
        emit_json({"type": "summary", "gateway": report.gateway, "files": report.files, "lines": report.lines,
                   "differences": len(report.problems), "ok": report.ok})
    else:
        for p in report.problems[:50]:
            click.echo(f"eventlog: {p}", err=True)
        if len(report.problems) > 50:
            click.echo(f"eventlog: … and {len(report.problems) - 50} more difference(s)", err=True)
    if not report.ok:
        sys.exit(2)
    if not as_json:
        click.echo(f"gateway {report.gateway}: {report.files} day file(s), {report.lines} line(s): the lake matches "
                   "the root")
