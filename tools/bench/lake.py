#!/usr/bin/env python3
"""A year of 200 chats from 3 gateways pushed into one DuckLake on PostgreSQL (issue 28), and a query across them
against the same query on one local root.

    python tools/bench/lake.py [--chats 200] [--days 360] [--events 300000] [--keep DIR]

The corpus is tools/bench/year.py's (a generated year of Telegram-like events, sorted by time across chats); chat c
goes to gateway c % 3, each gateway's root written by `eventlog append --fsync never` and sealed by `eventlog seal`.
A fourth root holds all 200 chats: the local baseline. The catalog is a throwaway PostgreSQL cluster on 127.0.0.1
(tests/pg_support.py), DATA a local directory.

Cases, each a fresh process (interpreter start and imports included), wall clock, CPU = user + system, peak RSS from
GNU time's %M:
- push: the three `eventlog lake push --json` at once (one per gateway, as three hosts would): rows/s over the
  three's wall, each one's peak RSS; then a second push of each (nothing to ship: what a cron pays per run);
- forget: `eventlog forget --chat` of one chat on one gateway, then its push (delete + erase.scrub: the erasure cost);
- query: `eventlog lake sql` of a count of messages matching a needle across the gateways, against `eventlog sql`
  of the same query on the all-chats root (median of --runs after one warm-up; answers compared).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tools" / "bench"))
sys.path.insert(0, str(REPO))
from common import compile_bytecode, run_measured  # noqa: E402
from pg_support import running_cluster  # noqa: E402
from recall import EVENTLOG, Measure, measure  # noqa: E402
from year import NEEDLE, generate, once  # noqa: E402

GATEWAYS = 3
QUERY = f"SELECT count(*) AS n FROM messages WHERE text LIKE '%{NEEDLE}%'"


def split(lines: Path, out: Path) -> list[Path]:
    """lines.jsonl → one file per gateway (chat c on gateway c % 3) and the whole; the gateways' line files."""
    outs = [open(out / f"g{g}.jsonl", "wb") for g in range(GATEWAYS)]
    with open(lines, "rb") as f:
        for line in f:
            c = int(json.loads(line)["chat_id"].removeprefix("-100")) - 1555000000
            outs[c % GATEWAYS].write(line)
    for o in outs:
        o.close()
    return [out / f"g{g}.jsonl" for g in range(GATEWAYS)]


def make_root(root: Path, lines: Path) -> None:
    run_measured(EVENTLOG + ["init", "--root", str(root)], ok_codes=(0,))
    run_measured(["sh", "-c", f"{' '.join(map(repr, EVENTLOG))} append --fsync never --root '{root}' < '{lines}'"],
                 ok_codes=(0,))
    run_measured(EVENTLOG + ["seal", "--root", str(root)], ok_codes=(0,))


