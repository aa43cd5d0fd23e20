#!/usr/bin/env python3
"""The agent tool's `mode: "hybrid"` (issue 14 item 5) as the plugin runs it by default: one long-lived
`eventlog agent serve`, one JSON line per call, timed wall-clock from the write to the parsed answer — whole-year
index of the search benchmark's big corpus (1 M messages, real vectors), chat scope and the owner's scope "all".

    python tools/bench/agent_hybrid.py [--root DIR] [--base-tree DIR] [--calls 15] [--context 2]

`--base-tree` runs the same calls with the package from another source tree first (e.g. the commit before the
in-process change: `git archive 82e371d eventlog | tar -x -C /tmp/before82`, where every hybrid call started
`python -m eventlog search`), for the ratio. The tool appends a recall:query event per call, so the calls run on a
hard-linked copy of the root (same file system, nothing copied; removed afterwards) — the benchmark corpus and its
index stay as they were. Without a complete, fresh vector index at the root the bench says so and exits 0.
`--context N` (issue 27 item 4) also runs the chat-scope calls with `context: N` — each hit with N turns before and
after it — beside the same calls without, in the same helper's run (0: not run). `--root` may be the search bench's
tiled root (`…/bench-search/tiled-200x365`: the slice's vectors tiled over the big corpus; same cost, meaningless
ranking) when the big corpus has no vector index of its own.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "bench"))
from search import CACHE, QUERIES, full_index_ready  # noqa: E402

ENV1 = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def serve(tree: Path, root: Path, scope: str, queries: list[str], context: int = 0) -> dict:
    chat = sorted(os.listdir(root / "raw" / "telegram" / "chats"))[0]
    env = {**os.environ, **ENV1, "PYTHONPATH": str(tree)}
    p = subprocess.Popen([sys.executable, "-P", "-m", "eventlog", "--root", str(root), "agent", "serve"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/", env=env)
    walls, used, chars = [], set(), []
    assert p.stdin and p.stdout
    try:
        for i, q in enumerate([queries[0]] + queries):
            args = {"query": q, "mode": "hybrid", **({"scope": "all"} if scope == "all" else {}),
                    **({"context": context} if context else {})}
            req = {"tool": "search", "args": args, "chat": chat, "all_allowed": scope == "all", "seq": i}
            t = time.perf_counter()
            p.stdin.write(orjson.dumps(req) + b"\n")
            p.stdin.flush()
            out = orjson.loads(p.stdout.readline())
            walls.append(time.perf_counter() - t)
            if not out.get("ok"):
                raise SystemExit(f"agent call failed: {out.get('text', '')[:300]}")
            used.add(out.get("mode_used"))
            chars.append(len(out.get("text", "")))
        hwm = next((int(ln.split()[1]) / 1024 for ln in Path(f"/proc/{p.pid}/status").read_text().splitlines()
                    if ln.startswith("VmHWM:")), 0.0)
    finally:
        p.stdin.close()
        p.wait(timeout=120)
    rest = sorted(walls[1:])
    return {"first_ms": walls[0] * 1000, "p50_ms": statistics.median(rest) * 1000,
            "p99_ms": rest[min(len(rest) - 1, round(0.99 * (len(rest) - 1)))] * 1000, "rss_mb": hwm,
            "mode_used": ",".join(sorted(map(str, used))), "chars": statistics.median(chars)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=CACHE / "corpus-200x365")
    ap.add_argument("--base-tree", type=Path, default=None)
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--context", type=int, default=2, help="also the chat calls with context: N (0: not run)")
    args = ap.parse_args()
    if not args.root.is_dir() or not full_index_ready(args.root):
        print(f"agent hybrid: skipped — no complete, fresh vector index at {args.root} (build it: "
              f"`eventlog index --jobs 2 --root {args.root}`, ≈ 25 min of CPU at 1 M)")
        return 0
    queries = (QUERIES * (1 + args.calls // len(QUERIES)))[:args.calls]
    copy = args.root.parent / f".agent-hybrid-{os.getpid()}"
    subprocess.run(["cp", "-al", str(args.root), str(copy)], check=True)
    if (copy / "raw").is_symlink():  # the tiled root links to the big corpus's raw/: the calls' records stay in the copy
        target = (copy / "raw").resolve()
        (copy / "raw").unlink()
        subprocess.run(["cp", "-al", str(target), str(copy / "raw")], check=True)
    trees = ([("base " + args.base_tree.name, args.base_tree)] if args.base_tree else []) + [("this tree", REPO)]
    print(f"agent tool, mode hybrid, through `eventlog agent serve`; {args.calls} calls after one warm-up call; "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    got: dict[tuple[str, str], dict] = {}
    try:
        for scope in ("chat", "all"):
            for name, tree in trees:
                r = got[(scope, name)] = serve(tree, copy, scope, queries)
                print(f"  scope {scope:<5} {name:<22} first call {r['first_ms']:7.0f} ms; then p50 {r['p50_ms']:7.1f} "
                      f"ms, p99 {r['p99_ms']:7.1f} ms wall; helper peak RSS {r['rss_mb']:.0f} MB; mode_used "
                      f"{r['mode_used']}   goal: library p50 ≤ 100 ms (issue 14)", flush=True)
            if args.base_tree:
                b, t = got[(scope, trees[0][0])], got[(scope, "this tree")]
                print(f"  scope {scope:<5} this tree / base, p50: {t['p50_ms'] / b['p50_ms']:.3f}", flush=True)
            if scope == "chat" and args.context:
                plain = got[(scope, "this tree")]
                c = serve(REPO, copy, scope, queries, args.context)
                print(f"  scope chat  context: {args.context:<12} first call {c['first_ms']:7.0f} ms; then p50 "
                      f"{c['p50_ms']:7.1f} ms, p99 {c['p99_ms']:7.1f} ms wall; helper peak RSS {c['rss_mb']:.0f} MB; "
                      f"text {c['chars']:.0f} chars (without: {plain['chars']:.0f})", flush=True)
                print(f"  scope chat  context {args.context} / without, p50: {c['p50_ms'] / plain['p50_ms']:.3f}   "
                      "goal: — (the turns cost file reads, not ranking)", flush=True)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
