#!/usr/bin/env python3
"""The DuckDB version decision (issue 28, item 5), measured: the recall benchmark (tools/bench/recall.py) and a set of
full `eventlog sql` answers, run under two interpreters whose venvs differ only in DuckDB, in one run, on one corpus.

    python tools/bench/duckdb_versions.py --python-b .venv2/bin/python [--python-a .venv/bin/python]
        [--chats 40 --days 90 --runs 3] [--json-out FILE]

Answers: every query's whole `--json` output must be byte-identical across the two versions (the run fails if not).
Times: recall.py's rows side by side, with the ratio B/A of wall, CPU (user+sys) and peak RSS. The two recall runs
alternate A, B, A, B when --rounds 2, so load drift does not favour one side.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("EVENTLOG_BENCH_CACHE", Path.home() / ".cache" / "openclaw-eventlog"))

# Whole answers compared (not counts): every view, the JSON extraction paths, time zones, day boundaries.
QUERIES = [
    "SELECT * FROM events ORDER BY ts, id LIMIT 2000",
    "SELECT * FROM messages ORDER BY ts, id LIMIT 2000",
    "SELECT * FROM chats ORDER BY ALL",
    "SELECT * FROM edits ORDER BY ALL LIMIT 2000",
    "SELECT chat_id, day, count(*) AS n, max(ts) AS last FROM events GROUP BY ALL ORDER BY ALL",
    "SELECT direction, event, count(*) FROM events GROUP BY ALL ORDER BY ALL",
    "SELECT count(*) FROM messages WHERE text ILIKE '%ёлочная%'",
]
ZONES = ["UTC", "Europe/Moscow", "+05:30", "-03:00"]


def version(py: str) -> str:
    return subprocess.run([py, "-c", "import duckdb; print(duckdb.__version__)"], check=True, capture_output=True,
                          text=True).stdout.strip()


def answers(py: str, root: Path) -> dict[str, str]:
    out = {}
    for tz in ZONES:
        for sql in QUERIES:
            r = subprocess.run([py, "-m", "eventlog", "sql", sql, "--json", "--tz", tz, "--root", str(root)],
                               cwd=REPO, capture_output=True, timeout=900)
            key = f"{tz} | {sql}"
            out[key] = (hashlib.sha256(r.stdout).hexdigest()[:16] + f" exit {r.returncode} {len(r.stdout)} B"
                        + (" " + r.stderr.decode()[-200:].strip() if r.returncode else ""))
    return out


def recall(py: str, root: Path, chats: int, days: int, runs: int) -> list[dict]:
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        subprocess.run(["nice", "-n", "10", py, "tools/bench/recall.py", "--corpus", str(root), "--chats", str(chats),
                        "--days", str(days), "--runs", str(runs), "--json-out", tf.name], cwd=REPO, check=True)
        return orjson.loads(Path(tf.name).read_bytes())["results"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python-a", default=sys.executable)
    ap.add_argument("--python-b", required=True)
    ap.add_argument("--chats", type=int, default=40)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)
    root = CACHE / f"corpus-{args.chats}x{args.days}"
    pys = {"A": args.python_a, "B": args.python_b}
    vers = {k: version(p) for k, p in pys.items()}
    print(f"A = duckdb {vers['A']} ({pys['A']}), B = duckdb {vers['B']} ({pys['B']})", flush=True)
    results: dict[str, list[list[dict]]] = {"A": [], "B": []}
    for _ in range(args.rounds):
        for k in ("A", "B"):
            print(f"##### recall.py under {k} (duckdb {vers[k]})", flush=True)
            results[k].append(recall(pys[k], root, args.chats, args.days, args.runs))
    ans = {k: answers(p, root) for k, p in pys.items()}
    same = [q for q in ans["A"] if ans["A"][q] == ans["B"][q]]
    differ = [q for q in ans["A"] if ans["A"][q] != ans["B"][q]]
    print(f"\nanswers: {len(same)} of {len(ans['A'])} queries byte-identical across versions", flush=True)
    for q in differ:
        print(f"  DIFFER {q}\n    A {ans['A'][q]}\n    B {ans['B'][q]}", flush=True)
    print(f"\n{'case':<46} {'A wall':>8} {'B wall':>8} {'B/A':>6} {'A cpu':>7} {'B cpu':>7} {'B/A':>6} "
          f"{'A MB':>5} {'B MB':>5}  answers A/B")
    rows = []
    for i, ra in enumerate(results["A"][0]):
        a_runs = [r[i] for r in results["A"]]
        b_runs = [r[i] for r in results["B"]]
        aw = min(r["eventlog_s"] for r in a_runs)
        bw = min(r["eventlog_s"] for r in b_runs)
        ac = min(r.get("eventlog_cpu_s", float("nan")) for r in a_runs)
        bc = min(r.get("eventlog_cpu_s", float("nan")) for r in b_runs)
        am = max(r["eventlog_rss_mb"] for r in a_runs)
        bm = max(r["eventlog_rss_mb"] for r in b_runs)
        row = {"case": ra["case"], "a_wall_s": aw, "b_wall_s": bw, "a_cpu_s": ac, "b_cpu_s": bc, "a_rss_mb": am,
               "b_rss_mb": bm, "a_answer": ra["eventlog_answer"], "b_answer": b_runs[0]["eventlog_answer"]}
        rows.append(row)
        print(f"{ra['case'][:46]:<46} {aw:8.3f} {bw:8.3f} {bw / aw:6.2f} {ac:7.2f} {bc:7.2f} "
              f"{(bc / ac) if ac else float('nan'):6.2f} {am:5.0f} {bm:5.0f}  {row['a_answer']}/{row['b_answer']}",
              flush=True)
    if args.json_out:
        args.json_out.write_bytes(orjson.dumps({"versions": vers, "recall": rows, "answers_differ": differ,
                                                "answers": ans}, option=orjson.OPT_INDENT_2))
    return 0 if not differ and all(r["a_answer"] == r["b_answer"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
