"""`eventlog lake push` into a SQLite catalog: what ships, idempotence, resumability, concurrency, refusal, input
errors, erasure reaching the lake (the same multi-gateway checks on PostgreSQL: tests/test_lake_pg*.py)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from lake_support import FIRST, build_root, data_bytes, extensions_dir_fixture, lake_fixture, query, run_cli  # noqa: F401
from store_support import REPO, ev

from eventlog.lake.catalog import parse_catalog
from eventlog.lake.extensions import LakeError
from eventlog.lake.push import push


def _push(root: Path, lake: tuple[str, str], gateway: str | None = None, **kw):
    return push(root, parse_catalog(lake[0]), lake[1] + "/", gateway, **kw)


def _lines_of(root: Path, rel: str) -> list[str]:
    return (root / rel).read_text().splitlines()


def test_push_ships_every_sealed_line_as_stored_and_a_second_push_reads_nothing(root, lake):
    rels = build_root(root, days=3)
    from eventlog.store.writer import EventLog
    EventLog(root, fsync="never", autoseal=False).append(ev(chat="42", ts=f"{FIRST + timedelta(days=5)}T09:00:00.000Z"))
    r = _push(root, lake, "gw-a")
    assert (r.files_new, r.lines_added, r.files_read) == (6, 18, 6)  # the open day (not sealed) waits
    got = query(*lake, "SELECT file, line, event, hash, id, prev, chat, account, channel FROM lake.lines "
                       "WHERE gateway = 'gw-a' ORDER BY file, line")
    want = [(rel, n, text) for rel in rels
            for n, text in enumerate(_lines_of(root, rel), 1)]
    assert [(f, n, e) for f, n, e, *_ in got] == sorted(want)
    from eventlog.store.commitment import chain_hash
    for _f, _n, e, h, i, prev, chat, account, channel in got:
        obj = json.loads(e)
        assert (h, i, prev, chat, account, channel) == (chain_hash(e.encode()), obj["id"], obj["prev"],
                                                       obj["chat_id"], "default", "telegram")
    heads = query(*lake, "SELECT head, files, lines FROM lake.heads")
    assert heads == [(r.head, 6, 18)] and r.head
    snaps = query(*lake, "SELECT count(*) FROM lake.snapshots()")
    again = _push(root, lake)  # the gateway's name comes from the root now
    assert (again.gateway, again.files_unchanged, again.files_read, again.lines_added, again.transactions) == \
        ("gw-a", 6, 0, 0, 0)
    assert query(*lake, "SELECT count(*) FROM lake.snapshots()") == snaps  # nothing committed at all
    assert query(*lake, "SELECT count(*) FROM lake.lines") == [(18,)]


def test_a_later_sealed_day_is_pushed_alone(root, lake):
    build_root(root, days=2)
    _push(root, lake, "gw")
    build_root(root, days=1, first=FIRST + timedelta(days=2), text="later")
    r = _push(root, lake)
    assert (r.files_new, r.files_unchanged, r.files_read, r.lines_added) == (2, 4, 2, 6)
    assert query(*lake, "SELECT count(*), count(DISTINCT id) FROM lake.lines") == [(18, 18)]


def test_touched_file_is_read_once_and_not_reshipped(root, lake):
    rels = build_root(root, days=1)
    _push(root, lake, "gw")
    os.utime(root / rels[0], ns=(1, 1))
    r = _push(root, lake)
    assert (r.files_restat, r.files_read, r.lines_added, r.lines_deleted) == (1, 1, 0, 0)
    assert _push(root, lake).files_read == 0  # the new stat was recorded


def test_two_gateways_keep_a_shared_chat_apart(tmp_path, lake):
    a, b = tmp_path / "a", tmp_path / "b"
    build_root(a, chats=("42", "7"), text="from a")
    build_root(b, chats=("42",), text="from b")
    _push(a, lake, "alpha")
    _push(b, lake, "beta")
    rows = query(*lake, "SELECT gateway, chat, count(*), count(DISTINCT id), bool_and(event LIKE '%from ' || "
                        "CASE gateway WHEN 'alpha' THEN 'a' ELSE 'b' END || '%') FROM lake.lines GROUP BY ALL ORDER BY ALL")
    assert rows == [("alpha", "42", 9, 9, True), ("alpha", "7", 9, 9, True), ("beta", "42", 9, 9, True)]
    assert query(*lake, "SELECT count(*) FROM (SELECT gateway, id FROM lake.lines GROUP BY ALL HAVING count(*) > 1)"
                 ) == [(0,)]
    # another root under a name the lake knows is refused; a root's name does not change
    c = tmp_path / "c"
    build_root(c, chats=("9",))
    with pytest.raises(LakeError, match="another root's"):
        _push(c, lake, "alpha")
    with pytest.raises(LakeError, match="pushes as gateway 'alpha'"):
        _push(a, lake, "gamma")


def _env(data_dir: Path, home: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "EVENTLOG_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    return env if home is None else {**env, "HOME": str(home)}


def test_concurrent_pushes_in_processes_add_each_line_once(tmp_path, lake, _extensions_dir):
    a, b = tmp_path / "a", tmp_path / "b"
    build_root(a, days=4)
    build_root(b, days=4, text="other")
    cmd = [sys.executable, "-m", "eventlog", "lake", "push", "--catalog", lake[0], "--data", lake[1], "--json"]
    home = tmp_path / "home"
    home.mkdir()
    procs = [subprocess.Popen(cmd + ["--root", str(r), "--gateway", g], env=_env(_extensions_dir, home),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r, g in ((a, "one"), (a, "one"), (b, "two"), (b, "two"))]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outs]
    added = [json.loads(o[0])["lines_added"] for o in outs]
    assert sorted(added) == [0, 0, 24, 24]  # the second push of each gateway found everything shipped
    assert query(*lake, "SELECT gateway, count(*), count(DISTINCT (file, line)), count(DISTINCT id) FROM lake.lines "
                        "GROUP BY ALL ORDER BY ALL") == [("one", 24, 24, 24), ("two", 24, 24, 24)]
    assert query(*lake, "SELECT gateway, count(*) FROM lake.files GROUP BY ALL ORDER BY ALL") == [("one", 8), ("two", 8)]
    assert list(home.iterdir()) == []  # no ~/.duckdb: the extensions live in the data dir
    assert sorted(p.name for p in (_extensions_dir / "duckdb-extensions").iterdir()) == ["1.5.5"]


def test_without_the_extra_it_is_one_line(monkeypatch):
    from eventlog.lake import extensions

    monkeypatch.setitem(extensions.WHEELS, "nosuch", "duckdb-extension-nosuch")  # a wheel that is not installed
    with pytest.raises(LakeError, match=r"install openclaw-eventlog\[lake\]"):
        extensions.extension_file("nosuch")


_KILLER = """
import os, sys
from pathlib import Path
from eventlog.lake import push as p
from eventlog.lake.catalog import parse_catalog
p.BEFORE_COMMIT.append(lambda what, n: os.kill(os.getpid(), 9) if (what, n) == ("batch", 3) else None)
p.push(Path(sys.argv[1]), parse_catalog(sys.argv[2]), sys.argv[3], "gw", batch_files=2)
"""


def test_a_killed_push_leaves_whole_files_and_the_next_completes_it(root, lake, _extensions_dir):
    build_root(root, days=5)  # 10 day files: 5 batches of 2
    proc = subprocess.run([sys.executable, "-c", _KILLER, str(root), lake[0], lake[1] + "/"],
                          env=_env(_extensions_dir), capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    # the first two batches committed (the gateway's row took one transaction), the third died before its COMMIT
    consistent = ("SELECT f.file, f.lines, count(l.line) FROM lake.files f LEFT JOIN lake.lines l "
                  "ON l.gateway = f.gateway AND l.file = f.file GROUP BY ALL HAVING f.lines <> count(l.line)")
    assert query(*lake, consistent) == []
    assert query(*lake, "SELECT count(*) FROM lake.lines WHERE file NOT IN (SELECT file FROM lake.files)") == [(0,)]
    shipped = query(*lake, "SELECT count(*) FROM lake.files")[0][0]
    assert 0 < shipped < 10 and shipped % 2 == 0
    r = _push(root, lake)
    assert (r.files_new, r.files_unchanged) == (10 - shipped, shipped)
    assert query(*lake, "SELECT count(*), count(DISTINCT (file, line)) FROM lake.lines") == [(30, 30)]


def test_a_root_that_does_not_verify_ships_nothing(root, lake):
    rels = build_root(root, days=2)
    lines = _lines_of(root, rels[0])
    lines[1] = lines[1].replace("hello", "HELLO")
    (root / rels[0]).write_text("\n".join(lines) + "\n")
    r = run_cli("lake", "push", "--catalog", lake[0], "--data", lake[1], "--gateway", "gw", "--root", str(root))
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "the root does not verify, nothing shipped" in r.stderr
    assert rels[0] in r.stderr
    assert not Path(lake[0][len("sqlite:"):]).exists() or query(*lake, "SELECT count(*) FROM lake.lines") == [(0,)]
    assert not (root / "state" / "lake-gateway").exists()


def test_damage_after_a_push_changes_nothing_in_the_lake(root, lake):
    build_root(root, days=2)
    _push(root, lake, "gw")
    seal = next((root / "seals").rglob("42.jsonl"))
    seal.write_bytes(seal.read_bytes().replace(b'"lines":3', b'"lines":2', 1))
    with pytest.raises(LakeError, match="does not verify"):
        _push(root, lake)
    assert query(*lake, "SELECT count(*) FROM lake.lines") == [(12,)]  # the seal stream's own chain broken


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("catalog, data, says", [
    ("mysql:x", None, "bad catalog 'mysql:x'"),
    ("sqlite:", None, "bad catalog"),
    ("sqlite:/no/such/dir/c.sqlite", None, "no directory /no/such/dir"),
    ("postgres:dbname=x bogus=1", None, "unknown libpq key 'bogus'"),
    ("postgres:host=127.0.0.1", None, "needs dbname"),
    ("postgres:dbname=x port=99999", None, "not a port number"),
    (None, "missing", "no data directory"),
    ("postgres:dbname=lake host=127.0.0.1 port={port} user=nobody", None, "cannot reach the catalog"),
])
def test_bad_input_is_one_line_and_exit_2(root, lake, tmp_path, catalog, data, says):
    build_root(root, days=1)
    catalog = (catalog or lake[0]).replace("{port}", str(_closed_port()))
    data = str(tmp_path / "missing") if data else lake[1]
    r = run_cli("lake", "push", "--catalog", catalog, "--data", data, "--root", str(root))
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    assert "Traceback" not in r.output


def test_bad_gateway_name_is_refused(root, lake):
    build_root(root, days=1)
    r = run_cli("lake", "push", "--catalog", lake[0], "--data", lake[1], "--gateway", "../x", "--root", str(root))
    assert r.exit_code == 2 and "bad gateway name" in r.stderr


def test_forget_reaches_the_lake_on_the_next_push(root, lake):
    build_root(root, chats=("42", "43"), days=2, text="canary-xq7")
    first = _push(root, lake, "gw")
    assert first.scrub is None
    assert b"canary-xq7 42" in data_bytes(lake[1])  # the positive control: the text is in the data files
    r = run_cli("forget", "--chat", "42", "--reason", "asked", "--yes", "--root", str(root))
    assert r.exit_code == 0, r.output
    after = _push(root, lake)
    assert (after.files_replaced, after.lines_deleted, after.lines_added) == (2, 6, 6)
    assert after.scrub is not None  # erase.scrub ran with the push's lock held
    rows = query(*lake, "SELECT chat, event FROM lake.lines ORDER BY chat, file, line")
    assert all("canary-xq7 42" not in e for _, e in rows) and sum(c == "42" for c, _ in rows) == 6
    assert sum("canary-xq7 43" in e for _, e in rows) == 6  # the other chat untouched
    assert b"canary-xq7 42" not in data_bytes(lake[1])
    assert _push(root, lake).files_read == 0


def test_a_sealed_file_missing_is_refused_and_a_chat_removed_whole_is_deleted(root, lake):
    import shutil

    rels = build_root(root, chats=("42", "43"), days=2, text="canary-rm")
    _push(root, lake, "gw")
    (root / rels[0]).rename(root / "aside")
    with pytest.raises(LakeError, match="sealed file is missing"):
        _push(root, lake)  # its seal says it exists: damage, not an erasure, and nothing changes
    assert query(*lake, "SELECT count(*) FROM lake.lines") == [(12,)]
    (root / "aside").rename(root / rels[0])
    shutil.rmtree(root / "raw/telegram/chats/43")  # the chat's files and its seal stream gone
    (root / "seals/telegram/43.jsonl").unlink()
    r = _push(root, lake)
    assert (r.files_deleted, r.lines_deleted, r.files_unchanged) == (2, 6, 2) and r.scrub is not None
    assert query(*lake, "SELECT DISTINCT chat FROM lake.lines") == [("42",)]
    assert b"canary-rm 43" not in data_bytes(lake[1]) and b"canary-rm 42" in data_bytes(lake[1])


_KILL_BEFORE_SCRUB = """
import os, sys
from pathlib import Path
from eventlog.lake import push as p
from eventlog.lake.catalog import parse_catalog
p.BEFORE_COMMIT.append(lambda what, n: os.kill(os.getpid(), 9) if what == "scrub" else None)
p.push(Path(sys.argv[1]), parse_catalog(sys.argv[2]), sys.argv[3], "gw")
"""


def test_a_push_killed_before_its_scrub_leaves_the_scrub_to_the_next_push(root, lake, _extensions_dir):
    build_root(root, chats=("42", "43"), days=2, text="canary-k9")
    _push(root, lake, "gw")
    r = run_cli("forget", "--chat", "42", "--reason", "asked", "--yes", "--root", str(root))
    assert r.exit_code == 0, r.output
    proc = subprocess.run([sys.executable, "-c", _KILL_BEFORE_SCRUB, str(root), lake[0], lake[1]],
                          env=_env(_extensions_dir), capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    # the replacing batch committed, the old data files (with the erased text) are still under DATA
    assert all("canary-k9 42" not in e for (e,) in query(*lake, "SELECT event FROM lake.lines"))
    assert b"canary-k9 42" in data_bytes(lake[1])
    again = _push(root, lake)
    assert (again.files_read, again.lines_deleted) == (0, 0) and again.scrub is not None
    assert b"canary-k9 42" not in data_bytes(lake[1])
    assert _push(root, lake).scrub is None  # nothing pending any more
