"""Unix habits at the CLI edge (issue 24, item 4): `-` is standard output for every -o/--output/--out, a device or
pipe given as the output is written in place (never replaced), and a reader that goes away (`| head`) ends a command
quietly with 141, as a shell reports grep killed by SIGPIPE."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli

EVENTLOG = [sys.executable, "-P", "-m", "eventlog"]


def run(*args: str, input: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def log(root: Path) -> Path:
    lines = b"".join(orjson.dumps({"event": "message:received", "channel": "telegram", "chat_id": "42",
                                   "ts": f"2026-11-30T10:{i // 60:02d}:{i % 60:02d}Z", "text": f"hello {i}",
                                   "message": {"text": f"hello {i}"}}) + b"\n" for i in range(300))
    assert run("append", "--root", str(root), input=lines).exit_code == 0
    return root


def _day(root: Path) -> bytes:
    return (root / "raw/telegram/chats/42/2026/11/30.jsonl").read_bytes()


def test_export_dash_is_standard_output(log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = run("export", "--chat", "42", "-o", "-", "--root", str(log))
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == _day(log)  # the log's own lines, byte for byte
    assert "300 event(s) written to standard output" in r.stderr
    assert not (tmp_path / "-").exists()


def test_export_md_and_sql_dash(log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    md = run("export", "--chat", "42", "--format", "md", "-o", "-", "--root", str(log))
    assert md.exit_code == 0 and "hello 299" in md.stdout
    r = run("sql", "SELECT count(*) AS n FROM messages", "-o", "-", "--root", str(log))
    assert r.exit_code == 0 and orjson.loads(r.stdout) == {"n": 300}
    assert not (tmp_path / "-").exists()


def test_parquet_to_a_pipe_is_bytes(log: Path) -> None:
    import io

    import pyarrow.parquet as pq

    r = run("export", "--chat", "42", "--format", "parquet", "-o", "-", "--root", str(log))
    assert r.exit_code == 0 and r.stdout_bytes[:4] == b"PAR1"
    assert pq.read_table(io.BytesIO(r.stdout_bytes)).num_rows == 300


def test_parquet_to_a_terminal_is_refused(log: Path, tmp_path: Path) -> None:
    """A real terminal on stdout (a pty): binary output would scramble it, so exit 2 and one line, as gzip does."""
    for args in (["export", "--chat", "42", "--format", "parquet", "-o", "-"],
                 ["sql", "SELECT 1 AS x", "--format", "parquet", "-o", "-"]):
        leader, follower = pty.openpty()
        try:
            p = subprocess.run(EVENTLOG + args + ["--root", str(log)], stdout=follower, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, cwd=tmp_path)
        finally:
            os.close(follower)
            os.close(leader)
        assert p.returncode == 2 and not (tmp_path / "-").exists(), p.stderr
        assert p.stderr.decode().startswith("eventlog: binary output to a terminal") and p.stderr.count(b"\n") == 1


def test_an_output_that_is_a_symlink_to_a_device_stays_one(log: Path, tmp_path: Path) -> None:
    """`-o /dev/stdout` used to rename a temporary over the path, replacing the device link with a plain file; a
    link in tmp_path to /dev/null is the same case without touching /dev."""
    out = tmp_path / "null"
    out.symlink_to(os.devnull)
    r = run("export", "--chat", "42", "-o", str(out), "--root", str(log))
    assert r.exit_code == 0, r.stderr
    assert out.is_symlink() and os.readlink(out) == os.devnull


def test_an_output_that_is_a_fifo_is_written_in_place(log: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    handle = tmp_path / "same-fifo"
    os.link(fifo, handle)  # reaches the FIFO even if the command replaced the name `fifo`
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(handle.read_bytes()))
    reader.start()
    try:
        r = run("export", "--chat", "42", "-o", str(fifo), "--root", str(log))
    finally:
        try:  # a writer that never opened the FIFO leaves the reader waiting in open(): release it
            os.close(os.open(handle, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader any more, it has its bytes
            pass
        reader.join()
    assert r.exit_code == 0, r.stderr
    assert fifo.exists() and not fifo.is_file()
    assert got == [_day(log)]


def test_a_regular_output_file_is_still_atomic_and_private(log: Path, tmp_path: Path) -> None:
    out = tmp_path / "chat.jsonl"
    assert run("export", "--chat", "42", "-o", str(out), "--root", str(log)).exit_code == 0
    assert out.read_bytes() == _day(log) and out.stat().st_mode & 0o777 == 0o600


def _closed_reader(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `eventlog ARGS | head -0`: the only read end of stdout closed before the command writes a byte, so its
    first write meets a pipe with no reader — deterministic, no sleeps."""
    r, w = os.pipe()
    p = subprocess.Popen(EVENTLOG + args, stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(w)
    os.close(r)
    _, err = p.communicate()
    return subprocess.CompletedProcess(args, p.returncode, b"", err)


@pytest.mark.parametrize("args", [
    ["--help"], ["dlp", "scan", "--help"], ["--version"], [],
    ["grep", "hello"], ["tail", "-n", "300"], ["sql", "SELECT * FROM messages"], ["export", "--chat", "42", "-o", "-"],
    ["grep", "hello", "--json"], ["stats"], ["path", "--json"], ["dlp", "rules"],
], ids=lambda a: " ".join(a) or "bare")
def test_a_reader_that_went_away_ends_the_command_quietly(log: Path, args: list[str]) -> None:
    needs_root = args and args[0] not in ("--help", "--version") and "--help" not in args
    p = _closed_reader(args + (["--root", str(log)] if needs_root else []))
    assert p.stderr == b""  # no "BrokenPipeError", no "Exception ignored"
    assert p.returncode == 141  # 128 + SIGPIPE, what a shell reports for `grep … | head`


def test_a_reader_that_reads_everything_sees_the_usual_exit_code(log: Path) -> None:
    p = subprocess.run(EVENTLOG + ["grep", "no-such-text", "--root", str(log)], capture_output=True)
    assert p.returncode == 1 and p.stdout == b"" and p.stderr == b""
    p = subprocess.run(EVENTLOG + ["grep", "hello 29", "--root", str(log)], capture_output=True)
    assert p.returncode == 0 and p.stdout.count(b"\n") == 11


@pytest.mark.openclaw
def test_patch_unit_and_diffs_dash_are_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlog.toolchain import dev_openclaw_dir

    monkeypatch.chdir(tmp_path)
    pkg = str(dev_openclaw_dir())
    r = run("patch", "unit", "--openclaw", pkg, "--out", "-")
    assert r.exit_code == 0 and "ExecStartPre=" in r.stdout
    d = run("patch", "diffs", "--openclaw", pkg, "--out", "-")
    assert d.exit_code == 0 and d.stdout.startswith("--- ") and "\n+++ " in d.stdout
    assert not (tmp_path / "-").exists()
