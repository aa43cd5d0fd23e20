"""Hand-worked answers for the credential-shaped validators, jwt and entropy (issue 15: the validators.py mutants
that survived the complete run sat in the character classes, templates, placeholders and quote handling, which only
the JS twin test pinned). The answers live in tests/vectors/dlp/validators_hand_answers.json, each with the reason
it follows from the rule's documented meaning or the format's spec; the JS twin test reads the same file. The
helpers' own contracts (character class codes, unquoting) are checked here directly, on the boundaries of their ranges.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eventlog.dlp import validators as v

DOC = json.loads((Path(__file__).parent / "vectors" / "dlp" / "validators_hand_answers.json").read_text("utf-8"))


def test_both_answers_for_every_validator() -> None:
    # a validator that always says yes (or no) fails here
    for name in {c["validator"] for c in DOC["cases"]}:
        assert {c["expect"] for c in DOC["cases"] if c["validator"] == name} == {True, False}, name


@pytest.mark.parametrize("case", DOC["cases"], ids=lambda c: f"{c['validator']}-{c['value']}")
def test_hand_answer(case: dict) -> None:
    assert v.VALIDATORS[case["validator"]](case["value"]) is case["expect"], case["why"]


@pytest.mark.parametrize("case", DOC["entropy"], ids=lambda c: c["value"])
def test_entropy_hand_answer(case: dict) -> None:
    assert math.isclose(v.entropy(case["value"]), case["bits"], abs_tol=1e-12), case["why"]


# The class codes: 0 lower, 1 upper, 2 digit, 3 anything else (_has_alnum keeps codes < 3). Each range's first and
# last character, and characters just outside it (@ [ ` { around the Latin letters, / : around the digits, _ ~ and
# U+0400, U+0402, U+040F, U+0450, U+0452, U+0460 around the Cyrillic ones; Latin-1, a Roman numeral, an emoji).
KINDS = {
    0: "azазяё" + "mпж",
    1: "AZАЯЁ" + "MПЖ",
    2: "0159",
    3: "@[`{/:_~ !\u0400\u0402\u0450\u0452\u00e9\u00c9\u2160😀" + "\u040f\u0460",
}


@pytest.mark.parametrize("code", sorted(KINDS))
def test_character_class_codes(code: int) -> None:
    assert [v._kind(c) for c in KINDS[code]] == [code] * len(KINDS[code])
    assert all(v._has_alnum(c) is (code < 3) for c in KINDS[code])


def test_unquote_strips_one_matching_pair_only() -> None:
    assert v._unquote('""') == ""
    assert v._unquote('"a"') == "a"
    assert v._unquote('"abcdefgh"') == "abcdefgh"
    assert v._unquote("'x''") == "x'"
    assert v._unquote('"abc\'') == '"abc\''  # the quotes differ
    assert v._unquote('"') == '"'
    assert v._unquote("abca") == "abca"  # same first and last character, not a quote
    assert v._unquote("") == ""
