"""Issue 24, "one time scope": every command that takes a time reads it with the one grammar (eventlog/recall/when.py)
in the user's zone, selects exact instants (day files only prune), and shows times in that zone. Through the CLI,
one test per bullet of the issue's "Four meanings of --since"; each fails on the main before the issue."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog


def run(*args: str, env: dict[str, str] | None = None, input: str | None = None):
    return CliRunner(env=env).invoke(cli, list(args), input=input, catch_exceptions=False)


def msg(ts: str, text: str, chat: str = "1", direction: str = "in") -> dict:
    kind = "message:received" if direction == "in" else "message:sent"
    return {"event": kind, "channel": "telegram", "chat_id": chat, "ts": ts, "text": text, "direction": direction,
            "message_id": int(ts[17:19]) + 100 * int(ts[14:16]), "from": {"id": 7, "username": "ann"}}


SECONDS = ("2026-11-30T10:00:00.000Z", "2026-11-30T10:00:03.000Z", "2026-11-30T10:00:05.000Z")


@pytest.fixture
def seconds(root: Path) -> Path:
    """Three hellos seconds apart on one UTC day, and one the day before (the day files alone cannot tell them)."""
    EventLog(root, fsync="never").append_many(
        [msg("2026-11-29T23:59:59.000Z", "hello from the day before")] + [msg(ts, f"hello {ts[17:19]}")
                                                                          for ts in SECONDS])
    return root


def _ts(out: str, key: str = "ts") -> list[str]:
    return sorted(json.loads(x)[key] if key != "event" else json.loads(x)["event"]["ts"] for x in out.splitlines())


@pytest.mark.parametrize("mode", ["bm25", "text"])
def test_search_and_grep_agree_at_the_second(seconds: Path, mode: str) -> None:
    """The issue's first example: `search hello --since 2026-11-30T10:00:03Z` returned 10:00:00 (the UTC day)."""
    r = run("grep", "hello", "--since", "2026-11-30T10:00:03Z", "--json", "--root", str(seconds))
    assert _ts(r.output, "event") == list(SECONDS[1:])
    r = run("search", "hello", "--mode", mode, "--since", "2026-11-30T10:00:03Z", "--json", "--root", str(seconds))
    assert r.exit_code == 0 and _ts(r.output) == list(SECONDS[1:])
    # --until is exclusive at the instant's end (the log's ms), the same in both
    args = ("--since", "2026-11-30T13:00:00+03:00", "--until", "2026-11-30T10:00:03Z", "--json", "--root", str(seconds))
    assert _ts(run("search", "hello", "--mode", mode, *args).output) == list(SECONDS[:2])
    assert _ts(run("grep", "hello", *args).output, "event") == list(SECONDS[:2])


def test_search_prints_times_in_the_zone(seconds: Path) -> None:
    """`search --tz` changes the printed times, as its help says (it printed UTC)."""
    r = run("search", "hello", "--mode", "bm25", "--since", "2026-11-30", "--tz", "Europe/Moscow", "--root",
            str(seconds))
    assert r.exit_code == 0
    assert "2026-11-30T13:00:03.000+03:00" in r.output and "10:00:03.000Z" not in r.output
    # --json stays the log's own UTC
    r = run("search", "hello", "--mode", "bm25", "--tz", "Europe/Moscow", "--json", "--root", str(seconds))
    assert "2026-11-30T10:00:03.000Z" in _ts(r.output)


def _alert(ts: str, chat: str = "42") -> dict:
    return {"event": "dlp:alert", "ts": ts, "channel": "telegram", "chat_id": chat, "direction": "out",
            "rule": "github-token", "severity": "critical", "action": "redact", "fingerprint": "1" * 64,
            "masked": "ghp_…[40]", "start": 0, "end": 40, "field": "text", "log_event": None, "source": "tap",
            "rules_version": 1}


