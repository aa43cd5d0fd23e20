"""`eventlog agent …`: the recall plugin for OpenClaw — install, uninstall, status, and the tool's backend
(`call`, `serve`) plus `search` / `context` to see what the model would see. Parse → call the library → render."""
from __future__ import annotations

import json
import sys
from datetime import tzinfo
from pathlib import Path
from typing import Any

import click

from .common import CliError, emit_json, handle_errors, root_option
from .main import cli
from .timeopts import WHEN_HELP, user_zone, zone_only

_config_option = click.option("--config", "config", type=click.Path(dir_okay=False), default=None,
                              help="OpenClaw config (default: $OPENCLAW_CONFIG_PATH, $OPENCLAW_STATE_DIR/openclaw.json, "
                                   "~/.openclaw/openclaw.json).")


@cli.group()
def agent() -> None:
    """The agent remembers: an OpenClaw plugin giving the model `eventlog_search` and `eventlog_context` over this
    log, scoped to the chat it is used in and redacted by the DLP rules.

    \b
    Example:
      eventlog agent install            # then restart the gateway (or let it hot-reload the config)
      eventlog agent status
      eventlog agent search "wifi password" --chat 123456789
    """


@agent.command()
@_config_option
@click.option("--allow-all", "allow_all", multiple=True, metavar="SENDER_ID",
              help="A sender id (besides the owner) whose chats may search every chat (scope 'all'). Repeatable.")
@click.option("--helper/--no-helper", default=True, show_default=True,
              help="Keep one `eventlog agent serve` process per gateway (fast) instead of one process per call.")
@click.option("--timeout", "timeout_s", type=click.IntRange(1, 600), default=30, show_default=True,
              help="Seconds a tool call may take before the model is told the log is unavailable.")
@click.option("--print", "print_only", is_flag=True, help="Print the config entries to add; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object describing what was done.")
@handle_errors
def install(config: str | None, allow_all: tuple[str, ...], helper: bool, timeout_s: int, print_only: bool,
            as_json: bool) -> None:
    """Install the recall plugin outside the openclaw package and register it in the gateway config.

    Keeps a byte-exact backup; running it again changes nothing; `eventlog agent uninstall` reverses it.
    A JSON5 config (comments, trailing commas, unquoted keys) is edited in place, every comment kept; where that
    cannot be done with certainty it is left alone, the plugin files are written and the exact additions to make
    by hand are printed (exit 1 until they are made).

    \b
    Example:
      eventlog agent install --config ~/.openclaw/openclaw.json --allow-all 123456789
    """
    from ..agent import install as ins
    from ..agent.json5edit import describe_edits

    options: dict[str, Any] = {"allowAll": list(allow_all), "helper": helper, "timeoutMs": timeout_s * 1000}
    if print_only:
        doc = ins.add_entries({}, ins.plugin_dir(), ins.plugin_entry(ins.default_command(), options))
        click.echo(json.dumps(doc, indent=2))  # the entries to paste into openclaw.json: JSON is the config's format
        return
    res = ins.install(config, options=options)
    if as_json:
        emit_json(res)
        sys.exit(1 if res["hand_edits"] else 0)
    if res["hand_edits"]:
        click.echo(f"plugin files: {res['plugin_dir']} ({'written' if res['plugin_changed'] else 'up to date'})")
        click.echo(f"config: {res['config']} ({res['config_source']}) is JSON5 and could not be edited with "
                   f"certainty ({res['edit_refused']}), so it is unchanged; make these changes by hand, then run "
                   "`eventlog agent status`:")
        click.echo(describe_edits(res["hand_edits"], Path(res["config"])))
        sys.exit(1)
    click.echo(f"plugin files: {res['plugin_dir']} ({'written' if res['plugin_changed'] else 'up to date'})")
    click.echo(f"config: {res['config']} ({res['config_source']}"
               + (", JSON5: comments and layout kept" if res["config_format"] == "json5" and res["config_changed"]
                  else "") + "): "
               + ("plugin registered" if res["config_changed"] else "already registered, unchanged"))
    if res.get("backup"):
        click.echo(f"backup: {res['backup']}")
    if res["config_changed"] or res["plugin_changed"]:
        click.echo("restart the gateway (or wait for its config hot-reload) to offer eventlog_search to the model")


