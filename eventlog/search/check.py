"""`eventlog index --check`: what is stale, gone or damaged in the derived index, without building anything."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import index, pack, store


@dataclass
class IndexCheck:
    fresh: int  # days whose unit matches their day files
    stale: list[str]  # days whose files changed since they were indexed (or that were never indexed)
    removed: list[str]  # indexed days whose day files no longer exist
    stale_packs: list[str]  # month packs a member day of which changed
    damaged: list[str]  # units or packs whose data does not load or match its record, one message each

    @property
    def state(self) -> str:
        """damaged (worst), stale (something to rebuild), or fresh."""
        if self.damaged:
            return "damaged"
        return "stale" if self.stale or self.removed or self.stale_packs else "fresh"


def check(root: Path, vectors: bool = True) -> IndexCheck:
    """Scan the index against the log (as `eventlog index` would, building nothing), and load every unit's and
    pack's data against its record — any record version, so a unit an older release wrote is checked too."""
    prog = index.update(root, vectors=vectors, check_only=True)
    damaged = [msg for sub in ("units", pack.PACK_DIR)
               for rec in store.load_records(root, any_version=True, subdir=sub).values()
               if (msg := store.check_data(root, rec, sub))]
    return IndexCheck(prog.fresh, prog.built, prog.removed, prog.packs, damaged)
