"""OpenClaw's internal-context block streamed as preview edits, Python engine (the JS twin is
eventlog/patches/openclaw/runtime/test/dlp-internal-context.test.mjs; docs/dlp.md "OpenClaw's internal-context block"):
no piece of the marker or the block shows in any preview, the final message is redacted around the block."""
from __future__ import annotations

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

SC = Scanner(load_rules(), bytes([7]) * 32)
B, E = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
BODY = '\nConversation info: (openclaw:ctx)\n{"chat_id":"telegram:100200300","sender":{"name":"Ann Example"}}\n'
FULL = f"Sure, here it is.\n{B}{BODY}{E}\n\nThe answer is 42."


def test_streamed_block_never_shows_and_final_is_redacted() -> None:
    for n in range(1, len(FULL), 3):
        text = SC.filter(FULL[:n], preview=True)["text"]
        assert "<<<B" not in text and "Conversation info" not in text and "chat_id" not in text, text
        assert not text.endswith("<"), text
    fin = SC.filter(FULL)
    assert fin["text"] == "Sure, here it is.\n[REDACTED:openclaw-internal-context]\n\nThe answer is 42."
    assert fin["action"] == "redact"
    assert [(f.rule, f.severity, f.action) for f in fin["findings"]] == [("openclaw-internal-context", "high", "redact")]


def test_block_without_end_is_redacted_to_the_end() -> None:
    fin = SC.filter(f"Answer first.\n{B}{BODY}#session:1 User: hi")
    assert fin["text"] == "Answer first.\n[REDACTED:openclaw-internal-context]"


def test_look_alikes_are_neither_held_nor_redacted() -> None:
    for t in ("a <<< b", "<<<BEGIN_SOMETHING_ELSE>>> done.", "1 < 2 and 3 > 2 holds"):
        f = SC.filter(t, preview=True)
        assert (f["text"], f["held"]) == (t, 0)


def test_batched_log_scan_finds_the_same() -> None:
    """scan_batch joins texts with "\\n\\0\\n" and trusts that no match crosses the joint: the block's body excludes NUL,
    so a block without END stops at its own text and hides nothing in the next one."""
    texts = [f"hi {B} no end here", "the password is centipede", f"x {B} y {E} z", "plain"]
    assert SC.scan_batch(texts) == [SC.scan(t).findings for t in texts]
    assert [[f.rule for f in fs] for fs in SC.scan_batch(texts)] == [
        ["openclaw-internal-context"], ["password-prose"], ["openclaw-internal-context"], []]
