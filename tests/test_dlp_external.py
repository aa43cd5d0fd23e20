"""The rules on material this project did not write: the external corpus built from gitleaks', detect-secrets' and
trufflehog's own fixtures by tools/dlp_external_corpus.py (provenance per message). It is not in the repository: it
lives in ../shared/data/dlp-external/ beside it (a missing file is a failure naming it, never a skip).

Guards, over the families rules.json claims (derived from the rule file: dlp_external.claimed_families), precision and
recall at least what the rules reach now (issue 25; the lead re-measures after the vendor families merge), above
detect-secrets 1.5.0 on the same messages, the confirmed tier scored apart when findings carry one, and the JS engine
agreeing with the Python engine on every message."""
from __future__ import annotations

import sys

import pytest

from dlp_support import REPO, SHARED_DLP, external_messages

sys.path.insert(0, str(REPO / "tools" / "bench"))
import dlp_external as ext  # noqa: E402

from eventlog.dlp.rules import load_rules  # noqa: E402

# What the rules reach on the shared corpus (claimed families, both variants); raise, never lower, when rules improve.
# Precision is asserted on both tiers together: a near_format hit on a fixture's "wrong length" negative counts as a
# false positive here (the issue 25 reversal makes it a finding on purpose; the bench lists them as NEAR).
MIN_PRECISION = 0.95
MIN_RECALL = 0.95
MIN_CONFIRMED_PRECISION = 0.97  # the confirmed tier alone (0.978 reached, Dec 2026)


def test_corpus_is_read_from_the_shared_directory() -> None:
    assert ext.CORPUS == SHARED_DLP / "messages.jsonl" == REPO.parent / "shared" / "data" / "dlp-external" / \
        "messages.jsonl"
    assert not (REPO / "tests" / "corpora" / "dlp-external" / "messages.jsonl").exists(), \
        "fixture-derived data must not be in the tree"


def test_missing_corpus_is_a_failure_naming_the_file(tmp_path) -> None:
    with pytest.raises(AssertionError, match="nope.jsonl"):
        ext.load(tmp_path / "nope.jsonl")


def test_claimed_families_come_from_the_rule_file() -> None:
    rules = load_rules()
    fams = ["github", "telegram-bot-token", "credential-assignment", "discordbottoken", "1password-secret-key"]
    got = ext.claimed_families(rules, fams)
    assert {"github", "telegram-bot-token", "credential-assignment"} <= got
    assert all(f in got for f in fams if any(r.id == f or r.id.startswith(f + "-") for r in rules.rules)
               or any(r.id in ext.FAMILY_RULES.get(f, ()) for r in rules.rules))
    assert "1password-secret-key" not in got or any(r.id.startswith("1password") for r in rules.rules)


def test_tiers_are_scored_apart() -> None:
    msgs = [{"family": "x", "label": 1, "variant": "bare"}, {"family": "x", "label": 0, "variant": "bare"}]
    hits = [frozenset({"near_format"}), frozenset({"near_format"})]
    assert ext.score(msgs, hits)["recall"] == 1.0 and ext.score(msgs, hits)["fp"] == 1
    conf = ext.score(msgs, hits, "confirmed")
    assert conf["recall"] == 0.0 and conf["fp"] == 0
    assert ext.tier_of({"rule": "a"}) == "confirmed" and ext.tier_of({"tier": "near_format"}) == "near_format"


def test_external_corpus_scores_and_engines_agree() -> None:
    msgs = external_messages()
    assert len(msgs) > 1000 and all(m["source"]["repo"] and m["source"]["commit"] for m in msgs)
    claimed = ext.claimed_families(load_rules(), {m["family"] for m in msgs})
    assert len(claimed) >= 10, claimed
    py = ext.ours(msgs, None)
    s = ext.score(msgs, py, families=claimed)
    assert s["precision"] >= MIN_PRECISION and s["recall"] >= MIN_RECALL, {k: s[k] for k in ("precision", "recall")}
    for variant in ("bare", "chat"):  # a neutral chat sentence around a secret changes little
        v = ext.score(msgs, py, families=claimed, variant=variant)
        assert v["precision"] >= MIN_PRECISION - 0.02 and v["recall"] >= MIN_RECALL - 0.02, (variant, v["recall"])
    conf = ext.score(msgs, py, "confirmed", families=claimed)
    assert conf["fp"] <= s["fp"] and conf["tp"] <= s["tp"]
    assert conf["precision"] >= MIN_CONFIRMED_PRECISION, conf["precision"]
    ds = ext.detect_secrets(msgs)
    if ds is not None:  # the `bench` extra; the test venv has it
        d = ext.score(msgs, ds, families=claimed)
        assert s["precision"] > d["precision"] and s["recall"] > d["recall"]
    js = ext.ours_js(msgs, None)
    assert [i for i, (a, b) in enumerate(zip(py, js, strict=True)) if a != b] == []