def test_dlp_alerts_since_with_an_offset(root: Path) -> None:
    """`dlp alerts --since 2026-11-30T12:00+03:00` missed an alert at 10:00Z (strings compared); it also rejected
    `yesterday`/`7d` and had no --until or --tz."""
    EventLog(root, fsync="never").append_stream("dlp/alerts.jsonl", [
        _alert("2026-11-30T08:59:59.999Z"), _alert("2026-11-30T10:00:00.000Z"), _alert("2026-12-01T10:00:00.000Z")])

    def ts(*args: str) -> list[str]:
        r = run("dlp", "alerts", "--json", "--root", str(root), *args)
        assert r.exit_code in (0, 1), r.output
        return _ts(r.output)

    assert ts("--since", "2026-11-30T12:00+03:00") == ["2026-11-30T10:00:00.000Z", "2026-12-01T10:00:00.000Z"]
    assert ts("--since", "2026-11-30T12:00+03:00", "--until", "2026-11-30") == ["2026-11-30T10:00:00.000Z"]
    # a day in the zone: Nov 30 in Tokyo is 2026-11-29T15:00Z .. 2026-11-30T15:00Z
    assert ts("--since", "2026-11-30", "--until", "2026-11-30", "--tz", "Asia/Tokyo") == [
        "2026-11-30T08:59:59.999Z", "2026-11-30T10:00:00.000Z"]
    # relative forms parse (1000 weeks: robust to the machine's clock)
    assert len(ts("--since", "1000w")) == 3 and ts("--until", "1000w") == []
    r = run("dlp", "alerts", "--since", "soon", "--root", str(root))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "not a time" in r.stderr
    # and the human lines show the zone
    r = run("dlp", "alerts", "--since", "2026-12-01", "--tz", "Asia/Tokyo", "--root", str(root))
    assert "2026-12-01T19:00:00.000+09:00" in r.output


def test_dlp_scan_log_selects_exact_instants(root: Path) -> None:
    from dlp_support import github_token

    EventLog(root, fsync="never").append_many([msg("2026-11-30T10:00:00.000Z", f"one {github_token()}"),
                                               msg("2026-11-30T10:00:05.000Z", f"two {github_token()}")])
    r = run("dlp", "scan", "--log", "--no-alerts", "--json", "--since", "2026-11-30T13:00:01+03:00", "--root",
            str(root))
    assert r.exit_code == 0 and _ts(r.output) == ["2026-11-30T10:00:05.000Z"]
    r = run("dlp", "scan", "--log", "--no-alerts", "--json", "--until", "2026-11-30T10:00:04Z", "--root", str(root))
    assert _ts(r.output) == ["2026-11-30T10:00:00.000Z"]
    r = run("dlp", "scan", "some text", "--since", "today", "--root", str(root))
    assert r.exit_code == 2 and "--log" in r.stderr


@pytest.fixture
def midnight(root: Path) -> Path:
    """00:30 on Dec 2 in Moscow is 21:30 on Dec 1 in UTC; 22:00 Moscow on Dec 1 is 19:00 UTC."""
    EventLog(root, fsync="never").append_many([msg("2026-12-01T19:00:00.000Z", "evening"),
                                               msg("2026-12-01T21:30:00.000Z", "after midnight in Moscow")])
    return root


def test_stats_by_day_in_the_zone(midnight: Path) -> None:
    """`stats --by day --tz Europe/Moscow` counted the 00:30 message under Dec 1 (the UTC day)."""
    def days(*args: str) -> dict[str, int]:
        r = run("stats", "--by", "day", "--json", "--root", str(midnight), *args)
        return {row["day"]: row["events"] for row in map(json.loads, r.output.splitlines())}

    assert days("--tz", "Europe/Moscow") == {"2026-12-01": 1, "2026-12-02": 1}
    assert days("--tz", "UTC") == {"2026-12-01": 2}
    assert days("--tz", "Europe/Moscow", "--since", "2026-12-02") == {"2026-12-02": 1}
    # exact instants here too: one second after the first message leaves only the second
    r = run("stats", "--json", "--since", "2026-12-01T19:00:01Z", "--root", str(midnight))
    assert [row["events"] for row in map(json.loads, r.output.splitlines())] == [1]
    r = run("stats", "--since", "2026-12-01T21:30:01Z", "--root", str(midnight))
    assert r.exit_code == 1


def test_sql_day_column_and_raw_sql_in_the_session_zone(midnight: Path) -> None:
    """The views group by the local day: `day` in the session's zone, and the documented raw-SQL form agrees."""
    q = ("SELECT text, day, CAST(ts AT TIME ZONE 'UTC' AS DATE) AS local_day, CAST(ts AS DATE) AS utc_day "
         "FROM messages ORDER BY ts")
    r = run("sql", q, "--tz", "Europe/Moscow", "--json", "--root", str(midnight))
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [(x["day"], x["local_day"], x["utc_day"]) for x in rows] == [
        ("2026-12-01", "2026-12-01", "2026-12-01"), ("2026-12-02", "2026-12-02", "2026-12-01")]
    r = run("sql", "SELECT day, count(*) AS n FROM messages GROUP BY day ORDER BY day", "--tz", "UTC", "--json",
            "--root", str(midnight))
    assert [json.loads(x) for x in r.output.splitlines()] == [{"day": "2026-12-01", "n": 2}]


