#!/usr/bin/env python3
"""The per-query freshness check of a long-lived searcher (issue 14, eventlog/search/watch.py): CPU of
`index.update()` per query, and of the whole default hybrid query, with the stat-based check (the baseline: every
query walks and stats the log's directories) and with inotify watches, in the same run — each in its own process,
alternating, on a fresh 1 M index (the search benchmark's `tiled-200x365` by default; read only: it is fresh).

    python tools/bench/search_fresh.py [--root DIR] [--reps 2] [--rounds 2] [--base-tree DIR]

`--base-tree` adds a third column: the same measurement with the package from another source tree (e.g. the
commit before this change, `git archive 82e371d eventlog | tar -x -C /tmp/base`). Medians of CPU time
(time.process_time) over 15 queries × reps per round and variant; the goal: the whole query ≤ 100 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "bench"))
from search import CACHE, QUERIES  # noqa: E402

SNIPPET = r"""
import inspect, json, sys, time
from pathlib import Path
from eventlog.search import SearchQuery, index, search
root, watched, queries, reps = Path(sys.argv[1]), sys.argv[2] == "1", json.loads(sys.argv[3]), int(sys.argv[4])
try:
    from eventlog.search import watch
except ImportError:
    watch = None
kw = {"watch_changes": watched} if "watch_changes" in inspect.signature(index.update).parameters else {}
if watch is not None and not kw:  # a tree from before index.update(watch_changes=): its module switch
    watch.ENABLED = watched
for q in queries[:2]:  # warm: imports, model, page cache, per-process caches; the second refresh sets up watches
    search(root, SearchQuery(q), **kw)
upd, full = [], []
for _ in range(reps):
    for q in queries:
        c = time.process_time()
        index.update(root, **kw)
        upd.append(time.process_time() - c)
for _ in range(reps):
    for q in queries:
        c = time.process_time()
        search(root, SearchQuery(q, limit=10), **kw)
        full.append(time.process_time() - c)
used = watch is not None and watch.current(root) is not None
print(json.dumps({"update": upd, "query": full, "watched": used}))
"""
ENV1 = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def run(tree: Path, root: Path, watched: bool, reps: int) -> dict:
    env = {**os.environ, **ENV1, "PYTHONPATH": str(tree)}
    r = subprocess.run([sys.executable, "-c", SNIPPET, str(root), "1" if watched else "0", json.dumps(QUERIES),
                        str(reps)], capture_output=True, text=True, env=env, cwd=tree, check=True)
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=CACHE / "tiled-200x365")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--base-tree", type=Path)
    args = ap.parse_args()
    if not (args.root / "index" / "units").is_dir():
        print(f"search_fresh: no index under {args.root} (run tools/bench/search.py first)", file=sys.stderr)
        return 2
    variants = [("stat-based (baseline)", REPO, False), ("watched", REPO, True)]
    if args.base_tree:
        variants.insert(0, (f"package of {args.base_tree}", args.base_tree, False))
    got: dict[str, dict[str, list[float]]] = {name: {"update": [], "query": []} for name, _, _ in variants}
    for _ in range(args.rounds):
        for name, tree, watched in variants:
            res = run(tree, args.root, watched, args.reps)
            if watched and not res["watched"]:
                print(f"{name}: the watch was not used (fell back)", file=sys.stderr)
            got[name]["update"] += res["update"]
            got[name]["query"] += res["query"]
    base = statistics.median(got["stat-based (baseline)"]["update"])
    base_q = statistics.median(got["stat-based (baseline)"]["query"])
    print(f"root {args.root}, {len(QUERIES)} queries × {args.reps} reps × {args.rounds} rounds, CPU medians")
    for name, _, _ in variants:
        u, q = statistics.median(got[name]["update"]), statistics.median(got[name]["query"])
        print(f"  {name:<40} index.update {u * 1000:7.2f} ms ({u / base:5.2f}× baseline)   "
              f"hybrid query {q * 1000:7.1f} ms ({q / base_q:4.2f}×)   goal: query ≤ 100 ms, update ~1–3 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
