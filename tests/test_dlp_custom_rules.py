"""A rule file of the user's own (`eventlog dlp scan --rules FILE`, EVENTLOG_DLP_RULES for the agent tool) may name any
documented validator (docs/dlp.md, "The rule file"). `github_crc32` is used by no shipped rule — `github-token`
redacts look-alikes on purpose (issue 16) — so this is the only path on which it matters: a strict rule that keeps
only GitHub tokens whose CRC32 tail is right. Token values: Samsung/CredSweeper@69d362a2 (see
tests/vectors/dlp/validators_known_answers.json, source `credsweeper-github`)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.dlp.rules import default_path
from eventlog.dlp.validators import VALIDATORS

GOOD = "ghp_00000000000000000000000000000004WZ4EQ"  # CRC32 tail right
BAD_TAIL = "ghp_00000000000000000000000000000004WZAEQ"  # one tail character changed
BAD_BODY = "ghp_10000000000000000000000000000004WZ4EQ"  # one body character changed


def strict_rules(tmp_path: Path) -> Path:
    shipped = json.loads(default_path().read_text("utf-8"))
    rule = next(r for r in shipped["rules"] if r["id"] == "github-token")
    rule = {**rule, "id": "github-token-strict", "description": "GitHub token with a valid CRC32 tail",
            "validator": "github_crc32", "entropy": None}  # CredSweeper's tokens are zeros: no entropy floor
    p = tmp_path / "rules.json"
    p.write_text(json.dumps({"version": 1, "name": "strict", "rules": [rule]}), "utf-8")
    return p


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_user_rule_with_github_crc32_keeps_only_tokens_whose_crc_is_right(tmp_path: Path, root: Path) -> None:
    rules = strict_rules(tmp_path)
    assert run("dlp", "rules", "--check", "--file", str(rules)).exit_code == 0
    r = run("dlp", "scan", "--rules", str(rules), "--root", str(root), "--json", f"token {GOOD} here")
    assert r.exit_code == 0, r.output
    assert [(f["rule"], f["start"], f["end"]) for f in map(json.loads, r.output.splitlines())] == [
        ("github-token-strict", 6, 6 + len(GOOD))]
    for bad in (BAD_TAIL, BAD_BODY):
        r = run("dlp", "scan", "--rules", str(rules), "--root", str(root), f"token {bad} here")
        assert r.exit_code == 1 and r.output == "", (bad, r.output)


def test_the_shipped_github_rule_redacts_look_alikes_without_a_valid_crc(root: Path) -> None:
    """The issue-16 decision, pinned: a high-entropy ghp_ token whose tail is not its CRC32 is still a finding of the
    shipped rules (a strict CRC check there would let fixture-style and mistyped tokens through to the chat)."""
    tok = "ghp_Zx9Qm2Lp7Rt4Vw8Ky1Nb6Hc3Jd5Fg0Sa" + "000000"
    assert not VALIDATORS["github_crc32"](tok)
    r = run("dlp", "scan", "--root", str(root), "--json", f"token {tok} here")
    assert r.exit_code == 0 and [json.loads(x)["rule"] for x in r.output.splitlines()] == ["github-token"], r.output


def test_a_user_rule_with_not_placeholder_skips_placeholders(tmp_path: Path, root: Path) -> None:
    """`not_placeholder` (docs/dlp.md) is also used by no shipped rule: a value like `changeme` or `xxxxxx` is no
    finding, a real-looking one is."""
    rule = {"id": "vault-key", "description": "vault key assignment", "pattern": "vault_key=([A-Za-z0-9_]{6,40})",
            "flags": "", "group": 1, "keywords": ["vault_key="], "validator": "not_placeholder", "entropy": None,
            "context": None, "left": "A-Za-z0-9_", "stopwords": [], "severity": "high", "action": "redact",
            "holdback": None}
    p = tmp_path / "rules.json"
    p.write_text(json.dumps({"version": 1, "name": "mine", "rules": [rule]}), "utf-8")
    assert run("dlp", "rules", "--check", "--file", str(p)).exit_code == 0
    r = run("dlp", "scan", "--rules", str(p), "--root", str(root), "--json", "vault_key=Qm7xT2pL9w")
    assert r.exit_code == 0 and [json.loads(x)["rule"] for x in r.output.splitlines()] == ["vault-key"], r.output
    for value in ("changeme", "xxxxxx", "your_password"):
        r = run("dlp", "scan", "--rules", str(p), "--root", str(root), f"vault_key={value}")
        assert r.exit_code == 1 and r.output == "", (value, r.output)


def test_github_crc32_pads_a_short_checksum_with_zeros() -> None:
    """About a fifth of CRC32 values have fewer than 6 base62 digits; GitHub's format pads them with leading zeros.
    The token here is built in the test from the published format (binascii.crc32 of the 30-character body, base62
    0-9A-Za-z, left-padded with "0" to 6), not by our validator; the body is searched for such a CRC."""
    import binascii

    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    def b62(n: int) -> str:
        out = ""
        while n:
            n, r = divmod(n, 62)
            out = alphabet[r] + out
        return out

    body = next(b for b in (f"Zx9Qm2Lp7Rt4Vw8Ky1Nb6Hc3J{i:05d}" for i in range(100000))
                if binascii.crc32(b.encode()) < 62 ** 5)
    tail = b62(binascii.crc32(body.encode())).rjust(6, "0")
    assert tail[0] == "0"
    assert VALIDATORS["github_crc32"]("ghp_" + body + tail)
    assert not VALIDATORS["github_crc32"]("ghp_" + body + tail[1:] + "0")  # the zero at the other end
