"""Validator known answers from independent sources (tests/vectors/dlp/validators_known_answers.json: published test
card numbers, SWIFT IBAN registry examples, ЕГРЮЛ records, check digits worked by hand from the official algorithms).
The JS engine runs the same file (runtime/test/dlp-validators-kat.test.mjs)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules
from eventlog.dlp.validators import VALIDATORS

DOC = json.loads((Path(__file__).parent / "vectors" / "dlp" / "validators_known_answers.json").read_text("utf-8"))


def test_every_case_names_a_known_source() -> None:
    for c in DOC["cases"] + DOC["texts"]:
        assert c["source"] in DOC["sources"], c
    # both answers for every validator: a validator that always says yes (or no) fails here
    for name in {c["validator"] for c in DOC["cases"]}:
        assert {c["expect"] for c in DOC["cases"] if c["validator"] == name} == {True, False}, name


@pytest.mark.parametrize("case", DOC["cases"], ids=lambda c: f"{c['validator']}-{c['value']}")
def test_validator_known_answer(case: dict) -> None:
    assert VALIDATORS[case["validator"]](case["value"]) is case["expect"]


@pytest.mark.parametrize("case", DOC["texts"], ids=lambda c: c["text"])
def test_engine_known_answer(case: dict) -> None:
    scanner = Scanner(load_rules(), b"k" * 32)
    assert [f.rule for f in scanner.scan(case["text"]).findings] == case["rules"]
