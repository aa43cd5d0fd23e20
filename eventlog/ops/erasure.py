"""Derived stores that must forget what the log forgets: one registry, called by `eventlog forget`.

A derived store (the Parquet units and their vocabularies today; a search index under `index/` tomorrow) registers a
function that, given what was erased, deletes whatever it derived from those files and rebuilds it from the (now
erased) log. It must not leave content behind even if the rebuild fails: delete first, rebuild second.

    from eventlog.ops.erasure import register_derived

    @register_derived("index")
    def _forget_index(root: Path, scope: ErasedScope) -> dict[str, int]:
        ...  # delete/rebuild index/ entries of scope.files; return counts for the log:erased event
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..recall import freshness
from ..recall.compact import PARQUET_DIR


@dataclass(frozen=True)
class ErasedScope:
    """What `forget` did: the day files it rewrote in this run (`changed`), every day file of the request (`files`,
    already erased ones included — a run killed before this step leaves them for the next run) and the ids of the
    events erased. An eraser must handle `changed`, and whatever of `files` it still derives from content."""

    changed: frozenset[str]
    files: frozenset[str] = field(default_factory=frozenset)
    event_ids: frozenset[str] = field(default_factory=frozenset)


def months_of(rels: frozenset[str]) -> set[str]:
    """yyyy-mm of day file relpaths."""
    return {f"{p[4]}-{p[5]}" for p in (rel.split("/") for rel in rels) if len(p) == 7}


DerivedEraser = Callable[[Path, ErasedScope], dict[str, int]]
_DERIVED: dict[str, DerivedEraser] = {}


def register_derived(name: str) -> Callable[[DerivedEraser], DerivedEraser]:
    def deco(fn: DerivedEraser) -> DerivedEraser:
        _DERIVED[name] = fn
        return fn

    return deco


def erase_derived(root: Path, scope: ErasedScope) -> dict[str, dict[str, int]]:
    """Run every registered eraser; name → its counts."""
    return {name: fn(root, scope) for name, fn in sorted(_DERIVED.items())}


def _holds_other_bytes(root: Path, rel: str, source: Any) -> bool:
    """Whether a unit was built from bytes other than the file's current ones: its record keeps, per source, the size
    and the SHA-256 of what it copied (`[size, lines, identity, sha256]`). The identity alone cannot tell — a file
    rewritten moments before the rebuild has none (compact's racy rule) — so this reads the file."""
    if not (isinstance(source, list) and len(source) >= 4):
        return True  # an older record without a digest: rebuild it to be sure
    size, digest = source[0], source[3]
    try:
        if os.stat(root / rel).st_size != size:
            return True
        return freshness.content_digest(root / rel, size) != digest
    except FileNotFoundError:
        return True


@register_derived("parquet")
def _forget_parquet(root: Path, scope: ErasedScope) -> dict[str, int]:
    """Delete the units (record, Parquet, vocabulary) of every month with a day file erased now — or erased earlier
    but still newer than its unit (the unit records each source's size) — then rebuild them with compact's own
    builder: the rebuilt copy holds the commitments, not the content."""
    from ..recall.compact import load_units, rebuild_months

    d = root / PARQUET_DIR
    months = months_of(scope.changed)
    in_scope = months_of(scope.files)
    for unit in load_units(root):
        if unit.name in in_scope and unit.name not in months:
            for rel in scope.files & set(unit.sources):
                if _holds_other_bytes(root, rel, unit.record["sources"].get(rel)):
                    months.add(unit.name)
                    break
    deleted = []
    for name in sorted(months):
        files = [d / f"{name}.json"] + sorted(d.glob(f"{name}.*.parquet")) + sorted(d.glob(f"{name}.*.vocab")) \
            + sorted(d.glob(f".{name}.*"))  # temporaries of a build that was killed
        present = [f for f in files if f.exists()]
        if not present:
            continue
        for f in present:  # the record first: a kill from here on leaves no unit, and queries read the JSONL
            f.unlink(missing_ok=True)
        deleted.append(name)
    if deleted:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    rebuilt = rebuild_months(root, deleted) if deleted else []
    return {"units_deleted": len(deleted), "units_rebuilt": len(rebuilt)}


@register_derived("index")
def _forget_index(root: Path, scope: ErasedScope) -> dict[str, int]:
    """Drop the search-index day units holding any file of the request; `eventlog index` / `search` rebuild them from
    the erased log. Imported lazily: the index pulls numpy and the stemmers, which a forget without an index needs not."""
    from ..search.index import purge

    return {"units_deleted": len(purge(root, files=scope.files))}
