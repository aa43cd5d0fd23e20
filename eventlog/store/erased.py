"""What one `forget` run erased from the log, as the derived stores need to know it (purge by chat, purge by day).

It lives in the store because it is a fact about the log (which day files, which events); the derived stores (the
Parquet units in recall/, the search index, the DLP streams) read it without importing the operations layer that
produced it — the arrows go from ops down to them and from them down to the store (see ops/erasure.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date


@dataclass(frozen=True)
class ErasedScope:
    """The request (`chat`, `before`: a chat, and/or every day before a day), the day files rewritten in this run
    (`changed`), every day file of the request (`files`, already erased ones included — a run killed before the
    derived stores were purged leaves them for the next run) and the ids of the events erased. A purger must handle
    `changed`, and whatever of `files` it still derives from content. At planning time `changed` is empty."""

    chat: str | None = None
    before: date | None = None
    changed: frozenset[str] = field(default_factory=frozenset)
    files: frozenset[str] = field(default_factory=frozenset)
    event_ids: frozenset[str] = field(default_factory=frozenset)

    def months(self, rels: frozenset[str]) -> set[str]:
        """yyyy-mm of day file relpaths."""
        return {f"{p[4]}-{p[5]}" for p in (rel.split("/") for rel in rels) if len(p) == 7}
