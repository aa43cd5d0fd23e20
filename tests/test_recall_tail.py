"""`eventlog tail`: --since WHEN, --cursor NAME (what is new since I last looked, late events included), and a quiet
stderr while following many new chats."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import orjson
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

from test_follow import Tail, ev


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def texts(r) -> list[str]:
    return [orjson.loads(x)["text"] for x in r.stdout.splitlines()]


def test_since_and_cursor(tmp_path):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    log.append(ev("1", "2026-11-01T10:00:00.000Z", "old"))
    log.append(ev("2", "2026-11-02T10:00:00.000Z", "b"))
    log.append(ev("1", "2026-11-02T09:00:00.000Z", "a"))
    assert texts(run("tail", "--since", "2026-11-02", "--tz", "UTC", "--json", "--root", str(root))) == ["a", "b"]
    first = run("tail", "--cursor", "me", "-n", "1", "--json", "--root", str(root))
    assert texts(first) == ["b"]
    assert oct((root / "state/cursors/me.json").stat().st_mode & 0o777) == "0o600"
    again = run("tail", "--cursor", "me", "--json", "--root", str(root))
    assert again.exit_code == 1 and again.stdout == ""  # nothing new
    log.append(ev("3", "2026-11-03T10:00:00.000Z", "new chat"))
    log.append(ev("1", "2026-11-01T11:00:00.000Z", "late event into an earlier day"))
    assert texts(run("tail", "--cursor", "me", "--json", "--root", str(root))) == [
        "late event into an earlier day", "new chat"]
    assert run("tail", "--cursor", "me", "--json", "--root", str(root)).stdout == ""
    assert texts(run("tail", "--cursor", "other", "-n", "0", "--json", "--root", str(root))) == []
    r = run("tail", "--cursor", "../x", "--root", str(root))
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1


def test_follow_many_new_chats_is_quiet_on_stderr(tmp_path):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    for c in range(60):  # the reported case: 60 chats, 90 KB of watchdog warnings
        for day in ("2026-10-30", "2026-11-01"):
            log.append(ev(str(c), f"{day}T10:00:00.000Z", "seed"))
    t = Tail(root)
    try:
        now = datetime.now(timezone.utc)
        for i in range(40):
            ts = (now + timedelta(milliseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            log.append(ev(str(1000 + i), ts, f"m{i}"))
        got = [t.next_event(60) for _ in range(40)]
        assert all(g is not None for g in got)
    finally:
        t.p.terminate()
        _, err = t.p.communicate(timeout=30)
    assert b"Callback with id" not in err and b"Warning" not in err, err[:500]
