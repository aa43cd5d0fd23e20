"""The registry of derived stores that must forget what the log forgets (purge by chat, purge by day).

Design (the arrows of docs/architecture.md): the store knows no reader and no rule, so nothing below ops/ registers
itself here — a derived store cannot import ops/. Instead each derived store exposes a purger in its own package,
written against the store's `ErasedScope` (store/erased.py), and this module wires them in one table at the bottom:

    dlp      eventlog/dlp/purge.py        alerts lose content fields, reviews of them their notes (plan + purge)
    index    eventlog/search/index.py     drop the day units holding an erased file (rebuilt on the next search)
    parquet  eventlog/recall/purge.py     delete the months' units, rebuild them from the erased log
    sql-lines eventlog/recall/linecounts.py  drop the cached skipped-line counts of the erased files

A purger takes (root, scope) and returns counts for the `log:erased` event; an optional planner returns what it would
erase without changing anything (and refuses what it cannot erase) — `forget` plans first and records the plan before
it writes. Loaders are lazy: the index pulls numpy and the stemmers, which a forget without an index needs not.
Purgers run in name order, after the day files; each must delete first and rebuild second, so a failed rebuild
leaves no content behind. ops/forget.py knows only this registry, not the stores behind it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..store.erased import ErasedScope

Counts = dict[str, int]


@dataclass(frozen=True)
class Derived:
    purge: Callable[[Path, ErasedScope], Counts]
    plan: Callable[[Path, ErasedScope], Counts] | None = None


_DERIVED: dict[str, Callable[[], Derived]] = {}


def register_derived(name: str, load: Callable[[], Derived]) -> None:
    _DERIVED[name] = load


def plan_derived(root: Path, scope: ErasedScope) -> dict[str, Counts]:
    """name → what its planner says it would erase (stores without a planner are left out)."""
    loaded = {name: load() for name, load in sorted(_DERIVED.items())}
    return {name: d.plan(root, scope) for name, d in loaded.items() if d.plan is not None}


def erase_derived(root: Path, scope: ErasedScope) -> dict[str, Counts]:
    """Run every registered purger; name → its counts."""
    return {name: load().purge(root, scope) for name, load in sorted(_DERIVED.items())}


def _dlp() -> Derived:
    from ..dlp import purge

    return Derived(purge.purge, purge.plan)


def _index() -> Derived:
    from ..search.index import purge

    return Derived(lambda root, scope: {"units_deleted": len(purge(root, files=scope.files))})


def _parquet() -> Derived:
    from ..recall.purge import purge

    return Derived(purge)


def _linecounts() -> Derived:
    from ..recall import linecounts

    return Derived(lambda root, scope: linecounts.purge(root, scope.files))


register_derived("dlp", _dlp)
register_derived("index", _index)
register_derived("parquet", _parquet)
register_derived("sql-lines", _linecounts)
