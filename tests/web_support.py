"""A small log for the page's tests (server side here, headless Chromium in the browser tests): a group with a negative
id, a streamed reply, an inbound edit, a reply, a photo, imported history, a second account, a message holding a fake
key (with its DLP alert raised by `eventlog dlp scan --log`) and one holding hostile HTML."""
from __future__ import annotations

import secrets
import string
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

ALNUM = string.ascii_letters + string.digits
GROUP = "-1001234567890"
XSS = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


def fake_key() -> str:
    """An Anthropic-shaped key made at run time: no secret-looking literal is stored in the suite."""
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(93)) + "AA"


def _in(chat: str, mid: int, ts: str, text: str, **kw: Any) -> dict[str, Any]:
    chat_obj = {"id": int(chat), "type": "supergroup", "title": "Ops team"} if chat.startswith("-") else \
        {"id": int(chat), "type": "private", "first_name": "Ann"}
    ev = {"event": "message:received", "channel": "telegram", "chat_id": chat, "direction": "in", "message_id": mid,
          "update_type": "message", "text": text, "ts": ts, "from": {"id": 11, "name": "Ann", "username": "ann"},
          "raw": {"update_id": mid, "message": {"message_id": mid, "chat": chat_obj, "text": text}}}
    ev.update(kw)
    return ev


def _out(chat: str, mid: int, ts: str, text: str, method: str = "sendMessage", **kw: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"chat_id": int(chat), "text": text}
    if method != "sendMessage":
        payload["message_id"] = mid
    payload.update(kw.pop("payload", {}))
    ev = {"event": "message:sent", "channel": "telegram", "chat_id": chat, "direction": "out", "message_id": mid,
          "method": method, "text": text, "ts": ts, "payload": payload, "outcome": {"ok": True}}
    ev.update(kw)
    return ev


def make_log(root: Path) -> dict[str, Any]:
    """Write the log and raise its alerts; returns what the tests look for."""
    key = fake_key()
    el = EventLog(root, fsync="never", autoseal=False)
    el.append_many([
        _in(GROUP, 10, "2026-11-30T09:00:00.000Z", "deploy today?"),
        _out(GROUP, 11, "2026-11-30T09:00:01.000Z", "Deploy", payload={"reply_parameters": {"message_id": 10}}),
        _out(GROUP, 11, "2026-11-30T09:00:02.000Z", "Deploying now", method="editMessageText"),
        _out(GROUP, 11, "2026-11-30T09:00:03.000Z", "Deploying now, done at 10:00", method="editMessageText"),
        _in(GROUP, 12, "2026-11-30T09:05:00.000Z", "thx"),
        {**_in(GROUP, 12, "2026-11-30T09:05:30.000Z", "thanks!"), "update_type": "edited_message",
         "raw": {"update_id": 13, "edited_message": {"message_id": 12, "chat": {"id": int(GROUP), "type": "supergroup",
                                                                                  "title": "Ops team"}}}},
        _in(GROUP, 14, "2026-12-01T08:00:00.000Z", "",
            raw={"update_id": 14, "message": {"message_id": 14, "chat": {"id": int(GROUP), "type": "supergroup",
                                                                            "title": "Ops team"},
                                               "photo": [{"file_id": "x", "width": 1, "height": 1}],
                                               "caption": "the dashboard"}}),
        _in(GROUP, 15, "2026-12-01T08:01:00.000Z", f"my key is {key} please keep it"),
        _in(GROUP, 16, "2026-12-01T08:02:00.000Z", XSS),
        _in("42", 1, "2026-11-29T12:00:00.000Z", "hello from the old days", source="import:telegram-desktop",
            raw=None, update_type=None),
        _in("42", 2, "2026-12-01T12:00:00.000Z", "hi again"),
    ])
    el.append({**_in("77", 1, "2026-12-01T13:00:00.000Z", "ops account chat"), "account": "ops"})
    r = CliRunner().invoke(cli, ["dlp", "scan", "--log", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return {"key": key, "group": GROUP, "xss": XSS}
