"""`eventlog serve`: the local web page (eventlog/web/, docs/web.md). Parse → bind → serve."""
from __future__ import annotations

from datetime import tzinfo
from pathlib import Path

import click

from .common import ensure_root, handle_errors, root_option
from .main import cli
from .timeopts import zone_only


@cli.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="TCP port; 0 takes a free one (the printed URL says which).")
@click.option("--bind", "host", default="127.0.0.1", show_default=True, metavar="ADDR",
              help="Address to listen on. Loopback only (127.0.0.1, ::1, localhost) unless --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a --bind address other than loopback (plain HTTP: the token crosses the network).")
@zone_only
@root_option
@handle_errors
def serve_cmd(port: int, host: str, allow_remote: bool, tz: tzinfo, root: Path) -> None:
    """Serve a local page over the log: chats and timelines, search, the DLP alert queue with resolutions, a status
    strip (doctor, verify). Prints one line, `http://127.0.0.1:PORT/?token=TOKEN`; every request needs that token.
    Ctrl-C or SIGTERM stops it (exit 0).

    \b
    Example:
      eventlog serve                  # http://127.0.0.1:8765/?token=…
      eventlog serve --port 0 --tz Europe/Moscow
    """
    from ..doctor import run_checks
    from ..web.app import create_app
    from ..web.auth import new_token
    from ..web.server import bind, serve

    ensure_root(root)
    sock = bind(host, port, allow_remote)
    token = new_token()
    app = create_app(root, token=token, tz=tz, doctor=lambda r: run_checks(r))
    serve(app, sock, token)
