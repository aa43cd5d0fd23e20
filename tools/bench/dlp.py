#!/usr/bin/env python3
"""DLP benchmark: precision/recall per rule on a labelled corpus, latency per 2.5 KB message (Python engine, JS engine,
detect-secrets as the baseline, all in this run), and log re-scan throughput beside a plain read of the same log.

    .venv/bin/python tools/bench/dlp.py [--corpus 6000] [--latency 1000] [--log-chats 20 --log-days 180] [--json OUT]

Not a test: nothing here asserts a time. The corpus is generated at run time (tools/dlp_corpus.py, labelled).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tools"), str(REPO / "tests"), str(REPO / "tools" / "bench")]

import dlp_corpus  # noqa: E402

from eventlog.dlp.engine import Scanner  # noqa: E402
from eventlog.dlp.rules import load_rules  # noqa: E402

KEY = bytes(range(32))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def precision_recall(sc: Scanner, msgs: list[dict]) -> tuple[list[dict], dict]:
    tp, fp, fn, fpn = Counter(), Counter(), Counter(), Counter()
    for m in msgs:
        labels = list(m["labels"])
        for f in sc.scan(m["text"], html=m["html"]).findings:
            hit = next((lab for lab in labels if lab["rule"] == f.rule and f.start < lab["end"] and lab["start"] < f.end), None)
            if hit:
                tp[f.rule] += 1
                labels.remove(hit)
            else:
                fp[f.rule] += 1
                fpn[f.rule] += f.tier == "near_format"  # the two tiers apart (docs/dlp.md, "Two tiers")
        for lab in labels:
            fn[lab["rule"]] += 1
    rows = []
    for rule in sorted(set(tp) | set(fp) | set(fn)):
        p = tp[rule] / (tp[rule] + fp[rule]) if tp[rule] + fp[rule] else 1.0
        r = tp[rule] / (tp[rule] + fn[rule]) if tp[rule] + fn[rule] else 1.0
        rows.append({"rule": rule, "tp": tp[rule], "fp": fp[rule], "fp_near": fpn[rule], "fn": fn[rule],
                     "precision": p, "recall": r})
    T, F, N, FN_ = sum(tp.values()), sum(fp.values()), sum(fn.values()), sum(fpn.values())
    C = F - FN_
    return rows, {"tp": T, "fp": F, "fp_near": FN_, "fn": N, "precision": T / (T + F) if T + F else 1.0,
                  "precision_confirmed": T / (T + C) if T + C else 1.0, "recall": T / (T + N) if T + N else 1.0}


# issue 16 item 5: p99 per 2.4 KB message, per message the median of 5 scans
GOALS_MS = {"python (eventlog)": 0.5, "js (dlp.mjs)": 0.1}


def latency_python(sc: Scanner, texts: list[tuple[str, bool]], repeat: int, pick=statistics.median,
                   cpu: list[float] | None = None) -> list[float]:
    """Per message, the median (or `pick`) of `repeat` timed scans (ms): the spread across messages is the engine's,
    not the scheduler's (the machine is shared; one preempted scan would otherwise set the p99). With `cpu`, the same
    pick of each message's CPU times (process time, not disturbed by other processes) is appended there."""
    for t, h in texts[:50]:
        sc.scan(t, html=h)  # warm-up
    out = []
    for t, h in texts:
        xs, cs = [], []
        for _ in range(repeat):
            c0 = time.process_time_ns()
            t0 = time.perf_counter_ns()
            sc.scan(t, html=h)
            xs.append((time.perf_counter_ns() - t0) / 1e6)
            cs.append((time.process_time_ns() - c0) / 1e6)
        out.append(pick(xs))
        if cpu is not None:
            cpu.append(pick(cs))
    return out


def latency_js(texts: list[tuple[str, bool]], repeat: int, pick=statistics.median,
               cpu: list[float] | None = None) -> tuple[list[float], int]:
    from dlp_support import DRIVER, node_bin

    items = [{"id": i, "text": t, "html": h} for i, (t, h) in enumerate(texts)]
    # warm-up: one pass over every message, so V8 has compiled every rule's path before the timed scans — the steady
    # state of a long-running gateway (against the first 200 only: p99 0.079-0.106 vs 0.084-0.105 ms in four
    # alternating runs here, within the noise of a loaded machine; it removes a source of doubt, not a cost)
    warm = [{"id": -1 - i, "text": t, "html": h} for i, (t, h) in enumerate(texts)]
    data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in warm + items).encode()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run([node_bin(), str(DRIVER), "--key-hex", KEY.hex(), "--bench", "--repeat", str(repeat)],
                       input=data, capture_output=True, check=True)
    rss = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    ms = []
    for line in p.stdout.decode().splitlines():
        o = json.loads(line)
        if o["id"] >= 0:
            ms.append(pick(o["ns"]) / 1e6)
            if cpu is not None:
                cpu.append(pick(o["cpu_us"]) / 1e3)
    return ms, rss


