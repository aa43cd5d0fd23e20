"""Vendor token families (issue 25 item 4) on the shared vectors tests/vectors/dlp/families.json; the JS engine runs
the same file in eventlog/patches/openclaw/runtime/test/dlp-families.test.mjs.

The expectations come from the documented formats (tests/vectors/dlp/make_families.py plants a generated fake secret
and records where), not from either engine: a positive is exactly one finding of its family's rule on the planted
span, a negative is no finding at all, a preview cut inside a key holds back everything from the key's prefix on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog.dlp import validators as v
from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

DOC = json.loads((Path(__file__).parent / "vectors" / "dlp" / "families.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), b"\x19" * 32)


def test_every_family_rule_has_two_positives_and_the_file_has_negatives() -> None:
    by_rule: dict[str, int] = {}
    for c in DOC["cases"]:
        for f in c["expect"]:
            by_rule[f["rule"]] = by_rule.get(f["rule"], 0) + 1
    rules = {r.id for r in load_rules().rules}
    assert set(by_rule) <= rules
    assert all(n >= 2 for n in by_rule.values()), by_rule
    assert len(by_rule) >= 50
    assert sum(1 for c in DOC["cases"] if c["family"] is None) >= 25


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["name"] for c in DOC["cases"]])
def test_family_case(scanner: Scanner, case: dict) -> None:
    if case["preview"]:
        out = scanner.filter(case["text"], preview=True)
        assert (out["held"], out["text"]) == (case["held"], case["shown"])
        assert out["findings"] == []
        return
    got = [{"rule": f.rule, "start": f.start, "end": f.end} for f in scanner.scan(case["text"]).findings]
    assert got == case["expect"]
    if case["expect"]:
        text, action = scanner.redact(case["text"], scanner.scan(case["text"]).findings)
        secret = case["text"][case["expect"][0]["start"]:case["expect"][0]["end"]]
        assert action == "redact" and secret not in text and f"[REDACTED:{case['family']}]" in text


@pytest.mark.parametrize("case", DOC["validators"], ids=lambda c: f"{c['validator']}-{c['value']}")
def test_validator_hand_answer(case: dict) -> None:
    assert v.VALIDATORS[case["validator"]](case["value"]) is case["expect"], case["why"]
