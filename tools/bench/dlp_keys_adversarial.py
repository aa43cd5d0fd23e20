#!/usr/bin/env python3
"""Worst cases for the whole-private-key rules (docs/dlp.md, "Whole private keys"): texts of 25, 50 and 100 KB made to
make a backtracking regex work — back-to-back `-----BEGIN` headers without END (with and without separators), a long
base64 run without END, alternating escapes and concatenations, quotes, short lines, long armor and PPK values, age
look-alikes. Each text is scanned as a final message and as a preview by both engines (Python in process, JS through
dlp-driver.mjs, median of 3); a linear rule doubles its time with the size, a catastrophic one explodes.

    .venv/bin/python tools/bench/dlp_keys_adversarial.py [--repo /work/main]   # --repo: another tree's engines/rules

Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def text(kind: str, n: int, r: random.Random) -> str:
    rs = lambda k: "".join(r.choice(B64) for _ in range(k))  # noqa: E731
    whole = {
        "long-b64": lambda: "-----BEGIN PRIVATE KEY-----\n" + rs(n),
        "long-b64-then-!": lambda: "-----BEGIN PRIVATE KEY-----\n" + rs(n) + "!",
        "escapes-mixed": lambda: "-----BEGIN PRIVATE KEY-----" + "".join(
            r.choice(["\\n", "\\r\\n", "\\\\n", "\\", "\n", " ", '" + "', "'", '"']) for _ in range(n // 3)),
        "short-lines": lambda: "-----BEGIN PRIVATE KEY-----" + "".join(
            "\n" + rs(r.randint(1, 15)) for _ in range(n // 9)) + " x",
        "quotes": lambda: "-----BEGIN PRIVATE KEY-----" + '"' * n,
        "quote-then-spaces": lambda: "-----BEGIN PRIVATE KEY-----" + '"' + " " * n,
        "ppk-short-lines": lambda: "Private-Lines: 9" + "".join("\n" + rs(r.randint(1, 15)) for _ in range(n // 9)) + " x",
    }
    unit = {
        "begin-no-end": "-----BEGIN RSA PRIVATE KEY-----\n",
        "begin-back-to-back": "-----BEGIN PRIVATE KEY-----",
        "begin-line-then-prose": "-----BEGIN PRIVATE KEY-----\n" + rs(40) + " x",
        "begin-concat-escape": "-----BEGIN PRIVATE KEY-----" + '\\n" + "' * 5 + "\\",
        "armor-long-value": "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: " + "x" * 190 + "\n",
        "ppk-long-comment": "PuTTY-User-Key-File-2: ssh-rsa\nComment: " + "y" * 150 + " \n",
        "age-one-short": "AGE-SECRET-KEY-1" + "Q" * 57 + " ",
    }
    if kind in whole:
        return whole[kind]()[:n + 64]
    u = unit[kind]
    return (u * (n // len(u) + 1))[:n]


KINDS = ["begin-no-end", "begin-back-to-back", "begin-line-then-prose", "long-b64", "long-b64-then-!", "escapes-mixed",
         "begin-concat-escape", "short-lines", "quotes", "quote-then-spaces", "armor-long-value", "ppk-long-comment",
         "ppk-short-lines", "age-one-short"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    ap.add_argument("--sizes", default="25000,50000,100000")
    ap.add_argument("--node", default=None)
    a = ap.parse_args()
    sys.path.insert(0, str(a.repo))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from dlp_support import node_bin

    from eventlog.dlp.engine import Scanner
    from eventlog.dlp.rules import load_rules

    sc = Scanner(load_rules(a.repo / "eventlog" / "dlp" / "rules.json"), b"k" * 32)
    r = random.Random(25)
    items = [{"id": f"{k}/{n}", "text": text(k, n, r)} for k in KINDS for n in map(int, a.sizes.split(","))]
    py: dict[str, float] = {}
    for it in items:
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            sc.scan(it["text"])
            sc.scan(it["text"], preview=True)
            ts.append((time.perf_counter() - t0) * 1000 / 2)
        py[it["id"]] = statistics.median(ts)
    driver = a.repo / "eventlog" / "patches" / "openclaw" / "runtime" / "dlp-driver.mjs"
    feed = "".join(json.dumps(it) + "\n" + json.dumps({**it, "preview": True, "id": it["id"] + "p"}) + "\n"
                   for it in items)
    p = subprocess.run([a.node or node_bin(), str(driver), "--bench", "--repeat", "3"], input=feed.encode(),
                       capture_output=True, check=True)
    js: dict[str, list[float]] = {}
    for line in p.stdout.decode().splitlines():
        o = json.loads(line)
        js.setdefault(o["id"].rstrip("p") if o["id"].endswith("p") else o["id"], []).append(
            statistics.median(o["ns"]) / 1e6)
    print(f"{'input (scan + preview scan, mean)':40} {'Python ms':>10} {'JS ms':>8}")
    for it in items:
        print(f"{it['id']:40} {py[it['id']]:10.2f} {statistics.mean(js[it['id']]):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
