"""Store benchmark: append throughput per fsync policy beside a plain orjson+write baseline; read throughput beside cat.

Each case runs in its own process (peak RSS per case); throughput is timed inside the process, median of 3 runs.
Usage: python tools/bench/store.py [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import median_of, run_measured, table  # noqa: E402


def make_events(n: int, nchats: int = 20) -> list[dict]:
    chats = [str(-1001000000000 - i) for i in range(nchats)]
    out = []
    for i in range(n):
        chat = chats[i % len(chats)]
        text = f"Сообщение {i}: обсудили договор и staging deploy, see https://example.org/x/{i} 👍"
        out.append({
            "event": "message:received", "channel": "telegram", "account": "default", "chat_id": chat,
            "ts": f"2026-11-30T12:{(i // 60000) % 60:02d}:{(i // 1000) % 60:02d}.{i % 1000:03d}Z",
            "direction": "in", "update_id": 500000 + i, "message_id": 1000 + i, "text": text,
            "from": {"id": 7000 + i % 50, "username": f"user{i % 50}", "name": "Иван Петров"},
            "raw": {"update_id": 500000 + i, "message": {"message_id": 1000 + i, "date": 1796000000 + i,
                    "chat": {"id": int(chat), "type": "supergroup"}, "text": text}},
        })
    return out


def child(case: str, n: int, d: str) -> None:
    import orjson

    events = make_events(n, 1 if case.endswith("-1chat") else 20)
    # imports before the clock starts, as the baselines' orjson: module loading is not per-event work
    import eventlog.store.seal  # noqa: F401  (the writer imports it lazily on its first new day file)
    from eventlog.store.layout import log_files
    from eventlog.store.reader import iter_events
    from eventlog.store.writer import EventLog
    from store_floor import write_floor

    t0 = time.perf_counter()
    c0 = time.process_time()
    if case in ("baseline-write", "baseline-fsync"):  # not startswith: "baseline-buffered" is its own case below
        fd = os.open(os.path.join(d, "base.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        for ev in events:
            os.write(fd, orjson.dumps(ev) + b"\n")
            if case == "baseline-fsync":
                os.fsync(fd)
        os.close(fd)
    elif case == "floor-required":
        write_floor(events, os.path.join(d, "floor.jsonl"), "v2")
    elif case == "floor-per-line":
        write_floor(events, os.path.join(d, "floor.jsonl"), "per-line")
    elif case == "floor-minimum":
        write_floor(events, os.path.join(d, "floor.jsonl"), "minimum")
    elif case == "baseline-buffered":
        with open(os.path.join(d, "base.jsonl"), "ab") as f:
            for ev in events:
                f.write(orjson.dumps(ev) + b"\n")
    elif case.startswith("eventlog-"):
        _, policy, mode = case.split("-")[:3]
        log = EventLog(d, fsync=policy)
        if mode == "batch1000":
            for i in range(0, n, 1000):
                log.append_many(events[i:i + 1000])
        else:
            for ev in events:
                log.append(ev)
    elif case == "read-eventlog":
        n = sum(1 for _ in iter_events(Path(d)))
    elif case == "read-orjson-lines":
        n = 0
        for lf in log_files(Path(d)):
            with open(lf.path, "rb") as f:
                for line in f:
                    orjson.loads(line)
                    n += 1
    secs = time.perf_counter() - t0
    print(json.dumps({"events": n, "seconds": secs, "cpu_seconds": time.process_time() - c0}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=3, metavar=("CASE", "N", "DIR"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    n_fast = 20_000 if args.quick else 100_000
    n_sync = 300 if args.quick else 2_000
    rows = []
    results = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-store-", dir=os.environ.get("BENCH_TMP")))
    try:
        cpu: dict[str, float] = {}

        def case(name: str, n: int, keep: bool = False) -> dict:
            cpus: list[float] = []

            def once():
                d = tmp / name
                if not keep:
                    shutil.rmtree(d, ignore_errors=True)
                d.mkdir(exist_ok=True)
                w, rss, out = run_measured([sys.executable, __file__, "--child", name, str(n), str(d)])
                r = json.loads(out)
                cpus.append(r["cpu_seconds"])
                return r["seconds"], rss, out

            secs, rss, out = median_of(once)
            r = json.loads(out)
            cpu[name] = r["events"] / max(statistics.median(cpus), 1e-9)
            row = {"case": name, "events": r["events"], "median_s": f"{secs:.3f}",
                   "events_per_s": f"{r['events'] / secs:,.0f}", "cpu_events_per_s": f"{cpu[name]:,.0f}",
                   "peak_rss_mb": f"{rss:.0f}"}
            results[name] = r["events"] / secs
            rows.append(row)
            return row

        case("baseline-write", n_fast)
        case("floor-required", n_fast)
        case("floor-per-line", n_fast)
        case("floor-minimum", n_fast)
        case("baseline-buffered", n_fast)
        case("eventlog-never-batch1000", n_fast)
        case("eventlog-never-single", n_fast)
        case("eventlog-batch-batch1000", n_fast)
        case("baseline-fsync", n_sync)
        case("eventlog-always-batch1000", n_sync)
        case("eventlog-batch-single", n_sync)
        case("eventlog-batch-batch1000-1chat", n_fast)
        case("eventlog-always-batch1000-1chat", n_sync)
        # read: a log of n_fast events written once, then read back
        rd = tmp / "readlog"
        rd.mkdir()
        run_measured([sys.executable, __file__, "--child", "eventlog-never-batch1000", str(n_fast), str(rd)])
        shutil.copytree(rd, tmp / "read-eventlog")
        shutil.copytree(rd, tmp / "read-orjson-lines")
        case("read-eventlog", 0, keep=True)
        case("read-orjson-lines", 0, keep=True)
        files = [str(p) for p in rd.rglob("*.jsonl")]
        cat_s, cat_rss, _ = median_of(lambda: run_measured(["sh", "-c", 'cat "$@" > /dev/null', "cat", *files]))
        rows.append({"case": "read-cat", "events": results["read-eventlog"] and n_fast, "median_s": f"{cat_s:.3f}",
                     "events_per_s": f"{n_fast / cat_s:,.0f}", "peak_rss_mb": f"{cat_rss:.0f}"})
        results["read-cat"] = n_fast / cat_s
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("## Store benchmark (median of 3; each case in a fresh process)")
    print(table(rows, ["case", "events", "median_s", "events_per_s", "cpu_events_per_s", "peak_rss_mb"]))
    ratios = {
        "writer(never, batches of 1000) / baseline write": results["eventlog-never-batch1000"] / results["baseline-write"],
        "required-work floor (baseline + v2 hashes) / baseline write": results["floor-required"]
            / results["baseline-write"],
        "writer(never, batches of 1000) / required-work floor": results["eventlog-never-batch1000"]
            / results["floor-required"],
        "writer(never, one event per call) / baseline write": results["eventlog-never-single"] / results["baseline-write"],
        "group commit (batch) / always, 20 chats (20 files per batch)":
            results["eventlog-batch-batch1000"] / results["eventlog-always-batch1000"],
        "group commit (batch) / always, one chat": results["eventlog-batch-batch1000-1chat"]
            / results["eventlog-always-batch1000-1chat"],
        "always / baseline fsync per event": results["eventlog-always-batch1000"] / results["baseline-fsync"],
        "read eventlog / cat": results["read-eventlog"] / results["read-cat"],
        "read eventlog / plain orjson line loop": results["read-eventlog"] / results["read-orjson-lines"],
    }
    # CPU time (user + system of the case's process) is what a shared machine disturbs least; wall time is above
    cpu_ratios = {
        "CPU: writer(never, batches of 1000) / baseline write": cpu["eventlog-never-batch1000"] / cpu["baseline-write"],
        "CPU: writer(never, one event per call) / baseline write": cpu["eventlog-never-single"] / cpu["baseline-write"],
        "CPU: required-work floor / baseline write": cpu["floor-required"] / cpu["baseline-write"],
        "CPU: writer(never, batches of 1000) / required-work floor": cpu["eventlog-never-batch1000"]
            / cpu["floor-required"],
        # a proposal, not the format: one keyed hash per line instead of one per field (store_floor.py)
        "CPU: floor with one keyed hash per line / required-work floor": cpu["floor-per-line"] / cpu["floor-required"],
        # the least a v2 writer does (ids, prev in the line, the commitment form): the ceiling of writer / floor
        "CPU: minimum v2 writer / required-work floor": cpu["floor-minimum"] / cpu["floor-required"],
        "CPU: writer(never, batches of 1000) / minimum v2 writer": cpu["eventlog-never-batch1000"]
            / cpu["floor-minimum"],
    }
    print("\nratios (goal: writer ≥ 0.80 of the required-work floor without fsync; batch ≥ 10× always). The floor is "
          "the baseline plus the hashes v2 requires; the minimum v2 writer adds what every v2 line needs besides them "
          "(tools/bench/store_floor.py): no v2 writer in Python reaches more than minimum/floor of the floor")
    for k, v in {**ratios, **cpu_ratios}.items():
        print(f"  {k:<62} {v:6.2f}")
    ratios.update(cpu_ratios)
    print(json.dumps({"bench": "store", "ratios": ratios, "events_per_s": results}))


if __name__ == "__main__":
    main()
