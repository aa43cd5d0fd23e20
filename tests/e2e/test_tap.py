"""Issue 5, items a–f: the patch set on the REAL (pinned) OpenClaw gateway, offline against the loopback fakes.

One private patched copy of the installed package serves three gateways: default streaming, `partial` preview
streaming, and one whose DLP rule file is broken (the fail-closed fault). Secrets are generated at run time.
"""
from __future__ import annotations

import secrets
import string
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest

from eventlog.smoke.harness import Gateway

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))

from patchset_util import same_bytes  # noqa: E402

pytestmark = pytest.mark.e2e

ALNUM = string.ascii_letters + string.digits


def planted_key() -> str:
    """A fake-format Anthropic key, made now, never written by the test."""
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(80)) + "-" + \
        "".join(secrets.choice(ALNUM) for _ in range(12)) + "AA"


def pieces(secret: str, n: int = 12) -> set[str]:
    return {secret[i:i + n] for i in range(len(secret) - n + 1)}


def leaked(haystack: str, secret: str) -> str | None:
    return next((p for p in pieces(secret) if p in haystack), None)


def events(root: Path, sub: str = "raw") -> list[dict[str, Any]]:
    out = []
    base = root / sub
    if base.exists():
        for p in sorted(base.rglob("*.jsonl")):
            out += [orjson.loads(line) for line in p.read_bytes().splitlines() if line.strip()]
    return out


def wait_events(root: Path, pred: Callable[[dict[str, Any]], bool], *, sub: str = "raw", n: int = 1,
                timeout: float = 60.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        got = [e for e in events(root, sub) if pred(e)]
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.25)


def sent_record(g: Gateway, user: int, needle: str) -> dict[str, Any]:
    """End a negative check on an event, not a sleep: the tap's message:sent record of the reply call whose text
    holds `needle` — written after Telegram answered that call, so the call and every call before it were made."""
    def pred(e: dict[str, Any]) -> bool:
        payload = e.get("payload") if isinstance(e.get("payload"), dict) else {}
        return (e["event"] == "message:sent" and e["chat_id"] == str(user)
                and needle in str(payload.get("text", "")))

    got = wait_events(g.eventlog_root, pred, timeout=120)
    assert got, f"no message:sent record of the reply holding {needle!r}"
    return got[0]


def ts_seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def all_bytes(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("latin-1") for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def patched_fault(gateway_factory: Callable[..., Gateway], patched_dir: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Gateway:
    broken = tmp_path_factory.mktemp("fault") / "rules.json"
    broken.write_text('{"version": 1, "rules": [{"id": "broken"')  # truncated: the scanner cannot be built
    return gateway_factory("patched-fault", openclaw_dir=patched_dir, env={"EVENTLOG_DLP_RULES": str(broken)})


def test_a_received_before_llm_and_sent_with_provider_id(patched: Gateway) -> None:
    g = patched
    user = g.new_user()
    marker = f"tapa{secrets.token_hex(4)}"
    # ends like the start of a JWT (`e` of `eyJ…`): the final reply must still arrive whole (no hold-back)
    reply_text = f"Answer {marker} from the old release"
    g.llm.script(reply_text, when=marker)
    llm_mark, tg_mark = g.llm.mark(), g.telegram.mark()
    upd = g.send_dm(f"hello {marker}", user)
    llm_req = g.llm.wait_for(lambda r: marker in r.last_user_text(), since=llm_mark, timeout=180)
    reply = g.wait_reply(user, since=tg_mark, contains=reply_text, timeout=180)
    received = [e for e in events(g.eventlog_root) if e["event"] == "message:received"
                and e.get("update_id") == upd["update_id"]]
    assert len(received) == 1
    rec = received[0]
    assert rec["chat_id"] == str(user) and rec["text"] == f"hello {marker}" and rec["raw"] == upd
    # the line was written before the model was asked (ms resolution on the log side)
    assert ts_seconds(rec["ts"]) <= llm_req.ts + 0.001
    mid = reply.response["result"]["message_id"]
    sent = wait_events(g.eventlog_root, lambda e: e["event"] == "message:sent" and e.get("message_id") == mid
                       and e["chat_id"] == str(user))
    assert len(sent) == 1
    bot = reply.response["result"]["from"]  # the sent message's sender, as Telegram returns it: the bot
    assert sent[0]["method"] == reply.method and sent[0]["outcome"] == {
        "ok": True, "message_id": mid,
        "from": {"id": bot["id"], "is_bot": True, "username": bot["username"], "name": bot["first_name"]}}
    assert sent[0]["payload"]["text"] == reply.body["text"]
    assert sent[0]["site"] == "send", "default config: the final reply goes out through the outbound helper bot"
    assert reply.text().endswith("from the old release") and "held_back" not in (sent[0].get("dlp") or {})
    # the JS writer's lines verify with the Python store (chain, encoding)
    v = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(g.eventlog_root)],
                       capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr


def test_b_key_in_reply_never_reaches_telegram_nor_disk(patched: Gateway) -> None:
    g = patched
    user = g.new_user()
    key = planted_key()
    marker = f"tapb{secrets.token_hex(4)}"
    g.llm.script(f"Your key is {key} - keep it safe.", when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"what is my key {marker}", user)
    reply = g.wait_reply(user, since=tg_mark, contains="keep it safe", timeout=180)
    assert "[REDACTED:anthropic-api-key]" in reply.text()
    sent_record(g, user, "keep it safe")
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    assert leaked(bodies, key) is None, "a 12-character piece of the key reached Telegram"
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user), sub="dlp")
    assert alerts and alerts[0]["rule"] == "anthropic-api-key" and alerts[0]["direction"] == "out"
    assert leaked(all_bytes(g.eventlog_root), key) is None, "the key is somewhere under the log root"


