"""Baseline on the UNPATCHED gateway: the harness really drives OpenClaw end to end, offline."""

from __future__ import annotations

import secrets

import pytest

from tools.e2e.harness import Gateway


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
