"""fsutil.replace_file: the one atomic write every module uses (log rewrites, Parquet records, OpenClaw runtime files)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from eventlog.store.fsutil import replace_file


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_private_by_default_and_explicit_mode_kept_under_any_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        replace_file(tmp_path / "shared.js", b"x", mode=0o644)  # the gateway may run as another user
    finally:
        os.umask(0o000)
    try:
        replace_file(tmp_path / "private.json", b"y")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "shared.js") == 0o644
    assert _mode(tmp_path / "private.json") == 0o600
    assert (tmp_path / "shared.js").read_bytes() == b"x"


def test_replaces_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "unit.json"
    target.write_bytes(b"old contents that are longer")
    replace_file(target, b"new", "tag")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["unit.json"]


def test_a_failed_rename_removes_the_temporary_and_keeps_the_target(tmp_path: Path) -> None:
    target = tmp_path / "dir-in-the-way"
    target.mkdir()
    (target / "child").write_bytes(b"c")  # rename(file, non-empty dir) fails with EISDIR/ENOTEMPTY
    with pytest.raises(OSError):
        replace_file(target, b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir-in-the-way"]
    assert (target / "child").read_bytes() == b"c"
