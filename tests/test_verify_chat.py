"""`eventlog verify --chat N` checks that chat's seals too: a sealed day file cut short (what the chain alone cannot see)
is damage whether the whole root or only that chat is verified, and another chat's damage stays out of a chat-scoped
report. Added for issue 15 (mutation testing found the chat-scoped seal lookup unchecked)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog
from store_support import ev


def two_chats(root: Path) -> None:
    log = EventLog(root, fsync="never")
    for chat in ("42", "43"):
        for i in range(3):
            log.append(ev(chat=chat, ts=f"2026-11-29T10:00:0{i}Z", text=f"line {i}"))
        log.append(ev(chat=chat, ts="2026-11-30T10:00:00Z", text="next day"))  # seals the 29th


def cut_last_line(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1])


def test_a_truncated_sealed_day_is_damage_in_a_chat_scoped_verify(root: Path) -> None:
    two_chats(root)
    assert verify(root).ok and verify(root, chat="42").ok
    day = root / "raw" / "telegram" / "chats" / "42" / "2026" / "11" / "29.jsonl"
    cut_last_line(day)
    for report in (verify(root), verify(root, chat="42")):
        assert [(p.relpath, p.line) for p in report.damage] == [("raw/telegram/chats/42/2026/11/29.jsonl", 2)], report
        assert "truncated: 2 lines, sealed with 3" in report.damage[0].reason
    assert verify(root, chat="43").ok
    r = CliRunner().invoke(cli, ["verify", "--chat", "42", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 2 and "truncated" in r.output  # exit 2: damaged (eventlog verify --help)
    r = CliRunner().invoke(cli, ["verify", "--chat", "43", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
