"""The rule file and its linter: the shipped rules pass; every portability trap in the notes is rejected."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.dlp.rules import RuleError, lint_doc, lint_pattern, lint_rule, load_rules, read_doc

TRAPS = json.loads((Path(__file__).parent / "vectors" / "dlp" / "lint_traps.json").read_text())["traps"]


def _rule(**kw: object) -> dict:
    base = {"id": "t", "description": "d", "pattern": "tok_[A-Za-z0-9]{20}", "keywords": ["tok_"],
            "severity": "high", "action": "redact"}
    base.update(kw)
    return base


def test_shipped_rules_lint_clean() -> None:
    doc, _ = read_doc()
    assert lint_doc(doc) == []
    rs = load_rules()
    assert len(rs.rules) >= 20
    ids = [r.id for r in rs.rules]
    assert len(ids) == len(set(ids))
    for needed in ("telegram-bot-token", "anthropic-api-key", "openai-api-key", "google-api-key", "groq-api-key",
                   "xai-api-key", "aws-access-key-id", "github-token", "github-fine-grained-pat", "slack-token",
                   "stripe-secret-key", "jwt", "private-key", "url-credentials", "payment-card", "iban", "ru-inn-10",
                   "ru-inn-12", "ru-snils", "ru-ogrn", "ru-ogrnip", "ru-passport"):
        assert needed in ids
    for r in rs.rules:
        assert r.keywords, r.id
        assert r.action in ("redact", "block") and r.severity


@pytest.mark.parametrize("trap", TRAPS, ids=[t["pattern"] for t in TRAPS])
def test_linter_rejects_trap(trap: dict) -> None:
    problems = lint_rule(_rule(pattern=trap["pattern"]))
    assert problems, f"accepted a trap: {trap['why']}"


@pytest.mark.parametrize("pat", ["sk-ant-(?:api03|oat01)-[A-Za-z0-9_-]{80,100}(?![A-Za-z0-9_-])",
                                 "[0-9]{4}[ -]?[0-9]{4}", "(?<![A-Za-z])key", "eyJ[A-Za-z0-9_-]{8,}\\.eyJ",
                                 "[^ \\t\\r\\n/@]{1,10}@", "ПАРОЛЬ|[Пп]ароль", "a\\[b\\]c\\{d\\}", "[\\-a-z]"])
def test_linter_accepts_portable(pat: str) -> None:
    assert lint_pattern(pat) == []
    assert lint_rule(_rule(pattern=pat)) == []


@pytest.mark.parametrize("change,needle", [
    ({"keywords": []}, "no prefilter keyword"),
    ({"keywords": ["TOK_"]}, "lower-case"),
    ({"flags": "im"}, "flags"),
    ({"validator": "nope"}, "unknown validator"),
    ({"severity": "huge"}, "severity"),
    ({"action": "explode"}, "action"),
    ({"group": 2}, "group"),
    ({"entropy": 12}, "entropy"),
    ({"context": {"words": ["Card"], "before": 10}}, "lower-case"),
    ({"context": {"words": ["card"]}}, "window"),
    ({"holdback": {"prefixes": [], "chars": "A-Z"}}, "holdback.prefixes"),
    ({"left": "\\w"}, "left"),
    ({"colour": "red"}, "unknown field"),
    ({"id": "Bad Id"}, "kebab"),
])
def test_linter_rejects_bad_fields(change: dict, needle: str) -> None:
    problems = lint_rule(_rule(**change))
    assert any(needle in p for p in problems), problems


def test_duplicate_ids_and_version() -> None:
    doc = {"version": 2, "rules": [_rule(), _rule()]}
    problems = lint_doc(doc)
    assert any("duplicate id" in p for p in problems) and any("version" in p for p in problems)


def test_cli_rules_check(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["dlp", "rules", "--check"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "ok" in r.output
    doc, _ = read_doc()
    bad = copy.deepcopy(doc)
    bad["rules"][0]["pattern"] = "(?i)" + bad["rules"][0]["pattern"]
    bad["rules"][1]["keywords"] = []
    p = tmp_path / "rules.json"
    p.write_text(json.dumps(bad))
    r = CliRunner().invoke(cli, ["dlp", "rules", "--check", "--file", str(p)], catch_exceptions=False)
    assert r.exit_code == 2
    assert "inline flags" in r.output and "no prefilter keyword" in r.output
    p.write_text("{not json")
    r = CliRunner().invoke(cli, ["dlp", "rules", "--check", "--file", str(p)], catch_exceptions=False)
    assert r.exit_code == 2 and "not valid JSON" in r.output
    with pytest.raises(RuleError):
        load_rules(p)


def test_cli_rules_list_json() -> None:
    r = CliRunner().invoke(cli, ["dlp", "rules", "--json"], catch_exceptions=False)
    assert r.exit_code == 0
    rows = [json.loads(line) for line in r.output.splitlines()]
    assert {row["type"] for row in rows} == {"rule"} and len(rows) == len(load_rules().rules)


@pytest.mark.parametrize("cmd", ["rules", "scan", "alerts", "show", "review", "stats"])
def test_every_dlp_command_has_help(cmd: str) -> None:
    r = CliRunner().invoke(cli, ["dlp", cmd, "--help"], catch_exceptions=False)
    assert r.exit_code == 0 and "--root" in r.output and len(r.output.splitlines()) > 3
