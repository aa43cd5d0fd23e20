#!/usr/bin/env python3
"""External DLP evaluation: our rules vs detect-secrets 1.5.0 on messages built from public scanner fixtures.

The corpus (tests/corpora/dlp-external/messages.jsonl, built by tools/dlp_external_corpus.py from gitleaks' and
detect-secrets' own test fixtures, with provenance) is material this project did not write. Scoring is per message:
a positive message counts as caught when the scanner reports anything in it (a chat filter redacts whatever it finds;
which rule fired is secondary), a negative message with any report is a false positive. Both scanners see exactly the
same messages in the same run; the JS engine is run too and must agree with the Python engine message for message.
The two finding tiers (docs/dlp.md, "Two tiers") are scored apart: `confirmed` counts only exact-format findings,
`confirmed+near` also the near-format ones, so a fixture's "wrong length" negative that now becomes a near_format
hit shows as such (`--misses` lists them as NEAR).

    .venv/bin/python tools/bench/dlp_external.py [--rules PATH] [--no-js] [--json OUT] [--misses]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from eventlog.dlp.engine import Scanner  # noqa: E402
from eventlog.dlp.rules import load_rules  # noqa: E402

CORPUS = REPO / "tests/corpora/dlp-external/messages.jsonl"
KEY = bytes(range(32))


def load(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _tiers(findings: list) -> str | None:
    """The strongest tier among a message's findings: "confirmed", "near_format", or None (nothing found)."""
    tiers = {f["tier"] if isinstance(f, dict) else f.tier for f in findings}
    return "confirmed" if "confirmed" in tiers else ("near_format" if tiers else None)


def ours_tiers(msgs: list[dict], rules_path: str | None) -> list[str | None]:
    sc = Scanner(load_rules(rules_path), KEY)
    return [_tiers(sc.scan(m["text"]).findings) for m in msgs]


def ours(msgs: list[dict], rules_path: str | None) -> list[bool]:
    """Per message: anything found, either tier (what the pre-send filter redacts)."""
    return [t is not None for t in ours_tiers(msgs, rules_path)]


def ours_js_tiers(msgs: list[dict], rules_path: str | None) -> list[str | None]:
    from dlp_support import run_driver

    items = [{"id": i, "text": m["text"]} for i, m in enumerate(msgs)]
    extra = ["--rules", rules_path] if rules_path else []
    out = {o["id"]: _tiers(o["findings"]) for o in run_driver(items, KEY.hex(), *extra)}
    return [out[i] for i in range(len(msgs))]


def ours_js(msgs: list[dict], rules_path: str | None) -> list[bool]:
    return [t is not None for t in ours_js_tiers(msgs, rules_path)]


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


def detect_secrets(msgs: list[dict]) -> list[bool] | None:
    try:
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with default_settings():
        scan = ds_scanner()
        return [scan(m["text"]) for m in msgs]


