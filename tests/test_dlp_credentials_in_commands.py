"""Credentials in commands and connection strings (`curl -u user:password`, `scheme://user:password@host`): what a user
pastes into a chat. Kept: any real-looking secret part of 4+ characters (the user part alone counts when the password
is empty: `curl -u TOKEN:`). Not findings: shell variables standing in for the secret (`$DB_PASS_2`, `$dbPass9`),
placeholders and obvious fakes. Added for issue 15 (mutation testing found these branches unchecked)."""
from __future__ import annotations

import pytest

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), b"k" * 32)


def found(scanner: Scanner, text: str) -> list[tuple[str, str]]:
    return [(f.rule, text[f.start:f.end]) for f in scanner.scan(text).findings]


@pytest.mark.parametrize("text,secret", [
    ("curl -u admin:Xk9mQ2vL7 https://api.example.org", "admin:Xk9mQ2vL7"),
    ('curl -u "admin:Xk9mQ2vL7" https://api.example.org', '"admin:Xk9mQ2vL7"'),
    ("curl -u admin:Xk9m https://api.example.org", "admin:Xk9m"),        # 4 characters: still a password
    ("curl -u :Xk9mQ2vL7 https://api.example.org", ":Xk9mQ2vL7"),        # empty user
    ("curl -u Xk9mQ2vL7: https://api.example.org", "Xk9mQ2vL7:"),        # token as the user, empty password
    ("curl -u 'ad:Xk9mQ2:vL7' https://api.example.org", "'ad:Xk9mQ2:vL7'"),  # the password may contain a colon
])
def test_curl_user_credentials_are_found(scanner, text, secret):
    assert found(scanner, text) == [("curl-user-credentials", secret)]


@pytest.mark.parametrize("text", [
    "curl -u admin:Xk9 https://api.example.org",          # 3 characters: too short to tell from noise
    "curl -u admin: https://api.example.org",
    "curl -u admin:ExamplePw9 https://api.example.org",   # a fake, whatever its case
    "curl -u admin:$ADMIN_PW https://api.example.org",    # a shell variable
    "curl -u {{user}}:{{pass}} https://api.example.org",  # a template
    "curl -u admin https://api.example.org",              # a user name alone: curl asks for the password
])
def test_curl_user_non_secrets_are_not_findings(scanner, text):
    assert found(scanner, text) == []


@pytest.mark.parametrize("var", ["$DB_PASS_2", "$dbPass9", "$DB_KEY_Z", "$_x9", "$xyz_0"])
def test_a_shell_variable_as_url_password_is_not_a_finding(scanner, var):
    assert found(scanner, f"postgres://bob:{var}@db.example.org/app") == []


@pytest.mark.parametrize("pw", ["$Zq9-x!Lm2", "$Zq9x.Lm2", "$ab^cd9x", "$ab=cd9x", "$ab[cd9x"])  # not identifiers
def test_a_password_that_only_starts_with_a_dollar_is_a_finding(scanner, pw):
    assert found(scanner, f"postgres://bob:{pw}@db.example.org/app") == [("url-credentials", pw)]
