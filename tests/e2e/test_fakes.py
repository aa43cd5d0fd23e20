"""The loopback fakes and the network guard on their own (fast, no gateway): if these drift from Telegram's /
OpenAI's behaviour or stop recording, every e2e result built on them is worthless."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from eventlog import toolchain
from eventlog.smoke.harness import GUARD
from eventlog.smoke.fake_llm import FakeLLM
from eventlog.smoke.fake_telegram import FakeTelegram


def _post(url: str, body: Any = None, *, data: bytes | None = None, ctype: str = "application/json",
          timeout: float = 10) -> tuple[int, Any, bytes]:
    raw = data if data is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=raw, headers={"Content-Type": ctype}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        payload, status = exc.read(), exc.code
    try:
        return status, json.loads(payload), payload
    except ValueError:
        return status, None, payload


@pytest.fixture()
def tg() -> Any:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture()
def llm() -> Any:
    with FakeLLM() as fake:
        yield fake


def test_telegram_listens_on_loopback_only(tg: FakeTelegram) -> None:
    assert tg._server is not None and tg._server.server_address[0] == "127.0.0.1"
    assert tg.url == f"http://127.0.0.1:{tg.port}"


def test_get_updates_offset_confirms_and_long_poll_wakes(tg: FakeTelegram) -> None:
    api = f"{tg.url}/bot{tg.token}"
    first = tg.send_dm("one", user_id=11)["update_id"]
    second = tg.send_dm("two", user_id=11)["update_id"]
    assert second == first + 1
    _, r, _ = _post(f"{api}/getUpdates", {"offset": 0, "timeout": 0})
    assert [u["update_id"] for u in r["result"]] == [first, second]
    _, r, _ = _post(f"{api}/getUpdates", {"offset": second, "timeout": 0})
    assert [u["update_id"] for u in r["result"]] == [second]  # offset confirmed the first
    # A long poll returns as soon as an update is injected, not after its timeout: the poll asks for the fake's
    # longest wait (50 s) and the client gives up at 40 s, so a poll that is not woken fails the test (a socket
    # timeout) — no duration is measured or asserted.
    threading.Timer(0.3, lambda: tg.send_dm("three", user_id=11)).start()
    _, r, _ = _post(f"{api}/getUpdates", {"offset": second + 1, "timeout": 50}, timeout=40)
    assert [u["message"]["text"] for u in r["result"]] == ["three"]
    # An empty long poll returns [] after its timeout.
    _, r, _ = _post(f"{api}/getUpdates", {"offset": second + 2, "timeout": 1})
    assert r == {"ok": True, "result": []}


def test_fresh_message_ids_and_recorded_bodies(tg: FakeTelegram) -> None:
    api = f"{tg.url}/bot{tg.token}"
    _, a, _ = _post(f"{api}/sendMessage", {"chat_id": 42, "text": "hi <b>there</b>", "parse_mode": "HTML"})
    _, b, _ = _post(f"{api}/editMessageText", {"chat_id": 42, "message_id": a["result"]["message_id"],
                                                "text": "edited"})
    _, c, _ = _post(f"{api}/sendMessage", {"chat_id": 42, "text": "again"})
    assert a["result"]["message_id"] == b["result"]["message_id"] != c["result"]["message_id"]
    assert b["result"]["text"] == "edited"
    status, r, _ = _post(f"{api}/editMessageText", {"chat_id": 42, "message_id": a["result"]["message_id"],
                                                     "text": "edited"})
    assert status == 400 and r["description"].startswith("Bad Request: message is not modified")
    status, r, _ = _post(f"{api}/editMessageText", {"chat_id": 42, "message_id": 1, "text": "x"})
    assert status == 400 and r["description"] == "Bad Request: message to edit not found"
    assert [r.method for r in tg.calls()] == ["sendMessage", "editMessageText", "sendMessage", "editMessageText",
                                              "editMessageText"]
    assert [r.status for r in tg.calls("editMessageText")] == [200, 400, 400]
    assert tg.calls("sendMessage")[0].body == {"chat_id": 42, "text": "hi <b>there</b>", "parse_mode": "HTML"}


def test_multipart_and_form_bodies_are_parsed(tg: FakeTelegram) -> None:
    api = f"{tg.url}/bot{tg.token}"
    boundary = "XyZ123"
    parts = [("chat_id", "7"), ("caption", "ключ sk-test"), ("reply_markup", '{"inline_keyboard":[]}')]
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                    for k, v in parts)
    body += (f'--{boundary}\r\nContent-Disposition: form-data; name="photo"; filename="a.png"\r\n'
             f"Content-Type: image/png\r\n\r\n").encode() + b"\x89PNG\x00\x01" + f"\r\n--{boundary}--\r\n".encode()
    status, r, _ = _post(f"{api}/sendPhoto", data=body, ctype=f"multipart/form-data; boundary={boundary}")
    assert status == 200 and r["result"]["caption"] == "ключ sk-test"
    rec = tg.calls("sendPhoto")[0]
    assert rec.body["caption"] == "ключ sk-test" and rec.text() == "ключ sk-test"
    assert rec.body["reply_markup"] == {"inline_keyboard": []}
    assert rec.body["photo"] == {"filename": "a.png", "size": 6}
    _post(f"{api}/answerCallbackQuery", data=b"callback_query_id=1&text=ok", ctype="application/x-www-form-urlencoded")
    assert tg.calls("answerCallbackQuery")[0].body == {"callback_query_id": "1", "text": "ok"}


def test_injected_failure_and_wrong_token(tg: FakeTelegram) -> None:
    tg.fail("sendMessage", 403, "Forbidden: bot was blocked by the user")
    status, r, _ = _post(f"{tg.url}/bot{tg.token}/sendMessage", {"chat_id": 1, "text": "x"})
    assert status == 403 and r == {"ok": False, "error_code": 403,
                                   "description": "Forbidden: bot was blocked by the user"}
    status, r, _ = _post(f"{tg.url}/bot{tg.token}/sendMessage", {"chat_id": 1, "text": "x"})
    assert status == 200 and r["ok"] is True  # count=1: only the next call failed
    status, _, _ = _post(f"{tg.url}/bot123:wrong/getMe", {})
    assert status == 401 and tg.calls("getMe")[0].status == 401


def test_update_kinds_and_control_api(tg: FakeTelegram) -> None:
    dm = tg.send_dm("hello", user_id=5)["message"]
    tg.send_edit(dm, "hello (edited)")
    tg.send_callback(user_id=5, data="btn:1")
    tg.send_reaction(user_id=5, chat_id=5, message_id=dm["message_id"])
    g = tg.send_group("not for the bot", user_id=5, chat_id=-100123)
    m = tg.send_group("for the bot", user_id=5, chat_id=-100123, mention_bot=True)
    assert g["message"]["chat"]["type"] == "supergroup"
    assert m["message"]["entities"][0]["type"] == "mention"
    status, r, _ = _post(f"{tg.url}/_control/updates", [{"my_chat_member": {"chat": {"id": 5}}}])
    assert status == 200 and len(r["update_ids"]) == 1
    _, r, _ = _post(f"{tg.url}/bot{tg.token}/getUpdates", {"timeout": 0, "allowed_updates": [
        "message", "edited_message", "callback_query", "message_reaction", "my_chat_member"]})
    kinds = [next(k for k in u if k != "update_id") for u in r["result"]]
    assert kinds == ["message", "edited_message", "callback_query", "message_reaction", "message", "message",
                     "my_chat_member"]
    # Telegram's default set (allowed_updates = []) leaves out reactions: they are never delivered.
    tg.send_reaction(user_id=5, chat_id=5, message_id=dm["message_id"])
    tg.send_dm("after", user_id=5)
    _, r, _ = _post(f"{tg.url}/bot{tg.token}/getUpdates", {"timeout": 0, "offset": r["result"][-1]["update_id"] + 1,
                                                           "allowed_updates": []})
    assert [next(k for k in u if k != "update_id") for u in r["result"]] == ["message"]
    assert [next(k for k in u if k != "update_id") for u in tg.undelivered] == ["message_reaction"]
    # wait over the control API: a request that arrives later is returned.
    threading.Timer(0.3, lambda: _post(f"{tg.url}/bot{tg.token}/sendMessage", {"chat_id": 5, "text": "late"})).start()
    status, r, _ = _post(f"{tg.url}/_control/wait", {"method": "sendMessage", "contains": "late", "timeout": 10},
                         timeout=15)
    assert status == 200 and r["body"]["text"] == "late"
    status, r, _ = _post(f"{tg.url}/_control/wait", {"method": "sendPoll", "timeout": 0.5})
    assert status == 408 and "sendMessage" in r["error"]


def test_llm_stream_chunks_delay_and_matching(llm: FakeLLM) -> None:
    llm.script("for the other request", when="needle")
    llm.script("Hello, world!", chunks=["Hel", "lo, ", "world!"], delay=0.3)
    req = urllib.request.Request(f"{llm.base_url}/chat/completions", method="POST",
                                 data=json.dumps({"model": "fake-model", "stream": True,
                                                  "messages": [{"role": "user", "content": "hi"}]}).encode(),
                                 headers={"Content-Type": "application/json"})
    arrivals: list[str] = []
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Type"] == "text/event-stream"
        for line in resp:
            if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                delta = json.loads(line[6:])["choices"][0]["delta"]
                if delta.get("content"):
                    arrivals.append(delta["content"])
    # one SSE event per scripted chunk, in order (the pacing itself is not asserted: no durations in tests)
    assert arrivals == ["Hel", "lo, ", "world!"]
    assert llm.pending() == 1 and llm.requests[0].reply == "Hello, world!"
    _, r, _ = _post(f"{llm.base_url}/chat/completions",
                    {"model": "fake-model", "messages": [{"role": "user", "content": [{"type": "text",
                                                                                        "text": "a needle here"}]}]})
    assert r["choices"][0]["message"]["content"] == "for the other request"
    _, r, _ = _post(f"{llm.base_url}/chat/completions", {"messages": [{"role": "user", "content": "ping"}]})
    assert r["choices"][0]["message"]["content"] == "Fake reply to: ping"
    # OpenClaw's shape: the typed text, then a trailing user message with its context block; older turns excluded.
    turn = {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "old needle"},
                         {"role": "assistant", "content": "ok"}, {"role": "user", "content": "new text"},
                         {"role": "user", "content": [{"type": "text", "text": "<<<CONTEXT>>>"}]}]}
    _post(f"{llm.base_url}/chat/completions", turn)
    assert [q.last_user_text() for q in llm.requests] == ["hi", "a needle here", "ping", "new text\n<<<CONTEXT>>>"]


def test_scripts_run_as_scripts_and_print_their_port() -> None:
    for module in ("eventlog.smoke.fake_telegram", "eventlog.smoke.fake_llm"):
        p = subprocess.Popen([sys.executable, "-m", module, "--port", "0"], stdout=subprocess.PIPE, text=True)
        try:
            info = json.loads(p.stdout.readline())
            assert info["url"] == f"http://127.0.0.1:{info['port']}" and info["port"] > 0
            status, r, _ = _post(f"{info['url']}/_control/wait", {"timeout": 0.1})
            assert status == 408
        finally:
            p.terminate()
            p.wait(10)


def test_guard_denies_and_records_non_loopback_but_passes_loopback(tmp_path: Path, tg: FakeTelegram) -> None:
    node = toolchain.node_or_default()
    assert node, "no node binary (run `make node`)"
    script = tmp_path / "probe.mjs"
    script.write_text(
        "import { Worker } from 'node:worker_threads';\n"
        "const ok = await fetch(process.argv[2]).then(r => r.status, e => 'error ' + e.message);\n"
        "const out = await fetch('http://example.com/').then(r => 'REACHED ' + r.status, e => 'denied');\n"
        "const w = new Worker(\"require('node:dns').lookup('example.org', e => "
        "require('node:worker_threads').parentPort.postMessage(e ? e.code : 'RESOLVED'))\", { eval: true });\n"
        "const inWorker = await new Promise(r => w.on('message', r));\n"
        "console.log(JSON.stringify({ ok, out, inWorker }));\n")
    log = tmp_path / "net.jsonl"
    env = dict(os.environ, NODE_OPTIONS=f'--require="{GUARD}"', EVENTLOG_E2E_NET_LOG=str(log))
    res = subprocess.run([node, str(script), f"{tg.url}/bot{tg.token}/getMe"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"ok": 200, "out": "denied", "inWorker": "ENOTFOUND"}
    targets = [json.loads(ln)["target"] for ln in log.read_text().splitlines()]
    assert targets == ["tcp example.com:80", "dns lookup example.org"]


def test_gateway_config_and_environment_stay_offline_and_inside_the_workdir(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from eventlog.smoke.harness import Gateway

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-callers-shell")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("OPENCLAW_STATE_DIR", "/somewhere/else")
    g = Gateway(tmp_path, streaming="partial", extra_config={"channels": {"telegram": {"groupPolicy": "open"}}})
    g.node = Path("/opt/node/bin/node")
    cfg = g.config()
    assert cfg["models"]["catalogRefresh"] == {"enabled": False}
    assert cfg["update"] == {"checkOnStart": False}
    assert cfg["gateway"]["bind"] == "loopback"
    tg = cfg["channels"]["telegram"]
    assert tg["apiRoot"].startswith("http://127.0.0.1:") and tg["dmPolicy"] == "allowlist"
    assert tg["allowFrom"] == [str(u) for u in g.users] and tg["streaming"] == {"mode": "partial"}
    assert tg["groupPolicy"] == "open" and tg["botToken"] == g.telegram.token  # extra_config merged, not replacing
    assert cfg["models"]["providers"]["fakellm"]["baseUrl"].startswith("http://127.0.0.1:")
    assert cfg["logging"]["file"].startswith(str(tmp_path))
    env = g.environment()
    for key in ("HOME", "OPENCLAW_HOME", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "EVENTLOG_ROOT", "TMPDIR"):
        assert env[key].startswith(str(tmp_path)), key
    assert "OPENAI_API_KEY" not in env and "HTTPS_PROXY" not in env
    assert env["OPENCLAW_NO_AUTO_UPDATE"] == "1" and str(GUARD) in env["NODE_OPTIONS"]
    assert env["PATH"].startswith("/opt/node/bin:")
