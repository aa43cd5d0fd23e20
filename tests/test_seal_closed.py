"""`eventlog seal` without `--through` seals every day file up to yesterday (UTC) and leaves today's open; `--chat`
limits it to one chat. Added for issue 15 (mutation testing found the defaults unchecked: every test passed a date)."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog
from store_support import ev


def sealed(root: Path) -> dict[str, str]:
    """relpath → outcome of a second `seal` run would be noisy; read the seal streams instead."""
    out = {}
    for p in sorted((root / "seals").rglob("*.jsonl")):
        for line in p.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "seal:file":
                out[rec["file"]] = rec["chat_id"]
    return out


def test_seal_defaults_to_yesterday_and_honours_chat(root: Path) -> None:
    today = datetime.now(timezone.utc).date()
    days = [today - timedelta(days=2), today - timedelta(days=1), today]
    # autoseal off: only `eventlog seal` may seal here (the writer would seal earlier days of a chat by itself)
    log = EventLog(root, fsync="never", autoseal=False)
    for chat in ("42", "43"):
        for d in days:
            log.append(ev(chat=chat, ts=f"{d.isoformat()}T10:00:00Z", text=f"{chat} {d}"))
    rel = {(c, d): f"raw/telegram/chats/{c}/{d:%Y/%m/%d}.jsonl" for c in ("42", "43") for d in days}
    r = CliRunner().invoke(cli, ["seal", "--chat", "42", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert sealed(root) == {rel["42", days[0]]: "42", rel["42", days[1]]: "42"}  # not today, not chat 43
    r = CliRunner().invoke(cli, ["seal", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert set(sealed(root)) == {rel[c, d] for c in ("42", "43") for d in days[:2]}