def test_c_streaming_previews_never_show_a_key_prefix(patched_stream: Gateway) -> None:
    g = patched_stream
    user = g.new_user()
    key = planted_key()
    marker = f"tapc{secrets.token_hex(4)}"
    text = f"Sure. The key you asked for is {key} and nothing else follows here, really."
    # split so that previews end exactly on growing prefixes of the key: "sk", "sk-", "sk-ant-", "sk-ant-api03-…"
    cut = text.index(key)
    chunks = [text[:cut - 10], text[cut - 10:cut + 2], text[cut + 2:cut + 3], text[cut + 3:cut + 7],
              text[cut + 7:cut + 13], text[cut + 13:cut + 40], text[cut + 40:cut + len(key)], text[cut + len(key):]]
    g.llm.script(text, chunks=chunks, delay=1.2, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"stream it {marker}", user)
    g.wait_reply(user, since=tg_mark, contains="really.", timeout=240)
    sent_record(g, user, "really.")
    shown = [r for r in g.telegram.calls(since=tg_mark)
             if r.method in ("sendMessage", "editMessageText") and isinstance(r.body, dict)
             and str(r.body.get("chat_id")) == str(user)]
    assert sum(r.method == "editMessageText" for r in shown) >= 2, "previews stayed on (growing edits)"
    for r in shown:
        t = r.text()
        # `sk-ant-` is the rule's public prefix: a preview that stalls on it may be released (tap-release.mjs)
        for i in range(len("sk-ant-") + 1, len(key) + 1):
            assert key[:i] not in t, f"{r.method} showed a {i}-character prefix of the key"
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    assert leaked(bodies, key) is None
    held = wait_events(g.eventlog_root, lambda e: e["event"] == "message:sent" and e["chat_id"] == str(user)
                       and (e.get("dlp") or {}).get("held_back", 0) > 0)
    assert held, "at least one preview was cut back"
    assert leaked(all_bytes(g.eventlog_root), key) is None


def chat_texts(g: Gateway, user: int, since: int = 0) -> list[str]:
    return [r.text() for r in g.telegram.calls(since=since)
            if r.method in ("sendMessage", "editMessageText") and isinstance(r.body, dict)
            and str(r.body.get("chat_id")) == str(user)]


