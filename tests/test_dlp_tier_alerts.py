"""Issue 25, two tiers in the alert streams: `dlp scan --log` alerts carry the finding's tier, `dlp alerts` shows and
filters it, and alerts written before the tiers (no `tier` field) read as confirmed."""
from __future__ import annotations

import json
import secrets
import string
from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

ALNUM = string.ascii_letters + string.digits


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_rescan_alerts_carry_tier_and_old_alerts_read_confirmed(root: Path) -> None:
    # generated at run time: sk-ant-api03- + 90 (near format: the exact rule wants 93 + AA) and a GitHub token (exact)
    near = "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(90))
    exact = "ghp_" + "".join(secrets.choice(ALNUM) for _ in range(36))
    el = EventLog(root)
    el.append_many([
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-12-01T10:00:00.000Z",
         "direction": "in", "text": f"the key is {near}", "from": {"username": "alice"}},
        {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-12-01T10:00:05.000Z",
         "direction": "in", "text": f"and {exact}", "from": {"username": "alice"}},
    ])
    # an alert written before the tiers existed
    el.append_stream("dlp/alerts.jsonl", [{
        "event": "dlp:alert", "ts": "2026-11-01T10:00:00.000Z", "channel": "telegram", "chat_id": "7",
        "direction": "out", "rule": "github-token", "severity": "critical", "action": "redact",
        "fingerprint": "1" * 64, "masked": "ghp_…[40]", "start": 0, "end": 40, "field": "text", "log_event": None,
        "source": "tap", "rules_version": 1}])
    r = run("dlp", "scan", "--log", "--json", "--root", str(root))
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert r.exit_code == 0 and sorted((x["rule"], x["tier"]) for x in rows) == [
        ("anthropic-api-key", "near_format"), ("github-token", "confirmed")]
    stored = [json.loads(x) for x in (root / "dlp" / "alerts.jsonl").read_text().splitlines()]
    by_rule = {a["rule"]: a for a in stored if a.get("source") == "scan"}
    assert by_rule["anthropic-api-key"]["tier"] == "near_format"
    assert by_rule["anthropic-api-key"]["severity"] == "high" and by_rule["anthropic-api-key"]["action"] == "none"
    assert by_rule["github-token"]["tier"] == "confirmed"
    assert near not in (root / "dlp" / "alerts.jsonl").read_text()
    r = run("dlp", "alerts", "--json", "--root", str(root))
    got = sorted((a["rule"], a["tier"], a["chat_id"]) for a in map(json.loads, r.output.splitlines()))
    assert got == [("anthropic-api-key", "near_format", "42"), ("github-token", "confirmed", "42"),
                   ("github-token", "confirmed", "7")]
    r = run("dlp", "alerts", "--tier", "near_format", "--root", str(root))
    assert r.exit_code == 0 and len(r.output.splitlines()) == 1 and "near_format" in r.output
    assert "anthropic-api-key" in r.output
    r = run("dlp", "alerts", "--tier", "confirmed", "--json", "--root", str(root))
    assert len(r.output.splitlines()) == 2
