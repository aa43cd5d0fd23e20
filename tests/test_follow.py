"""`eventlog tail -f` in a real process sees events appended by another real process — in an existing
file, in a brand-new chat, across the midnight switch to a new day file — and never emits a partial line."""
from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import orjson
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

EVENTLOG = [sys.executable, "-m", "eventlog"]
APPEND = [sys.executable, "-c", "import sys, orjson; from eventlog.store.writer import EventLog; "
          "EventLog(sys.argv[1], fsync='never').append(orjson.loads(sys.argv[2]))"]


def ev(chat: str, ts: str, text: str) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": chat, "ts": ts, "text": text,
            "direction": "in", "from": {"id": 1, "username": "ann"}}


class Tail:
    def __init__(self, root: Path, *args: str) -> None:
        self.p = subprocess.Popen(EVENTLOG + ["tail", "-f", "-n", "0", "--json", "--root", str(root), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parent.parent)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.p.stdout, selectors.EVENT_READ)
        self.buf = b""
        # Ready once it says so on stderr (the watch is in place).
        line = self.p.stderr.readline()
        assert b"following" in line, line

    def next_event(self, timeout: float) -> dict | None:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return orjson.loads(line)

    def close(self) -> None:
        self.p.terminate()
        self.p.wait(timeout=10)


def appended_by_other_process(root: Path, event: dict) -> None:
    """Append in a separate process."""
    subprocess.run(APPEND + [str(root), orjson.dumps(event).decode()], check=True,
                   cwd=Path(__file__).parent.parent)


def test_tail_follows_other_processes(root):
    EventLog(root, fsync="never").append(ev("100", "2026-11-29T23:59:58.000Z", "before start"))
    t = Tail(root)
    try:
        cases = [
            ev("100", "2026-11-29T23:59:59.000Z", "same file"),
            ev("@newchat", "2026-11-29T23:59:59.500Z", "first event of a new chat"),
            ev("100", "2026-11-30T00:00:00.100Z", "after midnight: a new day file"),
            ev("-100777", "2027-01-01T00:00:00.000Z", "new chat, new year, new month directories"),
        ]
        for case in cases:
            appended_by_other_process(root, case)
            # No timed assertion (house rule): the timeout is only how long to wait before calling it lost.
            got = t.next_event(timeout=60)
            assert got is not None, f"not seen: {case['text']}"
            assert (got["chat_id"], got["text"]) == (case["chat_id"], case["text"])
        # nothing twice, nothing from before the start: the next event is the sentinel appended last
        appended_by_other_process(root, ev("100", "2027-01-01T00:00:01.000Z", "sentinel"))
        assert t.next_event(timeout=60)["text"] == "sentinel"
    finally:
        t.close()


def test_partial_line_waits_until_it_is_complete_and_chat_filter(root):
    EventLog(root, fsync="never").append(ev("1", "2026-11-30T01:00:00.000Z", "x"))
    t = Tail(root, "--chat", "1")
    try:
        path = root / "raw/telegram/chats/1/2026/11/30.jsonl"
        line = EventLog(root, fsync="never").append(ev("1", "2026-11-30T01:00:01.000Z", "whole"))
        assert t.next_event(timeout=60)["text"] == "whole"
        # A writer mid-line: nothing is emitted until the newline lands. The wait ends on an event, not a sleep: a
        # later line in another day file of the same chat, which the tail handles after the half line's change.
        data = orjson.dumps({**line, "text": "half", "id": "01JA0000000000000000000001"}, option=orjson.OPT_SORT_KEYS)
        with open(path, "ab") as f:
            f.write(data[:20])
            f.flush()
            appended_by_other_process(root, ev("1", "2026-12-01T01:00:00.000Z", "next day"))
            assert t.next_event(timeout=60)["text"] == "next day"  # not a fragment of the half line
            f.write(data[20:] + b"\n")
        assert t.next_event(timeout=60)["text"] == "half"
        # the chat filter: the other chat's event, appended first, is not emitted; the sentinel after it is
        appended_by_other_process(root, ev("2", "2026-11-30T01:00:02.000Z", "other chat"))
        appended_by_other_process(root, ev("1", "2026-12-01T01:00:03.000Z", "sentinel"))
        assert t.next_event(timeout=60)["text"] == "sentinel"
    finally:
        t.close()


