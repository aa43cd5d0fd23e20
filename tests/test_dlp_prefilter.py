"""The Python engine's speed devices change no finding (issue 16 item 5).

- KeywordPrefilter selects exactly the rules with a keyword in the lower-cased text (the definition: `k in low`) and
  reports exactly where the anchored rules' keywords occur — on the shared vectors, the external corpus (material this
  project did not write, in ../shared/data/dlp-external/), the generated corpus, adversarial text built from keyword fragments, and random keyword sets
  with nested and overlapping keywords that share anchor characters (the layering).
- fast_pattern spells a rule's regex differently but matches exactly what the rule's own pattern matches.
- Scanner.candidates equals a reference scanner with no prefilter and no anchors (every rule tried at every position) on
  the vectors and the external corpus.
"""
from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

from eventlog.dlp.engine import _occurrences, fast_pattern
from eventlog.dlp.prefilter import MAX_MATCHES, KeywordPrefilter
from eventlog.dlp.rules import RuleSet, load_rules

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS.parent / "tools"))
import dlp_corpus  # noqa: E402
from dlp_support import candidates_without_prefilter_total, external_messages  # noqa: E402

VECTORS = [c["text"] for c in json.loads((TESTS / "vectors/dlp/cases.json").read_text())["cases"]]


def external() -> list[str]:
    """The external corpus' texts (../shared/data/dlp-external/; a failure naming the file when it is missing)."""
    return [m["text"] for m in external_messages()]

RULES = load_rules()


def keyword_map(rules: RuleSet) -> dict[str, set[int]]:
    kw: dict[str, set[int]] = {}
    for r in rules.rules:
        for k in r.keywords:
            kw.setdefault(k, set()).add(r.index)
    return kw


def definition(kw: dict[str, set[int]], low: str) -> set[int]:
    return {i for k, v in kw.items() if k in low for i in v}


def adversarial(r: random.Random, keywords: list[str], n: int) -> list[str]:
    """Texts glued from keyword pieces (prefixes, suffixes, whole, upper-cased), look-alikes and filler, so keywords
    overlap, nest and almost occur."""
    pieces = [" ", "-", "_", ":", "=", "\n", "İ", "😊", "ё", "e", "a", "1", "0:", "sk", "pass", "инн", "длинное"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(r.randint(1, 14)):
            k = r.choice(keywords)
            cut = r.randint(0, len(k))
            parts.append(r.choice([k, k[:cut], k[cut:], k.upper(), k[:cut] + r.choice(pieces), r.choice(pieces)]))
        out.append("".join(parts))
    return out


def repetitive(keywords: list[str]) -> list[str]:
    """Texts that repeat keywords more often than MAX_MATCHES (the prefilter then looks the rest up one by one)."""
    out = [(k + sep) * (MAX_MATCHES + 8) for k in keywords for sep in (" ", "")]
    out += [" ".join(keywords) * 3, "-" * 4096, ("| a | b |\n|---|---|\n" * 200), ("sk-" * 1400)]
    return out


def texts() -> list[str]:
    r = random.Random(1616)
    gen = [m["text"] for m in dlp_corpus.corpus(1500, seed=1616)]
    kws = sorted(keyword_map(RULES))
    return VECTORS + external() + gen + adversarial(r, kws, 3000) + repetitive(kws)


def test_prefilter_selects_exactly_the_rules_with_a_keyword() -> None:
    kw = keyword_map(RULES)
    pf = KeywordPrefilter(kw, track=[r.index for r in RULES.rules if r.anchor])
    assert pf.tracked  # the anchored rules' occurrences come from the prefilter
    selected = 0
    for t in texts():
        low = t.lower()
        sel, starts = pf.scan(low)
        assert sel == definition(kw, low), t
        assert pf.select(low) == sel  # select() is the selection half of scan()
        for i in pf.tracked & sel:
            assert sorted(starts.get(i, ())) == _occurrences(low, RULES.rules[i].keywords), (RULES.rules[i].id, t)
        selected += len(sel)
    assert selected > 10_000


@pytest.mark.parametrize("seed", range(40))
def test_prefilter_layers_on_random_nested_keywords(seed: int) -> None:
    """Random keyword sets over a 4-letter alphabet: many keywords share an anchor character, nest, overlap and are
    suffixes/prefixes of each other — the cases the layering exists for."""
    r = random.Random(seed)
    alphabet = r.choice(["ab-_", "abc:", "kx-=", "ая ё"])
    kw: dict[str, set[int]] = {}
    for _ in range(r.randint(2, 25)):
        k = "".join(r.choice(alphabet) for _ in range(r.randint(1, 6)))
        kw.setdefault(k, set()).add(r.randrange(8))
    track = r.sample(range(8), 4)
    pf = KeywordPrefilter(kw, track=track)
    by_rule: dict[int, list[str]] = {}
    for k, v in kw.items():
        for i in v:
            by_rule.setdefault(i, []).append(k)
    for n in range(300):
        # every tenth text long enough that a regex reports more than MAX_MATCHES occurrences
        size = r.randint(0, 40) if n % 10 else r.randint(100, 400)
        low = "".join(r.choice(alphabet + "z") for _ in range(size))
        sel, starts = pf.scan(low)
        assert sel == definition(kw, low), (kw, low)
        for i in pf.tracked & sel:
            assert sorted(starts.get(i, ())) == _occurrences(low, by_rule[i]), (kw, i, low)


def test_fast_pattern_spelling() -> None:
    assert fast_pattern("[0-9]{10}(?![0-9])") == "[0-9][0-9]{9}(?![0-9])"
    assert fast_pattern("[A-Z]{2}[0-9]{2}") == "[A-Z][A-Z]{1}[0-9]{2}"
    assert fast_pattern("[0-9]{5,16}:A") == "[0-9][0-9]{4,15}:A"
    assert fast_pattern("[a\\]b]{3,}x") == "[a\\]b][a\\]b]{2,}x"
    for unchanged in ("sk-[A-Za-z0-9]{48}", "[0-9]{0,3}x", "[0-9]{2,4}?x", "(?:[0-9]{2})x", "[0-9]x"):
        assert fast_pattern(unchanged) == unchanged


def test_fast_patterns_match_what_the_rules_match() -> None:
    changed = [r for r in RULES.rules if fast_pattern(r.pattern) != r.pattern]
    assert len(changed) >= 5  # the digit rules, IBAN, the bot token
    corpus = texts() + ["ИНН 7707083893", "IBAN DE89370400440532013000", "12345678901234567890 1234 567890",
                        "bot110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage"]
    for r in changed:
        fast = re.compile(fast_pattern(r.pattern), r.rx.flags)
        for t in corpus:
            assert [m.span() for m in fast.finditer(t)] == [m.span() for m in r.rx.finditer(t)], (r.id, t)
            for p in range(0, len(t), 11):
                a, b = fast.match(t, p), r.rx.match(t, p)
                assert (a and a.span(r.group)) == (b and b.span(r.group)), (r.id, t, p)


def test_candidates_equal_a_scanner_without_prefilter_on_external_material() -> None:
    """Every rule tried at every position (keywords: every character of the material; no anchors) finds exactly what
    the prefiltered, anchored scanner finds — on the external corpus and the vectors."""
    material = VECTORS + external()
    total = candidates_without_prefilter_total(RULES, bytes(32), material)
    assert total > 600
