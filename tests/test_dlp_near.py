"""Issue 25, two tiers: the shared near-format vectors (tests/vectors/dlp/near.json, expectations written by hand) and
the `near` linter. The JS engine runs the same file in eventlog/patches/openclaw/runtime/test/dlp-near.test.mjs."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from eventlog.dlp.engine import Scanner, near_severity
from eventlog.dlp.rules import lint_doc, load_rules, read_doc

VEC = Path(__file__).parent / "vectors" / "dlp" / "near.json"
DOC = json.loads(VEC.read_text())
KEYS = ("rule", "start", "end", "tier", "severity", "action")


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), bytes.fromhex(DOC["key_hex"]))


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["name"] for c in DOC["cases"]])
def test_near_vector(scanner: Scanner, case: dict) -> None:
    res = scanner.scan(case["text"], preview=case["preview"])
    assert [{k: f.to_dict()[k] for k in KEYS} for f in res.findings] == case["findings"]
    filt = scanner.filter(case["text"], preview=case["preview"])
    assert {"text": filt["text"], "held": filt["held"]} == case["filter"]


def test_vectors_cover_every_near_rule() -> None:
    near = {r.id for r in load_rules().rules if r.near}
    hit = {f["rule"] for c in DOC["cases"] for f in c["findings"] if f["tier"] == "near_format"}
    assert near == hit, near ^ hit
    assert sum(1 for c in DOC["cases"] if not c["findings"]) >= 5  # near-format negatives


def test_near_severity_one_step_down_never_below_medium() -> None:
    assert [near_severity(s) for s in ("critical", "high", "medium", "low")] == ["high", "medium", "medium", "low"]


def test_no_near_on_generic_rules() -> None:
    """Generic rules have no distinctive prefix: a near tier there would redact prose."""
    generic = {"password-assignment", "password-prose", "secret-assignment", "secret-comparison",
               "authorization-header", "http-header-credential", "curl-user-credentials", "url-credentials",
               "connection-string-password", "aws-secret-access-key", "openai-legacy-key", "payment-card", "iban"}
    assert not [r.id for r in load_rules().rules if r.near and r.id in generic]


def _with_near(near: object) -> list[str]:
    doc, _ = read_doc()
    doc = copy.deepcopy(doc)
    doc["rules"][2]["near"] = near
    return lint_doc(doc)


@pytest.mark.parametrize("near, problem", [
    ({"pattern": "sk-ant-[a-z]{20,}"}, "near must be"),
    ({"pattern": "sk-ant-[a-z]{20,}", "reason": ""}, "near.reason"),
    ({"pattern": "sk-ant-[a-z]{20,}", "reason": "x", "extra": 1}, "near must be"),
    ({"pattern": "(?i)sk-ant-[a-z]{20,}", "reason": "x"}, "near.pattern: inline flags"),
    ({"pattern": "sk-ant-\\w{20,}", "reason": "x"}, "near.pattern: \\w"),
    ({"pattern": "(sk-ant-)?", "reason": "x"}, "matches the empty string"),
    ({"pattern": "sk-ant-[a-z]{20,}", "group": 2, "reason": "x"}, "near.group"),
    ({"pattern": "sk-ant-[a-z]{20,}", "entropy": 9, "reason": "x"}, "near.entropy"),
    ("sk-ant-", "near must be"),
])
def test_near_linter(near: object, problem: str) -> None:
    probs = _with_near(near)
    assert any(problem in p for p in probs), probs


def test_near_needs_a_case_sensitive_rule() -> None:
    doc, _ = read_doc()
    doc = copy.deepcopy(doc)
    doc["rules"][2]["flags"] = "i"
    doc["rules"][2]["near"] = {"pattern": "sk-ant-[a-z]{20,}", "reason": "x"}
    assert any("case-sensitive" in p for p in lint_doc(doc))


def test_packaged_near_patterns_lint_clean() -> None:
    doc, _ = read_doc()
    assert lint_doc(doc) == []
    assert sum(1 for r in doc["rules"] if "near" in r) >= 10
