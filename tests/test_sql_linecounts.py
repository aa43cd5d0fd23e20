"""`eventlog sql`'s skipped-line counts are remembered per file (eventlog/recall/linecounts.py): a second query reads
only the files that changed, reports exactly what a full count reports, keeps nothing under the root, and `forget`
drops the entries of what it erased."""
from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.recall import freshness, linecounts, query
from eventlog.store.erased import GENERATION, generation
from eventlog.store.writer import EventLog

OLD = time.time() - 3600  # older than freshness.RACY_NS: a file's identity can be recorded
COUNT = query._count_invalid  # the oracle's, never the spy's


def ev(chat: str, day: int, i: int) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": chat,
            "ts": f"2026-11-{day:02d}T10:00:{i:02d}Z", "direction": "in", "message_id": i, "text": f"hello {i}"}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVENTLOG_CACHE", str(tmp_path / "cache"))
    # a file written by the test stays "just modified" (freshness's racy rule) for 10 min, not 2 s: a slow machine
    # cannot make a count the test expects to be redone a remembered one
    monkeypatch.setattr(freshness, "RACY_NS", 600 * 10**9)
    r = tmp_path / "root"
    EventLog(r, fsync="never").append_many([ev(c, d, i) for c in ("1", "2") for d in (1, 2, 3) for i in range(3)])
    for p in (r / "raw").rglob("*.jsonl"):
        os.utime(p, (OLD, OLD))
    return r


def day(root: Path, chat: str, d: int) -> Path:
    return next(p for p in (root / "raw").rglob(f"{d:02d}.jsonl") if f"/{chat}/" in str(p))


def counted(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, int]], list[str]]:
    """The skipped lines `eventlog sql` would report over the whole root, and the files it read to count them."""
    read: list[str] = []
    def spy(con, r, paths):  # type: ignore[no-untyped-def]
        read.extend(paths)
        return COUNT(con, r, paths)

    monkeypatch.setattr(query, "_count_invalid", spy)
    scope = query.scope_from(root, None, None, None)
    con, src = query.connect(scope)
    try:
        return query.invalid_lines(con, src, root), read
    finally:
        con.close()


def full(root: Path) -> list[tuple[str, int]]:
    """The oracle: every file counted, no cache."""
    scope = query.scope_from(root, None, None, None)
    con, src = query.connect(scope)
    try:
        return sorted((f, n) for f, n in COUNT(con, root, src.jsonl).items() if n)
    finally:
        con.close()