def test_c2_held_preview_tails_are_released_but_key_material_never(patched_stream: Gateway) -> None:
    """docs/patchset.md "Streaming previews" item 3: OpenClaw's final edit of a streamed reply looks like any preview
    edit, so a reply that really ends in `the answer is 42` or `key is sk` is completed by the tap's release after the
    quiet period; a tail with key material beyond a public prefix is never shown: it is released as a redaction (issue 25),
    a complete key only redacted."""
    g = patched_stream
    stalled, sk_user, full_user = g.new_user(), g.new_user(), g.new_user()
    tag = secrets.token_hex(3)
    key = planted_key()
    body = "".join(secrets.choice(ALNUM) for _ in range(24))
    texts = {
        "stall": f"Noted stall{tag}. Streaming stopped and the partial key is sk-ant-api03-{body}",
        "skend": f"Noted skend{tag}. Here is the short answer you wanted: the key is sk",
        "fullk": f"Noted fullk{tag}. Here is what you asked for: your key is {key}",
        "numbr": f"Noted numbr{tag}. After thinking about it for a while, the answer is 42",
    }

    def script(name: str) -> None:
        t = texts[name]
        tail = t.rindex(" is ")
        chunks = [t[:tail - 12], t[tail - 12:tail + 4], t[tail + 4:tail + 6], t[tail + 6:]]
        g.llm.script(t, chunks=[c for c in chunks if c], delay=1.0, when=f"{name}{tag}")

    # One DM at a time: DMs share OpenClaw's main session, and messages queued behind a running turn are answered as
    # a follow-up through the send site, without previews.
    tg_mark = g.telegram.mark()
    script("stall")
    g.send_dm(f"please stream stall{tag}", stalled)
    # the stalled key's last preview (its whole tail held back) is on record: any release of it is now scheduled ...
    last = wait_events(g.eventlog_root, lambda e: e["event"] == "message:sent" and e["chat_id"] == str(stalled)
                       and (e.get("dlp") or {}).get("held_back") == len(f"sk-ant-api03-{body}"), timeout=240)
    assert last, "the stalled reply's final preview was held back"
    # ... and would fire before the release of a later reply in the same chat (same quiet period, timers in order)
    for name, user, needle in (("numbr", stalled, "the answer is 42"), ("skend", sk_user, "the key is sk"),
                               ("fullk", full_user, "your key is [REDACTED:anthropic-api-key]")):
        script(name)
        g.send_dm(f"please stream {name}{tag}", user)
        g.wait_reply(user, since=tg_mark, contains=needle, timeout=240)
    assert [t for t in chat_texts(g, stalled, tg_mark) if t.endswith("the answer is 42")]
    assert [t for t in chat_texts(g, sk_user, tg_mark) if t.endswith("the key is sk")]
    for t in chat_texts(g, stalled, tg_mark):
        assert "api03-" + body[:1] not in t, "the stalled key's body was shown"
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    assert leaked(bodies, key) is None and leaked(bodies, body) is None
    for r in g.telegram.calls(since=tg_mark):
        for i in range(len("sk-ant-") + 1, len(key) + 1):
            assert key[:i] not in r.text(), f"{r.method} showed a {i}-character prefix of the key"
    # four releases: the stalled key (its withheld tail now ends in a redaction, issue 25), the answer, `sk`, the key;
    # wait for all of them, not for the first three (they come in any order across the chats)
    chats = {str(stalled), str(sk_user), str(full_user)}
    deadline = time.monotonic() + 60
    while True:
        released = [e for e in events(g.eventlog_root) if e["event"] == "message:sent" and e.get("tap_release")]
        if (len(released) >= 4 and {e["chat_id"] for e in released} >= chats) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert {e["chat_id"] for e in released} >= chats and len(released) >= 4, released
    assert not any("api03-" in e.get("text", "") for e in released), "the stalled key's tail was released"
    assert [e for e in released if e["chat_id"] == str(stalled)
            and "partial key is [REDACTED:" in e.get("text", "")], "the withheld tail ends in a redaction"
    assert all(e["site"] == "ingress" and e["method"] == "editMessageText" and e["outcome"]["ok"] for e in released)
    full = [e for e in released if e["chat_id"] == str(full_user) and "[REDACTED:" in e.get("text", "")]
    assert full and full[0]["dlp"]["rules"] == ["anthropic-api-key"]
    assert leaked(all_bytes(g.eventlog_root), key) is None and leaked(all_bytes(g.eventlog_root), body) is None


def test_d_edits_callbacks_reactions_and_unaddressed_group_messages_are_logged(patched: Gateway) -> None:
    g = patched
    user = g.new_user()
    tg = g.telegram
    marker = f"tapd{secrets.token_hex(4)}"
    g.llm.script(f"ok {marker}", when=marker)
    original = g.send_dm(f"first {marker}", user)
    ids = {
        "edited_message": tg.send_edit(original["message"], f"first, edited {marker}")["update_id"],
        "callback_query": tg.send_callback(user_id=user, data=f"cb-{marker}")["update_id"],
        "message_reaction": tg.send_reaction(user_id=user, chat_id=user,
                                             message_id=original["message"]["message_id"])["update_id"],
        "message": tg.send_group(f"just chatting {marker}", user_id=user, chat_id=-1000000000000 - user,
                                 mention_bot=False)["update_id"],
    }
    want = set(ids.values())
    got = wait_events(g.eventlog_root, lambda e: e["event"] == "message:received" and e.get("update_id") in want,
                      n=len(want), timeout=120)
    by_id = {e["update_id"]: e for e in got}
    assert set(by_id) == want
    for kind, uid in ids.items():
        assert by_id[uid]["update_type"] == kind
    assert by_id[ids["message"]]["chat_id"] == str(-1000000000000 - user)
    assert by_id[ids["callback_query"]]["chat_id"] == str(user)


