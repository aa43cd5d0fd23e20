#!/usr/bin/env python3
"""External DLP evaluation: our rules vs detect-secrets 1.5.0 on messages built from public scanner fixtures.

The corpus (messages.jsonl, built by tools/dlp_external_corpus.py from gitleaks', detect-secrets' and trufflehog's own
test fixtures, with provenance) is material this project did not write, so it is not in the repository: it lives in
../shared/data/dlp-external/ beside the repository root (read-only; CI has it too). Scoring is per message: a positive
message counts as caught when the scanner reports anything in it (a chat filter redacts whatever it finds; which rule
fired is secondary), a negative message with any report is a false positive.

Tiers: a finding has a `tier` ("confirmed" or "near_format", issue 25); until the engine sets it every finding counts as
confirmed. Both tiers are scored apart: "any" (what the filter stops) and "confirmed" (the exact formats alone), so a
near-format hit on a fixture's wrong-length negative shows as such.

Families: "claimed" are those rules.json covers (claimed_families: a rule id equal to the family, or starting with
family + "-", or the family's entry in FAMILY_RULES), derived from the rule file scored; "all" is every family of the
corpus (gitleaks' full rule set, every trufflehog detector, every detect-secrets plugin). Each is scored over both
variants and over bare secrets and chat-wrapped ones apart. detect-secrets sees exactly the same messages in the same
run; the JS engine is run too and must agree with the Python engine message for message.

    .venv/bin/python tools/bench/dlp_external.py [--corpus PATH] [--rules PATH] [--no-js] [--json OUT] [--misses]
        [--all-families]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from eventlog.dlp.engine import Scanner  # noqa: E402
from eventlog.dlp.rules import RuleSet, load_rules  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "dlp-external"
CORPUS = SHARED / "messages.jsonl"
KEY = bytes(range(32))
# A family whose name is not a rule id (nor a prefix of one): the rules that claim it. Used only if the rule exists.
FAMILY_RULES = {
    "auth-header": ["authorization-header", "http-header-credential"],
    "curl-credentials": ["curl-user-credentials"],
    "credential-assignment": ["secret-assignment", "password-assignment"],
}
Hits = list[frozenset]  # per message: the tiers of its findings (empty: nothing found)


class MissingCorpus(AssertionError):
    """The shared corpus file is not there: a failure naming the file, never a skip."""


def load(path: Path) -> list[dict]:
    if not Path(path).is_file():
        raise MissingCorpus(f"external DLP corpus missing: {path} (it lives in ../shared/data/dlp-external/ beside the "
                            "repository; build it with tools/dlp_external_corpus.py --out DIR, see docs/dlp.md)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def tier_of(f: Any) -> str:
    """A finding's tier; the tier field is new (issue 25), a finding without one is confirmed."""
    return f.get("tier", "confirmed") if isinstance(f, dict) else getattr(f, "tier", "confirmed")


def ours(msgs: list[dict], rules_path: str | None) -> Hits:
    sc = Scanner(load_rules(rules_path), KEY)
    return [frozenset(tier_of(f) for f in sc.scan(m["text"]).findings) for m in msgs]


def ours_js(msgs: list[dict], rules_path: str | None) -> Hits:
    from dlp_support import run_driver

    items = [{"id": i, "text": m["text"]} for i, m in enumerate(msgs)]
    extra = ["--rules", rules_path] if rules_path else []
    out = {o["id"]: frozenset(tier_of(f) for f in o["findings"]) for o in run_driver(items, KEY.hex(), *extra)}
    return [out[i] for i in range(len(msgs))]


def ds_scanner():
    """detect-secrets 1.5.0 as `detect-secrets scan` runs over a file (default plugins and filters, not the eager
    ad-hoc mode of `scan_line`, which reports every word as a high-entropy string): a function text -> bool.
    Must be called inside `default_settings()`. None when detect-secrets is not installed."""
    try:
        from detect_secrets.core.scan import _process_line_based_plugins, get_filters, get_settings
    except ImportError:
        return None
    get_settings().disable_filters("detect_secrets.filters.common.is_invalid_file")  # there is no file on disk
    get_filters.cache_clear()

    def scan(text: str) -> bool:
        lines = list(enumerate(text.splitlines(), start=1))
        return any(True for _ in _process_line_based_plugins(lines, filename="chat-message.txt"))
    return scan


