#!/usr/bin/env python3
"""A/B of the search library between two checkouts (issue 14's ranking work), in the same run, query by query.

    python tools/bench/search_ab.py --before /path/to/checkout-of-main [--after .] [--root ROOT]
                                    [--modes hybrid,vector,bm25] [--reps 2] [--refresh 0,1]
    python tools/bench/search_ab.py [--after .] --modes hybrid --refresh 0 --reps 3   # one worker, running alone

Two worker processes (PYTHONPATH = each checkout, OMP/OpenBLAS 1 thread) answer the bench's 15 queries (`reps`
times each) alternately — the order flips every query — so both see the same machine load. Per mode: CPU p50 of each
(time.process_time around `search()`), the ratio, and each worker's peak RSS (ru_maxrss; a worker runs every mode in
turn, as the bench's one library process does). Every query's hits (ids and scores) are compared: the run prints how
many differ. Without `--before`, one worker runs alone (its wall-clock p50 too: the estimates' second thread
shows in CPU, not in wall time), nothing to compare. Modes: `name[:exhaustive][+days]` (`candidates=0`; `packs=False`). Default root: the bench's 1 M
tiled index (read only; `--refresh 1` runs the freshness check, a no-op on a fresh index).
A checkout of main: `git archive <commit> | tar -x -C /tmp/before`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

QUERIES = ["invoice", "deploy server", "contract review", "договор", "договора", "встреча проект", "сервер релиз",
           "budget report deadline", "ёлка", "оплата доставка", "staging build", "client email", "отчёт клиент",
           "payment delivery", "проверка сборка"]  # tools/bench/search.py's
WORKER = r"""
import json, resource, sys, time
from pathlib import Path
from eventlog.search import SearchQuery, search
root = Path(sys.argv[1])
for line in sys.stdin:
    req = json.loads(line)
    kw = {"packs": False} if req["days"] else {}
    try:
        q = SearchQuery(req["q"], mode=req["mode"], limit=10, candidates=req["cand"], **kw)
    except TypeError:  # a --before checkout older than SearchQuery.packs: it had the module switch instead
        from eventlog.search import pack
        pack.USE = False
        q = SearchQuery(req["q"], mode=req["mode"], limit=10, candidates=req["cand"])
    c, w = time.process_time(), time.perf_counter()
    r = search(root, q, refresh=req["refresh"])
    c, w = time.process_time() - c, time.perf_counter() - w
    print(json.dumps({"cpu": c, "wall": w, "hits": [(h.id, h.score) for h in r.hits],
                      "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=None, help="a checkout to compare with (else the --after tree alone)")
    ap.add_argument("--after", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--root", default=str(Path.home() / ".cache/openclaw-eventlog/bench-search/tiled-200x365"))
    ap.add_argument("--modes", default="hybrid,vector,bm25")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--refresh", default="0,1")
    a = ap.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    trees = {"before": a.before, "after": a.after} if a.before else {"after": a.after}
    procs = {k: subprocess.Popen([sys.executable, "-c", WORKER, a.root], cwd=v, env={**env, "PYTHONPATH": v},
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k, v in trees.items()}

    def ask(k: str, req: dict) -> dict:
        p = procs[k]
        p.stdin.write(json.dumps(req) + "\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
        return json.loads(p.stdout.readline())  # type: ignore[union-attr]

    differ = total = 0
    for refresh in [x == "1" for x in a.refresh.split(",")]:
        for mode in a.modes.split(","):
            name, _, opt = mode.partition(":")
            base = {"mode": name, "cand": 0 if "exhaustive" in opt else None, "refresh": refresh, "days": "days" in opt}
            for k in trees:
                ask(k, {**base, "q": QUERIES[0]})  # warm: imports, model, page cache
            cpu: dict[str, list[float]] = {k: [] for k in trees}
            wall: list[float] = []
            rss: dict[str, float] = {}
            for i, q in enumerate(QUERIES * a.reps):
                res = {k: ask(k, {**base, "q": q}) for k in (list(trees) if i % 2 == 0 else list(trees)[::-1])}
                for k, r in res.items():
                    cpu[k].append(r["cpu"])
                    rss[k] = r["rss"]
                wall.append(res["after"]["wall"])
                if "before" not in res:
                    continue
                x, y = res["before"]["hits"], res["after"]["hits"]
                total += 1
                if [h[0] for h in x] != [h[0] for h in y] or \
                        any(abs(p[1] - q_[1]) > 1e-6 for p, q_ in zip(x, y, strict=True)):
                    differ += 1
                    print(f"DIFFER {mode} {q!r}", file=sys.stderr)
            f = statistics.median(cpu["after"]) * 1e3
            if "before" not in trees:
                print(f"{mode:24s} refresh={int(refresh)} n={len(cpu['after'])} alone: CPU p50 {f:6.1f} ms  wall p50 "
                      f"{statistics.median(wall) * 1e3:6.1f} ms  peak RSS {rss['after']:.0f} MB  (goal: hybrid ≤ 100 ms "
                      f"p50 whole query, RSS < 500 MB)", flush=True)
                continue
            b = statistics.median(cpu["before"]) * 1e3
            print(f"{mode:24s} refresh={int(refresh)} n={len(cpu['after'])} CPU p50 before {b:6.1f} ms  after "
                  f"{f:6.1f} ms  ratio {f / b:.2f}  peak RSS before {rss['before']:.0f} MB after {rss['after']:.0f} MB"
                  f"  (goal: hybrid ≤ 100 ms p50 whole query, RSS < 500 MB)", flush=True)
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    if a.before:
        print(f"queries whose hits differ: {differ} of {total}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
