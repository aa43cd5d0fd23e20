"""The page's timeline (issue 29, docs/web.md): the first screen of a chat with 100,000 messages in < 300 ms of server
time, with bounded memory (paging: a page binds only the day files it needs), beside baselines in the same run.

Rows in one run, each library row a fresh process (its wall time is not the figure; `page` is the time of the call
`eventlog.web.timeline.page(…, limit=100)` inside it, first call and median of the warm ones; peak RSS is the process's):
  1k chat          the first screen of a 1,000-message chat (2 days × 500 messages): the baseline
  100k chat        the same for a 100,000-message chat (200 days × 500): the goal row
  100k middle      the page ~50,000 messages back (a `before=` cursor in the middle of a day), same chat
  100k one day     100,000 messages in one UTC day: the worst layout (the page must bind that whole day file)
  duckdb floor     raw DuckDB over the newest day file: read_json … ORDER BY ts DESC LIMIT 100 (no views, no masking)
  views, one day   recall's connect() with its views over the newest day and a count(*): the fixed cost of a query
  whole chat       every message of the 100k chat through the same `messages` view: what a page must never do
and over HTTP, a real `eventlog serve` subprocess: GET /chats/<id> (the rendered page: query, masking, template) for
the 1k and the 100k chat, first request and median of the next ones, and the server's peak RSS (VmHWM) after them, beside its peak after the start-up doctor/verify (before any page).
Every row checks its answer (100 messages, the expected newest id, the number of day files bound), not only its time.

    python tools/bench/web.py [--messages 100000] [--per-day 500] [--runs 15]
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured, table  # noqa: E402

from eventlog.store.writer import EventLog  # noqa: E402

GOAL_MS = 300.0
LIMIT = 100
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
WORDS = ("invoice delivery lunch meeting deploy server release budget report client deadline review staging "
         "schedule update team project call office email price order payment design draft plan tomorrow").split()

PAGE = r"""
import json, statistics, sys, time
from pathlib import Path
from eventlog.web.redact import Redactor
from eventlog.web.timeline import page
root, chat, before, runs = Path(sys.argv[1]), sys.argv[2], sys.argv[3] or None, int(sys.argv[4])
red = Redactor(root)  # once per server lifetime: not part of a page's time
def one():
    t, c = time.perf_counter(), time.process_time()
    p = page(root, chat, redact=red.text, before=before, limit=100)
    return (time.perf_counter() - t) * 1000, p, (time.process_time() - c) * 1000
cold, p, _ = one()
warm = [one() for _ in range(runs)]
print(json.dumps({"cold_ms": cold, "warm_ms": statistics.median(w[0] for w in warm),
                  "cpu_ms": statistics.median(w[2] for w in warm), "n": len(p.messages), "files": p.files,
                  "newest": p.messages[-1]["id"] if p.messages else None, "older": p.older}))
"""

FLOOR = r"""
import json, statistics, sys, time
import duckdb
path, runs = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
def one():
    t, c = time.perf_counter(), time.process_time()
    rows = con.execute("SELECT id, ts, text FROM read_json(?, format='newline_delimited', "
                       "columns={'id': 'VARCHAR', 'ts': 'VARCHAR', 'text': 'VARCHAR', 'method': 'VARCHAR'}) "
                       "WHERE method IS DISTINCT FROM 'editMessageText' "
                       "ORDER BY ts DESC, id DESC LIMIT 100", [path]).fetchall()
    return (time.perf_counter() - t) * 1000, rows, (time.process_time() - c) * 1000
cold, rows, _ = one()
warm = [one() for _ in range(runs)]
print(json.dumps({"cold_ms": cold, "warm_ms": statistics.median(w[0] for w in warm),
                  "cpu_ms": statistics.median(w[2] for w in warm), "n": len(rows), "files": 1,
                  "newest": rows[0][0]}))
"""

CONNECT = r"""
import json, statistics, sys, time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from eventlog.recall.query import connect, scope_from
root, chat, day, runs = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
start = datetime.fromisoformat(day).replace(tzinfo=timezone.utc)
def one():
    t, c = time.perf_counter(), time.process_time()
    con, src = connect(scope_from(root, [chat], start, start + timedelta(days=2), timezone.utc, None))
    n = con.execute("SELECT count(*) FROM messages").fetchone()[0]
    con.close()
    return (time.perf_counter() - t) * 1000, n, len(src.jsonl) + len(src.covered), (time.process_time() - c) * 1000
cold, n, files, _ = one()
warm = [one() for _ in range(runs)]
print(json.dumps({"cold_ms": cold, "warm_ms": statistics.median(w[0] for w in warm),
                  "cpu_ms": statistics.median(w[3] for w in warm), "n": n, "files": files, "newest": None}))