@agent.command()
@_config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object describing what was done.")
@handle_errors
def uninstall(config: str | None, as_json: bool) -> None:
    """Remove the plugin from the gateway config — byte for byte as it was, if nothing else changed it since.

    \b
    Example:
      eventlog agent uninstall --config ~/.openclaw/openclaw.json
    """
    from ..agent import install as ins

    res = ins.uninstall(config)
    if as_json:
        emit_json(res)
    else:
        click.echo(f"config: {res['config']}: {res['action']}")
        if res.get("plugin_removed"):
            click.echo(f"plugin files removed: {res['plugin_dir']}")


@agent.command()
@_config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object (the same as agent_status()).")
@handle_errors
def status(config: str | None, as_json: bool) -> None:
    """Is the recall plugin installed, registered and runnable? Exit 0 yes, 1 no (problems listed).

    \b
    Example:
      eventlog agent status --json
    """
    from ..agent import agent_status

    st = agent_status(config)
    if as_json:
        emit_json(st)
    else:
        reg = st["registered"]
        click.echo(f"config:   {st['config']} ({st['config_source']}){'' if st['config_exists'] else ' — missing'}")
        click.echo(f"plugin:   {st['plugin_dir']} — files {st['plugin_files']}")
        click.echo(f"register: load path {'yes' if reg['load_path'] else 'no'}, entry {'yes' if reg['entry'] else 'no'}"
                   f", enabled {'yes' if reg['enabled'] else 'no'}")
        click.echo(f"command:  {' '.join(st['command'] or []) or '-'} ({'ok' if st['command_ok'] else 'not runnable'})")
        if st["backup"]:
            click.echo(f"backup:   {st['backup']}" + (" (config changed since install)"
                                                      if st["changed_since_install"] else ""))
        for p in st["problems"]:
            click.echo(f"problem:  {p}")
    sys.exit(0 if st["ok"] else 1)


@agent.command()
@root_option
@handle_errors
def call(root: Path) -> None:
    """Run one tool call: a request object on stdin, the result object on stdout (used by the plugin).

    \b
    Example:
      echo '{"tool":"search","args":{"query":"wifi"},"chat":"123"}' | eventlog agent call
    """
    from ..agent import protocol
    from ..agent.tool import handle

    try:
        data = sys.stdin.buffer.read(protocol.MAX_LINE + 1)  # bounded, as serve's lines are
        req = protocol.parse(data if len(data) <= protocol.MAX_LINE else None)
    except protocol.ProtocolError as exc:
        raise CliError(f"the request on stdin: {exc}") from None
    out = handle(req, root, tz=user_zone(None, root))
    # JSON without --json: this is the plugin's protocol (a request object in, a result object out)
    sys.stdout.buffer.write(protocol.encode(out))
    if out.get("record_error"):
        click.echo(f"eventlog: {out['record_error']}", err=True)


@agent.command()
@root_option
@handle_errors
def serve(root: Path) -> None:
    """Answer tool calls as JSON Lines: one request per stdin line, one result per stdout line, until EOF.
    The plugin keeps one of these per gateway so a call does not pay for starting Python.

    \b
    Example:
      eventlog agent serve < requests.jsonl
    """
    from ..agent import protocol
    from ..agent.tool import handle

    tz = user_zone(None, root)
    for line in protocol.lines(sys.stdin.buffer):
        try:
            req = protocol.parse(line)
        except protocol.ProtocolError as exc:
            out = protocol.error(exc)
        else:
            out = handle(req, root, tz=tz)
            if "seq" in req:
                out["seq"] = req["seq"]
        sys.stdout.buffer.write(protocol.encode(out))
        sys.stdout.flush()
        if out.get("record_error"):
            click.echo(f"eventlog: {out['record_error']}", err=True)


