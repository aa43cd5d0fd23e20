#!/usr/bin/env python3
"""A year of 200 chats (issue 30): `eventlog append` and `eventlog import telegram-desktop` of the same generated
corpus (≈ 300,000 events over ≈ 72,000 day files), each beside a plain baseline in the same run, at 10 % and 100 % of
the corpus (time per event should be flat), with peak RSS; then `eventlog grep` against `rg` on the log they made.

    python tools/bench/year.py [--chats 200] [--days 360] [--events 300000] [--fsync batch] [--keep DIR]
    python tools/bench/year.py --grep-log ROOT [--runs 3]     # only the read cases (grep, sql), on a log made before

The corpus: a full-account Telegram Desktop export of `--chats` supergroups the bot is in (every fifth message the
bot's, records as tools/gen_telegram_export.py writes them), each chat's messages at random times over `--days` days,
and the events the importer makes of it (`build_event`), sorted by time across chats, as JSON Lines: what a tap
writing the same year live would append. The 10 % corpus is the first tenth of the days (the export and the lines).

Cases, each a fresh process (interpreter start and imports included), timed wall clock, CPU = user + system, peak RSS
from GNU time's %M:
- baseline-write: read the lines, orjson.loads + orjson.dumps + os.write each to one O_APPEND fd (no layout);
- baseline-files: the same, each line into its chat's day file (one open fd per chat, reopened when the day changes):
  the plain cost of ≈ 72,000 files;
- baseline-locked: baseline-files plus what the shared lock protocol and the fsync policy require of any writer per
  day file: its `<file>.lock` (O_EXCL create, the owner record, unlink after), and under `--fsync batch` one fsync
  per file and one per directory with new entries, 256 files at a time from 16 threads (the group commit) — no
  chain, no seals, no validation;
- append: `eventlog append --fsync F --root R < lines.jsonl` (a regular file: validated whole, then written);
- import: `eventlog import telegram-desktop EXPORT --bot-id B --fsync F --json --root R`;
- grep: `eventlog grep --count-total NEEDLE` against `rg -c --no-config NEEDLE R/raw` on the appended log (answers
  compared), after one warm-up run each;
- sql: `eventlog sql` of four queries over the views (messages, edits, replies, chats) against DuckDB reading every
  day file once (`read_text`), after one warm-up run each, with peak RSS (goal < 500 MB).
"""
from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from gen_telegram_export import record  # noqa: E402
from common import compile_bytecode, run_measured  # noqa: E402
from recall import EVENTLOG, PY, RG, Measure, count_of, measure  # noqa: E402

from eventlog.importers.telegram_desktop import ChatInfo, ChatPlan, build_event, iso  # noqa: E402

BOT = 7012345678
START = 1735689600  # 2025-01-01T00:00:00Z
NEEDLE = "ZEBRA-NEEDLE-4417"
SHA = "0" * 64

BASELINE = """
import os, sys, orjson
from concurrent.futures import ThreadPoolExecutor
src, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
per_file, locked, durable = mode != "one", mode.startswith("locked"), mode == "locked-fsync"
fd = None if per_file else os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
open_fds = {}  # chat -> (day path, fd): one open day file per chat
done = []  # locked-fsync: closed day files' fds, fsynced 256 at a time from 16 threads (the writer's group commit)
pool = ThreadPoolExecutor(16) if durable else None
dirs = set()  # directories with new entries since the last group commit

def fsync_dir(d):
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)

def commit():
    list(pool.map(os.fsync, done))
    [os.close(x) for x in done]
    done.clear()
    list(pool.map(fsync_dir, dirs))
    dirs.clear()

def close(path, fd):
    if durable:
        done.append(fd)
        dirs.add(os.path.dirname(path))
        if len(done) >= 256:
            commit()
    else:
        os.close(fd)
    if locked:
        os.unlink(path + ".lock")

with open(src, "rb") as f:
    for line in f:
        ev = orjson.loads(line)
        data = orjson.dumps(ev) + b"\\n"
        if per_file:
            ts = ev["ts"]
            path = f"{out}/raw/{ev['channel']}/chats/{ev['chat_id']}/{ts[:4]}/{ts[5:7]}/{ts[8:10]}.jsonl"
            cur = open_fds.get(ev["chat_id"])
            if cur is None or cur[0] != path:
                if cur:
                    close(*cur)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if locked:  # the shared lock protocol: an O_EXCL lock file with the owner's record, unlinked after
                    lfd = os.open(path + ".lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
                    os.write(lfd, b"%d 0\\n" % os.getpid())
                    os.close(lfd)
                cur = open_fds[ev["chat_id"]] = (path, os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600))
            os.write(cur[1], data)
        else:
            os.write(fd, data)
for cur in open_fds.values():
    close(*cur)
if done:
    commit()
print(sum(1 for _ in open(src, "rb")))
"""


