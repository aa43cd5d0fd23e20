"""The Parquet units' purger for `forget` (registered in ops/erasure.py): delete the units of every month the erasure
touched, then rebuild them from the erased log with compaction's own builder — the rebuilt copy holds the
commitments, not the content. Delete first, rebuild second: a failed rebuild leaves no content behind."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..store.erased import ErasedScope
from ..store.fsutil import fsync_dir
from . import freshness
from .compact import PARQUET_DIR, load_units, rebuild_months


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


def purge(root: Path, scope: ErasedScope) -> dict[str, int]:
    """Delete the units (record, Parquet, vocabulary) of every month with a day file erased now — or erased earlier
    but still newer than its unit (the unit records each source's size) — then rebuild them."""
    d = root / PARQUET_DIR
    months = scope.months(scope.changed)
    in_scope = scope.months(scope.files)
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
        fsync_dir(d)
    rebuilt = rebuild_months(root, deleted) if deleted else []
    return {"units_deleted": len(deleted), "units_rebuilt": len(rebuilt)}
