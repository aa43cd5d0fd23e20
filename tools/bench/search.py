#!/usr/bin/env python3
"""Search benchmark (issue 14): index build time and size, query p50/p99 as a command and as a library call, peak RSS,
each beside the grep baseline (`--mode text`, the recall library) and the previous default (exhaustive int8 scoring
over the day units, no month packs) in the same run, and the goal; the default (projection first pass + exact
rescoring, month packs) with its recall@10/@50 against exhaustive at 1 M; then the recall evaluation — default,
exhaustive, and the first pass at its 1 M share of candidates.

    python tools/bench/search.py [--chats 200 --days 365] [--slice-chats 20 --slice-days 365] [--jobs 2]
                                 [--runs 10] [--reps 3] [--no-eval] [--keep]

Corpora from tools/gen_corpus.py under $EVENTLOG_BENCH_CACHE (default ~/.cache/openclaw-eventlog/bench-search):
- big, 200 × 365 ≈ 1 M messages. Its BM25 build is timed on a second root that links to the same raw/ (`tiled-…`),
  so a real vector index of the big corpus (built by the command in docs/search.md) is never overwritten.
- slice, 20 × 365 ≈ 105 k messages: the embedding build (BM25 + vectors, `--jobs`) is timed on it — wall and CPU.
Latency at 1 M uses the big corpus's own index when it is complete and fresh (`index --check` exit 0, vectors of the
model); otherwise the BM25 index of `tiled-…` gets the slice's real-model vectors, tiled over its rows ("tiled" in the
output). Scoring cost does not depend on which message a vector belongs to; quality comes from the evaluation only.
`--keep` reuses the indexes built by an earlier run (no build timings then).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured  # noqa: E402

sys.path.insert(0, str(REPO))
from eventlog.search import rank  # noqa: E402

PY = sys.executable
EVENTLOG = [PY, "-m", "eventlog"]
CACHE = Path(os.environ.get("EVENTLOG_BENCH_CACHE", Path.home() / ".cache" / "openclaw-eventlog")) / "bench-search"
QUERIES = ["invoice", "deploy server", "contract review", "договор", "договора", "встреча проект", "сервер релиз",
           "budget report deadline", "ёлка", "оплата доставка", "staging build", "client email", "отчёт клиент",
           "payment delivery", "проверка сборка"]
ENV1 = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
GOAL_MS, GOAL_RSS = 100, 500

TILE = r"""
import sys, numpy as np
from pathlib import Path
from eventlog.search import index, pack, project, store
root, src = Path(sys.argv[1]), Path(sys.argv[2])
vecs, scales = [], []
for day, rec in sorted(store.load_records(src).items()):
    a = store.open_data(store.units_dir(src) / rec["data"])
    vecs.append(np.array(a["vec"])); scales.append(np.array(a["scale"])); model, dim = rec["model"], rec["dim"]
vec, scale = np.concatenate(vecs), np.concatenate(scales)
at = 0
for day, rec in sorted(store.load_records(root).items()):
    arr = {k: np.array(v) for k, v in store.open_data(store.units_dir(root) / rec["data"]).items()
           if not k.startswith("_") and k != "bits"}
    take = (at + np.arange(rec["docs"])) % len(vec); at += rec["docs"]
    arr["vec"], arr["scale"] = vec[take], scale[take]
    keep = {k: v for k, v in rec.items() if k not in ("v", "day", "data", "bytes", "sha256")}
    store.publish(root, day, {**keep, "model": model, "dim": dim}, arr,
                  {project.SUFFIX: project.derive(arr["vec"], arr["scale"])})
store.collect_garbage(root, min_age_s=0)
pack.update(root, store.load_records(root))
print(index.size_bytes(root), len(vec))
"""

LIB = r"""
import json, sys, time
from pathlib import Path
from eventlog.recall.grep import newest
from eventlog.search import SearchQuery, search
root, modes, queries, reps = Path(sys.argv[1]), sys.argv[2].split(","), json.loads(sys.argv[3]), int(sys.argv[4])
out = {}
for mode in modes:
    name, _, opt = mode.partition(":")
    # ":exhaustive": candidates=0 (None: the default first pass); ":days": the day units alone, as before month packs;
    # ":1thread": the estimates on one thread (the CPU-bound view; None: the default)
    kw = dict(mode=name, candidates=0 if "exhaustive" in opt else None, packs="days" not in opt,
              threads=1 if "1thread" in opt else None)
    search(root, SearchQuery(queries[0], **kw), text_scan=newest)  # warm: imports, model, page cache, caches
    ts, cpu = [], []
    for _ in range(reps):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            search(root, SearchQuery(q, limit=10, **kw), refresh="norefresh" not in opt, text_scan=newest)
            ts.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    out[mode] = sorted(ts); out[mode + ":cpu"] = sorted(cpu)