def test_only_changed_files_are_read_again(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad, read = counted(root, monkeypatch)
    assert bad == [] and len(read) == 6
    assert counted(root, monkeypatch) == ([], [])  # nothing changed: no file is read
    torn = day(root, "2", 2)
    with open(torn, "ab") as f:
        f.write(b'{"no": "id"}\nnot json\n{"v":2,"id":"01TORN')
    bad, read = counted(root, monkeypatch)
    rel = str(torn.relative_to(root))
    assert bad == [(rel, 3)] == full(root) and read == [str(torn)]
    # just written, so its identity is not trusted yet (freshness's racy rule): read each time until it is older
    assert counted(root, monkeypatch) == ([(rel, 3)], [str(torn)])
    os.utime(torn, (OLD, OLD))
    assert counted(root, monkeypatch) == ([(rel, 3)], [str(torn)])
    assert counted(root, monkeypatch) == ([(rel, 3)], [])  # remembered, and still reported
    # completed: the torn tail becomes a line (without an id: still skipped), and the count follows the file
    with open(torn, "ab") as f:
        f.write(b'"}\n')
    os.utime(torn, (OLD + 1, OLD + 1))
    assert counted(root, monkeypatch) == ([(rel, 3)], [str(torn)]) and full(root) == [(rel, 3)]


def test_a_same_size_rewrite_is_seen(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted(root, monkeypatch)
    p = day(root, "1", 3)
    data = p.read_bytes()
    st = p.stat()
    p.write_bytes(data[:-2] + b"X\n")  # same size, in place, mtime put back: ctime still moves
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    bad, read = counted(root, monkeypatch)
    assert read == [str(p)] and bad == [(str(p.relative_to(root)), 1)] == full(root)


def test_the_cli_reports_the_same_and_writes_nothing_under_the_root(root: Path, tmp_path: Path) -> None:
    with open(day(root, "1", 1), "ab") as f:
        f.write(b"garbage\n")
    os.utime(day(root, "1", 1), (OLD, OLD))
    before = sorted(str(p) for p in root.rglob("*"))
    outs = []
    for _ in range(2):
        r = CliRunner().invoke(cli, ["sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root)])
        assert r.exit_code == 0, r.output
        outs.append((r.stdout, r.stderr))
    assert outs[0] == outs[1] and "skipped 1 torn or invalid line(s)" in outs[0][1]
    assert sorted(str(p) for p in root.rglob("*")) == before
    cached = list((tmp_path / "cache" / "sql-lines").iterdir())
    assert len(cached) == 1 and b"/1/" not in cached[0].read_bytes() and b"telegram" not in cached[0].read_bytes()


def test_a_damaged_or_unwritable_cache_is_only_slower(root: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    counted(root, monkeypatch)
    (cache_file,) = (tmp_path / "cache" / "sql-lines").iterdir()
    good = orjson.loads(cache_file.read_bytes())
    assert good["rule"] and len(good["files"]) == 6
    for damage in (b"{not json", b'{"format": 1, "rule": "r", "files": {"x": [1, "a"]}}', b"[]",
                   b'{"format": 99, "files": {}}', orjson.dumps({**good, "rule": "another rule"}),
                   orjson.dumps({k: v for k, v in good.items() if k != "rule"})):
        cache_file.write_bytes(damage)
        bad, read = counted(root, monkeypatch)
        assert bad == [] and len(read) == 6
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("EVENTLOG_CACHE", str(blocker))
    for _ in range(2):
        bad, read = counted(root, monkeypatch)
        assert bad == [] and len(read) == 6


def test_forget_drops_the_entries_of_what_it_erased(root: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    counted(root, monkeypatch)
    (cache_file,) = (tmp_path / "cache" / "sql-lines").iterdir()
    rels = [str(p.relative_to(root)) for p in (root / "raw").rglob("*.jsonl") if "/1/" in str(p)]
    keys = set(orjson.loads(cache_file.read_bytes())["files"])
    assert len(rels) == 3 and {linecounts._file_key(r) for r in rels} <= keys
    r = CliRunner().invoke(cli, ["forget", "--chat", "1", "--reason", "test", "--yes", "--json", "--root", str(root)])
    assert r.exit_code == 0, r.output
    left = set(orjson.loads(cache_file.read_bytes())["files"])
    assert left == keys - {linecounts._file_key(r) for r in rels} and len(left) == 3
    assert orjson.loads(r.stdout.splitlines()[-1])["derived"]["sql-lines"] == {"entries_deleted": 3}


def test_no_cache_directory_at_all(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def nowhere() -> Path:
        raise RuntimeError("Could not determine home directory.")  # Path.home() with no HOME and no passwd entry

    monkeypatch.setattr(linecounts, "cache_dir", nowhere)
    for _ in range(2):
        bad, read = counted(root, monkeypatch)
        assert bad == [] and len(read) == 6
    assert linecounts.purge(root, ["raw/x"]) == {"entries_deleted": 0}


def test_a_forget_while_counting_is_not_undone(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forget that purges the cache while a query counts: the query writes nothing back, so the erased files'
    entries stay gone."""
    counted(root, monkeypatch)
    (cache_file,) = (tmp_path / "cache" / "sql-lines").iterdir()
    rels = [str(p.relative_to(root)) for p in (root / "raw").rglob("*.jsonl") if "/1/" in str(p)]
    changed = day(root, "1", 2)
    with open(changed, "ab") as f:
        f.write(b"garbage\n")
    os.utime(changed, (OLD + 5, OLD + 5))

    def forget_meanwhile(con, r, paths):  # type: ignore[no-untyped-def]
        assert linecounts.purge(root, rels) == {"entries_deleted": 3}
        (root / GENERATION).parent.mkdir(exist_ok=True)
        (root / GENERATION).write_text(str(generation(root) + 1))  # what `forget` does as it ends
        return COUNT(con, r, paths)

    monkeypatch.setattr(query, "_count_invalid", forget_meanwhile)
    scope = query.scope_from(root, None, None, None)
    con, src = query.connect(scope)
    try:
        assert query.invalid_lines(con, src, root) == [(str(changed.relative_to(root)), 1)]
    finally:
        con.close()
    keys = set(orjson.loads(cache_file.read_bytes())["files"])
    assert not keys & {linecounts._file_key(r) for r in rels} and len(keys) == 3
