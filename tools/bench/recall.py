#!/usr/bin/env python3
"""Recall benchmark (issue 4): each `eventlog` command side by side with the baseline the issue names, in one run.

Every measurement is a separate process (what a user runs: interpreter start and imports included), timed wall-clock,
N runs after one warm-up, reported as the median, with peak RSS (GNU time's %M: the largest process of the command,
its waited-for children such as rg included) and the ratio to its baseline.
Answers are compared too: a fast wrong answer fails the run.

    python tools/bench/recall.py [--corpus DIR] [--chats 200 --days 365] [--runs 3] [--json-out FILE]

The corpus (tools/gen_corpus.py, ≈1 M events at full size) is generated once into the cache and compacted with
`eventlog compact` (the baseline reads the same JSONL files; compaction only adds parquet/ beside them).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import compile_bytecode, run_measured  # noqa: E402
PY = sys.executable
RG = str(Path(PY).parent / "rg")
EVENTLOG = [PY, "-m", "eventlog"]
CACHE = Path(os.environ.get("EVENTLOG_BENCH_CACHE", Path.home() / ".cache" / "openclaw-eventlog"))


@dataclass
class Measure:
    name: str
    walls: list[float] = field(default_factory=list)
    rss_mb: float = 0.0
    output: bytes = b""
    outputs: list[bytes] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # user + system seconds: steadier than wall on a busy machine

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)


def measure(name: str, argv: list[str], runs: int) -> Measure:
    """Peak RSS comes from GNU time's %M, not from wait4 here: a child forked by this process inherits its RSS
    high-water mark (Linux keeps it across fork + exec), so ru_maxrss of a direct child is never below this
    process's own size. `time` is small, so what it forks reports its own peak."""
    m = Measure(name)
    with tempfile.NamedTemporaryFile() as tf:
        for i in range(runs + 1):  # the first run warms the page cache and is not counted
            wall, _, out = run_measured(["/usr/bin/time", "-f", "%M %U %S", "-o", tf.name, *argv])
            if i:
                kb, user, system = Path(tf.name).read_text().split()[-3:]
                m.walls.append(wall)
                m.cpus.append(float(user) + float(system))
                m.rss_mb = max(m.rss_mb, int(kb) / 1024)
                m.outputs.append(out.encode())
            m.output = out.encode()
    return m


# Baselines that are not a binary: small Python programs, run the same way.
DUCKDB_GLOB = """
import duckdb, sys
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")  # it draws on stdout
print(con.execute(sys.argv[1].replace('GLOB', "read_json_auto('" + sys.argv[2] + "/raw/*/chats/*/*/*/*.jsonl')")).fetchall())
"""
# The same question answered the plain way: every message's text, rapidfuzz's `ratio` (the scorer `grep --fuzzy` uses)
# of each lowercased query word against each lowercased `\w+` word, a message counts when every query word has a word
# scoring >= 80 (grep's default) — so the answers must agree, and the row compares the same work.
RAPIDFUZZ_SCAN = """
import sys, os, re, orjson
from rapidfuzz import fuzz
qwords = [w.lower() for w in re.findall(r'\\w+', sys.argv[1])]
word = re.compile(r'\\w+')
n = 0
for d, _, names in os.walk(sys.argv[2] + '/raw'):
    for name in names:
        if name.endswith('.jsonl'):
            with open(os.path.join(d, name), 'rb') as f:
                for line in f:
                    t = orjson.loads(line).get('text')
                    if isinstance(t, str):
                        words = [w.lower() for w in word.findall(t)]
                        if all(any(fuzz.ratio(q, w) >= 80 for w in words) for q in qwords):
                            n += 1
print(n)
"""