print(json.dumps(out))
"""

RECALL = r"""
import json, sys
from datetime import date
from pathlib import Path
from eventlog.search import SearchQuery, search
root, queries, since = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
since = date.fromisoformat(since) if since else None
out = {}
for mode in ("vector", "hybrid"):
    r10, r50 = [], []
    for q in queries:
        exh = search(root, SearchQuery(q, mode=mode, limit=200, since=since, candidates=0), refresh=False).hits
        got = search(root, SearchQuery(q, mode=mode, limit=50, since=since), refresh=False).hits  # the default
        score = {h.id: h.score for h in exh}
        for k, acc in ((10, r10), (50, r50)):
            if len(exh) < k:
                continue
            kth = exh[k - 1].score
            want = {h.id for h in exh[:k]}
            # a hit counts if it is in the exhaustive top k, or ties its k-th score (tiled vectors repeat)
            acc.append(sum(h.id in want or score.get(h.id, -1e9) >= kth - 1e-6 for h in got[:k]) / k)
    out[mode] = {"recall@10": sum(r10) / max(len(r10), 1), "min@10": min(r10, default=0),
                 "recall@50": sum(r50) / max(len(r50), 1), "min@50": min(r50, default=0), "queries": len(r10)}
print(json.dumps(out))
"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def corpus(chats: int, days: int) -> Path:
    root = CACHE / f"corpus-{chats}x{days}"
    if not (root / "raw").is_dir() or not (root / ".complete").exists():
        from gen_corpus import generate

        print(f"generating {chats} chats × {days} days into {root} …", file=sys.stderr, flush=True)
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        generate(root, chats=chats, days=days)
        (root / ".complete").touch()
    return root


def linked_root(big: Path) -> Path:
    """A second root over the big corpus's raw/ (a symlink), for the BM25-only and tiled indexes."""
    root = CACHE / f"tiled-{big.name.split('-', 1)[1]}"
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "raw").exists():
        (root / "raw").symlink_to(big / "raw")
    return root


def measured(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s of the process and its children, peak RSS MB, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, rss, out = run_measured(cmd, env=ENV1)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rss, out


def build(root: Path, extra: list[str]) -> dict:
    wall, cpu, rss, out = measured(EVENTLOG + ["index", "--rebuild", "--json", "--root", str(root)] + extra)
    res = json.loads(out)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "rss_mb": round(rss), "messages": res["messages"],
            "mb": round(res["bytes"] / 1e6, 1), "days": len(res["built"])}


def library(root: Path, modes: list[str], reps: int) -> dict:
    wall, cpu, rss, out = measured([PY, "-c", LIB, str(root), ",".join(modes), json.dumps(QUERIES), str(reps)])
    res = json.loads(out)
    return {m: {"p50_ms": round(pct(res[m], 50) * 1000, 1), "p95_ms": round(pct(res[m], 95) * 1000, 1),
                "p99_ms": round(pct(res[m], 99) * 1000, 1),
                "cpu_p50_ms": round(pct(res[m + ":cpu"], 50) * 1000, 1),
                "cpu_p95_ms": round(pct(res[m + ":cpu"], 95) * 1000, 1),
                "cpu_p99_ms": round(pct(res[m + ":cpu"], 99) * 1000, 1)} for m in modes} | {"rss_mb": round(rss)}


def command(root: Path, mode: str, runs: int) -> dict:
    walls, cpus, rsss = [], [], []
    for i in range(runs):
        q = QUERIES[i % len(QUERIES)]
        w, c, r, _ = measured(EVENTLOG + ["search", q, "--mode", mode, "--json", "--root", str(root)])
        walls.append(w)
        cpus.append(c)
        rsss.append(r)
    return {"p50_ms": round(statistics.median(walls) * 1000), "p99_ms": round(pct(walls, 99) * 1000),
            "cpu_p50_ms": round(statistics.median(cpus) * 1000), "rss_mb": round(max(rsss))}


def full_index_ready(big: Path) -> bool:
    """The big corpus's own index is complete, fresh and has the model's vectors."""
    r = subprocess.run(EVENTLOG + ["index", "--check", "--json", "--root", str(big)], capture_output=True, text=True,
                       cwd=REPO)
    if r.returncode != 0:
        return False
    sys.path.insert(0, str(REPO))
    from eventlog.search import index, store

    recs = store.load_records(big)
    return bool(recs) and all(rec.get("model") == index.model_name() for rec in recs.values())


