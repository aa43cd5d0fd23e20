"""The shared DLP vectors (tests/vectors/dlp/cases.json): the Python engine must reproduce every case exactly. The JS
engine runs the same file in eventlog/patches/openclaw/runtime/test/dlp.test.mjs.

This is a REGRESSION check, not a correctness check: the expectations were captured from our own Python engine
(tests/vectors/dlp/make_vectors.py), so a bug present when they were captured is pinned here as "expected". Answers
from independent sources: tests/test_dlp_validators_kat.py (validators_known_answers.json) and tests/test_dlp_external.py
(an external labelled corpus)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

VEC = Path(__file__).parent / "vectors" / "dlp" / "cases.json"
DOC = json.loads(VEC.read_text())
FAMILIES = json.loads((VEC.parent / "families.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), bytes.fromhex(DOC["key_hex"]))


def test_vectors_cover_every_rule() -> None:
    rules = {r.id for r in load_rules().rules}
    found = {f["rule"] for c in DOC["cases"] for f in c["findings"]}
    # the vendor token families have their positives in families.json (tests/test_dlp_families.py)
    found |= {f["rule"] for c in FAMILIES["cases"] for f in c["expect"]}
    assert rules <= found, f"rules without a positive vector: {sorted(rules - found)}"
    assert sum(1 for c in DOC["cases"] if not c["expect_rules"]) >= 15  # hard negatives
    assert any(c["html"] for c in DOC["cases"]) and any(c["preview"] for c in DOC["cases"])


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["name"] for c in DOC["cases"]])
def test_vector(scanner: Scanner, case: dict) -> None:
    res = scanner.scan(case["text"], html=case["html"], preview=case["preview"])
    assert [f.rule for f in res.findings] == case["expect_rules"]
    assert [f.to_dict() for f in res.findings] == case["findings"]
    assert res.hold_back == case["holdBack"]
    text, action = scanner.redact(case["text"], res.findings, html=case["html"])
    assert {"text": text, "action": action} == case["redact"]
    filt = scanner.filter(case["text"], html=case["html"], preview=case["preview"])
    assert {"text": filt["text"], "action": filt["action"], "held": filt["held"]} == case["filter"]


@pytest.mark.parametrize("case", [c for c in DOC["cases"] if c["findings"]], ids=lambda c: c["name"])
def test_no_secret_survives_filter(scanner: Scanner, case: dict) -> None:
    """Whatever the filter lets through contains no 12-character piece of any finding's text."""
    out = scanner.filter(case["text"], html=case["html"], preview=case["preview"])["text"]
    for f in case["findings"]:
        secret = case["text"][f["start"]:f["end"]]
        for i in range(0, max(1, len(secret) - 11)):
            piece = secret[i:i + 12]
            if "<" not in piece and "&" not in piece:
                assert piece not in out