def latency_detect_secrets(texts: list[tuple[str, bool]], repeat: int, pick=statistics.median) -> list[float] | None:
    """detect-secrets 1.5.0 as `detect-secrets scan` runs over a file (tools/bench/dlp_external.ds_scanner), sampled
    exactly like our engines: warm-up, then per message the median (or `pick`) of `repeat` timed scans."""
    try:
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    from dlp_external import ds_scanner

    out = []
    with default_settings():
        scan = ds_scanner()
        for t, _ in texts[:50]:
            scan(t)  # warm-up, like latency_python
        for t, _ in texts:
            xs = []
            for _ in range(repeat):
                t0 = time.perf_counter_ns()
                scan(t)
                xs.append((time.perf_counter_ns() - t0) / 1e6)
            out.append(pick(xs))
    return out


def rescan(chats: int, days: int) -> dict:
    """Re-scan a realistic chat log (tools/gen_corpus.py: mostly ordinary chat, English and Russian) with 1 % of its
    messages replaced by labelled DLP-corpus messages, beside a plain streaming read of the same log and `cat`."""
    import gen_corpus
    from eventlog.dlp.logscan import scan_log
    from eventlog.store.reader import iter_events
    from eventlog.store.writer import EventLog

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        info = gen_corpus.generate(root / "base", chats=chats, days=days)
        planted = dlp_corpus.corpus(5000, seed=99)
        el = EventLog(root / "log", fsync="never", autoseal=False)
        batch = []
        for i, ev in enumerate(iter_events(root / "base")):
            ev = {k: v for k, v in ev.items() if k not in ("prev",)}
            if i % 100 == 7 and isinstance(ev.get("text"), str):
                ev["text"] = planted[i % len(planted)]["text"]
            batch.append(ev)
            if len(batch) == 5000:
                el.append_many(batch)
                batch = []
        if batch:
            el.append_many(batch)
        root = root / "log"
        size = sum(p.stat().st_size for p in (root / "raw").rglob("*.jsonl"))
        t0 = time.perf_counter()
        n = sum(1 for _ in iter_events(root))
        t_read = time.perf_counter() - t0
        sc = Scanner(load_rules(), KEY)
        t0 = time.perf_counter()
        hits = sum(1 for _ in scan_log(root, sc, raise_alerts=False))
        t_scan = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run(f"find {root}/raw -name '*.jsonl' -print0 | xargs -0 cat > /dev/null", shell=True, check=True)
        t_cat = time.perf_counter() - t0
    mb = size / 1e6
    return {"events": n, "mb": round(mb, 1), "findings": hits, "scan_s": round(t_scan, 2), "read_s": round(t_read, 2),
            "cat_s": round(t_cat, 3), "scan_mb_s": round(mb / t_scan, 1), "read_mb_s": round(mb / t_read, 1),
            "base_events": info["events"]}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="DLP benchmark")
    ap.add_argument("--corpus", type=int, default=6000, help="messages in the precision/recall corpus")
    ap.add_argument("--latency", type=int, default=1000, help="2.5 KB messages timed per engine")
    ap.add_argument("--repeat", type=int, default=5, help="timed scans per message (Python and JS)")
    ap.add_argument("--log-chats", type=int, default=20, help="chats in the re-scan log (0: skip the re-scan)")
    ap.add_argument("--log-days", type=int, default=180, help="days per chat in the re-scan log")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--json", dest="json_out", default=None, help="also write the results here")
    a = ap.parse_args(argv)

    rules = load_rules()
    sc = Scanner(rules, KEY)
    res: dict = {"rules": len(rules.rules)}

    msgs = dlp_corpus.corpus(a.corpus, seed=a.seed)
    rows, overall = precision_recall(sc, msgs)
    res["precision_recall"] = {"messages": len(msgs), "per_rule": rows, "overall": overall}
    print(f"== precision / recall per rule ({len(msgs)} labelled messages, seed {a.seed}, {len(rules.rules)} rules)")
    print(f"{'rule':<26} {'TP':>5} {'FP':>4} {'near':>4} {'FN':>4} {'precision':>9} {'recall':>7}   (near: of the FP, "
          "near_format findings)")
    for r in rows:
        print(f"{r['rule']:<26} {r['tp']:>5} {r['fp']:>4} {r['fp_near']:>4} {r['fn']:>4} {r['precision']:>9.3f} "
              f"{r['recall']:>7.3f}")
    print(f"{'overall':<26} {overall['tp']:>5} {overall['fp']:>4} {overall['fp_near']:>4} {overall['fn']:>4} "
          f"{overall['precision']:>9.4f} {overall['recall']:>7.4f}   (confirmed only: precision "
          f"{overall['precision_confirmed']:.4f})")

    lat = dlp_corpus.corpus(a.latency, seed=a.seed + 1, pad_to=2400)
    texts = [(m["text"], m["html"]) for m in lat]
    avg_len = statistics.mean(len(t.encode()) for t, _ in texts)
    load0 = os.getloadavg()[0]
    py_cpu: list[float] = []
    js_cpu: list[float] = []
    py = latency_python(sc, texts, a.repeat, cpu=py_cpu)
    js, js_rss = latency_js(texts, a.repeat, cpu=js_cpu)
    ds = latency_detect_secrets(texts, a.repeat)
    load1 = os.getloadavg()[0]
    res["latency"] = {"messages": len(texts), "avg_bytes": round(avg_len), "loadavg": [load0, load1]}
    print(f"\n== latency per message ({len(texts)} messages, avg {avg_len:.0f} bytes; per message the median of {a.repeat} "
          f"warm scans, the same sampling for all three engines; load average {load0:.1f} → {load1:.1f} on "
          f"{os.cpu_count()} CPUs)")
    print(f"{'engine':<22} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'goal p99':>9}  vs detect-secrets p50/p99")
    base = (pct(ds, 50), pct(ds, 99)) if ds else None
    for name, xs in (("python (eventlog)", py), ("js (dlp.mjs)", js), ("detect-secrets 1.5.0", ds)):
        if not xs:
            print(f"{name:<22} not installed (pip install detect-secrets==1.5.0)")
            continue
        p50, p99 = pct(xs, 50), pct(xs, 99)
        goal = GOALS_MS.get(name)
        verdict = f"≤ {goal:<4} {'met' if p99 <= goal else 'NOT met'}" if goal else "baseline"
        ratio = f"  {base[0] / p50:6.0f}x / {base[1] / p99:5.0f}x faster" if base and name != "detect-secrets 1.5.0" else ""
        print(f"{name:<22} {p50:>8.4f} {p99:>8.4f} {statistics.mean(xs):>8.4f}  {verdict:<13}{ratio}")
        res["latency"][name] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": statistics.mean(xs), "goal_p99_ms": goal,
                                "goal_met": (p99 <= goal) if goal else None}
    # CPU time of the same scans (the same pick per message): what the engine costs, whatever else runs on the machine
    print(f"CPU time per message, same scans: python p50 {pct(py_cpu, 50):.4f} p99 {pct(py_cpu, 99):.4f} ms; "
          f"js p50 {pct(js_cpu, 50):.4f} p99 {pct(js_cpu, 99):.4f} ms (process.cpuUsage: 1 µs steps)")
    res["latency"]["cpu"] = {"python": {"p50_ms": pct(py_cpu, 50), "p99_ms": pct(py_cpu, 99)},
                             "js": {"p50_ms": pct(js_cpu, 50), "p99_ms": pct(js_cpu, 99)}}
    res["latency"]["js_peak_rss_mb"] = round(js_rss / 1024, 1)
    # The same with the fastest of the repeats per message: on a shared machine this is the closest estimate of the
    # engine's own cost (a scan that was never preempted).
    py_min = latency_python(sc, texts, a.repeat, min)
    js_min, _ = latency_js(texts, a.repeat, min)
    print(f"fastest-of-{a.repeat} per message: python p50 {pct(py_min, 50):.4f} p99 {pct(py_min, 99):.4f}; "
          f"js p50 {pct(js_min, 50):.4f} p99 {pct(js_min, 99):.4f}")
    res["latency"]["min_of_repeats"] = {"python": {"p50_ms": pct(py_min, 50), "p99_ms": pct(py_min, 99)},
                                        "js": {"p50_ms": pct(js_min, 50), "p99_ms": pct(js_min, 99)}}

    if a.log_chats:
        rs = rescan(a.log_chats, a.log_days)
        res["rescan"] = rs
        print(f"\n== log re-scan ({rs['events']} events, {rs['mb']} MB): scan {rs['scan_mb_s']} MB/s "
              f"({rs['scan_s']} s, {rs['findings']} findings) vs plain read {rs['read_mb_s']} MB/s ({rs['read_s']} s) "
              f"— {rs['scan_s'] / rs['read_s']:.1f}x the read; cat {rs['cat_s']} s")
    res["python_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(f"\npeak RSS: python {res['python_peak_rss_mb']} MB, node {res['latency']['js_peak_rss_mb']} MB")
    if a.json_out:
        Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json_out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