def row(label: str, value: str, goal: str = "—") -> None:
    print(f"  {label:<62} {value:<44} goal: {goal}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--slice-chats", "--vec-chats", dest="slice_chats", type=int, default=20)  # old names kept
    ap.add_argument("--slice-days", "--vec-days", dest="slice_days", type=int, default=365)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the embedding build (index --jobs)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--keep", action="store_true", help="reuse the indexes of an earlier run (no build timings)")
    args = ap.parse_args(argv)
    report: dict = {}
    print(f"search bench (issue 14); load average {os.getloadavg()[0]:.1f} at start — wall times swing with the "
          "machine's load, CPU times much less", flush=True)

    big = corpus(args.chats, args.days)
    tiled = linked_root(big)
    small = corpus(args.slice_chats, args.slice_days)
    if not args.keep or not (tiled / "index").is_dir():
        b = report["bm25_build"] = build(tiled, ["--no-vectors"])
        print(f"[big: {args.chats} chats × {args.days} days] BM25 index build (`index --rebuild --no-vectors`):")
        row("build", f"{b['wall_s']} s wall, {b['cpu_s']} s CPU, {b['messages']} messages")
        row("size / peak RSS", f"{b['mb']} MB / {b['rss_mb']} MB", f"RSS < {GOAL_RSS} MB")
    if not args.keep or not (small / "index").is_dir():
        v = report["slice_build"] = build(small, ["--jobs", str(args.jobs)])
        rate_cpu, rate_wall = v["messages"] / max(v["cpu_s"], 1e-9), v["messages"] / max(v["wall_s"], 1e-9)
        print(f"[slice: {args.slice_chats} chats × {args.slice_days} days] BM25 + vector build "
              f"(`index --rebuild --jobs {args.jobs}`):")
        row("build", f"{v['wall_s']} s wall, {v['cpu_s']} s CPU, {v['messages']} messages")
        row("rate", f"{rate_cpu:.0f} msg per CPU-s, {rate_wall:.0f} msg/s wall")
        row("size / peak RSS (largest process)", f"{v['mb']} MB / {v['rss_mb']} MB", f"RSS < {GOAL_RSS} MB")
        n_big = report.get("bm25_build", {}).get("messages", 0)
        if n_big:
            e = report["extrapolated_1m"] = {
                "cpu_min": round(n_big / rate_cpu / 60), "wall_min_jobs": round(n_big / rate_wall / 60),
                "mb": round(v["mb"] * n_big / v["messages"])}
            row(f"→ {n_big} messages (EXTRAPOLATED from the slice)",
                f"{e['cpu_min']} min CPU, {e['wall_min_jobs']} min wall here, ≈ {e['mb']} MB")

    if full_index_ready(big):
        target, label = big, "the big corpus's own index (real vectors)"
    else:
        target, label = tiled, "tiled: real-model vectors of the slice, repeated over the big corpus's BM25 index"
        if not args.keep or not any(r.get("model") for r in _records(tiled)):
            _, _, _, out = measured([PY, "-c", TILE, str(tiled), str(small)])
            size, n_src = map(int, out.split())
            report["tiled_mb"] = round(size / 1e6)
            label += f" ({n_src} distinct vectors)"
    report["latency_index"] = label
    print(f"[big] queries on: {label}", flush=True)
    modes = ["text", "bm25", "bm25:norefresh", "vector", "hybrid", "hybrid:1thread", "hybrid:norefresh", "vector:exhaustive",
             "hybrid:exhaustive", "bm25:days", "hybrid:days", "hybrid:exhaustive+days"]
    lib = report["library"] = library(target, modes, args.reps)
    for m in modes:
        x = lib[m]
        what = {"text": "baseline text (grep, all words; rg's own CPU not counted)",
                "bm25": "bm25 (default: month packs)",
                "vector": "vector (default: projection first pass + exact rescoring, packs)",
                "hybrid": "hybrid (default: first pass, month packs)",
                "bm25:norefresh": "bm25, refresh=False (ranking only, no freshness check)",
                "hybrid:1thread": "hybrid, the estimates on one thread (SearchQuery(threads=1))",
                "hybrid:norefresh": "hybrid, refresh=False (ranking only)",
                "vector:exhaustive": "vector, candidates=0 (every message scored exactly)",
                "hybrid:exhaustive": "hybrid, candidates=0 (exhaustive: the previous default)",
                "bm25:days": "bm25 on the day units alone (no packs: the previous layout)",
                "hybrid:days": "hybrid first pass on the day units alone (no packs)",
                "hybrid:exhaustive+days": "baseline: previous default (exhaustive, day units alone)"}.get(m, m)
        row(f"library {what}", f"p50 {x['p50_ms']} ms wall / {x['cpu_p50_ms']} ms CPU, p99 {x['p99_ms']} / "
            f"{x['cpu_p99_ms']}", f"p50 ≤ {GOAL_MS} ms" if m == "hybrid" else "—")
    row("library hybrid / text, p50 CPU", f"{lib['hybrid']['cpu_p50_ms'] / max(lib['text']['cpu_p50_ms'], .1):.3f}")
    row("library hybrid / previous default (exhaustive, day units), p50 CPU",
        f"{lib['hybrid']['cpu_p50_ms'] / max(lib['hybrid:exhaustive+days']['cpu_p50_ms'], .1):.2f}")
    row("library hybrid / hybrid on day units (the packs' share), p50 CPU",
        f"{lib['hybrid']['cpu_p50_ms'] / max(lib['hybrid:days']['cpu_p50_ms'], .1):.2f}")
    row("library bm25 share of hybrid, p50 CPU", f"{lib['bm25']['cpu_p50_ms'] / max(lib['hybrid']['cpu_p50_ms'], .1):.2f}")
    row("peak RSS, one process running all the modes above", f"{lib['rss_mb']} MB", "—")
    # the goal is the default mode's: the exhaustive baselines above hold every vector at once, a search process
    # running the default does not
    alone = report["library_default_alone"] = library(target, ["hybrid"], args.reps)
    a = alone["hybrid"]
    row("library hybrid (default), a process running it alone", f"p50 {a['p50_ms']} ms wall / {a['cpu_p50_ms']} ms "
        f"CPU, p95 {a['p95_ms']} / {a['cpu_p95_ms']}, p99 {a['p99_ms']} / {a['cpu_p99_ms']}", f"p50 ≤ {GOAL_MS} ms")
    row("peak RSS, a process running the default mode alone", f"{alone['rss_mb']} MB", f"< {GOAL_RSS} MB")
    rec_sets = [(target, "", label.split(":")[0])]
    own = _records(big)
    if target is not big and own and any(r.get("model") for r in own):  # the big corpus's partial own index: real vectors
        first = min(r["day"] for r in own if r.get("model"))
        rec_sets.append((big, first, f"the big corpus's own vectors since {first} ({sum(r['docs'] for r in own if r['day'] >= first)} messages)"))
    for root_, since, what in rec_sets:
        _, _, _, out = measured([PY, "-c", RECALL, str(root_), json.dumps(QUERIES + _eval_queries()), since])
        rc = report.setdefault("recall_vs_exhaustive", {})[what] = json.loads(out)
        for mode, x in rc.items():
            row(f"default (first pass) vs exhaustive, {mode}, {x['queries']} queries, on {what[:40]}",
                f"recall@10 {x['recall@10']:.4f} (min {x['min@10']:.2f}), @50 {x['recall@50']:.4f}",
                "recall@10 ≥ 0.99 (the rule for a default)")
    for mode in ("text", "bm25", "hybrid"):
        c = report[f"command_{mode}"] = command(target, mode, args.runs if mode != "hybrid" else max(3, args.runs // 2))
        row(f"command `eventlog search --mode {mode}`", f"p50 {c['p50_ms']} ms wall / {c['cpu_p50_ms']} ms CPU, "
            f"p99 {c['p99_ms']} ms, RSS {c['rss_mb']} MB", f"RSS < {GOAL_RSS} MB")

    if not args.no_eval:
        n_eval = 4101
        share = rank.default_candidates(1_046_903)
        cand = max(1, round(share * n_eval / 1_046_903))
        for name, c in (("default: the first pass, default candidates", None),
                        ("exhaustive int8 scoring (--candidates 0, the previous default)", 0),
                        (f"first pass with --candidates {cand} (the share {share} has at 1 M)", cand)):
            r = subprocess.run([PY, "tools/bench/recall_eval.py"] + ([] if c is None else ["--candidates", str(c)]),
                               cwd=REPO,
                               capture_output=True, text=True, env={**os.environ, **ENV1})
            print(f"[evaluation — {name}]\n{r.stdout}{r.stderr[-2000:]}", flush=True)
            if r.returncode:
                return 1
    print("JSON " + json.dumps(report))
    return 0


def _eval_queries() -> list[str]:
    path = REPO / "tools" / "bench" / "recall_eval" / "questions.jsonl"
    return [json.loads(x)["query"] for x in path.read_text().splitlines() if x.strip()]


def _records(root: Path) -> list[dict]:
    sys.path.insert(0, str(REPO))
    from eventlog.search import store

    return list(store.load_records(root).values())


if __name__ == "__main__":
    sys.exit(main())
