#!/usr/bin/env python3
"""The JS DLP engine's CPU time before and after the case folding (docs/dlp.md, "Case-insensitive matching"), in one
Node process, scans alternating between the two, on the same 2.5 KB messages: the corpus as generated (no fold
character: the cost of the check on the hot path) and the same messages with every `i` written as `İ` (the fold path).

    .venv/bin/python tools/bench/dlp_casefold.py [--base 6f47d5f] [--messages 300] [--rounds 21] [--reps 3]

--base is the revision whose runtime/dlp.mjs is the baseline (6f47d5f: main before the fold). Goal: new/base CPU
ratio <= 1.05 on the plain corpus (the median of the rounds' ratios; the engines scan back to back in each round, in
rotating order). A second copy of the baseline ("A/A") shows the noise floor of the same measurement. Not a test:
nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tools"), str(REPO / "tests")]

import dlp_corpus  # noqa: E402
from dlp_support import node_bin  # noqa: E402

RUNTIME = REPO / "eventlog" / "patches" / "openclaw" / "runtime"
GOAL = 1.05

JS = r"""
import { readFileSync } from "node:fs";
const [baseDir, newDir, aaDir, rulesPath, rounds, reps] = process.argv.slice(1); // node -e: the arguments follow argv[0]
const sets = JSON.parse(readFileSync(0, "utf8"));
const rules = JSON.parse(readFileSync(rulesPath, "utf8"));
const key = Buffer.alloc(32, 7);
const engines = {};
for (const [name, dir] of [["base", baseDir], ["new", newDir], ["aa", aaDir]]) {
  engines[name] = (await import(dir + "/dlp.mjs")).createScanner({ rules, key });
}
const cpu = (sc, texts) => {
  const c0 = process.cpuUsage();
  for (let k = 0; k < Number(reps); k++) for (const [t, h] of texts) sc.scan(t, { html: h });
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / texts.length / Number(reps);
};
const out = {};
for (const [set, texts] of Object.entries(sets)) {
  for (const sc of Object.values(engines)) cpu(sc, texts); // warm-up: every rule's path compiled
  const r = { base: [], new: [], aa: [] };
  const order = ["base", "new", "aa"];
  for (let k = 0; k < Number(rounds); k++) {
    for (let j = 0; j < 3; j++) { const name = order[(j + k) % 3]; r[name].push(cpu(engines[name], texts)); }
  }
  out[set] = r;
}
process.stdout.write(JSON.stringify(out));
"""


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="JS DLP engine CPU time before/after the case folding")
    ap.add_argument("--base", default="6f47d5f", help="revision of the baseline runtime/dlp.mjs")
    ap.add_argument("--messages", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--reps", type=int, default=3, help="scans of every message per engine per round")
    ap.add_argument("--seed", type=int, default=2027)
    a = ap.parse_args(argv)
    msgs = dlp_corpus.corpus(a.messages, seed=a.seed, pad_to=2400)
    plain = [[m["text"], m["html"]] for m in msgs]
    sets = {"plain": plain, "dotted-I": [[t.replace("i", "İ"), h] for t, h in plain]}
    with tempfile.TemporaryDirectory(prefix="dlp-casefold-") as tmp:
        base, new, aa = Path(tmp, "base"), Path(tmp, "new"), Path(tmp, "aa")
        shutil.copytree(RUNTIME, new, ignore=shutil.ignore_patterns("test"))
        shutil.copytree(RUNTIME, base, ignore=shutil.ignore_patterns("test"))
        rel = RUNTIME.relative_to(REPO)
        for f in base.glob("*.mjs"):
            p = subprocess.run(["git", "-C", str(REPO), "show", f"{a.base}:{rel}/{f.name}"], capture_output=True)
            if p.returncode == 0:
                f.write_bytes(p.stdout)
        shutil.copytree(base, aa)
        p = subprocess.run([node_bin(), "--input-type=module", "-e", JS, base.as_uri(), new.as_uri(), aa.as_uri(),
                            str(REPO / "eventlog" / "dlp" / "rules.json"), str(a.rounds), str(a.reps)],
                           input=json.dumps(sets, ensure_ascii=False).encode(), capture_output=True, timeout=3600)
    if p.returncode != 0:
        print(p.stderr.decode()[-2000:], file=sys.stderr)
        return 2
    res = json.loads(p.stdout)
    avg = sum(len(t.encode()) for t, _ in plain) / len(plain)
    print(f"JS DLP engine, CPU µs per message (median of {a.rounds} alternating rounds, each {a.reps} scans of "
          f"{len(plain)} messages, "
          f"avg {avg:.0f} bytes; base = {a.base}; load {os.getloadavg()[0]:.1f})")
    for name, r in res.items():
        b, n = median(r["base"]), median(r["new"])
        ratio = median([y / x for x, y in zip(r["base"], r["new"], strict=True)])  # per round: they ran back to back
        aa_ratio = median([y / x for x, y in zip(r["base"], r["aa"], strict=True)])
        goal = f"  goal <= {GOAL:.2f}" if name == "plain" else ""
        print(f"  {name:<9} base {b:8.1f}  new {n:8.1f}  ratio new/base {ratio:.3f} (A/A {aa_ratio:.3f}){goal}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