def chat_records(c: int, n: int, days: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(unix time, export record) of chat c, in time order; deterministic per chat."""
    rng = random.Random(7919 * c + 1)
    times = sorted(START + rng.randrange(days * 86400) for _ in range(n))
    for i, t in enumerate(times, 1):
        rec = record(rng, i, t)
        if (31 * i + c) % 997 == 0 and rec["type"] == "message":  # a rare needle, for grep against rg
            new = rec["text_entities"][0]["text"] = f"{NEEDLE} {rec['text_entities'][0]['text']}"
            rec["text"] = [new, *rec["text"][1:]] if isinstance(rec["text"], list) else new
        yield t, rec


def chat_plan(c: int) -> ChatPlan:
    eid = 1555000000 + c
    return ChatPlan(ChatInfo(c, "chats", f"Chat {c}", "private_supergroup", eid), chat_id=f"-100{eid}",
                    bot_peer=f"user{BOT}")


def generate(d: Path, chats: int, days: int, events: int) -> None:
    """export{10,100}/result.json and lines{10,100}.jsonl under d."""
    per_chat = events // chats
    cut = START + days * 86400 // 10
    for pct in (10, 100):
        (d / f"export{pct}").mkdir(parents=True, exist_ok=True)
    exports = {pct: open(d / f"export{pct}" / "result.json", "wb") for pct in (10, 100)}
    head = (b'{\n "about": "generated by tools/bench/year.py",\n "personal_information": {\n  "user_id": 100200300\n },\n'
            b' "chats": {\n  "about": "",\n  "list": [')
    for f in exports.values():
        f.write(head)
    for c in range(chats):
        meta = orjson.dumps({"name": f"Chat {c}", "type": "private_supergroup", "id": 1555000000 + c})[:-1]
        for pct, f in exports.items():
            f.write((b",\n   " if c else b"\n   ") + meta + b', "messages": [')
            first = True
            for t, rec in chat_records(c, per_chat, days):
                if pct == 10 and t >= cut:
                    break
                f.write((b"\n    " if first else b",\n    ")
                        + orjson.dumps(rec, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    "))
                first = False
            f.write(b"\n   ]}")
    for f in exports.values():
        f.write(b"\n  ]\n }\n}\n")
        f.close()

    def events_of(c: int) -> Iterator[tuple[str, int, bytes]]:
        plan = chat_plan(c)
        for _, rec in chat_records(c, per_chat, days):
            ev = build_event(plan, rec, SHA)
            if ev is not None:
                yield ev["ts"], c, orjson.dumps(ev) + b"\n"
    with open(d / "lines10.jsonl", "wb") as f10, open(d / "lines100.jsonl", "wb") as f100:
        cut_ts = iso(cut)
        for ts, _, line in heapq.merge(*(events_of(c) for c in range(chats))):
            f100.write(line)
            if ts < cut_ts:
                f10.write(line)


def once(argv: list[str]) -> Measure:
    """One run, no warm-up (a write case cannot run twice into the same root)."""
    m = Measure("once")
    with tempfile.NamedTemporaryFile() as tf:
        wall, _, out = run_measured(["/usr/bin/time", "-f", "%M %U %S", "-o", tf.name, *argv], ok_codes=(0,))
        kb, user, system = Path(tf.name).read_text().split()[-3:]
    m.walls.append(wall)
    m.cpus.append(float(user) + float(system))
    m.rss_mb = int(kb) / 1024
    m.output = out.encode()
    return m


def grep_case(log: Path, runs: int, rows: dict[str, dict[str, Any]]) -> bool:
    """`eventlog grep --count-total` against `rg -c` on `log`, answers compared; whether they agree."""
    files = sum(1 for _ in (log / "raw").rglob("*.jsonl"))
    ours = measure("grep", EVENTLOG + ["grep", "--count-total", NEEDLE, "--root", str(log)], runs)
    base = measure("rg", [RG, "-c", "--no-config", NEEDLE, str(log / "raw")], runs)
    ca, cb = count_of(ours.output), count_of(base.output)
    print(f"  grep --count-total vs rg -c, {files:,} day files (median of {runs}, load "
          f"{os.getloadavg()[0]:.1f}): {ours.median:.2f} / {base.median:.2f} s = "
          f"{ours.median / base.median:.2f}× (CPU {ours.cpu:.2f} / {base.cpu:.2f} s = {ours.cpu / (base.cpu or float('nan')):.2f}×), "
          f"peak RSS {ours.rss_mb:.0f} / {base.rss_mb:.0f} MB, answers {ca} / {cb}"
          f"{'' if ca == cb else '  MISMATCH'} (goal ≤ 1.5×)", flush=True)
    rows["grep"] = {"eventlog_s": ours.median, "rg_s": base.median, "eventlog_cpu_s": ours.cpu,
                    "rg_cpu_s": base.cpu, "answers": [ca, cb], "rss_mb": ours.rss_mb, "files": files}
    return ca == cb


# `eventlog sql` on the appended log, each query beside the plain cost of DuckDB reading the same day files once
# (read_text, the file list bound as the views bind it): the views' work over the scan, and peak RSS against the
# goal (< 500 MB for any command on a year of chat).
SQL_QUERIES = {
    "messages": "SELECT * FROM messages ORDER BY ts, id LIMIT 2000",
    "edits": "SELECT * FROM edits ORDER BY ALL LIMIT 5",
    "replies": "SELECT chat_id, count(*) AS n FROM replies GROUP BY ALL ORDER BY n DESC LIMIT 5",
    "chats": "SELECT * FROM chats ORDER BY events DESC LIMIT 5",
}
SCAN_BASELINE = """
import glob, sys, duckdb, orjson
files = sorted(glob.glob(sys.argv[1] + "/raw/**/*.jsonl", recursive=True))
con = duckdb.connect(":memory:")
con.execute("SET VARIABLE f = from_json($v, '[\\"VARCHAR\\"]')", {"v": orjson.dumps(files).decode()})
print(con.execute("SELECT count(*), sum(length(content)) FROM read_text(getvariable('f'))").fetchone())
"""


def sql_case(log: Path, runs: int, rows: dict[str, dict[str, Any]]) -> bool:
    """Each of SQL_QUERIES through `eventlog sql` against SCAN_BASELINE, and `SELECT 1` with the skipped-line counts
    remembered (recall/linecounts.py) beside it with an empty cache at every run (every file counted, as before the
    cache); whether every peak RSS is under 500 MB. The cache is the bench's own (the warm-up run fills it)."""
    base = measure("scan", [PY, "-c", SCAN_BASELINE, str(log)], runs)
    ok = True
    print(f"  sql, baseline: DuckDB reading every day file once (read_text) {base.median:.2f} s (CPU {base.cpu:.2f} s),"
          f" peak RSS {base.rss_mb:.0f} MB", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-year-cache-", dir=os.environ.get("BENCH_TMP")) as caches:
        warm = ["env", f"EVENTLOG_CACHE={caches}/warm"]
        cold = ["sh", "-c", f'EVENTLOG_CACHE=$(mktemp -d -p "{caches}") exec "$@"', "sh"]
        cases = [(name, q, warm) for name, q in SQL_QUERIES.items()]
        cases += [("select1", "SELECT 1", warm), ("select1-cold", "SELECT 1", cold)]
        for name, q, how in cases:
            m = measure(f"sql-{name}", how + EVENTLOG + ["sql", q, "--root", str(log)], runs)
            ok &= m.rss_mb < 500
            print(f"  sql {name:<12} {m.median:6.2f} s (CPU {m.cpu:.2f} s) = {m.median / base.median:.1f}× the scan, "
                  f"peak RSS {m.rss_mb:.0f} MB (goal < 500 MB): {q}", flush=True)
            rows[f"sql-{name}"] = {"wall_s": m.median, "cpu_s": m.cpu, "rss_mb": m.rss_mb, "scan_s": base.median,
                                   "scan_rss_mb": base.rss_mb, "query": q}
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=200)
    ap.add_argument("--days", type=int, default=360)
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--fsync", default="batch", choices=("batch", "never"))
    ap.add_argument("--runs", type=int, default=3, help="grep: runs after one warm-up")
    ap.add_argument("--keep", type=Path, default=None, help="keep (and reuse) the corpus in this directory")
    ap.add_argument("--grep-log", type=Path, default=None,
                    help="only the read cases (grep, sql), on this log (one a previous run's append made): no writes")
    args = ap.parse_args(argv)
    compile_bytecode()  # every case starts as an installed package does: from bytecode
    if args.grep_log is not None:
        grep_rows: dict[str, dict[str, Any]] = {}
        ok = grep_case(args.grep_log, args.runs, grep_rows)
        ok &= sql_case(args.grep_log, args.runs, grep_rows)
        print(json.dumps({"bench": "year", "rows": grep_rows}))
        return 0 if ok else 1
    tmp = Path(tempfile.mkdtemp(prefix="bench-year-", dir=os.environ.get("BENCH_TMP")))
    corpus = args.keep or tmp / "corpus"
    try:
        if not (corpus / "lines100.jsonl").is_file():
            print(f"generating {args.events:,} events, {args.chats} chats × {args.days} days …", flush=True)
            generate(corpus, args.chats, args.days, args.events)
        lines = {p: sum(1 for _ in open(corpus / f"lines{p}.jsonl", "rb")) for p in (10, 100)}
        print(f"corpus: {lines[100]:,} events ({lines[10]:,} in the first 10 % of the days), "
              f"{(corpus / 'lines100.jsonl').stat().st_size / 1e6:.0f} MB of lines, export "
              f"{(corpus / 'export100' / 'result.json').stat().st_size / 1e6:.0f} MB; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        rows: dict[str, dict[str, Any]] = {}

        def case(name: str, pct: int, argv: list[str], stdin: Path | None = None) -> Path:
            root = tmp / f"{name}{pct}"
            shutil.rmtree(root, ignore_errors=True)
            if name in ("append", "import"):
                run_measured(EVENTLOG + ["init", "--root", str(root)])
            if name == "baseline-write":
                root.mkdir()
            argv = [a.replace("ROOT", str(root)) for a in argv]
            if stdin is not None:  # measure() has no stdin: a shell redirect, its cost is nil
                argv = ["sh", "-c", " ".join(map(repr, argv)) + f" < '{stdin}'"]
            m = once(argv)
            files = sum(1 for _ in (root / "raw").rglob("*.jsonl")) if (root / "raw").is_dir() else 1
            rows[f"{name}{pct}"] = {"case": name, "pct": pct, "events": lines[pct], "files": files,
                                    "wall_s": m.median, "cpu_s": m.cpu, "rss_mb": m.rss_mb,
                                    "us_per_event": 1e6 * m.median / lines[pct],
                                    "cpu_us_per_event": 1e6 * m.cpu / lines[pct]}
            r = rows[f"{name}{pct}"]
            print(f"{name:<15} {pct:>3} %  {lines[pct]:>8,} events  {files:>7,} files  wall {m.median:7.1f} s  "
                  f"CPU {m.cpu:7.1f} s  {r['us_per_event']:6.0f} µs/event (CPU {r['cpu_us_per_event']:5.0f})  "
                  f"peak RSS {m.rss_mb:4.0f} MB", flush=True)
            return root

        for pct in (10, 100):
            src = corpus / f"lines{pct}.jsonl"
            case("baseline-write", pct, [PY, "-c", BASELINE, str(src), "ROOT/base.jsonl", "one"])
            case("baseline-files", pct, [PY, "-c", BASELINE, str(src), "ROOT", "files"])
            case("baseline-locked", pct, [PY, "-c", BASELINE, str(src), "ROOT",
                                          "locked-fsync" if args.fsync == "batch" else "locked"])
            log = case("append", pct, EVENTLOG + ["append", "--fsync", args.fsync, "--root", "ROOT"], stdin=src)
            case("import", pct, EVENTLOG + ["import", "telegram-desktop", str(corpus / f"export{pct}"),
                                            "--bot-id", str(BOT), "--fsync", args.fsync, "--json", "--root", "ROOT"])
        print("\nratios, same run (goal: append and import ≤ 2 min wall each, time per event flat from 10 % to 100 %)")
        for name in ("append", "import"):
            a, b = rows[f"{name}100"], rows[f"{name}10"]
            print(f"  {name:<7} wall {a['wall_s']:.1f} s; per event 100 % / 10 %: wall "
                  f"{a['us_per_event'] / b['us_per_event']:.2f}, CPU {a['cpu_us_per_event'] / b['cpu_us_per_event']:.2f}; "
                  f"/ baseline-write {a['wall_s'] / rows['baseline-write100']['wall_s']:.1f}× "
                  f"(CPU {a['cpu_s'] / rows['baseline-write100']['cpu_s']:.1f}×), / baseline-files "
                  f"{a['wall_s'] / rows['baseline-files100']['wall_s']:.1f}×, / baseline-locked "
                  f"{a['wall_s'] / rows['baseline-locked100']['wall_s']:.1f}× (CPU "
                  f"{a['cpu_s'] / rows['baseline-locked100']['cpu_s']:.1f}×); peak RSS {a['rss_mb']:.0f} MB")
        ok = grep_case(log, args.runs, rows)
        ok &= sql_case(log, args.runs, rows)
        print(json.dumps({"bench": "year", "fsync": args.fsync, "rows": rows}))
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
