"""The growing-stream reader behind seal streams and head checkpoints (eventlog/store/growing.py): a read after an
append returns what was appended, a torn tail waits until it is whole, and anything but growth starts again."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from eventlog.store.growing import Growing, read_last_line


def append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


def test_missing_file_is_none(tmp_path: Path) -> None:
    assert Growing().read(tmp_path / "nope.jsonl") is None


@pytest.mark.parametrize("first,steps", [
    (b"a\nb\n", [(b"", [b"a", b"b"]), (b"", []), (b"c\n", [b"c"]), (b"d\ne\n", [b"d", b"e"])]),
    # a torn tail is held back until it is complete
    (b"a\n{\"half", [(b"", [b"a"]), (b"\":1", []), (b"}\nz\n", [b'{"half":1}', b"z"])]),
    (b"", [(b"", []), (b"x\n", [b"x"])]),
], ids=["appended-only", "torn-tail", "empty-then-growth"])
def test_a_read_returns_only_what_was_appended(tmp_path: Path, first: bytes, steps: list) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(first)
    g = Growing()
    for i, (data, lines) in enumerate(steps):
        append(p, data)
        assert g.read(p) == (i == 0, lines), i  # only the first read starts from the beginning


def test_a_replaced_file_starts_again(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"a\nb\n")
    g = Growing()
    g.read(p)
    tmp = tmp_path / "new.jsonl"
    tmp.write_bytes(b"a\nb\nc\n")  # longer, same prefix, but another file
    keep = os.stat(tmp).st_ino
    os.replace(tmp, p)
    assert os.stat(p).st_ino == keep
    assert g.read(p) == (True, [b"a", b"b", b"c"])


def test_a_truncated_file_starts_again(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"a\nb\nc\n")
    g = Growing()
    g.read(p)
    with open(p, "r+b") as f:
        f.truncate(2)
    assert g.read(p) == (True, [b"a"])


@pytest.mark.parametrize("grow", [b"", b"d\n"], ids=["same-size", "then-grown"])
def test_an_edit_at_the_end_starts_again_even_with_size_and_mtime_put_back(tmp_path: Path, grow: bytes) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(b"a\nb\nc\n")
    g = Growing()
    g.read(p)
    st = os.stat(p)
    with open(p, "r+b") as f:  # same inode, same size: the last line changed in place
        f.seek(4)
        f.write(b"X")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    append(p, grow)
    assert os.stat(p).st_ino == st.st_ino
    assert g.read(p) == (True, [b"a", b"b", b"X"] + ([b"d"] if grow else []))


@pytest.mark.parametrize("data,expected", [
    (b"", (None, 0)),
    (b"torn", (None, 0)),
    (b"a\n", (b"a", 2)),
    (b"a\nb\n", (b"b", 4)),
    (b"a\nbb\ntorn", (b"bb", 5)),
], ids=["empty", "only-torn", "one", "two", "torn-tail"])
def test_read_last_line(tmp_path: Path, data: bytes, expected: tuple) -> None:
    p = tmp_path / "s.jsonl"
    p.write_bytes(data)
    fd = os.open(p, os.O_RDONLY)
    try:
        assert read_last_line(fd, len(data)) == expected
    finally:
        os.close(fd)


def test_read_last_line_across_chunks(tmp_path: Path) -> None:
    """A last line longer than the 64 KiB chunk, and its newline just past a chunk's edge, are read whole."""
    long = b"y" * (200 * 1024)
    for data in (b"a\n" + long + b"\n", long + b"\n", b"a\n" + long + b"\n" + b"t" * (64 * 1024)):
        p = tmp_path / "s.jsonl"
        p.write_bytes(data)
        fd = os.open(p, os.O_RDONLY)
        try:
            line, end = read_last_line(fd, len(data))
        finally:
            os.close(fd)
        assert line == long and end == data.index(long) + len(long) + 1
