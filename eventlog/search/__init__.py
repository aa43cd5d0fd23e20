"""Ranked search over message text: `text` and `fuzzy` (the grep library, eventlog/recall/grep.py, handed in by the
caller), `bm25`, `vector`, `hybrid` (weighted fusion of min-max-normalised cosine and BM25 scores) and `rrf`
(reciprocal rank fusion), over the derived index in eventlog/search/index.py. Library first: `search(root, SearchQuery(...))` → `SearchResult`."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import orjson

from ..errors import EventlogError
from ..store import render
from ..store.layout import utc_days
from ..store.schema import DEFAULT_ACCOUNT
from . import chunks, derive, embed, index, pack, project, rank, store

MODES = ("text", "fuzzy", "bm25", "vector", "hybrid", "rrf")
DEFAULT_WEIGHT = 0.3  # measured with the question handling of tokens.query_terms (docs/search.md): LoCoMo R@10 64.4
#                      (bm25 64.3, 0.7: lower), the project's Russian questions hit@5 0.82 (bm25 0.60, 0.7: 0.84)
MAX_QUERY_CHARS = 2_000  # every mode: a query is words to look for, not a document (its embedding memory grows with it)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MAX_RSS_MB = 320  # after a query above this, the index pages it mapped are released (they stay in the page cache)


class SearchError(EventlogError):
    """Bad search input, or a mode that cannot run here."""


@dataclass
class SearchQuery:
    text: str
    mode: str = "hybrid"
    weight: float = DEFAULT_WEIGHT
    chats: tuple[str, ...] | None = None
    since: datetime | None = None  # [since, until): aware instants (eventlog/recall/when.py parses what users type)
    until: datetime | None = None
    direction: str | None = None  # in | out
    accounts: tuple[str, ...] | None = None  # OpenClaw accounts (None: all; "default": events without one)
    limit: int = 10
    candidates: int | None = None  # vector modes. None: vector/hybrid the projection first pass with
    #                                rank.default_candidates, rrf exhaustive; N: the first pass with N candidates;
    #                                0: exhaustive (every document's exact int8 cosine; the default before hyb5)
    packs: bool = True  # False: the day units alone, not a month's pack (the benchmark's "before packs" baseline)
    threads: int | None = None  # threads for the projection estimates; None: rank.default_threads()


@dataclass
class SearchHit:
    rank: int
    score: float
    id: str
    chat_id: str
    ts: str
    direction: str | None
    text: str
    sender: str | None = None
    event: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # the whole event (not in --json)
    chunk: dict[str, int] | None = None  # the text's best chunk for the query: {"index", "start", "end"} (characters)

    def as_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": round(float(self.score), 6), "id": self.id, "chat_id": self.chat_id,
                "ts": self.ts, "direction": self.direction, "text": self.text, "sender": self.sender,
                "account": (self.event or {}).get("account", DEFAULT_ACCOUNT), "chunk": self.chunk}


@dataclass
class SearchResult:
    hits: list[SearchHit]
    mode: str  # the mode that actually ran (hybrid → bm25 without the model)
    notes: list[str] = field(default_factory=list)
    updated_days: list[str] = field(default_factory=list)


def _hit(rank_: int, score: float, ev: dict[str, Any]) -> SearchHit:
    return SearchHit(rank_, score, str(ev.get("id")), str(ev.get("chat_id")), str(ev.get("ts")), ev.get("direction"),
                     ev["text"], render.sender(ev), ev)


def validate(q: SearchQuery) -> None:
    if q.mode not in MODES:
        raise SearchError(f"unknown mode {q.mode!r} (use one of {', '.join(MODES)})")
    if not q.text.strip():
        raise SearchError("empty query")
    if len(q.text) > MAX_QUERY_CHARS:
        raise SearchError(f"the query is {len(q.text)} characters; at most {MAX_QUERY_CHARS}")
    if not 0.0 <= q.weight <= 1.0:
        raise SearchError(f"--weight must be between 0 and 1, not {q.weight}")
    if q.limit < 1:
        raise SearchError("--limit must be at least 1")
    if q.direction not in (None, "in", "out"):
        raise SearchError("--direction must be in or out")
    if q.candidates is not None and q.candidates < 0:
        raise SearchError("--candidates must be 0 (exhaustive) or more")
    if q.since and q.until and q.since >= q.until:
        raise SearchError("--since is not before --until")





TextScan = Callable[..., list[dict[str, Any]]]  # eventlog.recall.grep.newest's signature


def _grep(root: Path, q: SearchQuery, text_scan: TextScan | None) -> SearchResult:
    """text and fuzzy read the log, not the index: through the grep library, which the caller hands over (`text_scan`,
    normally eventlog.recall.grep.newest) because search → recall is not one of the allowed arrows. Ranked newest
    first (grep has no relevance)."""
    if text_scan is None:
        raise SearchError(f"--mode {q.mode} reads the log through recall: pass text_scan=eventlog.recall.grep.newest")
    newest = text_scan(root, q.text, fuzzy=q.mode == "fuzzy", chats=q.chats, since=q.since, until=q.until,
                       direction=q.direction, limit=q.limit, accounts=q.accounts)
    return SearchResult([_hit(i + 1, 1.0, ev) for i, ev in enumerate(newest)], q.mode)


def _read_event(root: Path, relpath: str, offset: int) -> dict[str, Any] | None:
    with open(root / relpath, "rb") as f:
        f.seek(offset)
        line = f.readline()
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return ev if isinstance(ev, dict) and isinstance(ev.get("text"), str) else None


def _ms(t: datetime) -> int:
    """A bound in the index's ts unit (epoch ms), rounded up: `ts >= since` and `ts < until` stay exact for ms ts."""
    n, rest = divmod(t - _EPOCH, timedelta(milliseconds=1))
    return n + (rest > timedelta(0))


