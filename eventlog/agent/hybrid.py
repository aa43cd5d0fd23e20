"""`mode: "hybrid"` (the tool's default) and `"bm25"` run the search library (`eventlog.search`) in this process —
the one ranking `eventlog search` uses, so the tool and the command rank the same query and scope alike — no second Python started
per tool call. Without the embedding model the library ranks by BM25 alone and says so; the note and the mode that
actually ran go back to the caller. A search that cannot run (a damaged index, an unreadable root) returns None and
why, and the caller falls back to text search and says so in the result's header.
"""
from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path

from ..errors import EventlogError
from ..search import SearchQuery
from .relative import search_question
from .search import Found, Ranked, query_words


def hybrid_search(root: Path, query: str, *, chats: tuple[str, ...] | None, since: datetime | None, until: datetime | None,
                  direction: str | None, limit: int, accounts: tuple[str, ...] | None = None, mode: str = "hybrid",
                  tz: tzinfo, exclude: str | None = None) -> tuple[Ranked | None, str, str]:
    """(the ranked hits, the notes or why not, the mode that ran: "hybrid", "bm25" without the model, "text" on
    failure). A relative date in the question restricts it as in `eventlog search` (relative.search_question)."""
    try:
        res, note = search_question(root, SearchQuery(query, mode=mode, chats=chats, since=since, until=until,
                                                      direction=direction, limit=limit, accounts=accounts),
                                    tz, exclude=exclude)
    except (EventlogError, OSError, ValueError) as exc:
        why = str(exc).strip().splitlines()
        return None, f"the {mode} search failed: {why[0][:200] if why else type(exc).__name__}", "text"
    hits = [Found(h.event or h.as_json(), score=float(h.score))
            for h in res.hits if (not chats or h.chat_id in chats)
            and (not accounts or h.as_json()["account"] in accounts)]  # the scope is ours to enforce
    notes = ([note] if note else []) + res.notes
    return Ranked(hits[:limit], len(hits), query_words(query), []), " ".join(notes), res.mode