def test_tail_without_follow(root):
    log = EventLog(root, fsync="never")
    for i in range(5):
        log.append(ev(str(i % 2), f"2026-11-2{i}T10:00:00.000Z", f"m{i}"))
    r = CliRunner().invoke(cli, ["tail", "-n", "3", "--json", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0
    assert [orjson.loads(x)["text"] for x in r.stdout.splitlines()] == ["m2", "m3", "m4"]
    r = CliRunner().invoke(cli, ["tail", "--chat", "1", "--root", str(root)], catch_exceptions=False)
    assert [x.split(": ")[-1] for x in r.stdout.splitlines()] == ["m1", "m3"]
    r = CliRunner().invoke(cli, ["tail", "--chat", "nobody", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 1


def test_the_watch_threads_leave_ctrl_c_to_the_main_thread(tmp_path) -> None:
    """A signal goes to any thread that does not block it; one taken by a watchdog thread never wakes the main
    thread's wait on the queue (`tail -f` once ignored Ctrl-C until the next write). The observer's threads block
    SIGINT and SIGTERM; the caller's own mask is unchanged."""
    import signal as sig
    import threading as th

    from eventlog.recall.follow import Follower
    from eventlog.store.writer import EventLog

    def blocked(tid: int) -> int:
        for line in open(f"/proc/self/task/{tid}/status"):
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16)
        raise AssertionError("no SigBlk")

    root = tmp_path / "root"
    EventLog(root, fsync="never").append({"event": "message:received", "channel": "telegram", "chat_id": 1,
                                          "ts": "2026-11-01T10:00:00.000Z", "text": "x"})
    before = {t.native_id for t in th.enumerate()}
    mask = sig.pthread_sigmask(sig.SIG_BLOCK, set())
    f = Follower(root, lambda e: None)
    f.start()
    try:
        new = [t.native_id for t in th.enumerate() if t.native_id not in before and t.native_id is not None]
        assert new, "the observer started no thread"
        want = (1 << (sig.SIGINT - 1)) | (1 << (sig.SIGTERM - 1))
        for tid in new:
            assert blocked(tid) & want == want, tid
        assert sig.pthread_sigmask(sig.SIG_BLOCK, set()) == mask
    finally:
        f.stop()


def test_only_the_main_thread_of_tail_f_takes_ctrl_c(tmp_path) -> None:
    """The whole `tail -f` process, not only the observer: every thread but the main one blocks SIGINT and SIGTERM.
    A library that starts a thread when imported (duckdb 1.5 does: measured, one thread at `import duckdb`) would
    take Ctrl-C from the main thread's wait if the tail path imported it; it does not import it."""
    import signal as sig

    root = tmp_path / "root"
    EventLog(root, fsync="never").append(ev("1", "2026-11-01T10:00:00.000Z", "x"))
    t = Tail(root)
    try:
        pid = t.p.pid
        want = (1 << (sig.SIGINT - 1)) | (1 << (sig.SIGTERM - 1))
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "duckdb" not in maps
        threads = sorted(int(x) for x in os.listdir(f"/proc/{pid}/task"))
        assert len(threads) > 1, "no watch thread"
        for tid in threads:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            mask = int(next(x for x in status.splitlines() if x.startswith("SigBlk:")).split()[1], 16)
            assert tid == pid or mask & want == want, (tid, hex(mask))
    finally:
        t.close()


def test_watchdogs_stop_race_is_not_printed_but_its_other_errors_are(tmp_path) -> None:
    """watchdog's inotify emitter logs "queue_events() called when the thread is inactive" when stop() wins a race
    with its read (a CI run's `tail -f` printed it before `eventlog: interrupted`). The follower drops that one record;
    any other error watchdog logs still reaches stderr through Python's last-resort handler. Run in a child so that
    no logging set-up (pytest's own) hides what a plain `eventlog` process prints."""
    root = tmp_path / "root"
    EventLog(root, fsync="never").append(ev("1", "2026-11-01T10:00:00.000Z", "x"))
    code = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from eventlog.recall.follow import Follower\n"
        "f = Follower(Path(sys.argv[1]), lambda e: None)\n"
        "f.start(); f.stop()\n"
        "lg = logging.getLogger('watchdog.observers.inotify')\n"
        "lg.error('InotifyEmitter.queue_events() called when the thread is inactive')\n"
        "lg.error('some other inotify failure')\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60,
                       cwd=Path(__file__).parent.parent)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == ["some other inotify failure"], r.stderr
