"""Baseline on the UNPATCHED gateway: the harness really drives OpenClaw end to end, offline."""

from __future__ import annotations

import secrets

import pytest

from eventlog.smoke.harness import Gateway


@pytest.mark.e2e
def test_dm_reaches_llm_and_scripted_reply_reaches_telegram(gateway: Gateway) -> None:
    user = gateway.new_user()
    marker = f"baseline{secrets.token_hex(4)}"
    reply_text = f"Scripted answer {marker} from the fake model."
    gateway.llm.script(reply_text, when=marker)
    llm_mark, tg_mark = gateway.llm.mark(), gateway.telegram.mark()

    update = gateway.send_dm(f"hello {marker}", user)

    llm_req = gateway.llm.wait_for(lambda r: marker in r.last_user_text(), since=llm_mark, timeout=180)
    assert llm_req.body.get("model") == "fake-model"
    assert llm_req.reply == reply_text, "the scripted reply was handed to this request"
    reply = gateway.wait_reply(user, since=tg_mark, contains=reply_text, timeout=180)
    assert reply.method == "sendMessage"
    assert str(reply.body["chat_id"]) == str(user)
    assert reply.response["ok"] is True
    assert llm_req.ts <= reply.ts
    # The gateway saw exactly the update we injected and answered only that chat.
    assert update["message"]["chat"]["id"] == user
    assert all(str(r.body.get("chat_id")) == str(user) for r in gateway.telegram.calls("sendMessage", tg_mark))
    assert gateway.net_violations() == []


@pytest.fixture(scope="module")
def partial_gateway(gateway_factory):  # type: ignore[no-untyped-def]
    return gateway_factory("partial", streaming="partial")


@pytest.mark.e2e
def test_slow_stream_with_partial_previews_shows_growing_edits(partial_gateway: Gateway) -> None:
    """The unpatched baseline of the preview-leak test: with `streaming: partial` and a slowly streamed reply, OpenClaw
    sends a preview message and edits it as text arrives, so previews really do show partial text."""
    g = partial_gateway
    user = g.new_user()
    marker = f"stream{secrets.token_hex(4)}"
    words = [f"word{i:02d}" for i in range(24)]
    reply_text = " ".join(words) + f" end {marker}."
    g.llm.script(reply_text, chunks=[w + " " for w in words] + [f"end {marker}."], delay=0.35, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"tell me a long story {marker}", user)
    final = g.wait_reply(user, since=tg_mark, contains=f"end {marker}", timeout=240)
    content = [r for r in g.telegram.calls(since=tg_mark)
               if r.method in ("sendMessage", "editMessageText") and str(r.body.get("chat_id")) == str(user)]
    texts = [r.text() for r in content[:content.index(final) + 1]]
    partial = [t for t in texts if "word00" in t and f"end {marker}" not in t]
    assert partial, f"no preview carried partial text; content requests: {[(r.method, r.text()[:40]) for r in content]}"
    assert any(r.method == "editMessageText" for r in content), "previews were not edited in place"
    assert final.response["ok"] is True
    assert g.net_violations() == []