def search(root: Path, q: SearchQuery, refresh: bool = True,
           progress: Callable[[int, int, str, int], None] | None = None,
           text_scan: TextScan | None = None, watch_changes: bool = True) -> SearchResult:
    """Rank messages for q. With refresh (the default) stale or missing index days in scope are rebuilt first (with
    watch_changes=False, found by stat alone: index.update), so a
    result never comes from a stale index. `text_scan` serves the text and fuzzy modes (see _grep)."""
    validate(q)
    if q.mode in ("text", "fuzzy"):
        return _grep(root, q, text_scan)
    notes: list[str] = []
    mode = q.mode
    missing = embed.available()
    if missing and mode == "vector":
        raise SearchError(f"--mode vector: {missing}")
    if missing and mode in ("hybrid", "rrf"):
        notes.append(f"{mode} fell back to bm25: {missing}")
        mode = "bm25"
    updated: list[str] = []
    first, last = utc_days(q.since, q.until)
    if refresh:
        updated = index.update(root, first, last, list(q.chats) if q.chats else None,
                               any_model=mode == "bm25", progress=progress, watch_changes=watch_changes).built
    records = store.load_records(root)
    days = sorted(d for d in records
                  if (not first or d >= first.isoformat()) and (not last or d <= last.isoformat()))
    units = pack.units_for(root, records, days, q.packs)  # a month's valid pack in place of its days (pack.py)
    qvec = None
    if mode in ("vector", "hybrid", "rrf"):
        qvec = embed.load().encode([q.text], query=True)[0]
    # rrf ranks every document by cosine: under a first pass the ranks of those not rescored are estimates (0.94
    # recall@10 on the evaluation, tests/test_search_model.py), so rrf stays exhaustive unless candidates are given
    cand = 0 if q.candidates is None and mode == "rrf" else q.candidates
    projs = [arr if "sstart" in arr else None if "members" in rec else project.load(root, rec)
             for rec, arr in units] if qvec is not None and cand != 0 else None
    scored = rank.score_units(units, q.text, set(q.chats) if q.chats else None,
                              index.DIRECTIONS.get(q.direction) if q.direction else None, qvec,
                              _ms(q.since) if q.since else None, _ms(q.until) if q.until else None, projs,
                              q.threads, set(q.accounts) if q.accounts else None, context=mode == "hybrid")
    if qvec is not None:
        chunks.raise_to_best_chunk(scored, units, qvec)
    if qvec is None:
        score, ok = rank.fuse(scored, mode, q.weight)
        best = rank.top(score, ok, scored, q.limit)
    else:
        best, score = rank.rank_vectors(scored, units, qvec, mode, q.weight, q.limit, cand)
    hits: list[SearchHit] = []
    _, uids, rows = scored.locate(best)
    for i, u, row in zip(best.tolist(), uids.tolist(), rows.tolist(), strict=True):
        rec, arr = units[u]
        ev = _read_event(root, rec["files"][arr["file"][row]], int(arr["offset"][row]))
        if ev is None or (q.accounts and ev.get("account", DEFAULT_ACCOUNT) not in q.accounts):
            continue  # (another account's line in the default account's file: a log not migrated yet)
        hits.append(_hit(len(hits) + 1, float(score[i]), ev))
        # the model read "Name: text [media]" (derive.embed_text): the chunk's characters are counted in the text
        shift = derive.embed_text(ev, ev["text"]).find(ev["text"])
        hits[-1].chunk = chunks.best(arr, row, qvec, len(ev["text"]), max(shift, 0))
    store.release_all(MAX_RSS_MB)
    return SearchResult(hits, mode, notes, updated)
