"""`eventlog grep` keeps ripgrep's habits: -w -v -l -A -B -m, -c per chat, --count-total, NO_COLOR, no pattern with a
filter."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog


def run(*args: str, **kw):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kw)


def texts(r) -> list[str]:
    return [orjson.loads(x)["event"]["text"] for x in r.stdout.splitlines() if orjson.loads(x)["type"] != "file"]


@pytest.fixture
def log(tmp_path):
    root = tmp_path / "root"
    w = EventLog(root, fsync="never", autoseal=False)
    rows = [("100", "in", "alice", "deploy now"), ("100", "out", "bot", "deployed"), ("100", "in", "alice", "redeploy"),
            ("100", "in", "bob", "coffee"), ("200", "in", "carol", "deploy later"), ("200", "out", "bot", "ok")]
    for i, (chat, d, who, text) in enumerate(rows):
        w.append({"event": "message:received" if d == "in" else "message:sent", "channel": "telegram",
                  "chat_id": chat, "direction": d, "from": {"id": i, "username": who}, "text": text,
                  "ts": f"2026-11-01T10:00:0{i}.000Z"})
    return root


def test_word_invert_files(log):
    assert texts(run("grep", "-w", "deploy", "--json", "--root", str(log))) == ["deploy now", "deploy later"]
    assert texts(run("grep", "-v", "deploy", "--json", "--root", str(log))) == ["coffee", "ok"]
    assert texts(run("grep", "-v", "-w", "deploy", "--json", "--root", str(log))) == [
        "deployed", "redeploy", "coffee", "ok"]
    r = run("grep", "-l", "deploy", "--root", str(log))
    assert r.stdout.splitlines() == ["raw/telegram/chats/100/2026/11/01.jsonl", "raw/telegram/chats/200/2026/11/01.jsonl"]


def test_context_before_after_and_max_count(log):
    r = run("grep", "coffee", "-B", "1", "--json", "--root", str(log))
    assert [(orjson.loads(x)["type"], orjson.loads(x)["event"]["text"]) for x in r.stdout.splitlines()] == [
        ("context", "redeploy"), ("match", "coffee")]
    r = run("grep", "deployed", "-A", "2", "--json", "--root", str(log))
    assert texts(r) == ["deployed", "redeploy", "coffee"]
    assert texts(run("grep", "deploy", "-m", "1", "--json", "--root", str(log))) == ["deploy now", "deploy later"]


def test_count_per_chat_and_total(log):
    r = run("grep", "deploy", "-c", "--root", str(log))
    assert r.stdout.splitlines() == ["telegram/100:3", "telegram/200:1"]
    assert run("grep", "deploy", "--count-total", "--root", str(log)).stdout.strip() == "4"
    assert run("grep", "deploy", "-c", "-m", "2", "--root", str(log)).stdout.splitlines() == [
        "telegram/100:2", "telegram/200:1"]
    # -c agrees with the listing, for every flag combination
    for flags in ([], ["-i"], ["-w"], ["-v"], ["-E"], ["-v", "-i"], ["--fuzzy"]):
        listed = texts(run("grep", *flags, "deploy", "--json", "--root", str(log)))
        assert run("grep", *flags, "deploy", "--count-total", "--root", str(log)).stdout.strip() == str(len(listed))


def test_pattern_optional_with_a_filter(log):
    assert texts(run("grep", "--from", "alice", "--json", "--root", str(log))) == ["deploy now", "redeploy"]
    assert texts(run("grep", "--direction", "out", "--json", "--root", str(log))) == ["deployed", "ok"]
    r = run("grep", "--root", str(log))
    assert r.exit_code == 2 and "give a PATTERN" in r.stderr


def test_no_color(log, monkeypatch):
    import click.testing

    monkeypatch.setattr(click.testing._NamedTextIOWrapper, "isatty", lambda self: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in CliRunner().invoke(cli, ["grep", "deploy", "--root", str(log)], color=True).stdout
    r = CliRunner(env={"NO_COLOR": "1"}).invoke(cli, ["grep", "deploy", "--root", str(log)], color=True)
    assert r.exit_code == 0 and "\x1b[" not in r.stdout


def test_a_bad_line_is_named_by_its_number_in_counts_too(log):
    """Counts ask rg for no line numbers; a line that is not JSON is still reported as file:line."""
    day = log / "raw/telegram/chats/100/2026/11/01.jsonl"
    with open(day, "ab") as f:
        f.write(b'{"text": "deploy", broken\n')
    n = len(day.read_bytes().splitlines())
    want = f"eventlog: raw/telegram/chats/100/2026/11/01.jsonl:{n}: not valid JSON, skipped"
    for flags in (["--count-total"], ["-c"], ["--json"]):
        r = run("grep", "deploy", *flags, "--root", str(log))
        assert r.stderr.splitlines() == [want], (flags, r.stderr)
    assert run("grep", "deploy", "--count-total", "--root", str(log)).stdout.strip() == "4"


def test_a_whole_log_count_is_one_rg_over_the_tree(log, monkeypatch):
    """The work of a whole-log count: one rg process, given the raw/ directory (rg walks it: no file list built in
    Python), counting no line numbers; a listing asks for them. (Every process grep starts goes through posix_spawn.)"""
    import os

    calls: list[list[str]] = []
    real = os.posix_spawn

    def spy(path, argv, *a, **kw):
        calls.append(list(argv))
        return real(path, argv, *a, **kw)

    monkeypatch.setattr(os, "posix_spawn", spy)
    assert run("grep", "deploy", "--count-total", "--root", str(log)).stdout.strip() == "4"
    assert run("grep", "deploy", "-c", "--root", str(log)).exit_code == 0
    assert len(calls) == 2
    for argv in calls:
        assert argv[argv.index("--") + 1:] == [str(log / "raw")]
        assert "--line-number" not in argv
    calls.clear()
    run("grep", "deploy", "--json", "--root", str(log))
    assert len(calls) == 1 and "--line-number" in calls[0]
