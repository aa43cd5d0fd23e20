"""Recall's exactness fixes, each pinned: the compaction/today bug, same-size in-place changes, `compact --check`
on damaged units, the user's time zone."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

from eventlog.store.writer import EventLog

from test_compact import age_tree
from test_query import run


def _msg(chat: str, ts: datetime, text: str) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "direction": "in", "text": text,
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.000Z")}


def _log_with_today(root: Path) -> int:
    """Events on the last 3 UTC days including today (early today, so 'today' holds them in any second of it)."""
    log = EventLog(root, fsync="never", autoseal=False)
    now = datetime.now(timezone.utc)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    n_today = 0
    for back in (2, 1, 0):
        for i in range(5):
            ts = midnight - timedelta(days=back) + timedelta(seconds=i)
            log.append(_msg(str(100 + i % 2), ts, f"m{back}-{i}"))
            n_today += back == 0
    return n_today


def _count(root: Path, *args: str) -> int:
    r = run("sql", "SELECT count(*) AS n FROM events", "--json", "--root", str(root), *args)
    assert r.exit_code == 0, r.output
    return orjson.loads(r.stdout)["n"]


def test_sql_since_today_after_compact_counts_every_event(tmp_path):
    """The reported bug: after `compact`, `sql --since today` returned 1 event where stats counted 830."""
    root = tmp_path / "root"
    n_today = _log_with_today(root)
    age_tree(root)
    assert run("compact", "--root", str(root)).exit_code == 0
    assert _count(root, "--since", "today", "--tz", "UTC") == n_today
    assert _count(root) == 15
    explain = run("sql", "SELECT 1", "--explain", "--root", str(root)).stdout
    assert "each bound once" in explain


def test_same_size_in_place_change_is_never_served_from_parquet(tmp_path):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    log.append(_msg("100", datetime(2026, 9, 1, 10, tzinfo=timezone.utc), "original"))
    age_tree(root)
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    f = root / "raw/telegram/chats/100/2026/09/01.jsonl"
    st = f.stat()
    f.write_bytes(f.read_bytes().replace(b"original", b"ORIGINAL"))  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime
    r = run("sql", "SELECT text FROM events", "--json", "--root", str(root))
    assert orjson.loads(r.stdout)["text"] == "ORIGINAL"


def test_compact_check_reports_every_unusable_unit(tmp_path):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    for month in (8, 9):
        log.append(_msg("100", datetime(2026, month, 1, 10, tzinfo=timezone.utc), "x"))
    age_tree(root)
    assert run("compact", "--before", "2026-10-01", "--root", str(root)).exit_code == 0
    r = run("compact", "--check", "--root", str(root))
    assert r.exit_code == 0 and "2 unit(s) verified" in r.stdout
    pq = next((root / "parquet").glob("2026-08.*.parquet"))
    pq.write_bytes(pq.read_bytes()[:50])  # truncated
    (root / "parquet/2026-09.json").write_bytes(b"{not json")  # corrupt record
    r = run("compact", "--check", "--root", str(root))
    assert r.exit_code == 2
    assert "2026-08" in r.stderr and "truncated" in r.stderr
    assert "2026-09.json" in r.stderr and "unreadable" in r.stderr
    assert "0 unit(s) verified, 2 unusable" in r.stdout
    assert _count(root) == 2  # queries read those months from JSONL meanwhile


def test_since_until_follow_the_users_zone(tmp_path, monkeypatch):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    # 21:30 UTC on Nov 30 is already Dec 1 in Moscow (UTC+3).
    for h, m in ((20, 59), (21, 0), (21, 30), (23, 59)):
        log.append(_msg("100", datetime(2026, 11, 30, h, m, tzinfo=timezone.utc), f"{h}:{m}"))
    assert _count(root, "--since", "2026-12-01", "--tz", "Europe/Moscow") == 3
    assert _count(root, "--until", "2026-11-30", "--tz", "Europe/Moscow") == 1
    assert _count(root, "--since", "2026-11-30T21:00:00Z", "--until", "2026-11-30T21:30:00Z") == 2
    assert _count(root, "--since", "2026-12", "--tz", "+03:00") == 3
    r = run("grep", "3", "--since", "2026-12-01", "--tz", "Europe/Moscow", "--json", "--root", str(root))
    assert [orjson.loads(x)["event"]["text"] for x in r.stdout.splitlines()] == ["21:30", "23:59"]
    monkeypatch.setenv("EVENTLOG_TZ", "Europe/Moscow")
    assert _count(root, "--since", "2026-12-01") == 3
    monkeypatch.delenv("EVENTLOG_TZ")
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # UTC+9: Dec 1 starts at 15:00 UTC on Nov 30
    assert _count(root, "--since", "2026-12-01") == 4
