"""Issue 25 item 5 on the REAL (pinned) OpenClaw gateway, offline against the loopback fakes: OpenClaw's internal-
context block echoed inline (where upstream's own stripper, which needs the markers on lines of their own, misses it)
in a streamed reply (partial previews, the marker split across edits) never reaches the fake Telegram —
not a piece of the marker, not the block's contents — the final message carries `[REDACTED:openclaw-internal-context]`
and keeps the reply around it, one alert is raised and the log root does not hold the block's contents.
Reuses test_tap's patched copy and gateway fixtures (a module of its own: one more `partial` gateway)."""
from __future__ import annotations

import secrets

import pytest

from eventlog.smoke.harness import Gateway
from test_tap import all_bytes, chat_texts, sent_record, wait_events  # noqa: F401

pytestmark = pytest.mark.e2e

B, E = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"


def test_internal_context_block_is_redacted_over_preview_edits(patched_stream: Gateway) -> None:
    g = patched_stream
    user = g.new_user()
    marker = f"tapctx{secrets.token_hex(4)}"
    inner = f"ctxsecret{secrets.token_hex(6)}"  # stands for the block's private contents (chat ids, earlier turns)
    # Upstream strips a block whose markers stand on lines of their own (stripInternalRuntimeContext in
    # dist/internal-runtime-context-*.mjs, checked on this gateway); one echoed inline, mid-line, passes it and reaches
    # the tap: that is the leak this rule stops.
    block = f'{B} Conversation info: (openclaw:ctx) {{"chat_id":"telegram:{inner}","sender":{{"name":"Ann"}}}} {E}'
    text = f"Sure, here it is: {block} The answer is forty-two, no more. {marker}"
    cut = text.index(B)
    # previews end inside the BEGIN marker ("<<<", "<<<BEGIN_OPEN"), inside the block, and inside the END marker
    chunks = [text[:cut + 3], text[cut + 3:cut + 13], text[cut + 13:cut + len(B) + 20],
              text[cut + len(B) + 20:text.index(E) + 8], text[text.index(E) + 8:]]
    g.llm.script(text, chunks=chunks, delay=1.2, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"context please {marker}", user)
    reply = g.wait_reply(user, since=tg_mark, contains="no more.", timeout=240)
    sent_record(g, user, "no more.")
    for t in chat_texts(g, user, since=tg_mark):
        assert "<<<" not in t and "OPENCLAW" not in t and "Conversation info" not in t and inner not in t, t
        assert not t.rstrip().endswith("<"), t
    final = reply.text()
    assert "Sure, here it is:" in final and "The answer is forty-two" in final
    assert "[REDACTED:openclaw-internal-context]" in final
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    assert inner not in bodies
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user),
                         sub="dlp")
    assert [a["rule"] for a in alerts] == ["openclaw-internal-context"]
    assert inner not in all_bytes(g.eventlog_root)
