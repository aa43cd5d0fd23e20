"""PLACEHOLDER (helper `lake`): helper `lakepg` owns this module; its erase.py replaces this file at merge.

Only what lake's push needs to call through the agreed signature, so its tests import and run: the lake-notes
§2-3 sequence. The statistics fix (§4) and the catalog VACUUM (§5) are lakepg's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import duckdb


def scrub(con: "duckdb.DuckDBPyConnection", lake: str = "lake", content_tables: Sequence[str] = ("lines",)
          ) -> dict[str, int]:
    counts = {"rewritten": 0, "removed_files": 0}
    for table in content_tables:
        counts["rewritten"] += len(con.execute(
            "CALL ducklake_rewrite_data_files($l, $t, delete_threshold => 0)", {"l": lake, "t": table}).fetchall())
    con.execute("SELECT count(*) FROM ducklake_expire_snapshots($l, older_than => now())", {"l": lake}).fetchall()
    counts["removed_files"] += len(con.execute("CALL ducklake_cleanup_old_files($l, cleanup_all => true)",
                                               {"l": lake}).fetchall())
    counts["removed_files"] += len(con.execute("CALL ducklake_delete_orphaned_files($l, cleanup_all => true)",
                                               {"l": lake}).fetchall())
    return counts