def score(msgs: list[dict], hits: list[bool]) -> dict:
    fam: dict[str, dict[str, int]] = defaultdict(lambda: {"pos": 0, "tp": 0, "neg": 0, "fp": 0})
    for m, h in zip(msgs, hits):
        row = fam[m["family"]]
        if m["label"]:
            row["pos"] += 1
            row["tp"] += h
        else:
            row["neg"] += 1
            row["fp"] += h
    tp = sum(r["tp"] for r in fam.values())
    fp = sum(r["fp"] for r in fam.values())
    pos = sum(r["pos"] for r in fam.values())
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / pos if pos else 1.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"families": dict(fam), "tp": tp, "fp": fp, "fn": pos - tp, "precision": p, "recall": r, "f1": f1}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--rules", default=None, help="rule file to score (default: the packaged one)")
    ap.add_argument("--before", default=None, help="also score this rule file (e.g. the rules before issue 16, "
                    "tests/corpora/dlp-external/rules-before-issue16.json) in the same run")
    ap.add_argument("--no-js", action="store_true", help="skip the JS engine agreement check")
    ap.add_argument("--misses", action="store_true", help="list missed positives and false positives (ids only)")
    ap.add_argument("--json", dest="json_out", default=None)
    a = ap.parse_args(argv)
    msgs = load(Path(a.corpus))
    t0 = time.perf_counter()
    py_t = ours_tiers(msgs, a.rules)
    t_py = time.perf_counter() - t0
    py = [t is not None for t in py_t]
    res = {"messages": len(msgs), "positives": sum(m["label"] for m in msgs), "eventlog": score(msgs, py),
           "eventlog_confirmed": score(msgs, [t == "confirmed" for t in py_t])}
    # messages whose only findings are near-format: on a negative these are the fixtures' "wrong length" cases
    res["near_only"] = {"positives": sum(1 for m, t in zip(msgs, py_t) if t == "near_format" and m["label"]),
                        "negatives": sum(1 for m, t in zip(msgs, py_t) if t == "near_format" and not m["label"])}
    if a.before:
        res["eventlog_before"] = score(msgs, ours(msgs, a.before))
    t0 = time.perf_counter()
    ds = detect_secrets(msgs)
    t_ds = time.perf_counter() - t0
    if ds is not None:
        res["detect_secrets"] = score(msgs, ds)
    if not a.no_js:
        js = ours_js_tiers(msgs, a.rules)
        res["js_disagreements"] = sum(x != y for x, y in zip(py_t, js))
    print(f"== external DLP evaluation: {len(msgs)} messages ({res['positives']} positive) from public fixtures "
          f"(gitleaks, detect-secrets; provenance in {Path(a.corpus).name})")
    print(f"{'family':<24} {'pos':>4} {'neg':>4}   {'recall':>7} {'FP':>4}   {'+near':>7} {'FP':>4}   "
          f"{'d-s recall':>10} {'d-s FP':>6}" + (f"   {'before':>7} {'FP':>4}" if a.before else ""))
    e = res["eventlog"]["families"]
    c = res["eventlog_confirmed"]["families"]
    d = res.get("detect_secrets", {}).get("families", {})
    b = res.get("eventlog_before", {}).get("families", {})

    def rc(row: dict | None) -> str:
        return f"{row['tp'] / row['pos']:.3f}" if row and row["pos"] else "-"
    for fam in sorted(e):
        r, dr, br = e[fam], d.get(fam), b.get(fam)
        cr = c[fam]
        line = (f"{fam:<24} {cr['pos']:>4} {cr['neg']:>4}   {rc(cr):>7} {cr['fp']:>4}   {rc(r):>7} {r['fp']:>4}   "
                f"{rc(dr):>10} {dr['fp'] if dr else '-':>6}")
        if a.before:
            line += f"   {rc(br):>7} {br['fp'] if br else '-':>4}"
        print(line)
    labels = {"eventlog_confirmed": "confirmed", "eventlog": "confirmed+near", "eventlog_before": "before",
              "detect_secrets": "detect-secrets"}
    for name in ("eventlog_confirmed", "eventlog", "eventlog_before", "detect_secrets"):
        if name in res:
            s = res[name]
            print(f"{labels[name] + ' overall':<24} precision {s['precision']:.3f}  recall {s['recall']:.3f}  F1 {s['f1']:.3f}  "
                  f"(TP {s['tp']}, FP {s['fp']}, FN {s['fn']})")
    print(f"near_format only: {res['near_only']['positives']} positives caught only by the near tier, "
          f"{res['near_only']['negatives']} fixture negatives now near_format hits")
    if ds is None:
        print("detect-secrets: not installed (pip install detect-secrets==1.5.0)")
    print(f"time: eventlog {t_py:.2f} s, detect-secrets {t_ds:.2f} s for the corpus")
    if "js_disagreements" in res:
        print(f"JS engine vs Python engine: {res['js_disagreements']} messages disagree")
    if a.misses:
        for m, h, t in zip(msgs, py, py_t):
            if h != bool(m["label"]) or t == "near_format":
                kind = "MISS" if not h else ("NEAR" if t == "near_format" and not m["label"] else
                                             "near" if t == "near_format" else "FP  ")
                print(f"{kind} {m['id']} {m['family']} {m['source']['path']}:{m['source']['line']}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(res, indent=1))
    return 1 if res.get("js_disagreements") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