"""

WHOLE = r"""
import json, sys, time
from pathlib import Path
from datetime import timezone
from eventlog.recall.query import connect, scope_from
root, chat = Path(sys.argv[1]), sys.argv[2]
t = time.perf_counter()
con, src = connect(scope_from(root, [chat], None, None, timezone.utc, None))
rows = con.execute("SELECT id, ts, text FROM messages WHERE NOT is_edit ORDER BY ts DESC, id DESC").fetchall()
ms = (time.perf_counter() - t) * 1000
print(json.dumps({"cold_ms": ms, "warm_ms": ms, "n": len(rows), "files": len(src.jsonl) + len(src.covered),
                  "newest": rows[0][0]}))
"""


def _ulid(ms: int, rng: random.Random) -> str:
    value = (ms << 80) | rng.getrandbits(80)
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def chat_events(chat_id: str, n: int, per_day: int, first: date, seed: int) -> Iterator[dict[str, Any]]:
    """`n` messages, `per_day` a UTC day from `first`, evenly spaced; one in ten is a bot reply streamed as a send and
    one preview edit (so the page's fold runs). Yields (event) in time order; every message event carries its id, so
    the bench knows which message is where."""
    rng = random.Random(seed)
    gap_ms = 86_400_000 // per_day
    start = int(datetime.combine(first, datetime.min.time(), timezone.utc).timestamp() * 1000)
    for i in range(n):
        ms = start + (i // per_day) * 86_400_000 + (i % per_day) * gap_ms
        ts = datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))
        mid = i + 1
        if i % 10 == 9:
            payload = {"chat_id": int(chat_id), "text": words[: len(words) // 2]}
            base = {"event": "message:sent", "channel": "telegram", "chat_id": chat_id, "direction": "out",
                    "message_id": mid, "outcome": {"ok": True, "message_id": mid}}
            yield {**base, "id": _ulid(ms, rng), "ts": ts, "method": "sendMessage", "text": payload["text"],
                   "payload": payload}
            ems = ms + gap_ms // 2
            ets = datetime.fromtimestamp(ems / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            yield {**base, "id": _ulid(ems, rng), "ts": ets, "method": "editMessageText", "text": words,
                   "payload": {"chat_id": int(chat_id), "message_id": mid, "text": words}}
        else:
            yield {"event": "message:received", "channel": "telegram", "chat_id": chat_id, "direction": "in",
                   "id": _ulid(ms, rng), "ts": ts, "message_id": mid, "update_type": "message", "text": words,
                   "from": {"id": 100 + i % 7, "username": f"user{i % 7}", "name": f"User {i % 7}"}}


def build(root: Path, chats: dict[str, tuple[int, int]], last: date) -> dict[str, list[tuple[str, str]]]:
    """Write each chat (id → (messages, per day)) ending on `last`; (ts, id) of every base message, in order."""
    el = EventLog(root, fsync="never")
    index: dict[str, list[tuple[str, str]]] = {}
    for seed, (chat, (n, per_day)) in enumerate(chats.items()):
        days = -(-n // per_day)
        first = last - timedelta(days=days - 1)
        batch: list[dict[str, Any]] = []
        index[chat] = []
        for ev in chat_events(chat, n, per_day, first, seed):
            if ev.get("method") != "editMessageText":
                index[chat].append((ev["ts"], ev["id"]))
            batch.append(ev)
            if len(batch) >= 20_000:
                el.append_many(batch)
                batch = []
        if batch:
            el.append_many(batch)
    return index


def _child(code: str, *args: str) -> dict[str, Any]:
    wall, rss, out = run_measured([sys.executable, "-c", code, *args], cwd=REPO)
    res = json.loads(out.strip().splitlines()[-1])
    res["rss_mb"], res["wall_s"] = rss, wall
    return res


class _Serve:
    def __init__(self, root: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "eventlog", "serve", "--root", str(root), "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.proc.stdout.readline()), daemon=True).start()  # type: ignore
        line = lines.get(timeout=120).strip()
        m = re.match(r"^(http://127\.0\.0\.1:\d+)/\?token=(\S+)$", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"eventlog serve: no URL line ({line!r})")
        self.base, self.token = m.group(1), m.group(2)

    def get_ms(self, path: str) -> tuple[float, bytes]:
        req = urllib.request.Request(self.base + path, headers={"Authorization": f"Bearer {self.token}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        t = time.perf_counter()
        with opener.open(req, timeout=120) as r:
            body = r.read()
            assert r.status == 200, r.status
        return (time.perf_counter() - t) * 1000, body

    def hwm_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--per-day", type=int, default=500)
    ap.add_argument("--runs", type=int, default=15, help="warm calls per row (the median is reported)")
    args = ap.parse_args()
    n, per_day = args.messages, args.per_day
    small, big, oneday = "1001", "1002", "1003"
    k = f"{n // 1000}k"
    last = date(2026, 11, 30)
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        root = Path(tmp) / "root"
        t = time.perf_counter()
        index = build(root, {small: (1000, per_day), big: (n, per_day), oneday: (n, n)}, last)
        print(f"built {sum(len(v) for v in index.values()):,} messages in {time.perf_counter() - t:.0f} s", flush=True)
        # a page boundary in the middle of a day, halfway back through the chat
        mid = len(index[big]) // 2 + per_day // 2
        cursor = index[big][mid][0] + "~" + index[big][mid][1]
        big_day = root / "raw" / "telegram" / "chats" / big / f"{last:%Y/%m/%d}.jsonl"
        cases = [
            ("1k chat", PAGE, (str(root), small, "", str(args.runs)), index[small][-1][1], 1),
            (f"{k} chat", PAGE, (str(root), big, "", str(args.runs)), index[big][-1][1], 1),
            (f"{k} middle", PAGE, (str(root), big, cursor, str(args.runs)), index[big][mid - 1][1], None),
            (f"{k} one day", PAGE, (str(root), oneday, "", str(args.runs)), index[oneday][-1][1], 1),
            ("duckdb floor", FLOOR, (str(big_day), str(args.runs)), index[big][-1][1], 1),
            ("views, one day", CONNECT, (str(root), big, last.isoformat(), str(args.runs)), None, 1),
            ("whole chat", WHOLE, (str(root), big), index[big][-1][1], None),
        ]
        for name, code, cargs, newest, files in cases:
            r = _child(code, *cargs)
            want_n = {"whole chat": n, "views, one day": per_day + per_day // 10}.get(name, LIMIT)
            ok = r["n"] == want_n and r["newest"] == newest and (files is None or r["files"] <= files + 1)
            if not ok:
                failures.append(f"{name}: n={r['n']} newest={r['newest']} (want {newest}) files={r['files']}")
            rows.append({"row": name, "first ms": f"{r['cold_ms']:.1f}", "warm ms": f"{r['warm_ms']:.1f}",
                         "warm CPU ms": f"{r['cpu_ms']:.1f}" if "cpu_ms" in r else "",
                         "files": r["files"], "messages": r["n"], "peak RSS MB": f"{r['rss_mb']:.0f}",
                         "_warm": r["warm_ms"], "_cold": r["cold_ms"], "_rss": r["rss_mb"]})
        # over HTTP: the rendered page from a real server
        srv = _Serve(root)
        http_rows = []
        try:
            # doctor and verify run once in the background at start (over the whole log): wait for them, so the
            # server's high-water mark before the pages is theirs and the pages' own share shows apart
            deadline = time.monotonic() + 600
            while not json.loads(srv.get_ms("/api/status")[1])["ready"] and time.monotonic() < deadline:
                time.sleep(0.5)
            hwm_status = srv.hwm_mb()
            for name, chat in (("1k chat", small), (f"{k} chat", big)):
                first, body = srv.get_ms(f"/chats/{chat}")
                warm = statistics.median(srv.get_ms(f"/chats/{chat}")[0] for _ in range(args.runs))
                shown = body.count(b'data-testid="message"')
                if shown != LIMIT:
                    failures.append(f"GET /chats/{chat}: {shown} messages shown, want {LIMIT}")
                http_rows.append({"row": f"GET /chats/… {name}", "first ms": f"{first:.1f}", "warm ms": f"{warm:.1f}",
                                  "messages": shown, "_warm": warm, "_cold": first})
            hwm = srv.hwm_mb()
        finally:
            rc = srv.stop()
        if rc != 0:
            failures.append(f"eventlog serve exited {rc} on SIGTERM")
        for r in http_rows:
            r["peak RSS MB"] = f"{hwm:.0f} (server; {hwm_status:.0f} after its start-up verify)"
    rows += http_rows
    base = next(r for r in rows if r["row"] == "1k chat")
    for r in rows:
        r["× 1k (warm)"] = f"{r['_warm'] / base['_warm']:.2f}"
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times grow with it; "
          "the ratios and the CPU column less so)")
    print(table(rows, ["row", "first ms", "warm ms", "warm CPU ms", "× 1k (warm)", "files", "messages",
                       "peak RSS MB"]))
    goal = next(r for r in rows if r["row"] == f"{k} chat")
    big_http = next(r for r in rows if r["row"] == f"GET /chats/… {k} chat")
    print(f"\ngoal: first screen of the {n:,}-message chat < {GOAL_MS:.0f} ms server time: page() first call "
          f"{goal['_cold']:.1f} ms, warm {goal['_warm']:.1f} ms (CPU {goal['warm CPU ms']} ms); rendered over HTTP first {big_http['_cold']:.1f} ms, "
          f"warm {big_http['_warm']:.1f} ms — warm (a running server): "
          f"{'met' if max(goal['_warm'], big_http['_warm']) < GOAL_MS else 'NOT met'}")
    print(f"memory: peak RSS {k} / 1k = {goal['_rss'] / base['_rss']:.2f} (the whole-chat row: "
          f"{next(r for r in rows if r['row'] == 'whole chat')['_rss']:.0f} MB)")
    for f in failures:
        print("WRONG ANSWER:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
