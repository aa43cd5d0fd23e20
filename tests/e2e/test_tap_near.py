"""Issue 25, two tiers, on the REAL (pinned) OpenClaw gateway: a near-format key (`sk-ant-api03-` + 90 random
characters; the exact rule wants 93 + AA) in a reply, with default streaming and with partial previews. Nothing of the
key reaches the fake Telegram or the log root, the final message carries the redaction marker, and exactly one alert
(tier near_format) is raised. Reuses test_tap's fixtures (one patched copy, a default and a `partial` gateway)."""
from __future__ import annotations

import secrets

import pytest

from test_tap import ALNUM, all_bytes, chat_texts, leaked, wait_events  # noqa: F401

pytestmark = pytest.mark.e2e

MARK = "[REDACTED:anthropic-api-key]"


def near_key() -> str:
    """sk-ant-api03- + 90 random characters, made now (never a literal in the suite)."""
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(90))


def _check(g, user: int, key: str, tg_mark: int, needle) -> None:
    sent = wait_events(g.eventlog_root, lambda e: e["event"] == "message:sent" and e["chat_id"] == str(user)
                       and needle(e), timeout=240)
    assert sent, "no message:sent record of the redacted reply"
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    assert leaked(bodies, key) is None, "a 12-character piece of the key reached Telegram"
    texts = chat_texts(g, user, tg_mark)
    assert texts and texts[-1].endswith(MARK), texts[-1:]
    alerts = [e for e in wait_events(g.eventlog_root, lambda e: e["chat_id"] == str(user), sub="dlp")
              if e["event"] == "dlp:alert"]
    assert [(a["rule"], a["tier"], a["direction"]) for a in alerts] == [("anthropic-api-key", "near_format", "out")]
    assert leaked(all_bytes(g.eventlog_root), key) is None, "the key is somewhere under the log root"


def test_near_key_default_streaming_redacted_before_send_and_log(patched) -> None:
    g = patched
    user = g.new_user()
    key = near_key()
    marker = f"near{secrets.token_hex(4)}"
    g.llm.script(f"Here is the key: {key}", when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"give me the key {marker}", user)
    reply = g.wait_reply(user, since=tg_mark, contains=MARK, timeout=180)
    assert reply.text().endswith(f"Here is the key: {MARK}")
    _check(g, user, key, tg_mark, lambda e: MARK in str(e.get("text", "")))


def test_near_key_partial_previews_end_in_a_redaction(patched_stream) -> None:
    g = patched_stream
    user = g.new_user()
    key = near_key()
    marker = f"nearp{secrets.token_hex(4)}"
    text = f"Here is the key: {key}"
    cut = text.index(key)
    # previews that end on growing pieces of the key, the last one the whole reply (the reply ends in the key)
    chunks = [text[:cut], key[:2], key[2:7], key[7:13], key[13:30], key[30:60], key[60:]]
    g.llm.script(text, chunks=chunks, delay=1.2, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"stream the key {marker}", user)
    # the reply's last preview held the key back; the tap's release completes it with the redaction
    g.wait_reply(user, since=tg_mark, contains=MARK, timeout=240)
    _check(g, user, key, tg_mark, lambda e: bool(e.get("tap_release")) and MARK in str(e.get("text", "")))
    shown = [r for r in g.telegram.calls(since=tg_mark) if r.method in ("sendMessage", "editMessageText")
             and isinstance(r.body, dict) and str(r.body.get("chat_id")) == str(user)]
    assert sum(r.method == "editMessageText" for r in shown) >= 2, "previews stayed on (growing edits)"
    for r in shown:
        for i in range(len("sk-ant-") + 1, len(key) + 1):
            assert key[:i] not in r.text(), f"{r.method} showed a {i}-character prefix of the key"