def test_e_scanner_fault_refuses_the_call_and_alerts(patched_fault: Gateway) -> None:
    g = patched_fault
    user = g.new_user()
    marker = f"tape{secrets.token_hex(4)}"
    reply_text = f"Reply {marker} that must not leave."
    g.llm.script(reply_text, when=marker)
    llm_mark, tg_mark = g.llm.mark(), g.telegram.mark()
    g.send_dm(f"hi {marker}", user)
    g.llm.wait_for(lambda r: marker in r.last_user_text(), since=llm_mark, timeout=180)
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user)
                         and e["rule"] == "scanner-error", sub="dlp", timeout=120)
    assert alerts, "a scanner-error alert for the refused reply"
    # the end of the wait is an event: the tap's message:sent record of the refused call (a forwarded call would be
    # in the fake's request list before its record is written)
    refused = wait_events(g.eventlog_root, lambda e: e["event"] == "message:sent" and e["chat_id"] == str(user),
                          timeout=120)
    out = [r for r in g.telegram.calls(since=tg_mark) if marker in r.raw.decode("utf-8", "replace")]
    assert out == [], "the reply was forwarded although the scanner failed"
    assert refused and all(e["outcome"]["ok"] is False and "payload" not in e for e in refused)


def test_g_bot_url_token_and_prose_passwords_redacted_by_both_engines(patched: Gateway) -> None:
    """Issue 16: a Telegram bot token inside a Bot API URL, a password in English prose and one in Russian prose are
    found by the Python and the JS engine alike, and redacted on the real gateway before Telegram sees them."""
    from eventlog.dlp.engine import Scanner
    from eventlog.dlp.rules import load_rules

    g = patched
    user = g.new_user()
    tok_alpha = ALNUM + "_-"
    token = f"{secrets.randbelow(9 * 10**9) + 10**9}:AA" + "".join(secrets.choice(tok_alpha) for _ in range(33))
    pw_en = "Tr0ub4dor&" + "".join(secrets.choice(ALNUM) for _ in range(6))
    pw_ru = "Zebra-" + "".join(secrets.choice(string.digits) for _ in range(4)) + "-Lamp"
    marker = f"tapg{secrets.token_hex(4)}"
    text = (f"Done. The webhook call was https://api.telegram.org/bot{token}/sendMessage?chat_id=1 and my password "
            f"is {pw_en} for the NAS. А мой пароль {pw_ru} — не забудь. {marker}")
    want = ["telegram-bot-token", "password-prose", "password-prose"]
    # the Python engine on the same text (the JS engine runs inside the gateway below)
    assert [f.rule for f in Scanner(load_rules(), b"k" * 32).scan(text).findings] == want
    g.llm.script(text, when=marker)
    tg_mark = g.telegram.mark()
    g.send_dm(f"show me {marker}", user)
    reply = g.wait_reply(user, since=tg_mark, contains="не забудь", timeout=240)
    shown = reply.text()
    assert "bot[REDACTED:telegram-bot-token]/sendMessage" in shown
    assert shown.count("[REDACTED:password-prose]") == 2
    sent_record(g, user, "не забудь")
    bodies = "\n".join(r.raw.decode("utf-8", "replace") for r in g.telegram.requests)
    for secret in (token, pw_en, pw_ru):
        assert secret not in bodies, "a secret reached Telegram"
        assert leaked(all_bytes(g.eventlog_root), secret) is None, "a secret is somewhere under the log root"
    alerts = wait_events(g.eventlog_root, lambda e: e["event"] == "dlp:alert" and e["chat_id"] == str(user),
                         sub="dlp", n=3)
    assert sorted(a["rule"] for a in alerts) == sorted(want)
    assert all(a["direction"] == "out" and a["ts"] and a["detected_at"] for a in alerts)


def test_f_audit_after_running_then_revert_restores_every_byte(patched_dir: Path, patched: Gateway,
                                                                openclaw_install: tuple[Path, Path]) -> None:
    # the tree the user runs: the gateway has started from it (first-start lifecycle included)
    assert patched.alive
    a = subprocess.run([sys.executable, "-m", "eventlog", "patch", "audit", "--openclaw", str(patched_dir), "--json"],
                       capture_output=True, text=True)
    assert a.returncode == 0, a.stdout + a.stderr
    assert orjson.loads(a.stdout)["ok"] is True
    r = subprocess.run([sys.executable, "-m", "eventlog", "patch", "revert", "--openclaw", str(patched_dir)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    diff = same_bytes(openclaw_install[1], patched_dir)
    # only what OpenClaw's own first start does may differ: the lifecycle marker it removes
    assert set(diff) <= {".openclaw-lifecycle-pending"}, diff
    assert not (patched_dir / "eventlog-tap").exists()
