"""Indexing a log whose longest message is 1 MB (issue 26): peak RSS of `eventlog index` stays under 500 MB.

Rows, each a fresh process, in one run:
  baseline   `eventlog index` of N ordinary messages (one day)
  1 MB       the same log plus one 1,000,000-character message (embedded as 600-character chunks)
  encode     the model alone on one T-character text: whole (what `index` did before chunking, ~5 KB a character)
             and as chunks (embed.encode_chunked) — T is small enough for the whole-text case to fit the machine

    python tools/bench/long_message.py [--messages 2000] [--whole 40000]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools" / "bench"))
from common import run_measured, table  # noqa: E402

from eventlog.store.writer import EventLog  # noqa: E402

GOAL_MB = 500
LONG = 1_000_000
ENCODE = """
import sys
from eventlog.search import embed
text = ("a ledger line about stock levels and deliveries, " * (int(sys.argv[2]) // 49 + 1))[:int(sys.argv[2])]
m = embed.load()
if sys.argv[1] == "whole":
    m.encode([text])
else:
    for _ in embed.encode_chunked(m, [text]):
        pass
"""


def _log(root: Path, n: int, long_chars: int) -> None:
    words = ["invoice", "delivery", "lunch", "meeting", "wifi", "password", "train", "report", "dinner", "weekend"]
    evs = [{"event": "message:received", "channel": "telegram", "chat_id": str(100 + i % 7), "direction": "in",
            "ts": f"2026-11-28T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "text": f"message {i}: the {words[i % 10]} and the {words[i * 7 % 10]} for {words[i * 3 % 10]}",
            "from": {"id": 100 + i % 7}} for i in range(n)]
    if long_chars:
        text = ("a pasted log file line with a timestamp and a status code 200 OK, " * (long_chars // 66 + 1))
        evs.append({**evs[0], "ts": "2026-11-28T23:59:00Z", "text": text[:long_chars]})
    EventLog(root, fsync="never").append_many(evs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--whole", type=int, default=40_000, help="characters of the whole-text encode row")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-long-") as tmp:
        for name, long_chars in (("baseline", 0), ("1 MB message", LONG)):
            root = Path(tmp) / name.replace(" ", "-")
            _log(root, args.messages, long_chars)
            wall, rss, _ = run_measured([sys.executable, "-m", "eventlog", "index", "--jobs", "1", "--root",
                                         str(root)])
            rows.append({"case": f"index: {args.messages} messages" + (" + one of 1,000,000 chars" if long_chars
                                                                        else ""),
                         "wall_s": f"{wall:.1f}", "peak_rss_mb": f"{rss:.0f}"})
        for how in ("whole", "chunks"):
            wall, rss, _ = run_measured([sys.executable, "-c", ENCODE, how, str(args.whole)])
            rows.append({"case": f"encode one {args.whole:,}-char text: {how}", "wall_s": f"{wall:.1f}",
                         "peak_rss_mb": f"{rss:.0f}"})
    print(table(rows, ["case", "wall_s", "peak_rss_mb"]))
    base, long_, whole, chunks = (float(r["peak_rss_mb"]) for r in rows)
    print(f"\nindex peak RSS with the 1 MB message: {long_:.0f} MB = {long_ / base:.2f}x the baseline "
          f"({'under' if long_ < GOAL_MB else 'OVER'} the {GOAL_MB} MB goal)")
    print(f"encode of {args.whole:,} chars: whole {whole:.0f} MB vs chunks {chunks:.0f} MB ({whole / chunks:.1f}x)")
    return 0 if long_ < GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