def detect_secrets(msgs: list[dict]) -> Hits | None:
    try:
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with default_settings():
        scan = ds_scanner()
        return [frozenset({"confirmed"}) if scan(m["text"]) else frozenset() for m in msgs]


def claimed_families(rules: RuleSet, families: Iterable[str]) -> set[str]:
    """The corpus families the rule file covers: a rule id equal to the family or starting with `family-`
    (github → github-token), or a rule named for the family in FAMILY_RULES."""
    ids = {r.id for r in rules.rules}
    out = set()
    for fam in families:
        if fam in ids or any(i.startswith(fam + "-") for i in ids) or ids & set(FAMILY_RULES.get(fam, ())):
            out.add(fam)
    return out


def _hit(h: Any, tier: str | None) -> bool:
    if isinstance(h, bool):
        return h
    return bool(h) if tier is None else tier in h


def score(msgs: list[dict], hits: list, tier: str | None = None, families: set[str] | None = None,
          variant: str | None = None) -> dict:
    """Precision/recall over the messages of `families` (None: all) and `variant` (None: both); a hit is any finding,
    or a finding of `tier` ("confirmed")."""
    fam: dict[str, dict[str, int]] = defaultdict(lambda: {"pos": 0, "tp": 0, "neg": 0, "fp": 0})
    for m, h in zip(msgs, hits, strict=True):
        if (families is not None and m["family"] not in families) or (variant and m.get("variant") != variant):
            continue
        row = fam[m["family"]]
        hit = _hit(h, tier)
        if m["label"]:
            row["pos"] += 1
            row["tp"] += hit
        else:
            row["neg"] += 1
            row["fp"] += hit
    tp = sum(r["tp"] for r in fam.values())
    fp = sum(r["fp"] for r in fam.values())
    pos = sum(r["pos"] for r in fam.values())
    neg = sum(r["neg"] for r in fam.values())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / pos if pos else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"families": dict(fam), "pos": pos, "neg": neg, "tp": tp, "fp": fp, "fn": pos - tp, "precision": p,
            "recall": r, "f1": f1}


def summary(msgs: list[dict], hits: dict[str, list], claimed: set[str]) -> dict:
    """scanner → scope (claimed|all) → variant (both|bare|chat) → score, plus our confirmed tier alone."""
    out: dict[str, Any] = {}
    for name, h in hits.items():
        tiers = [(name, None)] + ([(name + ":confirmed", "confirmed")] if name == "eventlog" else [])
        for label, tier in tiers:
            out[label] = {scope: {v or "both": score(msgs, h, tier, fams, v) for v in (None, "bare", "chat")}
                          for scope, fams in (("claimed", claimed), ("all", None))}
    return out


