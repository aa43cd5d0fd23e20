"""Numeric character references in Telegram HTML at the edges of the valid range. A reference decodes to its character
only when that is a Unicode scalar value: not 0, not a surrogate (U+D800–U+DFFF), not above U+10FFFF (the Unicode
standard's definition; the HTML standard treats the same three as parse errors). Anything else stays as the literal
text, exactly as written, so the offsets of what follows still map back to the payload. The boundaries below are worked
from those definitions, not taken from the engine."""
from __future__ import annotations

import pytest

from eventlog.dlp.htmltext import parse


@pytest.mark.parametrize("ref, decoded", [
    ("&#1;", "\x01"),                  # the first valid code point
    ("&#0;", None),                    # NUL: not decoded
    ("&#55295;", "\ud7ff"),            # U+D7FF, the last before the surrogates
    ("&#xD800;", None),                # the first surrogate
    ("&#xd801;", None),                # a surrogate inside the range
    ("&#57343;", None),                # U+DFFF, the last surrogate
    ("&#xE000;", "\ue000"),            # the first after them
    ("&#1114111;", "\U0010ffff"),      # U+10FFFF, the last code point
    ("&#x110000;", None),              # one past it
    ("&#0065;", "A"),                  # decimal with leading zeros is still base 10
    ("&#x41;", "A"),
])
def test_numeric_references_decode_only_to_scalar_values(ref: str, decoded: str | None) -> None:
    text = f"a{ref}b"
    vis = parse(text).visible
    assert vis.text == f"a{decoded if decoded is not None else ref}b"
    # the character after the reference still maps to its own place in the payload
    assert vis.start(len(vis.text) - 1) == len(text) - 1


def test_a_secret_in_the_text_that_starts_and_ends_with_a_reference_covers_both() -> None:
    """In the visible text (not an attribute): the raw span of a password whose first and last characters are written
    as `&#53;` (the digit 5) runs from the first `&` to the last `;` — what gets redacted."""
    from eventlog.dlp.engine import Scanner
    from eventlog.dlp.rules import load_rules

    text = "clone https://bob:&#53;YhXWb%kMvic&#53;@git.example.org/r.git now"
    found = Scanner(load_rules(), b"k" * 32).scan(text, html=True).findings
    assert [(f.rule, text[f.start:f.end]) for f in found] == [("url-credentials", "&#53;YhXWb%kMvic&#53;")]


def test_a_secret_in_the_text_that_ends_with_a_bare_ampersand_ends_after_it() -> None:
    """A bare `&` (no reference follows) is a character of the text: a password ending in one ends right after it."""
    from eventlog.dlp.engine import Scanner
    from eventlog.dlp.rules import load_rules

    text = "clone https://bob:5YhXWb%kMvic5&@git.example.org/r.git now"
    found = Scanner(load_rules(), b"k" * 32).scan(text, html=True).findings
    assert [(f.rule, text[f.start:f.end]) for f in found] == [("url-credentials", "5YhXWb%kMvic5&")]
