#!/usr/bin/env python3
"""Search benchmark (issue 14): index build time and size, query p50/p99 as a command and as a library call, peak RSS,
each beside the grep baseline (`--mode text`, the recall library) in the same run; then the recall evaluation table.

    python tools/bench/search.py [--chats 200 --days 365] [--vec-chats 20 --vec-days 60] [--runs 10] [--no-eval]

Two corpora from tools/gen_corpus.py: the big one (≈1 M events at 200 × 365) is indexed BM25-only (`--no-vectors`);
embedding runs at a few hundred messages/s on one core here (an hour or more for 1 M), so the model's build rate is
measured on the smaller corpus and extrapolated (printed as such). Vector and hybrid *queries* are measured at full size
for real: the big index gets random int8 vectors of the model's shape (scoring cost and memory do not depend on the
values), labelled "random vectors" in the output.
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
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured  # noqa: E402

PY = sys.executable
EVENTLOG = [PY, "-m", "eventlog"]
CACHE = Path(os.environ.get("EVENTLOG_BENCH_CACHE", Path.home() / ".cache" / "openclaw-eventlog")) / "bench-search"
QUERIES = ["invoice", "deploy server", "contract review", "договор", "договора", "встреча проект", "сервер релиз",
           "budget report deadline", "ёлка", "оплата доставка", "staging build", "client email", "отчёт клиент",
           "payment delivery", "проверка сборка"]
ENV1 = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

SYNTH = r"""
import sys, numpy as np
from pathlib import Path
from eventlog.search import embed, index, store
root = Path(sys.argv[1]); rng = np.random.default_rng(1); m = embed.load()
for day, rec in sorted(store.load_records(root).items()):
    arr = {k: np.array(v) for k, v in store.open_data(store.units_dir(root) / rec["data"]).items() if k != "_mmap"}
    arr["vec"], arr["scale"] = index.quantise(rng.standard_normal((rec["docs"], m.dim), dtype=np.float32))
    keep = {k: v for k, v in rec.items() if k not in ("v", "day", "data", "bytes", "sha256")}
    store.publish(root, day, {**keep, "model": m.name, "dim": m.dim}, arr)
store.collect_garbage(root, min_age_s=0)
print(index.size_bytes(root))
"""

LIB = r"""
import json, sys, time, resource
from pathlib import Path
from eventlog.search import SearchQuery, search
root, modes, queries, reps = Path(sys.argv[1]), sys.argv[2].split(","), json.loads(sys.argv[3]), int(sys.argv[4])
out = {}
for mode in modes:
    search(root, SearchQuery(queries[0], mode=mode))  # warm: imports, model load, page cache
    ts, cpu = [], []
    for _ in range(reps):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            search(root, SearchQuery(q, mode=mode, limit=10))
            ts.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    out[mode] = sorted(ts); out[mode + ":cpu"] = sorted(cpu)
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def corpus(chats: int, days: int) -> Path:
    root = CACHE / f"corpus-{chats}x{days}"
    if not (root / "raw").is_dir():
        from gen_corpus import generate

        print(f"generating {chats} chats × {days} days into {root} …", file=sys.stderr, flush=True)
        generate(root, chats=chats, days=days)
    return root


def build(root: Path, extra: list[str]) -> dict:
    wall, rss, out = run_measured(EVENTLOG + ["index", "--rebuild", "--json", "--root", str(root)] + extra, env=ENV1)
    res = json.loads(out)
    return {"wall_s": round(wall, 1), "rss_mb": round(rss), "messages": res["messages"], "mb": round(res["bytes"] / 1e6, 1),
            "days": len(res["built"])}


def library(root: Path, modes: list[str], reps: int) -> dict:
    wall, rss, out = run_measured([PY, "-c", LIB, str(root), ",".join(modes), json.dumps(QUERIES), str(reps)], env=ENV1)
    res = json.loads(out)
    return {m: {"p50_ms": round(pct(res[m], 50) * 1000, 1), "p99_ms": round(pct(res[m], 99) * 1000, 1),
                "cpu_p50_ms": round(pct(res[m + ":cpu"], 50) * 1000, 1)} for m in modes} | {"rss_mb": round(rss)}


