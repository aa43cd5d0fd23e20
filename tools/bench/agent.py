#!/usr/bin/env python3
"""Recall tool latency (issue 13): one `eventlog_search` call as the plugin makes it, per call, process start included.

Three ways, in one run, on the same corpus (tools/gen_corpus.py; ≈1 M events at full size, shared with the recall
benchmark's cache):
- `cli`: one `python -P -m eventlog agent call` process per call (request on stdin, JSON on stdout) — the plugin's
  `helper: false`;
- `helper`: one long-lived `eventlog agent serve`, one JSON line per call — the plugin's default;
- baselines: `python -P -c pass` (interpreter start) and `python -P -m eventlog --version` (the CLI's imports), the
  floor every per-call process pays.
Calls: chat scope (the usual call: one chat's files) and all chats (the owner's scope "all"), text and fuzzy mode.
Each call is timed wall-clock from spawn/write to the parsed answer; reported as p50/p99 and the ratio cli/helper;
peak RSS of the helper (VmHWM) and of a per-call process (GNU time). Answers are compared: the helper and the per-call
process must return the same ids. The bench's recall:query events go to the corpus's system stream and are removed
afterwards when the corpus had none.

    python tools/bench/agent.py [--chats 200 --days 365] [--calls 40] [--json-out FILE]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured  # noqa: E402
from recall import CACHE, ensure_corpus  # noqa: E402

PY = sys.executable
EVENTLOG = [PY, "-P", "-m", "eventlog"]


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def requests(root: Path, n: int) -> list[tuple[str, dict]]:
    chats = sorted(d.name for d in (root / "raw" / "telegram" / "chats").iterdir())
    words = ["invoice deadline", "договор", "ZEBRA-NEEDLE-4417", "staging release", "оплата заказ", "budget review"]
    out = []
    for i in range(n):
        chat = chats[(i * 7) % len(chats)]
        q = words[i % len(words)]
        kind = ("chat-text", {"query": q}) if i % 4 != 3 else ("chat-fuzzy", {"query": q, "mode": "fuzzy"})
        out.append((kind[0], {"tool": "search", "args": kind[1], "chat": chat, "all_allowed": False,
                              "origin": {"source": "bench"}}))
    for i in range(max(2, n // 8)):
        out.append(("all-text", {"tool": "search", "args": {"query": words[i % len(words)], "scope": "all"},
                                 "chat": chats[0], "all_allowed": True, "origin": {"source": "bench"}}))
    return out


def run_cli(root: Path, req: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    p = subprocess.run(EVENTLOG + ["agent", "call", "--root", str(root)], input=orjson.dumps(req),
                       capture_output=True, cwd="/", timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"agent call failed: {p.stderr.decode()[-300:]}")
    return wall, orjson.loads(p.stdout)


class Helper:
    def __init__(self, root: Path) -> None:
        self.p = subprocess.Popen(EVENTLOG + ["agent", "serve", "--root", str(root)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, cwd="/")
        self.seq = 0

    def call(self, req: dict) -> tuple[float, dict]:
        self.seq += 1
        t0 = time.perf_counter()
        assert self.p.stdin and self.p.stdout
        self.p.stdin.write(orjson.dumps({**req, "seq": self.seq}) + b"\n")
        self.p.stdin.flush()
        out = orjson.loads(self.p.stdout.readline())
        return time.perf_counter() - t0, out

    def hwm_mb(self) -> float:
        for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def close(self) -> None:
        assert self.p.stdin
        self.p.stdin.close()
        self.p.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--calls", type=int, default=40, help="chat-scope calls per way (plus calls/8 over all chats)")
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args()
    root = args.corpus or (CACHE / ("corpus" if (args.chats, args.days) == (200, 365) else
                                    f"corpus-{args.chats}x{args.days}"))
    summary = ensure_corpus(root, args.chats, args.days)
    system = root / "raw" / "system"
    had_system = system.exists()
    reqs = requests(root, args.calls)
    print(f"corpus: {summary['events']:,} events ({args.chats} chats × {args.days} days); "
          f"{len(reqs)} calls per way", flush=True)

    base: dict[str, list[float]] = {"python -c pass": [], "eventlog --version": []}
    for _ in range(10):
        base["python -c pass"].append(run_measured([PY, "-P", "-c", "pass"])[0])
        base["eventlog --version"].append(run_measured(EVENTLOG + ["--version"])[0])
    cli_rss = run_measured(EVENTLOG + ["agent", "search", "invoice", "--all", "--root", str(root)])[1]

    results: dict[str, dict[str, list[float]]] = {"cli": {}, "helper": {}}
    helper = Helper(root)
    mismatches = 0
    try:
        helper.call(reqs[0][1])  # warm-up: imports, DLP rules, the first rg
        run_cli(root, reqs[0][1])
        for kind, req in reqs:
            w_cli, a = run_cli(root, req)
            w_helper, b = helper.call(req)
            results["cli"].setdefault(kind, []).append(w_cli)
            results["helper"].setdefault(kind, []).append(w_helper)
            if a.get("ids") != b.get("ids") or not a.get("ok"):
                mismatches += 1
        helper_rss = helper.hwm_mb()
    finally:
        helper.close()
        if not had_system and system.exists():
            shutil.rmtree(system)

    print(f"\n{'way':<22}{'calls':>6}{'p50 ms':>10}{'p99 ms':>10}")
    for name, xs in base.items():
        print(f"{'baseline ' + name:<22}{len(xs):>6}{statistics.median(xs) * 1000:>10.0f}{pct(xs, 99) * 1000:>10.0f}")
    table = {}
    for kind in results["cli"]:
        for way in ("cli", "helper"):
            xs = results[way][kind]
            table[f"{way} {kind}"] = {"n": len(xs), "p50_ms": statistics.median(xs) * 1000, "p99_ms": pct(xs, 99) * 1000}
            print(f"{way + ' ' + kind:<22}{len(xs):>6}{statistics.median(xs) * 1000:>10.0f}{pct(xs, 99) * 1000:>10.0f}")
        r = statistics.median(results["cli"][kind]) / statistics.median(results["helper"][kind])
        print(f"{'  ratio cli/helper p50':<22}{'':>6}{r:>10.2f}")
    print(f"\npeak RSS: helper {helper_rss:.0f} MB (after all calls), one per-call process {cli_rss:.0f} MB")
    print(f"answers: {'identical' if not mismatches else f'{mismatches} MISMATCHED'} between cli and helper")
    if args.json_out:
        args.json_out.write_bytes(orjson.dumps({"events": summary["events"], "baseline": {
            k: {"p50_ms": statistics.median(v) * 1000, "p99_ms": pct(v, 99) * 1000} for k, v in base.items()},
            "table": table, "helper_rss_mb": helper_rss, "cli_rss_mb": cli_rss}, option=orjson.OPT_INDENT_2))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
