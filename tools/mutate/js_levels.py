"""Scores per module from mutate-js JSON reports, split by which tests killed each mutant: the suite without the
test files of issue 15 item 1, plus round 1 (the first mutjs files), plus round 2 (dlp-html-twin, writer-damage).
The runner tries the issue-15 files last, in that order, so a mutant first killed by a round-2 file survived everything
before it. Stdlib only.   python3 tools/mutate/js_levels.py build/mutation-js.json [more reports…]"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

ROUND2 = ("test/dlp-html-twin.test.mjs", "test/writer-damage.test.mjs")
ROUND1 = ("test/dlp-validators-edges.test.mjs", "test/dlp-github-crc.test.mjs", "test/dlp-offsets.test.mjs",
          "test/dlp-alerts-edges.test.mjs", "test/writer-edges.test.mjs", "test/tap-failclosed.test.mjs")


def level(m: dict) -> int | None:
    """0/1/2: killed by the old suite / round 1 / round 2; None: not killed (survived, no coverage)."""
    if m["status"] not in ("killed", "timeout"):
        return None
    by = m.get("by", "")
    if any(f"/{t} ::" in by or by.endswith(t) for t in ROUND2):
        return 2
    if any(f"/{t} ::" in by or by.endswith(t) for t in ROUND1):
        return 1
    return 0


def main(paths: list[str]) -> int:
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # n, k0, k1, k2, nocov, timeout
    for path in paths:
        for m in json.load(open(path, encoding="utf-8"))["mutants"]:
            if m.get("op") == "named":
                continue
            r = rows[m["file"]]
            r[0] += 1
            lv = level(m)
            if lv is not None:
                r[1 + lv] += 1
            r[4] += m["status"] == "nocov"
            r[5] += m["status"] == "timeout"
    print(f"{'module':22} {'mutants':>7} {'old':>6} {'+r1':>6} {'+r2':>6} {'nocov':>5} {'t/o':>4}")
    for f, (n, k0, k1, k2, nc, to) in sorted(rows.items()):
        print(f"{f:22} {n:7} {k0 / n:6.3f} {(k0 + k1) / n:6.3f} {(k0 + k1 + k2) / n:6.3f} {nc:5} {to:4}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
