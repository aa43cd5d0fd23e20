"""`eventlog doctor [--json]` — one line per check, exit 0 when all pass, 2 otherwise."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import emit_json, handle_errors, root_option
from .main import cli


@cli.command("doctor")
@root_option
@click.option("--openclaw", "openclaw_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Installed openclaw package root (default: as `eventlog patch status` finds it).")
@click.option("--node", default=None, help="Node binary that runs OpenClaw (default: $EVENTLOG_NODE, else the pinned "
              "Node of `make node`, else `node` on PATH).")
@click.option("--min-free-gb", type=click.FloatRange(0), default=1.0, show_default=True,
              help="Free disk space wanted under the root.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per check: check, ok, detail.")
@handle_errors
def doctor(root: Path, openclaw_dir: Path | None, node: str | None, min_free_gb: float, as_json: bool) -> None:
    """Check the root, the OpenClaw install, the tap (applied, audited, live), the rules, Node and disk.

    Example: eventlog doctor --json
    """
    from eventlog.doctor import run_checks

    checks = run_checks(root, openclaw_dir, node, int(min_free_gb * 2**30))
    for c in checks:
        if as_json:
            emit_json(c)
        else:
            click.echo(f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']:<9} {c['detail']}")
    sys.exit(0 if all(c["ok"] for c in checks) else 2)
