"""What one `forget` run erased from the log, as the derived stores need to know it (purge by chat, purge by day).

It lives in the store because it is a fact about the log (which day files, which events); the derived stores (the
Parquet units in recall/, the search index, the DLP streams) read it without importing the operations layer that
produced it — the arrows go from ops down to them and from them down to the store (see ops/erasure.py)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Callable, Iterator


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


# -- the erasure generation: erasure and derived builds exclude each other ----------------------------------------
# `forget` holds <root>/state/erasure.lock for its whole run and moves the generation (state/erasure, a count) before
# letting go. A derived build (index unit, month pack, Parquet unit) notes the generation before it reads the log and
# publishes under the same lock: if the generation moved meanwhile, what it read may be erased content, so it
# publishes only if its sources are still what it read (`still_valid`), else drops the result. A build that published
# before the forget took the lock is purged by the forget itself (ops/erasure.py).
GENERATION = "state/erasure"
_LOCK = "state/erasure.lock"
PUBLISH_WAIT_S = 5.0  # a publish waiting this long on a running erasure drops its result: the next build redoes it
BEFORE_PUBLISH: list[Callable[[Path, str], None]] = []  # called with (root, what) before each publish: where a test
#                                                         drives a forget into the middle of a build


_ERASING: set[str] = set()  # roots this process is erasing: its own rebuilds (Parquet of the erased log) publish


def generation(root: Path) -> int:
    try:
        return int((root / GENERATION).read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


@contextmanager
def erasing(root: Path) -> Iterator[None]:
    """Held by `forget` around everything it rewrites and purges; the generation moves at the end."""
    from .fsutil import replace_file
    from .lock import FileLock

    (root / "state").mkdir(mode=0o700, exist_ok=True)
    with FileLock(str(root / _LOCK)):
        _ERASING.add(str(root))
        try:
            yield
        finally:
            _ERASING.discard(str(root))
            replace_file(root / GENERATION, str(generation(root) + 1).encode())


@contextmanager
def publishing(root: Path, what: str, read_at: int | None, still_valid: Callable[[], bool]) -> Iterator[bool]:
    """Around a derived store's publish step: yields whether it may publish (True when no erasure ran since the
    generation `read_at` it read the log at, or its sources are unchanged), holding the erasure lock meanwhile."""
    from ..errors import LockTimeout
    from .lock import FileLock

    for hook in BEFORE_PUBLISH:
        hook(root, what)
    if str(root) in _ERASING:  # the erasure's own rebuild, from the log as erased
        yield True
        return
    (root / "state").mkdir(mode=0o700, exist_ok=True)
    lock = FileLock(str(root / _LOCK), timeout=PUBLISH_WAIT_S)
    try:
        lock.acquire()
    except LockTimeout:
        yield False  # an erasure is running: what this build read may be what it erases
        return
    try:
        yield read_at is None or generation(root) == read_at or still_valid()
    finally:
        lock.release()