def _run(tool: str, args: dict[str, Any], chats: tuple[str, ...], all_chats: bool, root: Path, record: bool,
         as_json: bool, account: str = "default", tz: tzinfo | None = None) -> None:
    from ..agent.tool import handle

    if not chats and not all_chats:
        raise CliError("give --chat CHAT_ID (the chat the model would be in) or --all")
    if all_chats:
        args = {**args, "scope": "all"}
    out = handle({"tool": tool, "args": args, "chat": chats[0] if chats else None, "channel": "telegram",
                  "account": account, "all_allowed": all_chats, "origin": {"source": "cli"}}, root, record=record,
                 tz=tz)
    if as_json:
        emit_json(out)
    else:
        click.echo(out["text"])
    if not out["ok"]:
        raise CliError(out.get("error") or "failed")
    sys.exit(0 if out["hits"] else 1)


@agent.command()
@click.argument("query")
@click.option("--chat", "chats", multiple=False, default=None, metavar="CHAT_ID", help="The chat to search.")
@click.option("--all", "all_chats", is_flag=True, help="Search every chat (what the owner's scope 'all' does).")
@click.option("--account", default="default", show_default=True, metavar="ACCOUNT",
              help="The OpenClaw account the model would be on: the scope is this account's chat (or, with --all, chats).")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "text", "fuzzy"]), default="hybrid", show_default=True,
              help="hybrid/bm25: `eventlog search`'s ranking; text/fuzzy: grep-like, every content word counts.")
@click.option("--limit", type=click.IntRange(1, 50), default=10, show_default=True)
@click.option("--context", "n_context", type=click.IntRange(0, 5), default=0, show_default=True, metavar="N",
              help="Each hit with N messages before and after it in its chat (the tool's `context`).")
@click.option("--since", default=None, metavar="WHEN", help=f"From the start of WHEN, in the zone ({WHEN_HELP}).")
@click.option("--until", default=None, metavar="WHEN", help=f"Up to the end of WHEN, in the zone ({WHEN_HELP}).")
@click.option("--direction", type=click.Choice(["in", "out"]), default=None)
@click.option("--record/--no-record", default=False, show_default=True, help="Write a recall:query event.")
@click.option("--json", "as_json", is_flag=True, help="The result object (text, hits, ids, scope, …).")
@zone_only
@root_option
@handle_errors
def search(query: str, chats: str | None, all_chats: bool, account: str, mode: str, limit: int, n_context: int,
           since: str | None, until: str | None, direction: str | None, record: bool, as_json: bool, tz: tzinfo,
           root: Path) -> None:
    """Show what `eventlog_search` returns to the model: ranked, redacted lines (times in UTC, as the model reads
    them). --since/--until are the tool's `since`/`until`, parsed by the tool as the model's are. Exit 0 hits,
    1 none, 2 error.

    \b
    Example:
      eventlog agent search "what did we decide about the wifi" --chat 123456789 --since 7d
      eventlog agent search "invoice" --chat 123456789 --account ops
      eventlog agent search "what did she answer about the trip" --chat 123456789 --context 2
    """
    args = {k: v for k, v in {"query": query, "mode": mode, "limit": limit, "since": since, "until": until,
                              "direction": direction, "context": n_context or None}.items() if v is not None}
    _run("search", args, (chats,) if chats else (), all_chats, root, record, as_json, account, tz)


@agent.command()
@click.argument("event_id")
@click.option("--before", type=click.IntRange(0, 20), default=5, show_default=True)
@click.option("--after", type=click.IntRange(0, 20), default=5, show_default=True)
@click.option("--chat", "chats", default=None, metavar="CHAT_ID", help="Only find the event in this chat.")
@click.option("--all", "all_chats", is_flag=True, help="Find the event in any chat.")
@click.option("--account", default="default", show_default=True, metavar="ACCOUNT",
              help="The OpenClaw account the model would be on: the scope is this account's chat (or, with --all, chats).")
@click.option("--record/--no-record", default=False, show_default=True, help="Write a recall:query event.")
@click.option("--json", "as_json", is_flag=True, help="The result object (text, ids, …).")
@root_option
@handle_errors
def context(event_id: str, before: int, after: int, chats: str | None, all_chats: bool, account: str, record: bool,
            as_json: bool, root: Path) -> None:
    """The messages around one event, oldest first, redacted — what `eventlog_context` returns.

    \b
    Example:
      eventlog agent context 01JDQ3ZK6V4ZCF8W1Y3M5N7P9R --all --before 3 --after 3
    """
    _run("context", {"id": event_id, "before": before, "after": after}, (chats,) if chats else (), all_chats,
         root, record, as_json, account)
