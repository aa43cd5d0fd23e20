"""Ranked search for a question a model asks, on top of `eventlog.recall` (the one search implementation).

A model asks in words ("what did we decide about the wifi password"), not in grep patterns. The question is cut into
content words (stop words dropped); each word is searched with `recall.search` — `text`: case-insensitive substring
(so "password" also finds "passwords"), `fuzzy`: rapidfuzz word ratio (typos, word forms) — in the allowed chats and
days. A message scores the sum over the words it contains of 1/log2(2 + how many messages contain that word), so rare
words weigh more; ties go to the newest. A word found in more than `COMMON_CAP` messages stops counting (it cannot
tell messages apart, and keeping its hits would cost memory): the result says so. Dates are searched newest first in
growing windows (a week, a month, a quarter, everything) until `limit` messages contain every word; the result says
how far back it read when it stopped early.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from ..recall import grep as recall
from ..search.tokens import STOP

COMMON_CAP = 20_000
WINDOWS = (7, 31, 92)  # days, newest first; then the whole range
MAX_WORDS = 8
_WORD = re.compile(r"\w+")


@dataclass
class Found:
    event: dict[str, Any]
    words: set[int] = field(default_factory=set)
    score: float = 0.0


@dataclass
class Ranked:
    hits: list[Found]
    total: int                       # messages that matched at least one counted word
    words: list[str]                 # the words searched
    common: list[str]                # words dropped for being in > COMMON_CAP messages
    searched_since: datetime | None = None  # set when the search stopped at a window: nothing older was read


def query_words(query: str) -> list[str]:
    toks = [t.lower() for t in _WORD.findall(query)]
    words = [t for t in toks if t not in STOP and (len(t) > 1 or t.isdigit())] or [t for t in toks if t]
    out: list[str] = []
    for w in words:
        if w not in out:
            out.append(w)
    return out[:MAX_WORDS]


def windows(since: datetime | None, until: datetime | None, today: date | None = None
            ) -> list[tuple[datetime | None, datetime | None]]:
    """Ranges to search, newest first: the last week, month, quarter of UTC days, then everything (within
    [since, until), exact instants).
    The last range is the whole asked range (a directory walk for rg, not tens of thousands of file names); what the
    earlier ranges found is not counted twice."""
    today = today or datetime.now(timezone.utc).date()
    out: list[tuple[datetime | None, datetime | None]] = []
    for days in WINDOWS:
        first = today - timedelta(days=days - 1)
        s = datetime(first.year, first.month, first.day, tzinfo=timezone.utc)
        if since and s < since:
            break
        if until and s >= until:
            continue
        out.append((s, until))
    out.append((since, until))
    return out


def rank(root: Path, query: str, *, mode: str = "text", chats: tuple[str, ...] | None = None,
         since: datetime | None = None, until: datetime | None = None, direction: str | None = None, limit: int = 10,
         exclude: str | None = None, today: date | None = None,
         on_problem: Callable[[str], None] | None = None, accounts: tuple[str, ...] | None = None) -> Ranked:
    """The best `limit` messages for `query`; `exclude`: an event id to leave out (the question being answered).

    Searched in growing date windows, newest first, until `limit` messages contain every (not too common) word: a
    question about last week costs a week of files, and the COMMON_CAP messages kept for a very common word are the
    newest ones, not the first chats' in file order."""
    words = query_words(query)
    if not words:
        return Ranked([], 0, [], [])
    found: dict[str, Found] = {}
    df = dict.fromkeys(range(len(words)), 0)
    common: set[int] = set()
    wins = windows(since, until, today)
    stopped_at: datetime | None = None
    for n_win, (lo, hi) in enumerate(wins):
        for i, w in enumerate(words):
            if i in common:
                continue
            q = recall.GrepQuery(w, "fuzzy" if mode == "fuzzy" else "literal", ignore_case=True, chats=chats,
                                 since=lo, until=hi, direction=direction, accounts=accounts)
            hits = recall.search(root, q, on_problem)
            try:
                for h in hits:
                    key = h.event.get("id") or f"{h.relpath}:{h.line}"
                    f = found.get(key)
                    if key == exclude or (f is not None and i in f.words):
                        continue  # the question itself, or found by an earlier (newer) window
                    df[i] += 1
                    if df[i] > COMMON_CAP:
                        common.add(i)
                        break
                    if f is None:
                        f = found[key] = Found(_lite(h.event))
                    f.words.add(i)
            finally:
                hits.close()
        active = [i for i in range(len(words)) if i not in common]
        if not active or sum(1 for f in found.values() if all(i in f.words for i in active)) >= limit:
            stopped_at = lo if n_win < len(wins) - 1 else None
            break
    if len(words) > 1 and len(common) < len(words):
        for f in found.values():
            f.words -= common
    else:
        common = set()  # every word is common (or there is one): rank by them anyway, newest first
    weights = {i: 1.0 / math.log2(2 + df[i]) for i in df if i not in common}
    kept = []
    for f in found.values():
        f.score = sum(weights.get(i, 0.0) for i in f.words)
        if f.score > 0:
            kept.append(f)
    kept.sort(key=lambda f: (-f.score, _neg_ts(f.event.get("ts"))))
    return Ranked(kept[:limit], len(kept), words, [words[i] for i in sorted(common)], stopped_at)


def _neg_ts(ts: Any) -> tuple[int, ...]:
    """Sort key putting later RFC 3339 UTC times first (they compare as strings)."""
    return tuple(-ord(c) for c in ts) if isinstance(ts, str) else ()


def _lite(ev: dict[str, Any]) -> dict[str, Any]:
    """What a result line needs; the rest of the event (raw update, payload) is not kept in memory."""
    keep = ("id", "ts", "chat_id", "channel", "account", "direction", "from", "text", "event", "update_type")
    out = {k: ev[k] for k in keep if k in ev}
    payload = ev.get("payload")
    if isinstance(payload, dict) and payload.get("parse_mode"):
        out["parse_mode"] = payload["parse_mode"]
    return out
