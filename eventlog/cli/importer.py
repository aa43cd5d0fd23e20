"""`eventlog import`: bring history from before the tap into the log (docs/import.md)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import click

from ..importers.pipeline import ImportResult, run_import
from ..store.writer import FSYNC_POLICIES
from .common import Meter, emit_json, ensure_root, handle_errors, progress_meter, root_option
from .main import cli


@cli.group("import")
def import_group() -> None:
    """Import history from before the tap (Telegram Desktop's JSON export).

    \b
    Example:
      eventlog import telegram-desktop ~/Downloads/Telegram\\ Desktop/ChatExport_2026-11-30
    """


def import_progress(meter: Meter) -> Callable[[str, int, int], None]:
    """run_import's (phase, bytes done, bytes total) as a percentage and MiB on the meter."""
    def show(phase: str, done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        meter.show(f"{phase}: {pct:3d}% ({done >> 20} of {total >> 20} MiB)", last=done >= total, keep=False)
    return show


@import_group.command("telegram-desktop")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--bot-id", type=int, default=None, metavar="ID",
              help="The bot's user id (default: the bot of a bot-chat export, else the one the log knows).")
@click.option("--chat-id", "chat_ids", multiple=True, metavar="ID",
              help="Import only this chat (Bot API id, or the export's id); repeatable. For a bot chat without any "
                   "message of the user: the user's id.")
@click.option("--account", default="default", show_default=True, metavar="ACCOUNT",
              help="The OpenClaw account whose bot this is a history of (its chats live in that account's files).")
@click.option("--dry-run", is_flag=True, help="Check the export and count what would be added; write nothing.")
@click.option("--fsync", type=click.Choice(FSYNC_POLICIES), default="batch", show_default=True,
              help="Writer fsync policy.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per chat, then a summary.")
@root_option
@handle_errors
def telegram_desktop(root: Path, path: Path, bot_id: int | None, chat_ids: tuple[str, ...], account: str,
                     dry_run: bool, fsync: str, as_json: bool) -> None:
    """Import Telegram Desktop's "Export chat history" (machine-readable JSON): PATH is result.json or the export
    folder — one chat, or a whole account (its chats with the bot). Messages become message:received /
    message:sent, service records chat:service, each marked source "import:telegram-desktop". Importing again, or an
    overlapping export, adds only what the log does not hold yet. A bad export changes nothing (exit 2).

    \b
    Example:
      eventlog import telegram-desktop ~/Downloads/Telegram\\ Desktop/ChatExport_2026-11-30 --dry-run
      eventlog import telegram-desktop result.json --bot-id 7012345678 --json
      eventlog import telegram-desktop result.json --account ops
    """
    ensure_root(root)
    meter = progress_meter()
    try:
        result = run_import(root, path, bot_id=bot_id, chat_ids=chat_ids, dry_run=dry_run,
                            progress=import_progress(meter) if meter else None, fsync=fsync, account=account)
    finally:
        if meter:
            meter.close()
    _report(result, as_json)
    sys.exit(0 if result.imported_chats else 1)


def _report(result: ImportResult, as_json: bool) -> None:
    if as_json:
        for c in result.chats:
            emit_json(c.as_json())
        emit_json(result.as_json())
        return
    verb = "would add" if result.dry_run else "added"
    for c in result.chats:
        i = c.plan.info
        label = f"{i.type} {i.export_id}"
        if c.plan.skip:
            click.echo(f"{label}: skipped — {c.plan.skip}")
            continue
        extra = f", {i.unsupported} unsupported record(s) left out" if i.unsupported else ""
        click.echo(f"{label} → chat {c.plan.chat_id}: {c.added} {verb}, {c.duplicates} already in the log{extra}")
    bot = f"bot {result.bot_id}" if result.bot_id is not None else "no bot id (channel posts only)"
    click.echo(f"{result.imported_chats} chat(s), {result.added} event(s) {verb}, {result.duplicates} already in the "
               f"log; {bot}; export sha256 {result.sha256[:16]}…")
    if not result.imported_chats:
        click.echo("nothing imported: no chat of this export is a chat with the bot", err=True)
