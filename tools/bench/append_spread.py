#!/usr/bin/env python3
"""Appends spread over many chats and a year, in time order (issue 30, item 1): wall time and the work that made it
quadratic before (checkpoint lines folded, seal records parsed).

    .venv/bin/python tools/bench/append_spread.py 1000 2000 4000 [--chats 200]

Time per event should stay flat as the event count grows; `fold` and `seal` count the calls of head._fold and of the
seal-record parser (the counts are the regression signal; tests/test_store_linear.py asserts them at two sizes)."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from eventlog.store import head, seal  # noqa: E402
from eventlog.store.writer import EventLog  # noqa: E402


def run(n: int, chats: int) -> dict[str, Any]:
    calls = {"fold": 0, "seal": 0}
    fold, parse = head._fold, seal._seal_record

    def counted_fold(*a: Any) -> Any:
        calls["fold"] += 1
        return fold(*a)

    def counted_parse(*a: Any) -> Any:
        calls["seal"] += 1
        return parse(*a)
    head._fold, seal._seal_record = counted_fold, counted_parse
    try:
        t0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
        evs = [{"event": "message:received", "channel": "telegram", "chat_id": str(1000 + i % chats),
                "ts": (t0 + timedelta(seconds=i * 365 * 86400 / n)).isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"), "text": f"hello {i}"} for i in range(n)]
        with tempfile.TemporaryDirectory() as d:
            log = EventLog(Path(d))
            s = time.perf_counter()
            for i in range(0, n, 100):
                log.append_many(evs[i:i + 100])
            wall = time.perf_counter() - s
    finally:
        head._fold, seal._seal_record = fold, parse
    return {"events": n, "wall_s": round(wall, 2), "ms_per_event": round(1000 * wall / n, 3), **calls}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", nargs="+", type=int)
    ap.add_argument("--chats", type=int, default=200)
    a = ap.parse_args(argv)
    for n in a.sizes:
        print(run(n, a.chats))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
