"""`eventlog serve` over plain HTTP, no browser (runs in test-fast too): the URL line, the token on every route, the
CSRF header on every POST, no secret in any API answer, loopback only, SIGTERM (issue 29; docs/web.md)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from serve_support import (GROUP_CHAT, PRIVATE_CHAT, Answer, Server, WebLog, alerts, cli, fake_key, http, listening)


def _alert_id(web_log: WebLog, rule: str) -> str:
    return next(a["id"] for a in alerts(web_log.root) if a["rule"] == rule)


def _routes(web_log: WebLog) -> list[str]:
    ant, card = _alert_id(web_log, "anthropic-api-key"), _alert_id(web_log, "payment-card")
    return ["/", f"/chats/{PRIVATE_CHAT}", f"/chats/{GROUP_CHAT}", "/search?q=invoice", "/alerts", f"/alerts/{ant}",
            f"/alerts/{card}", "/static/app.js", "/static/style.css", "/api/status", "/api/chats",
            f"/api/chats/{PRIVATE_CHAT}/messages", f"/api/chats/{GROUP_CHAT}/messages", "/api/search?q=invoice",
            "/api/search?q=key", "/api/alerts", f"/api/alerts/{ant}", f"/api/alerts/{card}"]


def _bearer(server: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


# What any answer with data would hold: a sender, a chat title, a message's words, an alert's rule.
DATA_WORDS = ("alice", "Alice", "Ops room", "invoice", "anthropic-api-key", "payment-card", "whiteboard", "sk-a")


def _refused(a: Answer, status: int | tuple[int, ...], what: str) -> None:
    assert a.status in (status if isinstance(status, tuple) else (status,)), f"{what}: {a.status} {a.body[:200]!r}"
    assert "location" not in a.headers, f"{what}: a redirect to {a.headers['location']}"
    text = a.body.decode("utf-8", "replace")
    assert len(a.body) < 300 and not any(w in text for w in DATA_WORDS), f"{what}: data in a refusal: {text[:300]}"


def test_every_route_answers_with_the_token_and_refuses_without_it(server: Server, web_log: WebLog) -> None:
    routes = _routes(web_log)
    for path in routes:  # the control: with the token every route answers, so the refusals below are the token's
        a = http("GET", server.url(path, token=False), _bearer(server))
        assert a.status == 200, f"{path}: {a.status} {a.body[:300]!r}"
        csp = a.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp, (path, csp)
        assert a.headers.get("x-content-type-options") == "nosniff", path
    wrong = "x" * 43
    for path in routes:
        _refused(http("GET", server.url(path, token=False)), 401, f"{path} without a token")
        _refused(http("GET", server.base + path + ("&" if "?" in path else "?") + "token=" + wrong), 403,
                 f"{path} with a wrong query token")
        _refused(http("GET", server.url(path, token=False), {"Authorization": f"Bearer {wrong}"}), 403,
                 f"{path} with a wrong bearer token")
        _refused(http("GET", server.url(path, token=False), {"Cookie": f"eventlog_token={wrong}"}), 403,
                 f"{path} with a wrong cookie")
        # a token one character short is wrong, not a prefix match
        _refused(http("GET", server.url(path, token=False), {"Authorization": f"Bearer {server.token[:-1]}"}), 403,
                 f"{path} with a truncated token")


def test_the_query_token_sets_the_cookie_and_the_cookie_alone_is_enough(server: Server) -> None:
    a = http("GET", server.url("/"))
    assert a.status == 200
    cookie = a.headers.get("set-cookie", "")
    assert cookie.startswith(f"eventlog_token={server.token};"), cookie
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower(), cookie
    a = http("GET", server.url("/api/chats", token=False), {"Cookie": f"eventlog_token={server.token}"})
    assert a.status == 200 and {c["chat_id"] for c in a.json()["chats"]} == {PRIVATE_CHAT, GROUP_CHAT}


def test_a_post_needs_the_csrf_header_and_records_the_clis_event(server: Server, web_log: WebLog) -> None:
    card = _alert_id(web_log, "payment-card")
    url = server.url(f"/api/alerts/{card}/resolution", token=False)
    cookie = {"Cookie": f"eventlog_token={server.token}"}
    body = json.dumps({"resolution": "used_in_tests", "note": "a test card"}).encode()
    as_json = {"Content-Type": "application/json"}
    # what a cross-site HTML form can send: the cookie and a form body, no custom header
    form = b"resolution=used_in_tests&note=x"
    tries: list[tuple[dict[str, str], bytes, int | tuple[int, ...], str]] = [
        ({**cookie, "Content-Type": "application/x-www-form-urlencoded"}, form, 403, "a form post with the cookie"),
        ({**cookie, **as_json}, body, 403, "the cookie, no X-Eventlog-Token"),
        ({**_bearer(server), **as_json}, body, 403, "a bearer token, no X-Eventlog-Token"),
        ({**cookie, **as_json, "X-Eventlog-Token": "x" * 43}, body, 403, "a wrong X-Eventlog-Token"),
        # docs/web.md names the query, the cookie and the bearer header as credentials; the page may read this header
        # as one too, so a wrong value in it may be 403 rather than 401
        ({**as_json, "X-Eventlog-Token": "x" * 43}, body, (401, 403), "no credential, a wrong header"),
    ]
    for headers, data, status, what in tries:
        _refused(http("POST", url, headers, data), status, what)
    # a note the scanner finds a secret in is refused, and nothing is written
    secret_note = json.dumps({"resolution": "revoked", "note": f"rotated {fake_key()}"}).encode()
    a = http("POST", url, {**cookie, **as_json, "X-Eventlog-Token": server.token}, secret_note)
    assert a.status == 400 and "error" in a.json(), a.body[:300]
    a = http("POST", url, {**cookie, **as_json, "X-Eventlog-Token": server.token},
             json.dumps({"resolution": "no_such_resolution", "note": ""}).encode())
    assert a.status == 400, a.body[:300]
    state = {x["id"]: x for x in alerts(web_log.root)}[card]
    assert state["state"] == "open" and state["resolution"] is None and state["reviewer"] is None, state
    assert not (web_log.root / "dlp" / "reviews.jsonl").exists()  # no review event of any kind was written
    # the control: cookie + header resolve it, and the CLI sees exactly that
    a = http("POST", url, {**cookie, **as_json, "X-Eventlog-Token": server.token}, body)
    assert a.status == 200, a.body[:300]
    assert a.json()["alert"]["state"] == "resolved" and a.json()["alert"]["resolution"] == "used_in_tests"
    state = {x["id"]: x for x in alerts(web_log.root)}[card]
    assert state["state"] == "resolved" and state["resolution"] == "used_in_tests", state
    r = cli("verify", root=web_log.root)
    assert r.returncode == 0, r.stdout + r.stderr
    # an unknown alert is 404 and writes nothing
    a = http("POST", server.url("/api/alerts/01ZZZZZZZZZZZZZZZZZZZZZZZZ/resolution", token=False),
             {**cookie, **as_json, "X-Eventlog-Token": server.token}, body)
    assert a.status == 404, a.body[:300]


def test_no_api_answer_holds_the_secrets_of_the_log(server: Server, web_log: WebLog) -> None:
    seen = []
    for path in _routes(web_log):
        a = http("GET", server.url(path, token=False), _bearer(server))
        assert a.status == 200, path
        seen.append((path, a.body.decode("utf-8", "replace")))
    for path, text in seen:
        for secret in (web_log.key, web_log.key[20:60], web_log.card):
            assert secret not in text, f"{path} holds a secret of the log"
    # the messages holding them did reach the answers, masked: the check above looked at real content
    assert any("[REDACTED:anthropic-api-key]" in t for p, t in seen if p.startswith("/api/chats/42")), seen
    assert any("[REDACTED:payment-card]" in t for p, t in seen if p.startswith(f"/api/chats/{GROUP_CHAT}")), seen


def test_it_listens_on_loopback_only_by_default(server: Server) -> None:
    socks = listening(server.pid)
    assert socks == [("127.0.0.1", server.port)], socks
    assert server.host == "127.0.0.1"


def test_another_address_needs_the_explicit_flag(web_log: WebLog) -> None:
    p = subprocess.Popen([sys.executable, "-m", "eventlog", "serve", "--bind", "0.0.0.0", "--port", "0", "--root",
                          str(web_log.root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("eventlog serve --bind 0.0.0.0 without --allow-remote started serving")
    assert p.returncode == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, (p.returncode, out, err)


def test_sigterm_stops_it_and_every_start_has_its_own_token(web_log: WebLog, server: Server, tmp_path: Path) -> None:
    with Server(web_log.root) as s:
        assert s.token != server.token and s.port != server.port
        assert http("GET", s.url("/api/chats", token=False), _bearer(s)).status == 200
        assert http("GET", s.url("/api/chats", token=False), _bearer(server)).status == 403  # the other's token
        rc = s.stop()
        assert rc == 0, s.stderr()
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", s.port), timeout=5):
            pass


def test_a_root_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "eventlog", "serve", "--port", "0", "--root", str(tmp_path / "nope")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, (p.returncode, p.stdout, p.stderr)
