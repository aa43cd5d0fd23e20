"""Import benchmark: `eventlog import telegram-desktop` on a generated export, and the writer's batch append of the
same events, each beside a plain orjson + os.write baseline measured in the same run; peak RSS of each process.

    python tools/bench/import.py [--quick] [--messages N]

Cases (each in a fresh process): baseline-write (orjson.dumps + os.write per event, one O_APPEND fd, the events the
import writes, prepared before the clock starts), floor-required (the baseline plus the hashes format v2 requires:
tools/bench/store_floor.py), append-batch (EventLog.append_many, batches of 2000, fsync never,
same events), parse (the streaming reader alone over the export), import-never / import-batch (the real CLI, whole
pipeline: one pass over the export into a spool, then the spool through merge keys and the writer; fsync never for the ratio, batch = the default), reimport-never (the same
export again into the log import-never left: every message found in the log, nothing added).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import median_of, run_measured, table  # noqa: E402

BOT = "7012345678"


def _events(n: int) -> list[dict]:
    import random

    from gen_telegram_export import START, record

    from eventlog.importers.telegram_desktop import ChatInfo, ChatPlan, build_event

    plan = ChatPlan(ChatInfo(0, None, "Load test", "private_supergroup", 1555000111), chat_id="-1001555000111",
                    bot_peer=f"user{BOT}")
    rng = random.Random(12)
    return [build_event(plan, record(rng, i, START + i * 28), "0" * 64) for i in range(1, n + 1)]  # type: ignore


def child(case: str, n: int, d: str, export: str) -> None:
    import orjson

    if case in ("baseline-write", "floor-required", "append-batch"):
        events = _events(n)
        from store_floor import write_floor

        t0 = time.perf_counter()
        c0 = time.process_time()
        if case == "floor-required":
            write_floor(events, os.path.join(d, "floor.jsonl"))
        elif case == "baseline-write":
            fd = os.open(os.path.join(d, "base.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            for ev in events:
                os.write(fd, orjson.dumps(ev) + b"\n")
            os.close(fd)
        else:
            from eventlog.store.writer import EventLog

            log = EventLog(d, fsync="never")
            for i in range(0, n, 2000):
                log.append_many(events[i:i + 2000])
        secs = time.perf_counter() - t0
    elif case == "parse":
        from eventlog.importers.jsonstream import Walk

        t0 = time.perf_counter()
        c0 = time.process_time()
        with open(export, "rb") as f:
            n = sum(1 for item in Walk(f) if item.kind == "message")
        secs = time.perf_counter() - t0
    else:
        raise SystemExit(f"unknown case {case}")
    print(json.dumps({"events": n, "seconds": secs, "cpu_seconds": time.process_time() - c0}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=4, metavar=("CASE", "N", "DIR", "EXPORT"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--messages", type=int, default=None, help="export size (default 1,000,000; --quick 50,000)")
    ap.add_argument("--append-events", type=int, default=None, help="default 100,000; --quick 20,000")
    ap.add_argument("--export", default=None, help="use this generated export instead of making one")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2], args.child[3])
        return
    n_msg = args.messages or (50_000 if args.quick else 1_000_000)
    n_app = args.append_events or (20_000 if args.quick else 100_000)
    repeat = 3 if args.quick else 1  # a full-size import takes minutes on this machine: one run, said so
    tmp = Path(tempfile.mkdtemp(prefix="bench-import-", dir=os.environ.get("BENCH_TMP")))
    rows, rate, rss_of, cpu_rate = [], {}, {}, {}
    try:
        export = tmp / "result.json"
        t0 = time.perf_counter()
        if args.export:  # one made earlier by tools/gen_telegram_export.py --messages N (it is not checked)
            os.symlink(os.path.abspath(args.export), export)
        else:
            run_measured([sys.executable, "tools/gen_telegram_export.py", "--messages", str(n_msg), "--out",
                          str(export)])
        size = export.stat().st_size
        print(f"generated export: {n_msg:,} records, {size / 1e6:.0f} MB in {time.perf_counter() - t0:.0f} s")

        def case(name: str, n: int) -> None:
            def once():
                d = tmp / ("import-never" if name == "reimport-never" else name)
                if name != "reimport-never":  # a re-import runs on the log the first import left: all duplicates
                    shutil.rmtree(d, ignore_errors=True)
                    d.mkdir()
                if name.startswith("import-"):
                    run_measured([sys.executable, "-m", "eventlog", "init", "--root", str(d)])
                if "import-" in name:
                    wall, rss, out = run_measured([sys.executable, "-m", "eventlog", "import", "telegram-desktop",
                                                   str(export), "--bot-id", BOT, "--json", "--root", str(d),
                                                   "--fsync", name.split("-")[1]])
                    done = json.loads(out.splitlines()[-1])
                    return wall, rss, json.dumps({"events": done["added"] + done["duplicates"], "seconds": wall,
                                                  "added": done["added"]})
                wall, rss, out = run_measured([sys.executable, __file__, "--child", name, str(n), str(d), str(export)])
                return json.loads(out)["seconds"], rss, out

            cpus: list[float] = []

            def timed_once():
                # CPU time (user + system) of the case's processes, from the children's rusage: what the other
                # jobs on a shared machine disturb least (wall time is in the table too)
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                res = once()
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                # a bench child times its own part (events are made before its clock starts); the CLI's whole run
                cpus.append(json.loads(res[2]).get("cpu_seconds", r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
                return res

            secs, rss, out = median_of(timed_once, repeat)
            events = json.loads(out)["events"]
            cpu_rate[name] = events / max(statistics.median(cpus), 1e-9)
            rate[name] = events / secs
            rss_of[name] = rss
            if name == "reimport-never" and json.loads(out)["added"] != 0:
                raise SystemExit("re-import added events: it must add nothing")
            rows.append({"case": name, "events": f"{events:,}", "median_s": f"{secs:.2f}",
                         "events_per_s": f"{events / secs:,.0f}", "cpu_events_per_s": f"{cpu_rate[name]:,.0f}",
                         "peak_rss_mb": f"{rss:.0f}"})

        case("baseline-write", n_app)
        case("floor-required", n_app)
        case("append-batch", n_app)
        case("parse", n_msg)
        case("import-never", n_msg)
        case("reimport-never", n_msg)
        case("import-batch", n_msg)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"## Import benchmark ({'median of 3' if repeat == 3 else 'one run'} per case; each case in a fresh process)")
    print(table(rows, ["case", "events", "median_s", "events_per_s", "cpu_events_per_s", "peak_rss_mb"]))
    ratios = {
        "required-work floor (baseline + v2 hashes) / baseline write": rate["floor-required"] / rate["baseline-write"],
        "append_many (batches of 2000, fsync never) / baseline write": rate["append-batch"] / rate["baseline-write"],
        "append_many / required-work floor": rate["append-batch"] / rate["floor-required"],
        "import messages/s (fsync never) / baseline write": rate["import-never"] / rate["baseline-write"],
        "import messages/s (fsync batch, default) / baseline write": rate["import-batch"] / rate["baseline-write"],
        "import messages/s (fsync never) / required-work floor": rate["import-never"] / rate["floor-required"],
        "import / streaming parse alone": rate["import-never"] / rate["parse"],
        "re-import of the same export (adds nothing) / baseline write": rate["reimport-never"] / rate["baseline-write"],
    }
    print("\nratios (goal: import and append ≥ 0.80 of the baseline; peak RSS < 500 MB). The floor is the baseline plus "
          "the hashes v2 requires: no v2 writer in Python reaches more than floor/baseline")
    cpu_ratios = {
        "CPU: required-work floor / baseline write": cpu_rate["floor-required"] / cpu_rate["baseline-write"],
        "CPU: append_many / baseline write": cpu_rate["append-batch"] / cpu_rate["baseline-write"],
        "CPU: append_many / required-work floor": cpu_rate["append-batch"] / cpu_rate["floor-required"],
        "CPU: import messages/s (fsync never) / baseline write": cpu_rate["import-never"] / cpu_rate["baseline-write"],
        "CPU: import messages/s (fsync never) / required-work floor": cpu_rate["import-never"]
            / cpu_rate["floor-required"],
    }
    ratios.update(cpu_ratios)
    for k, v in ratios.items():
        print(f"  {k:<62} {v:6.2f}")
    print(f"  peak RSS of an import: {max(rss_of[k] for k in rss_of if 'import' in k):.0f} MB")
    print(json.dumps({"bench": "import", "messages": n_msg, "ratios": ratios, "events_per_s": rate,
                      "peak_rss_mb": rss_of}))


if __name__ == "__main__":
    main()
