"""Secrets inside attribute values of Telegram HTML (`<a href="…">`), written with character references.

Telegram decodes `&#NN;`, `&#xHH;`, `&amp;`, `&lt;`, `&gt;`, `&quot;` in attribute values as in text, so the user sees
(and the link leaks) the decoded secret. The finding must (a) cover the whole raw span of the encoded secret — that is
what gets redacted — and (b) carry the same fingerprint as the same secret written plainly, so a false-positive verdict
on one spelling covers the other. Offsets below are counted from the literal texts, not taken from the engine."""
from __future__ import annotations

import pytest

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

PLAIN_PW = "5YhXWb%kMvic5"
PLAIN = f"https://bob:{PLAIN_PW}@git.example.org/r.git"


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), b"k" * 32)


def only(scanner: Scanner, text: str, html: bool):
    found = scanner.scan(text, html=html).findings
    assert [f.rule for f in found] == ["url-credentials"], found
    return found[0]


@pytest.mark.parametrize("encoded", [
    "5Yh&#88;Wb&#37;kMvic5",          # decimal references inside the secret
    "5Yh&#x58;Wb&#x25;kMvic5",        # hexadecimal
    "&#53;YhXWb%kMvic&#53;",          # a reference as the first and as the last character
])
@pytest.mark.parametrize("before", [
    '',                                # the href is the only attribute
    'title="Q&amp;A" ',               # an earlier attribute with a reference of its own
    'title="a & b" ',                 # and one with a bare ampersand (not a reference: stays "&")
])
def test_encoded_password_in_href_is_found_over_its_raw_span_with_the_plain_fingerprint(scanner, encoded, before):
    plain = only(scanner, PLAIN, html=False)
    text = f'<a {before}href="https://bob:{encoded}@git.example.org/r.git">repo</a>'
    f = only(scanner, text, html=True)
    start = text.index("bob:") + 4
    assert (f.start, f.end) == (start, start + len(encoded))
    assert f.fingerprint == plain.fingerprint and f.masked == plain.masked


@pytest.mark.parametrize("pw", ["5YhX&bWb%kMvic5", "&5YhXbWb%kMvic5", "5YhXbWb%kMvic5&"])
def test_a_bare_ampersand_in_an_attribute_is_kept_literally(scanner, pw):
    """`&b` is no character reference: the decoded password keeps the `&` (same fingerprint as the plain one), and
    its raw span starts/ends exactly at an `&` that is its first/last character."""
    plain = only(scanner, f"https://bob:{pw}@git.example.org/", html=False)
    text = f'<a href="https://bob:{pw}@git.example.org/">x</a>'
    f = only(scanner, text, html=True)
    assert text[f.start:f.end] == pw and f.fingerprint == plain.fingerprint


def test_a_secret_that_ends_the_attribute_value_ends_there(scanner):
    """Nothing is appended after the last character of an attribute value: a password that runs to the closing quote
    has the plain password's fingerprint and its raw span ends at the quote."""
    plain = scanner.scan("password: Xk9#mQ2vL7", html=False).findings
    assert [f.rule for f in plain] == ["password-assignment"]
    text = '<a href="https://example.org/" title="password: Xk9#mQ2vL7">R&amp;D</a>'  # an `&` after the attribute
    found = scanner.scan(text, html=True).findings
    assert [(f.rule, text[f.start:f.end], f.fingerprint) for f in found] == [
        ("password-assignment", "Xk9#mQ2vL7", plain[0].fingerprint)]


@pytest.mark.parametrize("quote", ['"', "'", ""], ids=["double-quoted", "single-quoted", "unquoted"])
def test_a_password_in_an_href_is_found_however_the_value_is_quoted(scanner, quote):
    """HTML allows attribute values in double quotes, single quotes or none; each is scanned."""
    text = f"<a href={quote}https://bob:{PLAIN_PW}@git.example.org/r.git{quote}>repo</a>"
    f = only(scanner, text, html=True)
    start = text.index("bob:") + 4
    assert (f.start, f.end) == (start, start + len(PLAIN_PW))