def _rc(row: dict | None) -> str:
    return f"{row['tp'] / row['pos']:.3f}" if row and row["pos"] else "-"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS), help=f"messages.jsonl (default {CORPUS})")
    ap.add_argument("--rules", default=None, help="rule file to score (default: the packaged one)")
    ap.add_argument("--before", default=None, help="also score this rule file (e.g. the rules before issue 16, "
                    "tests/corpora/dlp-external/rules-before-issue16.json) in the same run")
    ap.add_argument("--no-js", action="store_true", help="skip the JS engine agreement check")
    ap.add_argument("--all-families", action="store_true", help="print every family, not only the claimed ones and "
                    "the unclaimed ones with a false positive or a recall below 0.5")
    ap.add_argument("--misses", action="store_true", help="list missed positives and false positives (ids only)")
    ap.add_argument("--json", dest="json_out", default=None)
    a = ap.parse_args(argv)
    msgs = load(Path(a.corpus))
    rules = load_rules(a.rules)
    claimed = claimed_families(rules, {m["family"] for m in msgs})
    t0 = time.perf_counter()
    py = ours(msgs, a.rules)
    t_py = time.perf_counter() - t0
    hits: dict[str, list] = {"eventlog": py}
    if a.before:
        hits["eventlog_before"] = ours(msgs, a.before)
    t0 = time.perf_counter()
    ds = detect_secrets(msgs)
    t_ds = time.perf_counter() - t0
    if ds is not None:
        hits["detect_secrets"] = ds
    res: dict[str, Any] = {"messages": len(msgs), "positives": sum(m["label"] for m in msgs),
                           "claimed_families": sorted(claimed), "summary": summary(msgs, hits, claimed)}
    if not a.no_js:
        js = ours_js(msgs, a.rules)
        res["js_disagreements"] = sum(x != y for x, y in zip(py, js, strict=True))
    repos = sorted({m["source"]["repo"] for m in msgs})
    print(f"== external DLP evaluation: {len(msgs)} messages ({res['positives']} positive) from public fixtures "
          f"({', '.join(repos)}; provenance in {Path(a.corpus).name}); {len(claimed)} of "
          f"{len({m['family'] for m in msgs})} families claimed by the rules")
    e_any = score(msgs, py)["families"]
    e_conf = score(msgs, py, "confirmed")["families"]
    d = score(msgs, ds)["families"] if ds is not None else {}
    print(f"{'family':<34} {'pos':>4} {'neg':>4}   {'recall':>6} {'FP':>4}   {'conf.R':>6} {'cFP':>4}   "
          f"{'d-s R':>6} {'d-s FP':>6}")
    for fam in sorted(e_any, key=lambda f: (f not in claimed, f)):
        r, c, dr = e_any[fam], e_conf[fam], d.get(fam)
        if fam not in claimed and not a.all_families and not (r["fp"] or (r["pos"] and r["tp"] / r["pos"] < 0.5)):
            continue
        mark = "" if fam in claimed else " (unclaimed)"
        print(f"{(fam + mark)[:34]:<34} {r['pos']:>4} {r['neg']:>4}   {_rc(r):>6} {r['fp']:>4}   {_rc(c):>6} "
              f"{c['fp']:>4}   {_rc(dr):>6} {dr['fp'] if dr else '-':>6}")
    print()
    print(f"{'scanner':<22} {'scope':<8} {'variant':<6} {'precision':>9} {'recall':>7} {'F1':>6}   TP / FP / FN")
    for name, scopes in res["summary"].items():
        for scope, variants in scopes.items():
            for v, s in variants.items():
                print(f"{name:<22} {scope:<8} {v:<6} {s['precision']:>9.3f} {s['recall']:>7.3f} {s['f1']:>6.3f}   "
                      f"{s['tp']} / {s['fp']} / {s['fn']}")
    if ds is None:
        print("detect-secrets: not installed (pip install detect-secrets==1.5.0)")
    print(f"time: eventlog {t_py:.2f} s, detect-secrets {t_ds:.2f} s for the corpus")
    if "js_disagreements" in res:
        print(f"JS engine vs Python engine: {res['js_disagreements']} messages disagree")
    if a.misses:
        for m, h in zip(msgs, py, strict=True):
            near_only = h == frozenset({"near_format"})
            if bool(h) != bool(m["label"]) or near_only:
                # NEAR: a fixture negative that is now a near_format hit (a "wrong length" case); near: a positive
                # caught only by the near tier
                kind = "MISS" if not h else ("NEAR" if near_only and not m["label"] else "near" if near_only else "FP  ")
                claim = "claimed" if m["family"] in claimed else "unclaimed"
                print(f"{kind} {m['id']} {m['family']} [{claim}] {m['source']['path']}:{m['source']['line']}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(res, indent=1))
    return 1 if res.get("js_disagreements") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
