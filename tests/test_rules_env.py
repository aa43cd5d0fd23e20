"""$EVENTLOG_DLP_RULES is read by the rules module (eventlog/dlp/rules.py), so every command scans with the rule file
the tap uses (runtime/dlp.mjs `defaultRulesPath`): here `eventlog dlp scan --log`, which once used the shipped rules
whatever the variable said, and `dlp rules`, which lists the file in force."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.dlp.rules import default_path
from eventlog.store.writer import EventLog

WORD = "zebracode-7Q4XK2PZ9M"  # a made-up internal code no shipped rule knows


def own_rules(tmp_path: Path) -> Path:
    shipped = json.loads(default_path().read_text("utf-8"))
    base = next(r for r in shipped["rules"] if r["id"] == "github-token")
    rule = {**base, "id": "zebra-code", "description": "the team's internal zebra codes",
            "pattern": "zebracode-[0-9A-Z]{10}", "keywords": ["zebracode-"], "validator": None, "entropy": None,
            "context": None, "left": "", "stopwords": [], "holdback": None}
    p = tmp_path / "rules.json"
    p.write_text(json.dumps({"version": 1, "name": "own", "rules": [rule]}), "utf-8")
    return p


def scan_log(root: Path, env: dict[str, str]) -> tuple[int, list[str]]:
    r = CliRunner(env=env).invoke(cli, ["dlp", "scan", "--log", "--no-alerts", "--json", "--root", str(root)],
                                  catch_exceptions=False)
    return r.exit_code, [json.loads(line).get("rule") for line in r.output.splitlines() if line.strip()]


def test_dlp_scan_log_uses_the_rule_file_named_by_the_variable(tmp_path: Path, root: Path) -> None:
    EventLog(root, fsync="never").append({"event": "message:received", "channel": "telegram", "chat_id": "5",
                                          "ts": "2026-11-30T10:00:00Z", "direction": "in",
                                          "text": f"the code is {WORD}, keep it"})
    assert scan_log(root, {}) == (1, [])  # the shipped rules: nothing
    code, rules = scan_log(root, {"EVENTLOG_DLP_RULES": str(own_rules(tmp_path))})
    assert code == 0 and rules == ["zebra-code"], rules


def test_dlp_rules_lists_the_file_in_force(tmp_path: Path) -> None:
    r = CliRunner(env={"EVENTLOG_DLP_RULES": str(own_rules(tmp_path))}).invoke(cli, ["dlp", "rules", "--json"],
                                                                                catch_exceptions=False)
    assert r.exit_code == 0 and [json.loads(line)["id"] for line in r.output.splitlines()] == ["zebra-code"]


def test_a_missing_rule_file_is_an_error_not_the_shipped_rules(tmp_path: Path, root: Path) -> None:
    """Named but absent: exit 2 with one line, never a silent fallback to other rules."""
    r = CliRunner(env={"EVENTLOG_DLP_RULES": str(tmp_path / "nope.json")}).invoke(
        cli, ["dlp", "scan", "--root", str(root), "some text"], catch_exceptions=False)
    assert r.exit_code == 2 and "nope.json" in r.output
