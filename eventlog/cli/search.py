"""Search commands: index, search. Parse → call the library (eventlog/search/) → render."""
from __future__ import annotations

import sys
import time
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Callable

import click

from .common import account_option, emit_json, ensure_root, handle_errors, progress_meter, root_option
from .main import cli
from .timeopts import time_range


def index_progress() -> Callable[[int, int, str, int], None] | None:
    """The index build's (day i of n, day, messages) on the progress meter (a terminal only)."""
    meter = progress_meter()
    if meter is None:
        return None

    def show(i: int, n: int, day: str, docs: int) -> None:
        meter.show(f"index: {i}/{n} days ({day}, {docs} messages)", last=i == n)

    return show


@cli.command("index")
@click.option("--rebuild", is_flag=True, help="Rebuild every day, fresh or not.")
@click.option("--check", is_flag=True, help="Report stale or damaged days (exit 1 if any); build nothing.")
@click.option("--no-vectors", is_flag=True, help="BM25 only: do not embed (fast; vector and hybrid then need a rebuild).")
@click.option("--jobs", type=click.IntRange(min=0), default=1, show_default=True,
              help="Build days in this many worker processes (0: one per CPU). Each loads the model (~150 MB).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with what was done.")
@root_option
@handle_errors
def index_cmd(rebuild: bool, check: bool, no_vectors: bool, jobs: int, as_json: bool, root: Path) -> None:
    """Build or refresh the search index under <root>/index/ (derived from the log, rebuildable any time).

    One unit per UTC day: BM25 postings (Russian/English stemming, ё→е) and int8 message embeddings. Only days whose
    files changed since they were indexed are rebuilt; `eventlog search` does the same for the days it reads. Past
    months are also merged into month packs (fewer, larger arrays per query; rebuilt when a member day changes).

    \b
    Example:
      eventlog index            # incremental; progress on a terminal
      eventlog index --check    # exit 0 fresh, 1 stale days listed, 2 damaged
    """
    from ..search import embed, index

    ensure_root(root)
    t0 = time.monotonic()
    missing = None if no_vectors else embed.available()
    if missing and not as_json:
        click.echo(f"eventlog: index without vectors (hybrid search falls back to BM25): {missing}", err=True)
    if check:
        from ..search.check import check as run_check

        c = run_check(root, vectors=not no_vectors)
        if as_json:
            emit_json({"fresh": c.fresh, "stale": c.stale, "removed": c.removed, "damaged": c.damaged,
                       "stale_packs": c.stale_packs})
        else:
            for d in c.stale:
                click.echo(f"stale: {d}")
            for m in c.stale_packs:
                click.echo(f"stale pack: {m} (its days are read one by one until `eventlog index` rebuilds it)")
            for d in c.removed:
                click.echo(f"gone: {d} (its day files no longer exist)")
            for msg in c.damaged:
                click.echo(f"damaged: {msg}", err=True)
            click.echo(f"{c.fresh} day(s) fresh, {len(c.stale)} stale, {len(c.damaged)} damaged", err=True)
        sys.exit({"damaged": 2, "stale": 1, "fresh": 0}[c.state])
    prog = index.update(root, rebuild=rebuild, vectors=not no_vectors, jobs=jobs,
                        progress=None if as_json else index_progress())
    took = time.monotonic() - t0
    if as_json:
        emit_json({"built": prog.built, "fresh": prog.fresh, "removed": prog.removed, "messages": prog.messages,
                   "packs": prog.packs,
                   "seconds": round(took, 3), "bytes": index.size_bytes(root), "vectors": index.model_name(not no_vectors),
                   "fallback": missing})
    else:
        click.echo(f"index: {len(prog.built)} day(s) built ({prog.messages} messages), {prog.fresh} fresh, "
                   f"{len(prog.removed)} removed, {len(prog.packs)} month pack(s) built in {took:.1f} s; {index.size_bytes(root) / 1e6:.1f} MB", err=True)


@cli.command("search")
@click.argument("query")
@click.option("--mode", type=click.Choice(["text", "fuzzy", "bm25", "vector", "hybrid", "rrf"]), default="hybrid",
              show_default=True, help="text/fuzzy: grep (every word must match); bm25 (a question's content words); vector; hybrid: weighted fusion; "
                                      "rrf: reciprocal rank fusion.")
@click.option("--weight", type=float, default=0.3, show_default=True,  # = search.DEFAULT_WEIGHT (not imported here: start-up)
              help="hybrid: weight of the vector score (the BM25 score gets 1 - weight).")
@click.option("--chat", "chats", multiple=True, metavar="CHAT_ID", help="Only this chat (repeatable).")
@account_option
@click.option("--direction", type=click.Choice(["in", "out"]), default=None, help="Only received (in) or sent (out).")
@click.option("--limit", type=int, default=10, show_default=True, help="At most this many hits.")
@click.option("--candidates", type=int, default=None, metavar="N",
              help="vector/hybrid/rrf: the projection first pass keeps N candidates for exact scoring (default: "
                   "max(2000, 1/170 of the scope); rrf: 0); 0 = every message scored exactly. See docs/search.md.")
@click.option("--question-dates/--no-question-dates", "question_dates", default=True, show_default=True,
              help="bm25/vector/hybrid/rrf without --since/--until: a relative date in the query (yesterday, last week, "
                   "3 days ago, вчера, …) restricts the search to that period, or everything if it holds no hit — as "
                   "the agent tool does.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: rank, score, id, chat_id, account, ts, direction, text.")
@time_range
@root_option
@handle_errors
def search_cmd(query: str, mode: str, weight: float, chats: tuple[str, ...], accounts: tuple[str, ...],
               direction: str | None, limit: int, candidates: int | None, question_dates: bool, as_json: bool,
               since: datetime | None, until: datetime | None, tz: tzinfo, root: Path) -> None:
    """Ranked search over message text. Exit 0 found, 1 nothing, 2 error.

    Filters apply before ranking. Index days in scope that are stale are rebuilt first (never a stale answer).
    Without the embedding model, hybrid falls back to BM25 and says so.

    \b
    Example:
      eventlog search "the laptop broke" --since 30d
      eventlog search "ноутбук" --mode bm25 --chat 100007 --json
      eventlog search "invoice" --account ops
      eventlog search "what did Ann say about the plumber yesterday"
    """
    from ..agent.relative import search_question
    from ..recall.grep import newest
    from ..recall.output import local_ts
    from ..search import SearchQuery, search

    ensure_root(root)
    q = SearchQuery(query, mode=mode, weight=weight, chats=chats or None, since=since, until=until,
                    direction=direction, limit=limit, candidates=candidates, accounts=accounts or None)
    kw: dict[str, Any] = {"progress": index_progress(), "text_scan": newest}
    res, period = search_question(root, q, tz, **kw) if question_dates else (search(root, q, **kw), None)
    for note in ([period] if period else []) + res.notes:
        click.echo(f"eventlog: {note}", err=True)
    for h in res.hits:
        if as_json:
            emit_json({**h.as_json(), "mode": res.mode})
        else:
            click.echo(f"{h.rank:>3} {h.score:7.3f} {local_ts(h.ts, tz)} {h.chat_id} {h.direction or '-':<3} [{h.id}] "
                       f"{h.text.replace(chr(10), ' ')[:200]}")
    sys.exit(0 if res.hits else 1)
