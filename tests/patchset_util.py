"""Helpers for the patch-set tests: a cheap private copy of the real installed OpenClaw, tree snapshots."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from eventlog.patchset.tree import link_clone  # noqa: F401  (re-exported for the tests)
from eventlog.smoke.harness import default_openclaw_dir


def openclaw_source() -> Path:
    src = default_openclaw_dir()
    if not (src / "package.json").is_file():
        pytest.fail(f"openclaw not installed at {src}: run `make openclaw` (these tests need the real dist)")
    return src


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """path -> (inode, size, mtime_ns) for every entry: any write, replace, create or delete shows up."""
    out: dict[str, tuple[int, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_ino, st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns
                                             if not os.path.isdir(p) else 0)
    return out


def same_bytes(a: Path, b: Path) -> list[str]:
    """Relative paths whose bytes differ between two trees, or that exist in only one of them."""
    diff: list[str] = []
    seen: set[str] = set()
    for dirpath, _dirs, filenames in os.walk(a):
        for f in filenames:
            p = Path(dirpath, f)
            rel = p.relative_to(a).as_posix()
            seen.add(rel)
            q = b / rel
            if p.is_symlink() or q.is_symlink():
                if not (p.is_symlink() and q.is_symlink() and os.readlink(p) == os.readlink(q)):
                    diff.append(rel)
            elif not q.is_file() or (p.stat().st_ino != q.stat().st_ino and p.read_bytes() != q.read_bytes()):
                diff.append(rel)
    for dirpath, _dirs, filenames in os.walk(b):
        for f in filenames:
            rel = Path(dirpath, f).relative_to(b).as_posix()
            if rel not in seen:
                diff.append(rel)
    return sorted(diff)


def system_events(root: Path) -> list[dict]:
    """Every system event (channel system, chat eventlog) in log order: oldest day first, lines in file order."""
    import orjson

    from eventlog.store.layout import log_files
    from eventlog.store.reader import iter_lines

    out = []
    for lf in log_files(root, "eventlog", channel="system"):
        for _n, line in iter_lines(lf.path, str(lf.path.relative_to(root))):
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(ev, dict):
                out.append(ev)
    return out
