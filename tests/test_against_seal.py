"""The one comparison of a day file with its seal (store/verify.py `against_seal`), which `verify` and `lake push`
share: each way a file can differ from its seal, and what each of the two makes of it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lake_support import build_root

from eventlog.lake.source import damage_of, sealed_files
from eventlog.store.commitment import chain_hash
from eventlog.store.verify import against_seal

H = ["h1", "h2", "h3", "h4"]
E = [10, 20, 30, 40]


@pytest.mark.parametrize("hashes,ends,lines,last,size,want", [
    (H[:3], E[:3], 3, "h3", 30, []),
    (H[:2], E[:2], 3, "h3", 30, ["truncated"]),
    ([], [], 1, "h1", 10, ["truncated"]),
    (H[:3], E[:3], 3, "hX", 30, ["modified"]),
    (H[:3], E[:3], 3, "h3", 31, ["resized"]),
    (H, E, 3, "h3", 30, ["extended"]),
    (H, E, 3, "h3", 29, ["resized", "extended"]),
    (H, E, 3, "hX", 29, ["modified"]),
], ids=["exact", "truncated", "empty", "modified", "resized", "extended", "resized-extended", "modified-wins"])
def test_against_seal(hashes: list[str], ends: list[int], lines: int, last: str, size: int, want: list[str]) -> None:
    assert against_seal(hashes, ends, lines, last, size) == want


def test_what_lake_push_refuses(tmp_path: Path) -> None:
    root = tmp_path / "root"
    rels = build_root(root, chats=("42",), days=2)
    sealed = sealed_files(root)
    rel = next(r for r in rels if r in sealed)
    sf = sealed[rel]
    assert damage_of(root, rel, sf) == []
    # a seal of the first lines only: the last line comes after it, is not shipped, and is no damage
    lines = (root / rel).read_bytes().splitlines(keepends=True)
    assert damage_of(root, rel, replace(sf, lines=sf.lines - 1, bytes=sf.bytes - len(lines[-1]),
                                        last=chain_hash(lines[-2].rstrip(b"\n")))) == []
    # the seal says another size for the same lines: the sealed bytes are not what the seal recorded
    (problem,) = damage_of(root, rel, replace(sf, bytes=sf.bytes + 1))
    assert "sealed part modified" in problem.reason and problem.line == sf.lines
    (problem,) = damage_of(root, rel, replace(sf, lines=sf.lines + 5))
    assert problem.reason.startswith("truncated:")
    (problem,) = damage_of(root, rel, replace(sf, last="0" * 64))
    assert "sealed part modified" in problem.reason

