"""`eventlog dlp rules|scan|alerts|show|review|stats` — parse, call eventlog.dlp, render."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import EventlogError
from .common import CliError, emit_json, ensure_root, handle_errors, root_option
from .main import cli
from .timeopts import time_range, zone_only


@cli.group()
def dlp() -> None:
    """Data-loss prevention: the rule file, scanning, alerts and their review.

    \b
    Examples:
      eventlog dlp scan "is this safe to send?"
      eventlog dlp alerts --since 7d
      eventlog dlp review            # open alerts one by one
    """


def _exit(found: bool) -> None:
    sys.exit(0 if found else 1)


# -- rules ---------------------------------------------------------------------------------------------------------
@dlp.command()
@click.option("--check", is_flag=True, help="Lint the rule file: every non-portable regex construct, missing keywords.")
@click.option("--file", "path", type=click.Path(dir_okay=False), default=None, help="Rule file (default: the packaged one).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines output.")
@root_option
@handle_errors
def rules(root: Path, check: bool, path: str | None, as_json: bool) -> None:
    """List the rules, or lint them with --check (exit 2 on any problem).

    \b
    Examples:
      eventlog dlp rules
      eventlog dlp rules --check --file my-rules.json
    """
    from ..dlp.rules import lint_doc, load_rules, read_doc

    if check:
        doc, src = read_doc(path)
        problems = lint_doc(doc)
        for p in problems:
            if as_json:
                emit_json({"type": "problem", "file": src, "problem": p})
            else:
                click.echo(f"{src}: {p}", err=True)
        if problems:
            sys.exit(2)
        if as_json:
            emit_json({"type": "ok", "file": src, "rules": len(doc["rules"])})
        else:
            click.echo(f"{src}: ok, {len(doc['rules'])} rules portable between Python re and JS RegExp")
        return
    for r in load_rules(path).rules:
        if as_json:
            emit_json({"type": "rule", "id": r.id, "severity": r.severity, "action": r.action,
                       "keywords": r.keywords, "validator": r.validator, "description": r.description,
                       "near": r.near})
        else:
            click.echo(f"{r.id:<26} {r.severity:<8} {r.action:<6} {r.description}")


def _near(f: Any) -> str:
    """The tier in a text line: named only for near-format findings (docs/dlp.md, "Two tiers")."""
    return " near_format" if f.tier == "near_format" else ""


# -- scan ----------------------------------------------------------------------------------------------------------
@dlp.command()
@click.argument("texts", nargs=-1)
@click.option("--file", "file_", type=click.Path(dir_okay=False, exists=True), help="Scan the whole file as one text.")
@click.option("--jsonl", type=click.File("rb"), help='JSON Lines {"id", "text"} (- for stdin); one output line per finding.')
@click.option("--log", "log", is_flag=True, help="Re-scan the stored log; new findings raise alerts.")
@click.option("--chat", default=None, help="With --log: only this chat.")
@time_range
@click.option("--no-alerts", is_flag=True, help="With --log: report only, raise no alerts.")
@click.option("--html", is_flag=True, help="Texts are Telegram HTML (scan the visible text, report payload offsets).")
@click.option("--rules", "rules_path", type=click.Path(dir_okay=False), default=None, help="Rule file to use.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines output (always on with --jsonl).")
@root_option
@handle_errors
def scan(root: Path, texts: tuple[str, ...], file_: str | None, jsonl: Any, log: bool, chat: str | None, since: Any,
         until: Any, tz: Any, no_alerts: bool, html: bool, rules_path: str | None, as_json: bool) -> None:
    """Scan texts (arguments), a --file, --jsonl input, or the stored --log (--since/--until: the events in that
    period). Exit 0 if anything was found, 1 if not.

    \b
    Examples:
      eventlog dlp scan "the deploy key is in the vault"
      eventlog dlp scan --log --since 7d --no-alerts --json
      eventlog dlp scan --file notes.txt
    """
    from ..dlp.engine import open_scanner
    from ..dlp.keys import load_key
    from ..dlp.logscan import finding_row, iter_jsonl, scan_log
    from ..recall.output import local_ts

    sources = sum(bool(x) for x in (texts, file_, jsonl, log))
    if sources != 1:
        raise click.UsageError("give exactly one of: TEXTS, --file, --jsonl, --log")
    if not log and (since or until):
        raise click.UsageError("--since/--until select events of the stored log: they go with --log")
    if log:
        ensure_root(root)
        if not no_alerts:  # alerts persist fingerprints: only then is the root's key made if missing
            load_key(root, create=True)
    scanner = open_scanner(root, rules_path)
    found = False
    if log:
        problems: list[str] = []
        for hit in scan_log(root, scanner, chat=chat, since=since, until=until, raise_alerts=not no_alerts,
                            on_problem=lambda p: problems.append(str(p))):
            found = True
            ev, f = hit.event, hit.finding
            row = finding_row(ev.get("id"), f) | {"chat_id": ev.get("chat_id"), "ts": ev.get("ts"),
                                                  "direction": ev.get("direction"), "alert": hit.alert_id,
                                                  "new_alert": hit.new, "masked": f.masked, "tier": f.tier}
            if as_json:
                emit_json(row)
            else:
                mark = "new" if hit.new else "known"
                click.echo(f"{hit.alert_id or '-':<26} {mark:<5} {local_ts(ev.get('ts'), tz)} chat {ev.get('chat_id')} "
                           f"{f.start}-{f.end} {f.rule} {f.severity} {f.masked}{_near(f)} (event {ev.get('id')})")
        for p in problems:
            click.echo(f"eventlog: warning: {p}", err=True)
        _exit(found)
    if jsonl is not None:
        name = getattr(jsonl, "name", "-")
        for item_id, text, item_html in iter_jsonl(jsonl, "stdin" if name in ("-", "<stdin>") else name):
            for f in scanner.scan(text, html=html or item_html).findings:
                found = True
                emit_json(finding_row(item_id, f))  # --jsonl is a filter: JSON Lines in, JSON Lines out (docs/dlp.md)
        _exit(found)
    if file_:
        try:
            items: list[tuple[str | int, str]] = [(file_, Path(file_).read_text(encoding="utf-8"))]
        except UnicodeDecodeError:
            raise EventlogError(f"{file_}: not UTF-8 text") from None
    else:
        items = [(i + 1, t) for i, t in enumerate(texts)]
    for item_id, text in items:
        for f in scanner.scan(text, html=html).findings:
            found = True
            if as_json:
                emit_json(finding_row(item_id, f) | {"masked": f.masked, "fingerprint": f.fingerprint})
            else:
                click.echo(f"{item_id}:{f.start}-{f.end} {f.rule} {f.severity} {f.action} {f.masked}{_near(f)}")
    _exit(found)


# -- alerts, show, review, stats -------------------------------------------------------------------------------------
def _alert_line(d: dict[str, Any], tz: Any) -> str:
    from ..recall.output import local_ts

    verdict = f" [{d['verdict']}]" if d["verdict"] else ""
    if d.get("updates"):
        verdict += f" (grew {d['updates']}x)"
    tier = d.get("tier") or "confirmed"
    return (f"{d['id']}  {local_ts(d['ts'], tz)}  {d['state']:<8} {d['rule']:<24} {tier:<11} {d['direction'] or '?':<3} "
            f"chat {d['chat_id']}  {d['action']:<6} {d['masked']}{verdict}")


RESOLUTION_CHOICES = ["false_positive", "wont_fix", "revoked", "used_in_tests", "false-positive", "wont-fix",
                      "used-in-tests"]


@dlp.command()
@click.option("--state", type=click.Choice(["open", "resolved"]), default=None)
@click.option("--resolution", type=click.Choice(RESOLUTION_CHOICES + ["true_positive", "true-positive", "none"]),
              default=None, help="GitHub's resolutions (hyphen or underscore), true_positive, or none (unreviewed).")
@click.option("--rule", default=None)
@click.option("--direction", type=click.Choice(["in", "out"]), default=None)
@click.option("--severity", type=click.Choice(["critical", "high", "medium", "low"]), default=None)
@click.option("--chat", default=None)
@time_range
@click.option("--tier", type=click.Choice(["confirmed", "near_format"]), default=None,
              help="Only exact-format (confirmed) or near-format findings (alerts older than the tiers: confirmed).")
@click.option("--json", "as_json", is_flag=True)
@root_option
@handle_errors
def alerts(root: Path, state: str | None, resolution: str | None, rule: str | None, direction: str | None,
           severity: str | None, chat: str | None, since: Any, until: Any, tz: Any, tier: str | None,
           as_json: bool) -> None:
    """List alerts with their state and resolution (a projection of the alert and review streams); --since/--until
    select by the time of the alert's event. Exit 1 if none match.

    \b
    Example: eventlog dlp alerts --state open --severity critical --direction out --since 2026-11-01
    """
    from ..dlp.alerts import project, select

    ensure_root(root)
    problems: list[str] = []
    rows = [s.to_dict() for s in select(project(root, problems), state, rule, chat, resolution, direction, severity,
                                        since, tier, until)]
    for d in rows:
        emit_json(d) if as_json else click.echo(_alert_line(d, tz))
    for p in problems:
        click.echo(f"eventlog: warning: {p}", err=True)
    _exit(bool(rows))


@dlp.command()
@click.argument("alert_id")
@click.option("-C", "--context", "context", type=int, default=3, show_default=True, help="Messages before and after.")
@click.option("--json", "as_json", is_flag=True)
@zone_only
@root_option
@handle_errors
def show(root: Path, alert_id: str, context: int, as_json: bool, tz: Any) -> None:
    """One alert with its reviews and the surrounding conversation from the log, secrets masked.

    \b
    Example:
      eventlog dlp show 01M8Q6YDBD0D321JJZP644PZP9 -C 3
    """
    from ..dlp.alerts import find, project
    from ..dlp.engine import open_scanner
    from ..dlp.review import conversation
    from ..recall.output import local_ts

    ensure_root(root)
    st = find(project(root), alert_id)
    msgs = conversation(root, open_scanner(root), st.alert, context)
    if as_json:
        emit_json(st.to_dict() | {"reviews": [{k: r.get(k) for k in ("id", "ts", "verdict", "note", "reviewer")}
                                              for r in st.reviews]})
        for m in msgs:
            emit_json(m)
        return
    d = st.to_dict()
    click.echo(_alert_line(d, tz))
    for k in ("severity", "tier", "fingerprint", "log_event", "method", "source"):
        if d.get(k):
            click.echo(f"  {k:<12} {d[k]}")
    for r in st.reviews:
        click.echo(f"  review {local_ts(r.get('ts'), tz)} {r.get('verdict')} by {r.get('reviewer')}: {r.get('note') or ''}".rstrip())
    if msgs:
        click.echo("  conversation (secrets masked):")
    for m in msgs:
        mark = ">>" if m["is_alert_event"] else "  "
        click.echo(f"  {mark} {local_ts(m['ts'], tz)} {m['direction'] or '?':<3} {m['sender'] or '':<16} {m['text']}")


@dlp.command()
@click.argument("alert_id", required=False)
@click.option("--resolution", "--verdict", "verdict", type=click.Choice(RESOLUTION_CHOICES + ["true_positive", "true-positive"]),
              help="GitHub's resolution (false_positive, wont_fix, revoked, used_in_tests; hyphens accepted), or "
                   "true_positive (confirmed, stays open). --verdict is the old name.")
@click.option("--note", default="", help="Why (kept with the review).")
@click.option("--reviewer", default=None, help="Default: $EVENTLOG_REVIEWER or the login name.")
@click.option("--interactive", is_flag=True, hidden=True, help="Run the review loop even when stdin is not a tty.")
@zone_only
@root_option
@handle_errors
def review(root: Path, alert_id: str | None, verdict: str | None, note: str, reviewer: str | None,
           interactive: bool, tz: Any) -> None:
    """Record a resolution on an alert (ID --resolution R --note TEXT), or without ID review open alerts one by one
    (y real / f false positive / r revoked / w won't fix / t used in tests, then a note; s skip / b back / q quit).
    A false_positive allowlists the fingerprint. A note that contains a secret is refused.

    \b
    Example: eventlog dlp review 01JD8Z3K --resolution revoked --note "rotated in the console"
    """
    from ..dlp import alerts as al
    from ..dlp.review import loop

    ensure_root(root)
    if alert_id:
        if not verdict:
            raise click.UsageError("--resolution is required with an alert id")
        ev = al.review(root, alert_id, verdict, note, reviewer)
        click.echo(f"{ev['alert']} {ev['verdict']} (review {ev['id']})")
        return
    if verdict:
        raise click.UsageError("--resolution needs an alert id")
    if not (interactive or sys.stdin.isatty()):
        raise CliError("the interactive review needs a terminal; use `eventlog dlp review ID --verdict V`")
    from ..recall.output import local_ts

    done = loop(root, reviewer, click.echo, lambda prompt: click.prompt(prompt, default="s", show_default=False),
                show_ts=lambda ts: local_ts(ts, tz))
    click.echo(f"{done} review(s) recorded")


@dlp.command()
@click.option("--json", "as_json", is_flag=True)
@root_option
@handle_errors
def stats(root: Path, as_json: bool) -> None:
    """Per-rule alert counts, states, verdicts, and precision from the verdicts.

    \b
    Example:
      eventlog dlp stats --json
    """
    from ..dlp.alerts import project, stats as rule_stats

    ensure_root(root)
    rows = rule_stats(project(root))
    if not as_json:
        click.echo(f"{'rule':<26} {'alerts':>6} {'open':>5} {'resolved':>8} {'TP':>4} {'FP':>4} {'precision':>9}")
    for r in rows:
        if as_json:
            emit_json(r)
        else:
            real = r["alerts"] - r["unreviewed"] - r["false_positive"]
            prec = "-" if r["precision"] is None else f"{r['precision']:.2f}"
            click.echo(f"{r['rule']:<26} {r['alerts']:>6} {r['open']:>5} {r['resolved']:>8} {real:>4} "
                       f"{r['false_positive']:>4} {prec:>9}")
    _exit(bool(rows))


@dlp.command()
@click.option("--stale", is_flag=True, help="Only entries that no longer match any alert (or whose rule is gone).")
@click.option("--json", "as_json", is_flag=True)
@root_option
@handle_errors
def allowlist(root: Path, stale: bool, as_json: bool) -> None:
    """List the allowlist (fingerprints reviewed as false_positive). With --stale: the entries that match no alert
    any more — the alert's fingerprint changed (the secret grew across edits) or its rule left the rule file — so they
    can be reviewed again (gitleaks #1398). Exit 1 if nothing is listed.

    \b
    Example: eventlog dlp allowlist --stale --json
    """
    from ..dlp.alerts import project
    from ..dlp.keys import allowlist_path
    from ..dlp.rules import load_rules

    ensure_root(root)
    p = allowlist_path(root)
    entries: list[dict[str, Any]] = []
    if p.exists():
        import orjson

        try:
            doc = orjson.loads(p.read_bytes())
            entries = [e for e in doc["entries"] if isinstance(e, dict)]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise EventlogError(f"allowlist {p} is unreadable") from None
    states = project(root)
    fps = {s.alert.get("fingerprint") for s in states}
    rule_ids = {r.id for r in load_rules().rules}
    rows: list[dict[str, Any]] = []
    for e in entries:
        why = None
        if e.get("fingerprint") not in fps:
            why = "no alert has this fingerprint"
        elif e.get("rule") and e["rule"] not in rule_ids:
            why = f"rule {e['rule']} is no longer in the rule file"
        if stale and why is None:
            continue
        rows.append({"type": "allowlist", "fingerprint": e.get("fingerprint"), "rule": e.get("rule"),
                     "alert": e.get("alert"), "ts": e.get("ts"), "stale": why is not None, "reason": why})
    for r in rows:
        if as_json:
            emit_json(r)
        else:
            click.echo(f"{r['fingerprint'][:16]}…  {r['rule'] or '?':<24} alert {r['alert'] or '-'}  "
                       f"{r['reason'] or 'matches an alert'}")
    _exit(bool(rows))