def test_sql_in_a_fixed_offset_zone(midnight: Path) -> None:
    """`--tz +03:00` (and a half-hour offset) reached DuckDB as `GMT+03:00`, a name DuckDB 1.5's ICU does not know:
    exit 2. A whole-hour offset is the Etc/GMT zone (signs inverted), +05:30 a zone that keeps it."""
    q = "SELECT day, strftime(ts AT TIME ZONE 'UTC', '%H:%M') || ' ' || (date_part('timezone', ts AT TIME ZONE 'UTC') // 60) AS local FROM messages ORDER BY ts"
    for tz, want in [("+03:00", [("2026-12-01", "22:00 180"), ("2026-12-02", "00:30 180")]),
                     ("-03:00", [("2026-12-01", "16:00 -180"), ("2026-12-01", "18:30 -180")]),
                     ("+05:30", [("2026-12-02", "00:30 330"), ("2026-12-02", "03:00 330")])]:
        r = run("sql", q, "--tz", tz, "--json", "--root", str(midnight))
        assert r.exit_code == 0, (tz, r.output)
        assert [(x["day"], x["local"]) for x in map(json.loads, r.output.splitlines())] == want, tz
    r = run("sql", q, "--tz", "+02:15", "--json", "--root", str(midnight))  # no zone keeps it: one line, exit 2
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and "+02:15" in r.stderr


def test_config_tz_key_and_its_order(seconds: Path) -> None:
    """The zone is --tz, else $EVENTLOG_TZ, else the config file's `tz`, else the system's."""
    (seconds / "config.toml").write_text('tz = "Asia/Tokyo"\n')
    args = ("grep", "hello 03", "--root", str(seconds))
    assert "2026-11-30T19:00:03.000+09:00" in run(*args).output
    assert "2026-11-30T11:00:03.000+01:00" in run(*args, env={"EVENTLOG_TZ": "Europe/Berlin"}).output
    assert "2026-11-30T10:00:03.000Z" in run(*args, "--tz", "UTC", env={"EVENTLOG_TZ": "Europe/Berlin"}).output
    # and WHEN values are read in it: Nov 30 in Tokyo ends at 15:00Z, so 10:00:03Z is in it
    r = run("grep", "hello", "--since", "2026-11-30", "--until", "2026-11-30", "-c", "--root", str(seconds))
    assert r.output.strip() == "telegram/1:4"  # the day before's 23:59:59Z is 08:59:59 on Nov 30 in Tokyo
    (seconds / "config.toml").write_text('tz = "Nowhere/Land"\n')
    r = run(*args)
    assert r.exit_code == 2 and "config.toml: tz" in r.stderr and r.stderr.count("\n") == 1


def test_config_warns_about_unknown_keys(seconds: Path) -> None:
    (seconds / "config.toml").write_text('timezone = "Asia/Tokyo"\nretention_days = 30\n')
    r = run("grep", "hello 03", "--root", str(seconds))
    assert r.exit_code == 0
    assert r.stderr.count("\n") == 1 and "unknown key(s) ignored: timezone" in r.stderr
    assert "10:00:03.000Z" in r.output  # the misspelt key changed nothing