def command(root: Path, mode: str, runs: int) -> dict:
    walls, rsss = [], []
    for i in range(runs):
        q = QUERIES[i % len(QUERIES)]
        w, r, _ = run_measured(EVENTLOG + ["search", q, "--mode", mode, "--json", "--root", str(root)], env=ENV1)
        walls.append(w)
        rsss.append(r)
    return {"p50_ms": round(statistics.median(walls) * 1000), "p99_ms": round(pct(walls, 99) * 1000),
            "rss_mb": round(max(rsss))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--vec-chats", type=int, default=20)
    ap.add_argument("--vec-days", type=int, default=60)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-eval", action="store_true")
    args = ap.parse_args(argv)
    report: dict = {}

    big = corpus(args.chats, args.days)
    b = report["bm25_build"] = build(big, ["--no-vectors"])
    print(f"[big {args.chats}×{args.days}] BM25 index build: {b['wall_s']} s for {b['messages']} messages "
          f"({b['days']} days), {b['mb']} MB, peak RSS {b['rss_mb']} MB", flush=True)
    lib = report["big_library"] = library(big, ["text", "bm25"], args.reps)
    print(f"[big] library p50/p99 ms (CPU p50): bm25 {lib['bm25']['p50_ms']}/{lib['bm25']['p99_ms']} "
          f"({lib['bm25']['cpu_p50_ms']}), baseline text (grep) {lib['text']['p50_ms']}/{lib['text']['p99_ms']} "
          f"({lib['text']['cpu_p50_ms']}, rg's own CPU not included) → bm25/text p50 ratio "
          f"{lib['bm25']['p50_ms'] / max(lib['text']['p50_ms'], 0.1):.2f}; peak RSS {lib['rss_mb']} MB", flush=True)
    for mode in ("bm25", "text"):
        c = report[f"big_command_{mode}"] = command(big, mode, args.runs)
        print(f"[big] command `eventlog search --mode {mode}`: p50 {c['p50_ms']} ms, p99 {c['p99_ms']} ms, "
              f"peak RSS {c['rss_mb']} MB", flush=True)

    # Latency and memory of vector scoring do not depend on the vectors' values: give the big BM25 index random int8
    # vectors of the model's shape (labelled as such) to measure vector/hybrid queries at full size for real.
    w, r, out = run_measured([PY, "-c", SYNTH, str(big)], env=ENV1)
    report["big_synthetic_vectors_mb"] = round(int(out) / 1e6)
    lib3 = report["big_library_vectors"] = library(big, ["vector", "hybrid"], args.reps)
    print(f"[big, random vectors] index with vectors {report['big_synthetic_vectors_mb']} MB; library p50/p99 ms "
          f"(CPU p50): vector {lib3['vector']['p50_ms']}/{lib3['vector']['p99_ms']} ({lib3['vector']['cpu_p50_ms']}), "
          f"hybrid {lib3['hybrid']['p50_ms']}/{lib3['hybrid']['p99_ms']} ({lib3['hybrid']['cpu_p50_ms']}), "
          f"baseline text (same run above) {lib['text']['p50_ms']}; "
          f"peak RSS {lib3['rss_mb']} MB", flush=True)
    c = report["big_command_hybrid"] = command(big, "hybrid", max(3, args.runs // 2))
    print(f"[big, random vectors] command `eventlog search --mode hybrid`: p50 {c['p50_ms']} ms, p99 {c['p99_ms']} ms, "
          f"peak RSS {c['rss_mb']} MB", flush=True)

    small = corpus(args.vec_chats, args.vec_days)
    v = report["vector_build"] = build(small, [])
    rate = v["messages"] / v["wall_s"]
    print(f"[small {args.vec_chats}×{args.vec_days}] BM25 + vector index build: {v['wall_s']} s for {v['messages']} "
          f"messages ({rate:.0f} msg/s), {v['mb']} MB, peak RSS {v['rss_mb']} MB", flush=True)
    lib2 = report["small_library"] = library(small, ["text", "bm25", "vector", "hybrid"], args.reps)
    print("[small] library p50/p99 ms (CPU p50): " + ", ".join(
        f"{m} {lib2[m]['p50_ms']}/{lib2[m]['p99_ms']} ({lib2[m]['cpu_p50_ms']})"
                                                     for m in ("text", "bm25", "vector", "hybrid"))
          + f"; peak RSS {lib2['rss_mb']} MB", flush=True)
    c = report["small_command_hybrid"] = command(small, "hybrid", max(3, args.runs // 2))
    print(f"[small] command `eventlog search --mode hybrid`: p50 {c['p50_ms']} ms, p99 {c['p99_ms']} ms, "
          f"peak RSS {c['rss_mb']} MB", flush=True)
    scale = b["messages"] / max(v["messages"], 1)
    report["extrapolated"] = {"vector_build_min": round(b["messages"] / rate / 60), "size_mb": round(v["mb"] * scale)}
    e = report["extrapolated"]
    print(f"[extrapolated to {b['messages']} messages, ×{scale:.1f}] embedding for a full build ≈ "
          f"{e['vector_build_min']} min at this run's rate; index with vectors ≈ {e['size_mb']} MB", flush=True)

    if not args.no_eval:
        r = subprocess.run([PY, "tools/bench/recall_eval.py"], cwd=REPO, capture_output=True, text=True,
                           env={**os.environ, **ENV1})
        print(r.stdout, r.stderr[-2000:], sep="", flush=True)
        if r.returncode:
            return 1
    print("JSON " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