def push_all(catalog: str, data: Path, roots: list[Path]) -> tuple[float, list[Measure]]:
    """The three pushes at once; (wall of the three, each one's measure)."""
    res: list[Measure | None] = [None] * len(roots)

    def one(i: int) -> None:
        res[i] = once(EVENTLOG + ["lake", "push", "--catalog", catalog, "--data", str(data), "--gateway", f"gw{i}",
                                  "--json", "--root", str(roots[i])])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(roots))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    assert all(m is not None for m in res), "a push failed"
    return wall, [m for m in res if m is not None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=360)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the corpus in this directory")
    args = ap.parse_args(argv)
    compile_bytecode()
    tmp = Path(tempfile.mkdtemp(prefix="bench-lake-", dir=os.environ.get("BENCH_TMP")))
    corpus = args.keep or tmp / "corpus"
    os.environ["EVENTLOG_DATA_DIR"] = str(tmp / "eventlog-data")  # every child's: the extensions installed once, there
    try:
        if not (corpus / "lines100.jsonl").is_file():
            print(f"generating {args.events:,} events, {args.chats} chats × {args.days} days …", flush=True)
            generate(corpus, args.chats, args.days, args.events)
        per_gw = split(corpus / "lines100.jsonl", tmp)
        roots = [tmp / f"root{g}" for g in range(GATEWAYS)]
        for r, lines in zip(roots, per_gw, strict=True):
            make_root(r, lines)
        whole = tmp / "root-all"
        make_root(whole, corpus / "lines100.jsonl")
        total = sum(1 for _ in open(corpus / "lines100.jsonl", "rb"))
        files = sum(1 for _ in (whole / "raw").rglob("*.jsonl"))
        print(f"corpus: {total:,} events in {files:,} day files, {args.chats} chats on {GATEWAYS} gateways; load "
              f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        rows: dict[str, dict] = {}
        with running_cluster() as pg:
            catalog = pg.catalog(pg.createdb())
            data = tmp / "lakedata"
            data.mkdir()
            # the extensions' one-time install (~70 MB copied) is not part of a push: a first push of nothing
            empty = tmp / "empty"
            run_measured(EVENTLOG + ["init", "--root", str(empty)], ok_codes=(0,))
            run_measured(EVENTLOG + ["lake", "push", "--catalog", catalog, "--data", str(data), "--gateway", "warm",
                                     "--root", str(empty)], ok_codes=(0,))
            wall, ms = push_all(catalog, data, roots)
            shipped = [json.loads(m.output)["lines_added"] for m in ms]
            assert sum(shipped) == total, (shipped, total)
            cpu = sum(m.cpu for m in ms)
            rows["push"] = {"events": total, "wall_s": wall, "cpu_s": cpu, "rows_per_s": total / wall,
                            "rss_mb": max(m.rss_mb for m in ms), "per_gateway": shipped}
            print(f"push, 3 gateways at once: {total:,} rows in {wall:.1f} s wall (CPU {cpu:.1f} s) = "
                  f"{total / wall:,.0f} rows/s; peak RSS {max(m.rss_mb for m in ms):.0f} MB (largest of the three)",
                  flush=True)
            wall2, ms2 = push_all(catalog, data, roots)
            assert all(json.loads(m.output)["lines_added"] == 0 for m in ms2)
            rows["push_again"] = {"wall_s": wall2, "cpu_s": sum(m.cpu for m in ms2)}
            print(f"push again (nothing new): {wall2:.1f} s wall (CPU {sum(m.cpu for m in ms2):.1f} s)", flush=True)
            parquet = list(data.rglob("*.parquet"))
            mb = sum(p.stat().st_size for p in parquet) / 1e6
            cat_mb = float(pg.psql("SELECT pg_database_size(current_database())", catalog.split()[0].split("=")[1]))
            rows["storage"] = {"parquet_files": len(parquet), "parquet_mb": mb, "catalog_mb": cat_mb / 1e6,
                               "jsonl_mb": (corpus / "lines100.jsonl").stat().st_size / 1e6}
            print(f"lake: {len(parquet):,} Parquet files, {mb:.1f} MB; catalog database {cat_mb / 1e6:.1f} MB; the "
                  f"lines as JSONL {(corpus / 'lines100.jsonl').stat().st_size / 1e6:.1f} MB", flush=True)

            lake_q = measure("lake sql", EVENTLOG + ["lake", "sql", QUERY, "--catalog", catalog, "--data", str(data),
                                                     "--json"], args.runs)
            local_q = measure("sql", EVENTLOG + ["sql", QUERY, "--json", "--root", str(whole)], args.runs)
            a, b = (json.loads(m.output.splitlines()[0])["n"] for m in (lake_q, local_q))
            rows["query"] = {"lake_s": lake_q.median, "local_s": local_q.median, "lake_cpu_s": lake_q.cpu,
                             "local_cpu_s": local_q.cpu, "answers": [a, b]}
            print(f"query across gateways, lake sql / local sql on one root holding all (median of {args.runs}): "
                  f"{lake_q.median:.2f} / {local_q.median:.2f} s = {lake_q.median / local_q.median:.2f}× (CPU "
                  f"{lake_q.cpu:.2f} / {local_q.cpu:.2f} s), peak RSS {lake_q.rss_mb:.0f} / {local_q.rss_mb:.0f} MB, "
                  f"answers {a} / {b}{'' if a == b else '  MISMATCH'}", flush=True)

            chat = next((roots[0] / "raw" / "telegram" / "chats").iterdir()).name
            run_measured(EVENTLOG + ["forget", "--chat", chat, "--reason", "bench", "--yes", "--root",
                                     str(roots[0])], ok_codes=(0,))
            m = once(EVENTLOG + ["lake", "push", "--catalog", catalog, "--data", str(data), "--json", "--root",
                                 str(roots[0])])
            summary = json.loads(m.output)
            rows["forget_push"] = {"wall_s": m.median, "cpu_s": m.cpu, "rss_mb": m.rss_mb,
                                   "lines_deleted": summary["lines_deleted"], "scrub": summary["scrub"]}
            print(f"forget one chat, then its push (delete + scrub): {m.median:.1f} s wall (CPU {m.cpu:.1f} s), "
                  f"{summary['lines_deleted']:,} rows deleted, scrub {summary['scrub']}", flush=True)
        print(json.dumps({"bench": "lake", "rows": rows}))
        return 0 if a == b else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