# The library call alone (what an agent embedding eventlog pays per query): plan, views, query, fetch; imports excluded.
IN_PROCESS = """
import sys, time
from pathlib import Path
import duckdb
from eventlog.recall import query, when
from datetime import timezone
t = time.perf_counter()
chat, since, until = (sys.argv[3:6] + [None, None, None])[:3]
scope = query.Scope(Path(sys.argv[2]), (chat,) if chat else None,
                    when.since(since, timezone.utc) if since else None, when.until(until, timezone.utc) if until else None)
con, src = query.connect(scope)
rows = query.execute(con, sys.argv[1]).fetchall()
print(time.perf_counter() - t, len(rows))
"""


def ensure_corpus(root: Path, chats: int, days: int) -> dict:
    summary_path = root.with_name(root.name + ".summary.json")
    if not (root / "raw").is_dir() or not summary_path.is_file():
        from gen_corpus import generate

        print(f"generating corpus {chats} chats × {days} days into {root} …", file=sys.stderr, flush=True)
        summary = generate(root, chats=chats, days=days)
        summary_path.write_bytes(orjson.dumps(summary))
    summary = orjson.loads(summary_path.read_bytes())
    print("compacting (a no-op when up to date) …", file=sys.stderr, flush=True)
    subprocess.run(EVENTLOG + ["compact", "--root", str(root)], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return summary


def count_of(out: bytes) -> int:
    """The number in `eventlog … -c` / `sql --json` / baseline output."""
    text = out.decode().strip()
    if text.startswith("{"):
        return int(next(iter(orjson.loads(text.splitlines()[0]).values())))
    if text.startswith("[("):
        return int(text.strip("[()],").split(",")[0])
    if ":" in text:  # rg -c: path:count per file
        return sum(int(line.rsplit(":", 1)[1]) for line in text.splitlines())
    return int(text.splitlines()[0]) if text else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=None)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)
    root = args.corpus or (CACHE / ("corpus" if (args.chats, args.days) == (200, 365) else
                                    f"corpus-{args.chats}x{args.days}"))
    summary = ensure_corpus(root, args.chats, args.days)
    compile_bytecode()  # every command starts as an installed package does: from bytecode
    R, n = str(root), args.runs
    files = sum(1 for _ in (root / "raw").rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in (root / "raw").rglob("*.jsonl"))
    print(f"corpus: {summary['events']:,} events, {files:,} files, {size / 1e6:.0f} MB, {R}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (other work skews absolute times, "
          "ratios less)", flush=True)
    chat = sorted(summary["per_chat"])[len(summary["per_chat"]) // 2]
    week = ("2026-06-01", "2026-06-07") if summary["first"] <= "2026-06-01" <= summary["last"] else (
        summary["first"], summary["first"])
    week_end = (date.fromisoformat(week[1]) + timedelta(days=1)).isoformat()
    cyr = "ёлочная игрушка"
    rows: list[dict] = []

    def pair(label: str, ours: list[str], base: list[str], goal: str, check: bool = True) -> None:
        a = measure("eventlog", ours, n)
        b = measure("baseline", base, n)
        ca, cb = count_of(a.output), count_of(b.output)
        ok = (ca == cb) if check else True
        rows.append({"case": label, "eventlog_s": round(a.median, 3), "baseline_s": round(b.median, 3),
                     "ratio": round(a.median / b.median, 3), "eventlog_cpu_s": round(a.cpu, 3),
                     "baseline_cpu_s": round(b.cpu, 3), "cpu_ratio": round(a.cpu / b.cpu, 3) if b.cpu else None,
                     "eventlog_rss_mb": round(a.rss_mb),
                     "baseline_rss_mb": round(b.rss_mb), "eventlog_answer": ca, "baseline_answer": cb,
                     "answers_agree": ok, "goal": goal})
        print(f"{label:<44} eventlog {a.median:7.3f} s ({a.rss_mb:4.0f} MB)  baseline {b.median:7.3f} s "
              f"({b.rss_mb:4.0f} MB)  ratio {a.median / b.median:6.3f} (CPU {a.cpu:.2f}/{b.cpu:.2f} s = "
              f"{(a.cpu / b.cpu) if b.cpu else float('nan'):.3f})  answers {ca} / {cb}"
              f"{'' if ok else '  MISMATCH'}  goal: {goal}", flush=True)

    needle = "ZEBRA-NEEDLE-4417"
    pair("grep literal (whole log) vs rg -c", EVENTLOG + ["grep", "--count-total", needle, "--root", R],
         [RG, "-c", "--no-config", needle, R + "/raw"], "≤ 1.5× rg")
    pair("grep -i Cyrillic (whole log) vs rg -c -i", EVENTLOG + ["grep", "--count-total", "-i", cyr, "--root", R],
         [RG, "-c", "-i", "--no-config", cyr, R + "/raw"], "≤ 1.5× rg")
    pair("grep --fuzzy договор vs rapidfuzz scan", EVENTLOG + ["grep", "--count-total", "--fuzzy", "договор", "--root", R],
         [PY, "-c", RAPIDFUZZ_SCAN, "договор", R], "≤ 1× baseline")
    ilike = "SELECT count(*) FROM {} WHERE text ILIKE '%" + cyr + "%'"
    pair("sql ILIKE whole log vs DuckDB read_json glob", EVENTLOG + ["sql", ilike.format("messages"), "--json",
                                                                    "--root", R],
         [PY, "-c", DUCKDB_GLOB, ilike.format("GLOB"), R], "≥ 10× faster (ratio ≤ 0.1)")
    per_day = "SELECT chat_id, CAST(ts AS DATE) AS d, count(*) AS n FROM {} GROUP BY ALL ORDER BY ALL"
    a = measure("eventlog", EVENTLOG + ["sql", "SELECT count(*) FROM (" + per_day.format("events") + ")", "--json",
                                        "--root", R], n)
    inner = measure("in-process", [PY, "-c", IN_PROCESS, per_day.format("events"), R], n)
    inner_s = statistics.median(float(o.decode().split()[0]) for o in inner.outputs)
    rows.append({"case": "count per chat per day", "eventlog_s": round(a.median, 3), "eventlog_rss_mb": round(a.rss_mb),
                 "in_process_s": round(inner_s, 3), "eventlog_answer": count_of(a.output), "goal": "≤ 0.5 s"})
    print(f"{'count per chat per day':<44} eventlog {a.median:7.3f} s ({a.rss_mb:4.0f} MB)  "
          f"in-process (plan + views + query, after imports) {inner_s:.3f} s  groups {count_of(a.output)}  "
          "goal: ≤ 0.5 s", flush=True)
    one = "SELECT count(*) FROM {} WHERE chat_id = '" + chat + "'"
    pair("one chat one week vs glob + WHERE", EVENTLOG + ["sql", one.format("events"), "--json", "--chat", chat,
                                                           "--since", week[0], "--until", week[1], "--root", R],
         [PY, "-c", DUCKDB_GLOB, one.format("GLOB") + f" AND ts >= '{week[0]}' AND ts < '{week_end}'", R],
         "≥ 50× faster (ratio ≤ 0.02)")
    inner = measure("in-process", [PY, "-c", IN_PROCESS, one.format("events"), R, chat, *week], n)
    inner_s = statistics.median(float(o.decode().split()[0]) for o in inner.outputs)
    rows[-1]["in_process_s"] = round(inner_s, 3)
    rows[-1]["in_process_ratio"] = round(inner_s / rows[-1]["baseline_s"], 4)
    print(f"{'  … the library call alone (after imports)':<44} {inner_s:7.3f} s  ratio "
          f"{inner_s / rows[-1]['baseline_s']:.4f}", flush=True)
    ok = all(r.get("answers_agree", True) for r in rows)
    if args.json_out:
        args.json_out.write_bytes(orjson.dumps({"corpus": {"events": summary["events"], "files": files,
                                                           "bytes": size}, "runs": n, "results": rows,
                                                "load_average_end": os.getloadavg()[0]},
                                               option=orjson.OPT_INDENT_2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