def test_the_system_zone_is_the_default(seconds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --tz, $EVENTLOG_TZ or a config `tz`, times are the system's local time ($TZ here)."""
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    r = run("search", "hello", "--mode", "text", "--root", str(seconds))
    assert "2026-11-30T02:00:05.000-08:00" in r.output


def test_tail_since_until(seconds: Path) -> None:
    """`tail` parses with the shared options: --since exact, and --until, which it did not have."""
    r = run("tail", "--json", "--since", "2026-11-30T10:00:03Z", "--root", str(seconds))
    assert [json.loads(x)["ts"] for x in r.output.splitlines()] == list(SECONDS[1:])
    r = run("tail", "--json", "-n", "2", "--until", "2026-11-30T10:00:04Z", "--root", str(seconds))
    assert [json.loads(x)["ts"] for x in r.output.splitlines()] == list(SECONDS[:2])
    r = run("tail", "-f", "--until", "today", "--root", str(seconds))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


def test_agent_search_and_tool_take_exact_times_in_the_zone(seconds: Path) -> None:
    """`agent search` and the tool's since/until took UTC dates only (10:00:03Z meant the whole UTC day)."""
    def ids(*args: str) -> int:
        r = run("agent", "search", "hello", "--chat", "1", "--json", "--root", str(seconds), *args)
        assert r.exit_code in (0, 1), r.stderr
        return json.loads(r.output)["hits"]

    assert ids("--since", "2026-11-30T10:00:03Z") == 2
    assert ids("--since", "2026-11-30T13:00:00+03:00", "--until", "2026-11-30T10:00:00Z") == 1
    assert ids("--since", "2026-11-30", "--tz", "Asia/Tokyo") == 4  # Nov 30 in Tokyo began at 15:00Z on Nov 29
    r = run("agent", "search", "hello", "--chat", "1", "--since", "someday", "--root", str(seconds))
    assert r.exit_code == 2 and "since must be a time" in r.stderr
    req = {"tool": "search", "args": {"query": "hello", "since": "2026-13-01"}, "chat": "1", "channel": "telegram"}
    r = run("agent", "call", "--root", str(seconds), input=json.dumps(req))
    out = json.loads(r.output)
    assert out["ok"] is False and out["error_kind"] == "bad_arguments"
    req["args"] = {"query": "hello", "since": "2026-11-30T10:00:03Z", "until": "2026-11-30T10:00:00Z"}
    assert json.loads(run("agent", "call", "--root", str(seconds), input=json.dumps(req)).output)["error_kind"] == \
        "bad_arguments"


def _days(root: Path) -> list[str]:
    return sorted(p.relative_to(root / "raw").as_posix() for p in (root / "raw").rglob("*.jsonl"))


@pytest.fixture
def three_days(root: Path) -> Path:
    EventLog(root, fsync="never").append_many([msg(f"2026-11-{d}T12:00:00.000Z", f"day {d}") for d in (28, 29, 30)])
    return root


def test_forget_until_in_the_zone_and_before_kept(three_days: Path) -> None:
    """forget took UTC dates only; now --until WHEN in the zone (whole UTC day files: what it keeps, it says)."""
    r = run("forget", "--until", "2026-11-29", "--tz", "Asia/Tokyo", "--reason", "t", "--yes", "--json", "--root",
            str(three_days))
    assert r.exit_code == 0 and json.loads(r.output.splitlines()[-1])["files"] == 1  # Nov 28 only
    assert "2026-11-29T00:00Z to 2026-11-29T15:00:00.000Z are kept" in r.stderr
    r = run("grep", "day", "-c", "--root", str(three_days))
    assert r.output.strip() == "telegram/1:2"
    # the older --before flag, same grammar: before the start of Nov 30 in UTC → Nov 29's file
    r = run("forget", "--before", "2026-11-30", "--tz", "UTC", "--reason", "t", "--yes", "--root", str(three_days))
    assert r.exit_code == 0
    assert run("grep", "day", "-c", "--root", str(three_days)).output.strip() == "telegram/1:1"
    r = run("forget", "--before", "today", "--until", "today", "--reason", "t", "--yes", "--root", str(three_days))
    assert r.exit_code == 2 and "give one" in r.stderr


def test_seal_and_compact_until(root: Path) -> None:
    """seal --through and compact --before took UTC dates only; now --until WHEN in the zone (whole UTC day files)."""
    # one chat per day, so that no day is sealed by the writer (it seals a chat's day when the chat's next day starts)
    EventLog(root, fsync="never").append_many([msg(f"2026-11-{d}T12:00:00.000Z", f"day {d}", chat=str(d))
                                               for d in (28, 29, 30)])

    def sealed(*args: str) -> list[str]:
        r = run("seal", "--json", "--root", str(root), *args)
        assert r.exit_code == 0, r.stderr
        return [json.loads(x)["file"][-22:] for x in r.output.splitlines() if json.loads(x)["outcome"] == "sealed"]

    # the end of Nov 29 in Tokyo is 15:00Z on Nov 29: only Nov 28's file lies wholly before it
    assert sealed("--until", "2026-11-29", "--tz", "Asia/Tokyo") == ["chats/28/2026/11/28.jsonl"[-22:]]
    assert sealed("--through", "2026-11-29", "--tz", "UTC") == ["chats/29/2026/11/29.jsonl"[-22:]]
    r = run("compact", "--until", "2026-11-29", "--tz", "UTC", "--json", "--root", str(root))
    assert r.exit_code == 0 and [json.loads(x)["rows"] for x in r.output.splitlines()] == [2]
    r = run("compact", "--until", "someday", "--root", str(root))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


def test_dlp_show_and_review_print_in_the_zone(root: Path) -> None:
    EventLog(root, fsync="never").append_stream("dlp/alerts.jsonl", [_alert("2026-11-30T10:00:00.000Z")])
    aid = json.loads(run("dlp", "alerts", "--json", "--root", str(root)).output)["id"]
    r = run("dlp", "show", aid, "--tz", "Asia/Tokyo", "--root", str(root))
    assert r.exit_code == 0 and "2026-11-30T19:00:00.000+09:00" in r.output
    r = run("dlp", "review", "--interactive", "--tz", "Asia/Tokyo", "--root", str(root), input="q\n")
    assert "2026-11-30T19:00:00.000+09:00" in r.output and "10:00:00.000Z" not in r.output


def test_an_unreadable_config_is_one_line(seconds: Path) -> None:
    (seconds / "config.toml").mkdir()
    r = run("grep", "hello", "--root", str(seconds))
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot read the config file" in r.stderr
