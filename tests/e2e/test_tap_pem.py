"""Issue 25 item 3 on the REAL (pinned) OpenClaw gateway, offline against the loopback fakes: a PEM private key with
escaped newlines (a literal backslash-n, as in a JSON service-account file) streamed over several preview edits
(`streaming="partial"`). No 12-character piece of the key body reaches the fake Telegram, the header never shows (held
while partial, redacted once whole), the final message carries `[REDACTED:private-key]`, one alert is raised, and no
file under the log root holds the body. The key is generated now by openssl and thrown away.

Fixtures come from tests/e2e/test_tap.py (imported, so this module starts its own patched streaming gateway).
"""
from __future__ import annotations

import secrets
import subprocess
from typing import Any

import pytest

from test_tap import all_bytes, chat_texts, leaked, sent_record, wait_events  # noqa: F401

pytestmark = pytest.mark.e2e


def generated_pem() -> list[str]:
    out = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                         check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()


def test_pem_with_escaped_newlines_streamed_over_previews(patched_stream: Any) -> None:
    g = patched_stream
    user = g.new_user()
    lines = generated_pem()
    body = [ln for ln in lines[1:-1] if len(ln) >= 12]
    assert lines[0] == "-----BEGIN PRIVATE KEY-----" and len(body) > 20
    marker = f"tappem{secrets.token_hex(4)}"
    pem = "\\n".join(lines)  # one line of text: the newlines are the two characters backslash and n
    text = f'Here is the service account {marker}: "private_key": "{pem}\\n" - store it in the vault.'
    start = text.index("-----BEGIN")
    end = text.index("-----END")
    # previews end inside the header, right after it, inside the body (after an escape, mid-line) and in the END line
    cuts = [start - 8, start + 15, start + 27, start + 29, start + 400, start + 401, start + 1000, end + 10,
            end + len("-----END PRIVATE KEY-----"), len(text)]
    chunks = [text[a:b] for a, b in zip([0, *cuts], cuts, strict=False)]
    g.llm.script(text, chunks=chunks, delay=1.2, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"send me the key {marker}", user)
    g.wait_reply(user, since=tg_mark, contains="store it in the vault.", timeout=240)
    sent_record(g, user, "store it in the vault.")
    shown = [r for r in g.telegram.calls(since=tg_mark)
             if r.method in ("sendMessage", "editMessageText") and isinstance(r.body, dict)
             and str(r.body.get("chat_id")) == str(user)]
    assert sum(r.method == "editMessageText" for r in shown) >= 3, "previews stayed on (growing edits)"
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    for ln in body:
        assert leaked(bodies, ln) is None, "a 12-character piece of the key body reached Telegram"
    for t in chat_texts(g, user, tg_mark):
        assert "PRIVATE KEY" not in t, f"the header was shown: {t[-120:]!r}"
    final = chat_texts(g, user, tg_mark)[-1]
    assert final.endswith("[REDACTED:private-key]\\n\" - store it in the vault."), final[-160:]
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user),
                         sub="dlp")
    assert [(a["rule"], a["action"], a["direction"]) for a in alerts] == [("private-key", "redact", "out")], alerts
    everything = all_bytes(g.eventlog_root)
    for ln in body:
        assert leaked(everything, ln) is None, "a piece of the key body is somewhere under the log root"
