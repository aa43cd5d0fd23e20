"""Issue 26, every entry point bounded: `eventlog sql` stops on Ctrl-C, SIGTERM and its --timeout, under a memory
limit; grep's regex budget is per command; import and append refuse deep nesting and NaN/Infinity with one line."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.store.writer import EventLog

REPO = Path(__file__).resolve().parents[1]
ENDLESS = "SELECT sum(hash(i)) FROM range(1000000000000) t(i)"  # hours of CPU, no memory


def _msg(i: int, text: str) -> dict[str, object]:
    return {"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
            "ts": f"2026-11-28T10:{i // 60:02d}:{i % 60:02d}Z", "text": text, "from": {"id": 111}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    EventLog(r, fsync="never").append(_msg(0, "hello"))
    return r


def _eventlog(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "eventlog", *args], input=stdin, capture_output=True, cwd=REPO,
                          timeout=600)


def test_sql_timeout_is_exit_2_with_one_line(root: Path) -> None:
    p = _eventlog("sql", ENDLESS, "--timeout", "1", "--root", str(root))
    assert p.returncode == 2 and p.stdout == b""
    assert p.stderr.decode().splitlines() == ["eventlog: the query took longer than 1 s and was stopped (--timeout)"]


def test_sql_memory_limit_is_set_with_a_default(root: Path) -> None:
    p = _eventlog("sql", "SELECT current_setting('memory_limit') AS m", "--root", str(root))
    assert p.returncode == 0 and json.loads(p.stdout)["m"] == "381.4 MiB", p.stderr  # 400 MB
    p = _eventlog("sql", "SELECT current_setting('memory_limit') AS m", "--memory-limit", "1GB", "--root", str(root))
    assert json.loads(p.stdout)["m"] == "953.6 MiB"
    p = _eventlog("sql", "SELECT 1", "--memory-limit", "lots", "--root", str(root))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and b"--memory-limit 'lots'" in p.stderr


def _blocked(pid: int, sig: int) -> bool:
    """Whether the process's main thread blocks `sig` (the query's watcher has taken over the signals)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_sql_stops_on_a_signal_inside_duckdb(root: Path, sig: int, code: int, said: str) -> None:
    # A shell without job control starts background commands with SIGINT ignored: give the child the default
    # disposition, as a terminal's foreground process has (tests/test_cli_errors.py).
    p = subprocess.Popen([sys.executable, "-m", "eventlog", "sql", ENDLESS, "--root", str(root)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(3000):  # until the query runs (or the process ended: then the asserts below say why)
            if p.poll() is not None or _blocked(p.pid, sig):
                break
            time.sleep(0.02)
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)  # on main: still running after 10 min
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code and out == b""
    assert err.decode().splitlines() == [f"eventlog: {said}"]


def test_no_thread_of_a_running_query_takes_the_signals(root: Path) -> None:
    """Every thread of `eventlog sql` but the watcher blocks SIGINT and SIGTERM while the query runs; the watcher takes
    them with sigtimedwait. duckdb 1.5 starts a thread when imported: imported before the mask was set (by duckdb_errors), that
    thread took a SIGTERM and its default action killed the process (exit -15, not 143)."""
    want = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    p = subprocess.Popen([sys.executable, "-m", "eventlog", "sql", ENDLESS, "--root", str(root)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        for _ in range(3000):  # the query runs: the mask is set, duckdb loaded, the watcher and its threads started
            if p.poll() is not None or (_blocked(p.pid, signal.SIGTERM) and len(os.listdir(f"/proc/{p.pid}/task")) >= 3
                                        and "duckdb" in Path(f"/proc/{p.pid}/maps").read_text()):
                break
            time.sleep(0.02)
        time.sleep(0.5)  # DuckDB's worker threads, started by connect
        assert p.poll() is None, p.stderr.read() if p.stderr else b""
        masks = {}
        for tid in os.listdir(f"/proc/{p.pid}/task"):
            status = Path(f"/proc/{p.pid}/task/{tid}/status").read_text()
            masks[tid] = int(next(x for x in status.splitlines() if x.startswith("SigBlk:")).split()[1], 16)
        # the watcher's sigtimedwait unblocks the two while it waits (the kernel shows that mask): one thread, no more
        open_to = [t for t, m in masks.items() if m & want != want]
        assert len(masks) >= 3 and len(open_to) <= 1, {t: hex(m) for t, m in masks.items()}
    finally:
        p.kill()
        p.wait()


def test_regex_budget_is_per_command(tmp_path: Path) -> None:
    from eventlog.recall.textmatch import REGEX_BUDGET_S

    root = tmp_path / "root"
    # each text costs the backtracking pattern ~0.25–1 s: under a per-message budget all 120 pass, one by one
    EventLog(root, fsync="never").append_many(_msg(i, "a" * 21 + "!") for i in range(120))
    p = _eventlog("grep", "-E", "(a+)+$", "--root", str(root))
    assert p.returncode == 2 and p.stdout == b""
    (line,) = p.stderr.decode().splitlines()
    assert f"used up its {REGEX_BUDGET_S:g} s budget in" in line and "catastrophic backtracking" in line
    checked = int(line.split(" budget in ")[1].split()[0])
    assert checked < 120, line


def _export(tmp_path: Path, extra: str) -> Path:
    rec = ('{"id": 1, "type": "message", "date": "2026-03-01T12:00:00", "date_unixtime": "1772355600", "from": "A", '
           '"from_id": "user1", "text": "hi", "text_entities": [{"type": "plain", "text": "hi"}]' + extra + '}')
    p = tmp_path / "result.json"
    p.write_text('{"name": "Bot", "type": "bot_chat", "id": 5, "messages": [' + rec + "]}")
    return p


@pytest.mark.parametrize(("extra", "said"), [
    (', "x": ' + "[" * 300 + "1" + "]" * 300, "nested deeper than 32 levels"),  # was: not written, yet exit 0
    (', "x": ' + "[" * 5000 + "1" + "]" * 5000, "nested deeper than 32 levels"),  # was: a RecursionError traceback
    (', "y": NaN', "NaN is not a JSON number"),  # was: stored as null
    (', "y": -Infinity', "-Infinity is not a JSON number"),
])
def test_import_refuses_deep_nesting_and_nan(tmp_path: Path, extra: str, said: str) -> None:
    root = tmp_path / "root"
    assert _eventlog("init", "--root", str(root)).returncode == 0
    p = _eventlog("import", "telegram-desktop", str(_export(tmp_path, extra)), "--root", str(root))
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.decode().splitlines()
    assert said in line and line.startswith("eventlog: ")
    assert not list((root / "raw").rglob("*.jsonl"))  # nothing half-imported


@pytest.mark.parametrize(("value", "said"), [("[" * 300 + "]" * 300, "Recursion limit"),
                                              ("[" * 3000 + "]" * 3000, "depth limit"),
                                              ("NaN", "invalid JSON"), ("Infinity", "invalid JSON")])
def test_append_refuses_deep_nesting_and_nan(root: Path, value: str, said: str) -> None:
    line = ('{"event": "message:received", "channel": "telegram", "chat_id": "1", "ts": "2026-11-28T10:00:00Z", '
            '"text": "x", "payload": ' + value + "}\n")
    p = _eventlog("append", "--root", str(root), stdin=line.encode())
    assert p.returncode == 2
    (err,) = p.stderr.decode().splitlines()
    assert err.startswith("eventlog: stdin line 1: ") and said in err and "nothing was written" in err
