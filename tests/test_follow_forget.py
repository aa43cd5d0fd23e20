"""Issue 26 item 5: `eventlog tail -f` over a file that `forget` rewrites under it (atomically: same lines, other
bytes, a new inode) shows nothing twice — and still shows what is appended afterwards."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

from test_follow import Tail, appended_by_other_process, ev


def test_tail_f_after_forget_of_the_followed_file_reprints_nothing(root: Path):
    log = EventLog(root, fsync="never")
    for i in range(8):  # short texts: erased, every line grows, so the old offset falls inside a line
        log.append(ev("42", f"2026-11-29T10:00:0{i}.000Z", f"a{i}"))
    log.append(ev("43", "2026-11-29T11:00:00.000Z", "other chat"))
    t = Tail(root)
    try:
        r = CliRunner().invoke(cli, ["forget", "--chat", "42", "--reason", "asked", "--yes", "--root", str(root)],
                               catch_exceptions=False)
        assert r.exit_code == 0, r.output
        appended_by_other_process(root, ev("42", "2026-11-29T12:00:00.000Z", "after the forget"))
        appended_by_other_process(root, ev("43", "2026-11-29T12:00:01.000Z", "sentinel"))
        seen = []
        while not seen or seen[-1] != "sentinel":
            got = t.next_event(timeout=60)  # not a timed assertion: how long to wait before calling it lost
            assert got is not None, f"sentinel not seen; got {seen}"
            if got["channel"] != "system":  # the forget's own log:erased event is news, and shown
                seen.append(got["text"])
        assert seen == ["after the forget", "sentinel"]
    finally:
        t.close()
