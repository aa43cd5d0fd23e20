"""`mode: "hybrid"` goes to `eventlog search --mode hybrid --json` (issue 14, built in parallel) when this
installation has it; otherwise the caller falls back to text search and says so in the result's header.

The command's JSON Lines are read leniently: each line either carries the event (`{"event": {...}}`, like
`eventlog grep --json`) or is the event itself; a line with `"type"` other than a match is skipped.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from datetime import date
from pathlib import Path

import orjson

from .search import Found, Ranked, query_words

TIMEOUT_S = 60
OUTPUT_CAP = 8 * 1024 * 1024


def available() -> bool:
    return importlib.util.find_spec("eventlog.cli.search") is not None


def hybrid_search(root: Path, query: str, *, chats: tuple[str, ...] | None, since: date | None, until: date | None,
                  direction: str | None, limit: int) -> tuple[Ranked | None, str]:
    if not available():
        return None, "this eventlog has no `eventlog search` command yet"
    argv = [sys.executable, "-m", "eventlog", "search", "--mode", "hybrid", "--json", "--limit", str(limit),
            "--root", str(root)]
    for c in chats or ():
        argv += ["--chat", c]
    if since:
        argv += ["--since", since.isoformat()]
    if until:
        argv += ["--until", until.isoformat()]
    if direction:
        argv += ["--direction", direction]
    argv += ["--", query]
    try:
        p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"`eventlog search --mode hybrid` took over {TIMEOUT_S}s"
    except OSError as exc:
        return None, f"cannot run `eventlog search`: {exc.strerror}"
    if p.returncode not in (0, 1):
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"`eventlog search --mode hybrid` failed: {err[-1][:200] if err else p.returncode}"
    hits: list[Found] = []
    for line in p.stdout[:OUTPUT_CAP].splitlines():
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or obj.get("type") not in (None, "match", "hit", "result"):
            continue
        ev = obj.get("event") if isinstance(obj.get("event"), dict) else obj
        if isinstance(ev.get("id"), str) and isinstance(ev.get("text"), str):
            if chats and str(ev.get("chat_id")) not in chats:
                continue  # the scope is ours to enforce, whatever the command returns
            hits.append(Found(ev, score=float(obj.get("score") or 0)))
    return Ranked(hits[:limit], len(hits), query_words(query), []), ""
