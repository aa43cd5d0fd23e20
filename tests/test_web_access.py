"""The page's door (docs/web.md, "Access"): no token → 401, a wrong one → 403, never a redirect and never data; the
token from the query sets an HttpOnly SameSite=Strict cookie; a POST needs the X-Eventlog-Token header (a cookie-only
form post is refused); every answer has the CSP and the other security headers. Starlette's TestClient drives the
real app in process (no socket)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from eventlog.cli.main import cli
from eventlog.web.app import create_app
from eventlog.web.auth import CSP
from web_support import make_log

TOKEN = "t0ken-for-the-tests_0123456789abcdefghijklmno"
GET_ROUTES = ["/", "/chats/-1001234567890", "/search?q=deploy", "/alerts", "/alerts/{alert}", "/api/status",
              "/api/chats", "/api/chats/-1001234567890/messages", "/api/search?q=deploy&mode=text", "/api/alerts",
              "/api/alerts/{alert}", "/static/app.js", "/static/style.css", "/no/such/page"]


def _site(root: Path):
    """A sample log under `root` and a client of its page; yields (root, client, info, first alert id)."""
    root.mkdir(mode=0o700)
    info = make_log(root)
    app = create_app(root, token=TOKEN, status_on_start=False)
    with TestClient(app, follow_redirects=False) as client:
        alert = client.get("/api/alerts", headers={"Authorization": f"Bearer {TOKEN}"}).json()["alerts"][0]["id"]
        yield root, client, info, alert


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    yield from _site(tmp_path_factory.mktemp("web") / "root")


def _routes(alert: str) -> list[str]:
    return [r.format(alert=alert) for r in GET_ROUTES]


def _no_data(body: str, info: dict) -> None:
    for needle in ("Ops team", "deploy", "Deploying", info["key"][:20], "sk-ant", "REDACTED", "anthropic"):
        assert needle not in body


def test_without_a_token_every_route_is_401_with_no_data(site) -> None:
    root, client, info, alert = site
    client.cookies.clear()
    for path in _routes(alert):
        r = client.get(path)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert "location" not in r.headers
        _no_data(r.text, info)
    r = client.post(f"/api/alerts/{alert}/resolution", json={"resolution": "revoked"})
    assert r.status_code == 401 and not (root / "dlp" / "reviews.jsonl").exists()


def test_a_wrong_token_is_403_everywhere_in_every_place(site) -> None:
    root, client, info, alert = site
    wrong = TOKEN[:-1] + ("x" if TOKEN[-1] != "x" else "y")
    for path in _routes(alert):
        for how in ({"params": {"token": wrong}}, {"headers": {"Authorization": f"Bearer {wrong}"}},
                    {"headers": {"X-Eventlog-Token": wrong}}, {"cookie": wrong}):
            client.cookies.clear()
            if "cookie" in how:
                client.cookies.set("eventlog_token", wrong)
            r = client.get(path, **{k: v for k, v in how.items() if k != "cookie"})  # type: ignore[arg-type]
            assert r.status_code == 403, (path, how)
            assert "location" not in r.headers and "set-cookie" not in r.headers
            _no_data(r.text, info)


def test_the_query_token_sets_a_strict_httponly_cookie_that_then_suffices(site) -> None:
    _, client, info, alert = site
    client.cookies.clear()
    r = client.get("/", params={"token": TOKEN})
    assert r.status_code == 200 and "Ops team" in r.text
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"eventlog_token={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    for path in _routes(alert)[:-1]:
        assert client.get(path).status_code == 200, path  # the cookie alone
    client.cookies.clear()
    assert client.get("/api/chats", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert "set-cookie" not in client.get("/api/chats", headers={"Authorization": f"Bearer {TOKEN}"}).headers
    assert client.get("/no/such/page", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 404


def test_every_answer_carries_the_csp_and_security_headers(site) -> None:
    _, client, _, alert = site
    client.cookies.clear()
    answers = [client.get(p) for p in _routes(alert)]  # 401s
    answers += [client.get(p, headers={"Authorization": f"Bearer {TOKEN}"}) for p in _routes(alert)]
    answers.append(client.post(f"/api/alerts/{alert}/resolution", headers={"Authorization": f"Bearer {TOKEN}"}))
    for r in answers:
        assert r.headers["content-security-policy"] == CSP, r.url
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["cache-control"] == "no-store"
    html = client.get("/alerts", headers={"Authorization": f"Bearer {TOKEN}"}).text
    # no inline script: the one script element is the static file's, with an empty body
    assert html.count("<script") == 1 and '<script src="/static/app.js" defer></script>' in html
    assert " style=" not in html and "<style" not in html and " on" + "click=" not in html


@pytest.fixture
def fresh(tmp_path: Path):
    yield from _site(tmp_path / "root")


def test_a_cookie_only_post_is_refused_and_records_nothing(fresh) -> None:
    root, client, _, alert = fresh
    client.cookies.clear()
    assert client.get("/", params={"token": TOKEN}).status_code == 200  # the browser now holds the cookie
    url = f"/api/alerts/{alert}/resolution"
    # what a plain HTML form (ours without its script, or another site's) sends: the cookie, a form body
    r = client.post(url, data={"resolution": "revoked", "note": "x"})
    assert r.status_code == 403 and "X-Eventlog-Token" in r.text
    r = client.post(url, json={"resolution": "revoked"})  # JSON, still only the cookie
    assert r.status_code == 403
    r = client.post(url, json={"resolution": "revoked"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 403  # a bearer token is not the CSRF header either
    r = client.post(url, json={"resolution": "revoked"}, headers={"X-Eventlog-Token": "nope"})
    assert r.status_code == 403
    assert not (root / "dlp" / "reviews.jsonl").exists()
    r = client.post(url, json={"resolution": "revoked"}, headers={"X-Eventlog-Token": TOKEN})
    assert r.status_code == 200 and (root / "dlp" / "reviews.jsonl").is_file()


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_resolution_through_the_api_is_the_cli_s_review(fresh) -> None:
    """The event the API records is the one `eventlog dlp review` records (same fields, same values but id/ts/prev),
    `eventlog dlp alerts --json` shows it resolved, and `eventlog verify` stays clean."""
    root, client, _, alert = fresh
    os.environ["EVENTLOG_REVIEWER"] = "web-test"
    try:
        r = client.post(f"/api/alerts/{alert[:10]}/resolution", headers={"X-Eventlog-Token": TOKEN},
                        json={"resolution": "used_in_tests", "note": "fixture of the suite"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["alert"]["state"] == "resolved" and body["alert"]["resolution"] == "used_in_tests"
        rows = [orjson.loads(x) for x in _cli("dlp", "alerts", "--json", "--root", str(root)).output.splitlines()]
        mine = [a for a in rows if a["id"] == alert]
        assert len(mine) == 1 and mine[0]["state"] == "resolved" and mine[0]["resolution"] == "used_in_tests"
        assert mine[0]["note"] == "fixture of the suite" and mine[0]["reviewer"] == "web-test"
        r = _cli("dlp", "review", alert, "--resolution", "used_in_tests", "--note", "fixture of the suite",
                 "--root", str(root))
        assert r.exit_code == 0, r.output
    finally:
        del os.environ["EVENTLOG_REVIEWER"]
    web_ev, cli_ev = [orjson.loads(x) for x in (root / "dlp" / "reviews.jsonl").read_bytes().splitlines()]
    assert web_ev["id"] == body["review"]["id"]
    drop = ("id", "ts", "prev", "salt")  # salt: each event's own (content commitments)
    assert {k: v for k, v in web_ev.items() if k not in drop} == {k: v for k, v in cli_ev.items() if k not in drop}
    r = _cli("verify", "--root", str(root))
    assert r.exit_code == 0, r.output


def test_a_note_holding_a_secret_is_refused_as_in_the_cli(fresh) -> None:
    root, client, info, alert = fresh
    r = client.post(f"/api/alerts/{alert}/resolution", headers={"X-Eventlog-Token": TOKEN},
                    json={"resolution": "revoked", "note": f"it was {info['key']}"})
    assert r.status_code == 400 and "secret" in r.json()["error"] and info["key"] not in r.text
    assert not (root / "dlp" / "reviews.jsonl").exists()
    cli_r = _cli("dlp", "review", alert, "--resolution", "revoked", "--note", f"it was {info['key']}",
                 "--root", str(root))
    assert cli_r.exit_code == 2 and not (root / "dlp" / "reviews.jsonl").exists()


@pytest.mark.parametrize("body, code", [
    ({"resolution": "maybe"}, 400), ({"note": "no resolution"}, 400), ({"resolution": 3}, 400),
    ({"resolution": "revoked", "note": ["not", "text"]}, 400), ([], 400), (None, 400)])
def test_bad_resolution_bodies_are_400_and_write_nothing(fresh, body, code) -> None:
    root, client, _, alert = fresh
    h = {"X-Eventlog-Token": TOKEN}
    r = (client.post(f"/api/alerts/{alert}/resolution", headers=h, content=b"{not json")
         if body is None else client.post(f"/api/alerts/{alert}/resolution", headers=h, json=body))
    assert r.status_code == code and "error" in r.json()
    assert not (root / "dlp" / "reviews.jsonl").exists()


def test_an_unknown_alert_is_404(fresh) -> None:
    root, client, _, _ = fresh
    r = client.post("/api/alerts/01ZZZZZZZZZZZZZZZZZZZZZZZZ/resolution", headers={"X-Eventlog-Token": TOKEN},
                    json={"resolution": "revoked"})
    assert r.status_code == 404 and not (root / "dlp" / "reviews.jsonl").exists()
    assert client.get("/api/alerts/01ZZZZZZZZZZZZZZZZZZZZZZZZ", headers={"X-Eventlog-Token": TOKEN}).status_code == 404


def test_the_page_keeps_masking_after_a_false_positive(fresh) -> None:
    """A false positive allowlists the fingerprint for future alerts; the page still masks it."""
    root, client, info, alert = fresh
    h = {"X-Eventlog-Token": TOKEN}
    assert client.post(f"/api/alerts/{alert}/resolution", headers=h,
                       json={"resolution": "false_positive"}).status_code == 200
    assert (root / "dlp" / "allowlist.json").is_file()
    r = client.get("/chats/-1001234567890", headers=h)
    assert r.status_code == 200 and info["key"] not in r.text and "[REDACTED:" in r.text


def test_the_test_root_is_left_as_the_cli_leaves_it(tmp_path: Path) -> None:
    """Serving reads: no file appears under the root from browsing every page (a scan's key is ephemeral)."""
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    make_log(root)
    shutil.rmtree(root / "index", ignore_errors=True)
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    app = create_app(root, token=TOKEN, status_on_start=False)
    with TestClient(app) as client:
        for path in ["/", "/chats/-1001234567890", "/alerts", "/api/chats", "/api/alerts", "/search?q=deploy&mode=text"]:
            assert client.get(path, headers={"X-Eventlog-Token": TOKEN}).status_code == 200, path
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before


def test_a_refusal_reads_the_request_body_first() -> None:
    """A refused POST's body is read before the answer is sent: answering and closing with it unread lets the kernel
    reset the connection, and the client lost the 403 (seen in CI, tests/web/test_serve_http.py)."""
    import asyncio

    from eventlog.web.auth import TokenGate

    events: list[str] = []
    chunks = [{"type": "http.request", "body": b"resolution=x", "more_body": True},
              {"type": "http.request", "body": b"&note=y", "more_body": False}]

    async def receive() -> dict:
        events.append("receive")
        return chunks.pop(0)

    async def send(message: dict) -> None:
        events.append(message["type"])

    async def app(scope: dict, receive: object, send: object) -> None:
        raise AssertionError("a refused request reached the app")

    scope = {"type": "http", "method": "POST", "path": "/api/x", "query_string": b"", "headers": [
        (b"cookie", b"eventlog_token=" + b"t" * 43)]}
    asyncio.run(TokenGate(app, "t" * 43)(scope, receive, send))
    assert events == ["receive", "receive", "http.response.start", "http.response.body"]
