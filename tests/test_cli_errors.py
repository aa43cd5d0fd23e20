"""Errors at the edge (issue 23, item 2): typed errors are one stderr line and exit 2, a library bug is a traceback
(no global ValueError catch), PatchError is an EventlogError, JSON only with --json, Ctrl-C is exit 130."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from eventlog.cli.common import CliError, handle_errors
from eventlog.cli.main import cli
from eventlog.errors import EventlogError
from eventlog.patchset.errors import PatchError
from eventlog.store.writer import EventLog


def run(*args: str, input: bytes | str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def msg(ts: str = "2026-11-01T10:00:00.000Z") -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": "1", "ts": ts, "text": "x"}


def test_a_library_bug_is_not_reported_as_bad_input() -> None:
    @click.command()
    @handle_errors
    def buggy() -> None:
        int("not a number")  # a ValueError the library did not mean: a bug, not "bad input"

    with pytest.raises(ValueError):
        CliRunner().invoke(buggy, [], catch_exceptions=False)


def test_cli_error_is_one_line_with_its_code() -> None:
    @click.command()
    @click.option("--code", type=int, default=2)
    @handle_errors
    def refuses(code: int) -> None:
        raise CliError("options that do not go together", code)

    for code in (2, 1):
        r = CliRunner().invoke(refuses, ["--code", str(code)], catch_exceptions=False)
        assert r.exit_code == code and r.stderr == "eventlog: options that do not go together\n"
    assert issubclass(CliError, EventlogError)


def test_patch_error_is_an_eventlog_error() -> None:
    assert issubclass(PatchError, EventlogError)
    e = PatchError("anchor-missing", "anchor not found")
    assert e.report == {"ok": False, "error": "anchor-missing", "message": "anchor not found"}


# What the ValueError catch used to hide, each now a typed error (or no error at all).

def test_sql_query_on_stdin_that_is_not_utf8(root: Path) -> None:
    EventLog(root, fsync="never").append(msg())
    r = run("sql", "-", "--root", str(root), input=b"\xff SELECT 1")
    assert r.exit_code == 2 and r.stderr.startswith("eventlog: the query on stdin is not UTF-8")
    assert r.stdout == "" and len(r.stderr.splitlines()) == 1


def test_compact_and_forget_before_the_first_day(root: Path) -> None:
    EventLog(root, fsync="never").append(msg())
    r = run("compact", "--before", "0001-01-01", "--root", str(root))
    assert r.exit_code == 1 and "no closed day files to compact" in r.stderr  # was: ValueError "ordinal must be >= 1"
    r = run("forget", "--before", "0001-01-01", "--reason", "test", "--yes", "--root", str(root))
    assert r.exit_code == 1 and "nothing to forget" in r.stderr  # was: OverflowError


def test_stats_by_is_a_typed_error(root: Path) -> None:
    from eventlog.store.stats import stats

    with pytest.raises(EventlogError, match="--by must be one of"):
        list(stats(root, by="week"))


def test_interrupt_is_exit_130_without_a_traceback(root: Path) -> None:
    EventLog(root, fsync="never").append(msg())
    p = subprocess.Popen([sys.executable, "-m", "eventlog", "tail", "-f", "--root", str(root)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parent.parent)
    try:
        line = p.stderr.readline()  # the watch is in place once it says so
        assert b"following" in line, line
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130
    assert err.decode().splitlines() == ["eventlog: interrupted"], err
    assert b"Traceback" not in err


def test_interrupt_of_a_command_without_handle_errors() -> None:
    """The patch group has no handle_errors: Ctrl-C is the group's (exit 130), not click's Abort (exit 1)."""
    @cli.command("_sleep_for_test", hidden=True)
    def sleeper() -> None:
        raise KeyboardInterrupt

    try:
        r = CliRunner().invoke(cli, ["_sleep_for_test"], catch_exceptions=False)
    finally:
        cli.commands.pop("_sleep_for_test")
    assert r.exit_code == 130 and r.stderr == "eventlog: interrupted\n"


def test_patch_refusal_prints_json_only_with_json(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "something-else"}')
    r = run("patch", "status", "--openclaw", str(tmp_path))
    assert r.exit_code == 2 and r.stdout == "" and r.stderr.startswith("eventlog patch: ")
    assert '"not-openclaw"' in run("patch", "status", "--openclaw", str(tmp_path), "--json").stdout
