"""Unified diffs of the patch set for one release: the readable record, generated, never hand-written."""
from __future__ import annotations

import difflib
from pathlib import Path

from eventlog.patchset.errors import PatchError
from eventlog.patchset.install import openclaw_version, plan, status
from eventlog.patchset.locate import decode, scan_tree
from eventlog.patchset.manifest import Manifest, load_manifest


def render_diffs(pkg: Path, manifest: Manifest | None = None) -> dict[str, str]:
    """change id -> unified diff (git-style a/ b/ paths) computed in memory from a pristine tree."""
    m = manifest or load_manifest()
    scan = scan_tree(pkg, m)
    st = status(pkg, m, scan)
    if st["state"] != "not-applied":
        raise PatchError("not-pristine", f"diffs need an unpatched tree; {pkg} is {st['state']}")
    out: dict[str, str] = {}
    for e in plan(pkg, m, scan):
        old = decode(e["old"]).splitlines(keepends=True)
        new = decode(e["new"]).splitlines(keepends=True)
        out[e["change"]] = "".join(difflib.unified_diff(old, new, "a/" + e["target"], "b/" + e["target"], n=3))
    return out


def write_diffs(pkg: Path, out_dir: Path | None = None, manifest: Manifest | None = None) -> list[Path]:
    m = manifest or load_manifest()
    version = openclaw_version(pkg)
    from eventlog.patchset.paths import diffs_dir
    out_dir = out_dir or diffs_dir(version)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for cid, text in render_diffs(pkg, m).items():
        p = out_dir / f"{cid}.diff"
        p.write_text(text, encoding="utf-8", errors="surrogateescape")
        written.append(p)
    return written
