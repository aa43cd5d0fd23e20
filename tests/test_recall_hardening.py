"""Recall hardening: every fuzz finding of issue 11 pinned — one line on stderr and exit 2, never a traceback, never
a file outside the root, never a half-written output."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog


def run(*args: str, **kw):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kw)


@pytest.fixture
def small(tmp_path) -> Path:
    root = tmp_path / "root"
    log = EventLog(root, fsync="never", autoseal=False)
    for i, text in enumerate(["alpha one", "beta two", "alpha three", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"]):
        log.append({"event": "message:received", "channel": "telegram", "chat_id": "100", "direction": "in",
                    "text": text, "ts": f"2026-11-0{1 + i}T10:00:00.000Z"})
    return root


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("eventlog: "), r.stderr
    assert "Traceback" not in r.output
    return lines[0]


@pytest.mark.parametrize("opt,value", [("--since", "99999999d"), ("--until", "99999999w"),
                                       ("--since", "0001-01-01T00:00:00+01:00"), ("--until", "9999-12-31"),
                                       ("--since", "2026-13"), ("--since", "2026-02-30"), ("--since", "tomorrowish"),
                                       ("--tz", "Mars/Olympus"), ("--tz", "../../etc/passwd"), ("--tz", "+25:00"),
                                       ("--since", "\udcff"), ("--tz", "\udcff")])
@pytest.mark.parametrize("cmd", [["sql", "SELECT 1"], ["grep", "alpha"]])
def test_bad_time_values_are_one_line(small, cmd, opt, value):
    one_line_error(run(*cmd, opt, value, "--root", str(small)))


def test_since_after_until_is_one_line(small):
    msg = one_line_error(run("sql", "SELECT 1", "--since", "today", "--until", "yesterday", "--root", str(small)))
    assert "not before" in msg


@pytest.mark.parametrize("args", [["sql", "--bogus", "x"], ["grep", "-Z", "x"], ["sql"], ["compact", "--before"],
                                  ["grep", "x", "--direction", "sideways"]])
def test_usage_errors_are_one_line(small, args):
    one_line_error(run(*args, "--root", str(small)))


def test_invalid_utf8_pattern_is_one_line(small):
    for flags in ([], ["-i"], ["-E"], ["--fuzzy"]):
        one_line_error(run("grep", *flags, "a\udcffb", "--root", str(small)))


def test_catastrophic_regex_is_bounded(small):
    msg = one_line_error(run("grep", "-E", "(a+)+$", "--root", str(small)))
    assert "catastrophic" in msg


@pytest.mark.parametrize("chat", ["../../../x", "..", "a/b", "/etc"])
def test_chat_cannot_name_a_path_outside_the_root(small, chat, tmp_path):
    outside = tmp_path / "x"
    outside.mkdir()
    r = run("sql", "SELECT count(*) AS n FROM events", "--chat", chat, "--json", "--root", str(small))
    assert r.exit_code == 2 and "not a chat id" in r.stderr
    r = run("grep", "alpha", "--chat", chat, "--root", str(small))
    assert r.exit_code in (1, 2) and r.stdout == ""
    for cmd in ("verify", "stats", "seal"):  # the store commands too (verify used to open seals/<chat>.jsonl by path)
        r = run(cmd, "--chat", chat, "--root", str(small))
        assert r.exit_code == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (cmd, r.stderr)


def test_duckdb_cannot_read_its_temp_dir_in_cwd(small, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret.txt").write_text("s3cret")
    r = run("sql", "SELECT content FROM read_text('.tmp/secret.txt')", "--json", "--root", str(small))
    assert r.exit_code == 2 and "s3cret" not in r.output


def test_output_is_atomic_and_never_inside_the_root(small, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("previous result")
    r = run("sql", "SELECT nosuchcolumn FROM events", "-o", str(out), "--root", str(small))
    assert r.exit_code == 2 and out.read_text() == "previous result"  # a failed query leaves it untouched
    assert run("sql", "SELECT text FROM events ORDER BY ts", "-o", str(out), "--json", "--root", str(small)).exit_code == 0
    assert orjson.loads(out.read_text().splitlines()[0]) == {"text": "alpha one"}
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    victim = small / "raw/telegram/chats/100/2026/11/01.jsonl"
    before = victim.read_bytes()
    msg = one_line_error(run("sql", "SELECT 1", "-o", str(victim), "--root", str(small)))
    assert "inside the log root" in msg and victim.read_bytes() == before


def test_count_agrees_with_grep_on_a_torn_line(small):
    f = small / "raw/telegram/chats/100/2026/11/01.jsonl"
    with open(f, "ab") as fh:  # a complete JSON object without its newline: a torn tail, not an event
        fh.write(orjson.dumps({"id": "x", "ts": "2026-11-01T11:00:00.000Z", "event": "message:received",
                               "chat_id": "100", "channel": "telegram", "text": "alpha torn"}))
    listed = run("grep", "alpha", "--json", "--root", str(small)).stdout.splitlines()
    counted = run("grep", "-c", "alpha", "--count-total", "--root", str(small)).stdout.strip()
    assert len(listed) == 2 and counted == "2"


def test_table_and_csv_show_times_in_the_zone(small):
    r = run("sql", "SELECT ts FROM events ORDER BY ts LIMIT 1", "--format", "csv", "--tz", "Europe/Moscow",
            "--root", str(small))
    assert r.stdout.splitlines() == ["ts", "2026-11-01T13:00:00.000+03:00"]
    r = run("sql", "SELECT ts FROM events ORDER BY ts LIMIT 1", "--json", "--tz", "Europe/Moscow", "--root", str(small))
    assert orjson.loads(r.stdout) == {"ts": "2026-11-01T10:00:00.000Z"}  # JSON stays UTC, as stored


def test_no_arguments_prints_help_not_an_error():
    for args in ([], ["dlp"]):
        r = run(*args)
        assert r.exit_code == 0 and r.stdout.startswith("Usage:") and r.stderr == ""
