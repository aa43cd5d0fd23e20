"""Issue 25 item 2 on the REAL (pinned) OpenClaw gateway, offline against the loopback fakes: the model replies with a
GitHub token that has a zero-width space inside. The tap's JS engine scans what a reader sees (docs/dlp.md, "What the
engines scan: the fold"), so with default streaming and with partial previews no 12-character piece of the token
reaches the fake Telegram, the final message carries the redaction marker, one alert is raised and nothing under the
log root holds the token. The token is generated here in GitHub's published format (30 random base62 characters and
their CRC32, base62 in 6: "Behind GitHub's new authentication token formats", GitHub blog, 2021) and never stored.
The gateways come from tests/e2e/test_tap.py's fixtures (one patched copy, two gateways for this module).
"""
from __future__ import annotations

import secrets
import sys
from pathlib import Path

import pytest

from eventlog.dlp.fold import fold_text
from eventlog.smoke.harness import Gateway

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dlp_support import github_token  # noqa: E402
from test_tap import leaked, sent_record, wait_events  # noqa: E402,F401

pytestmark = pytest.mark.e2e

ZWSP = "\u200b"


def seen(text: str) -> str:
    """What a reader sees of text, JSON escapes of the zero-width space included."""
    return fold_text(text.replace("\\u200b", "").replace("\\u200B", ""))


def root_text(root: Path) -> str:
    return seen("\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file()))


def _check(g: Gateway, user: int, tok: str, tg_mark: int, tail: str) -> None:
    sent_record(g, user, tail)
    bodies = [r.raw.decode("utf-8", "replace") for r in g.telegram.calls(since=tg_mark)]
    assert bodies and leaked(seen("\n".join(bodies)), tok) is None, "a 12-character piece of the token reached Telegram"
    shown = [r.text() for r in g.telegram.calls(since=tg_mark)
             if r.method in ("sendMessage", "editMessageText") and isinstance(r.body, dict)
             and str(r.body.get("chat_id")) == str(user)]
    assert shown and "[REDACTED:github-token]" in shown[-1] and shown[-1].endswith(tail), shown[-1:]
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user), sub="dlp")
    assert [a["rule"] for a in alerts] == ["github-token"] and alerts[0]["direction"] == "out"
    assert ZWSP not in alerts[0]["payload"]["masked"]  # what is derived from the secret: in payload (erasable)
    assert leaked(root_text(g.eventlog_root), tok) is None, "the token is somewhere under the log root"


def test_a_token_with_a_zero_width_space_is_redacted_default_streaming(patched: Gateway) -> None:
    g = patched
    user = g.new_user()
    tok = github_token()
    marker = f"tapz{secrets.token_hex(4)}"
    g.llm.script(f"Your token is {tok[:13]}{ZWSP}{tok[13:]} - keep it safe.", when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"what is my github token {marker}", user)
    g.wait_reply(user, since=tg_mark, contains="keep it safe", timeout=180)
    _check(g, user, tok, tg_mark, "keep it safe.")


def test_a_token_with_a_zero_width_space_is_redacted_partial_previews(patched_stream: Gateway) -> None:
    g = patched_stream
    user = g.new_user()
    tok = github_token()
    marker = f"tapy{secrets.token_hex(4)}"
    text = f"Sure. The token you asked for is {tok[:6]}{ZWSP}{tok[6:]} and nothing else follows here, really."
    # previews end on "gh", "ghp_", "ghp_xy<ZWSP>", then growing pieces of the body
    cut = text.index("ghp_")
    chunks = [text[:cut - 10], text[cut - 10:cut + 2], text[cut + 2:cut + 4], text[cut + 4:cut + 7],
              text[cut + 7:cut + 20], text[cut + 20:cut + 41], text[cut + 41:]]
    assert "".join(chunks) == text
    g.llm.script(text, chunks=chunks, delay=1.2, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"stream it {marker}", user)
    g.wait_reply(user, since=tg_mark, contains="really.", timeout=240)
    _check(g, user, tok, tg_mark, "really.")
    shown = [r for r in g.telegram.calls(since=tg_mark) if r.method == "editMessageText"
             and str((r.body or {}).get("chat_id")) == str(user)]
    assert len(shown) >= 2, "previews stayed on (growing edits)"
    for r in shown:
        t = seen(r.text())
        for i in range(len("ghp_") + 1, len(tok) + 1):
            assert tok[:i] not in t, f"a preview showed a {i}-character prefix of the token"
