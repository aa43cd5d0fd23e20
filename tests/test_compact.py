"""`eventlog compact`: units are checked before use, stale ones are never used, everything rebuilds from JSONL."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eventlog.recall.compact import check_parquet, load_units
from eventlog.errors import EventlogError
from eventlog.recall.query import Scope, plan
from eventlog.store.writer import EventLog

from test_query import run, sql_json

Q = "SELECT chat_id, CAST(ts AS DATE) AS d, count(*) AS n, max(message_id) AS m FROM events GROUP BY ALL ORDER BY ALL"


def age_tree(root: Path, seconds: int = 3600) -> None:
    """Make every file and directory look untouched for an hour, as a real log's closed months are."""
    t = os.stat(root).st_mtime - seconds
    for d, _, files in os.walk(root / "raw"):
        for f in files:
            os.utime(os.path.join(d, f), (t, t))
        os.utime(d, (t, t))


def test_unchanged_files_are_trusted_and_any_append_is_seen(corpus):
    root, summary = corpus
    age_tree(root)
    expected = sql_json(root, Q)
    assert run("compact", "--before", "2026-11-01", "--root", str(root)).exit_code == 0
    rec = orjson.loads((root / "parquet/2026-09.json").read_bytes())
    # Every day file recorded with its identity (size, mtime_ns, ctime_ns, inode) and content hash.
    assert all(len(v) == 4 and len(v[2]) == 4 and len(v[3]) == 64 for v in rec["sources"].values())
    src = plan(Scope(root))
    assert src.jsonl == [] and len(src.parquet) == 2
    assert sql_json(root, Q) == expected
    # An append changes the file's identity: that one file is read from JSONL, the rest of the unit still used.
    EventLog(root, fsync="never", autoseal=False).append(
        {"event": "message:sent", "channel": "telegram", "chat_id": "100001", "ts": "2026-09-03T08:00:00.000Z",
         "text": "appended after compaction", "message_id": 10 ** 9})
    src = plan(Scope(root))
    assert src.stale == ["2026-09"]
    after = sql_json(root, Q)
    assert after != expected
    assert sum(r["n"] for r in after) == summary["events"] + 1
    assert [r for r in after if r["m"] == 10 ** 9] == [{"chat_id": "100001", "d": "2026-09-03", "n": 
                                                         next(r["n"] for r in expected if r["chat_id"] == "100001" and
                                                              r["d"] == "2026-09-03") + 1, "m": 10 ** 9}]


def test_deleted_day_file_makes_the_unit_unusable(corpus):
    root, summary = corpus
    age_tree(root)
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    victim = root / "raw/telegram/chats/100002/2026/09/05.jsonl"
    lost = len(victim.read_bytes().splitlines())
    victim.unlink()
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root))
    assert orjson.loads(r.stdout)["n"] == summary["events"] - lost  # the JSONL is the truth, not the stale copy
    assert "stale" in r.stderr


def test_a_tampered_unit_is_never_used(corpus):
    root, summary = corpus
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    unit = load_units(root)[0]
    table = pq.read_table(unit.parquet)
    texts = table.column("text").to_pylist()
    texts[0] = "forged"
    forged = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
    pq.write_table(forged, unit.parquet, compression="zstd")
    # A changed size: the unit is dropped at load time and the JSONL is read.
    assert load_units(root) == [] or load_units(root)[0].parquet != unit.parquet
    rows = sql_json(root, "SELECT count(*) AS n FROM messages WHERE text = 'forged'")
    assert rows == [{"n": 0}]
    # Same size but different content (record patched to match): `compact --check` catches it, exit 2.
    rec_path = root / "parquet/2026-09.json"
    rec = orjson.loads(rec_path.read_bytes())
    rec["parquet_bytes"] = unit.parquet.stat().st_size
    rec_path.write_bytes(orjson.dumps(rec))
    r = run("compact", "--check", "--root", str(root))
    assert r.exit_code == 2 and "content hash differs" in r.stderr
    # --rebuild restores it from the JSONL.
    assert run("compact", "--before", "2026-10-01", "--rebuild", "--root", str(root)).exit_code == 0
    assert run("compact", "--check", "--root", str(root)).exit_code == 0
    assert sql_json(root, "SELECT count(*) AS n FROM messages WHERE text = 'forged'") == [{"n": 0}]


def test_check_refuses_a_copy_that_differs_from_its_source(corpus, tmp_path):
    root, _ = corpus
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    unit = load_units(root)[0]
    rec = orjson.loads((root / "parquet/2026-09.json").read_bytes())
    check_parquet(unit.parquet, rec["rows"], rec["sha256"])
    with pytest.raises(EventlogError, match="rows"):
        check_parquet(unit.parquet, rec["rows"] + 1, rec["sha256"])
    with pytest.raises(EventlogError, match="content hash"):
        check_parquet(unit.parquet, rec["rows"], "0" * 64)


def test_non_canonical_line_keeps_working_via_jsonl(corpus):
    """A hand-written line the compaction cannot reproduce byte for byte is refused, never silently altered."""
    root, summary = corpus
    day = root / "raw/telegram/chats/100003/2026/09/07.jsonl"
    with open(day, "ab") as f:
        f.write(b'{"v": 1, "id": "01JA0000000000000000000000", "event": "message:received", "channel": "telegram", '
                b'"chat_id": "100003", "ts": "2026-09-07T23:59:59.000Z", "text": "spaced out"}\n')
    r = run("compact", "--before", "2026-10-01", "--root", str(root))
    assert r.exit_code == 2 and "content hash differs" in r.stderr
    assert not list((root / "parquet").glob("*.parquet"))
    rows = sql_json(root, "SELECT count(*) AS n FROM events")
    assert rows == [{"n": summary["events"] + 1}]


def test_fresh_units_are_left_alone_and_nothing_to_do_exits_1(corpus, tmp_path):
    root, _ = corpus
    r = run("compact", "--before", "2026-10-01", "--json", "--root", str(root))
    assert [orjson.loads(x)["action"] for x in r.stdout.splitlines()] == ["built"]
    r = run("compact", "--before", "2026-10-01", "--json", "--root", str(root))
    assert [orjson.loads(x)["action"] for x in r.stdout.splitlines()] == ["fresh"]
    r = run("compact", "--before", "2026-10-01", "--rebuild", "--json", "--root", str(root))
    assert [orjson.loads(x)["action"] for x in r.stdout.splitlines()] == ["rebuilt"]
    assert len(list((root / "parquet").glob("*.parquet"))) == 1  # the old generation is gone
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run("compact", "--root", str(empty)).exit_code == 1
    assert run("compact", "--before", "not-a-date", "--root", str(root)).exit_code == 2
    for p in (root / "parquet").iterdir():
        assert p.stat().st_mode & 0o077 == 0


def test_compaction_leaves_the_jsonl_untouched(corpus):
    root, _ = corpus
    before = {p: p.read_bytes() for p in (root / "raw").rglob("*.jsonl")}
    assert run("compact", "--before", "2026-11-01", "--root", str(root)).exit_code == 0
    assert {p: p.read_bytes() for p in (root / "raw").rglob("*.jsonl")} == before
    shutil.rmtree(root / "parquet")  # derived and disposable: the log still answers everything
    assert sql_json(root, "SELECT count(*) AS n FROM events")[0]["n"] > 0
