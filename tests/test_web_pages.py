"""What the page shows (docs/web.md): the chat list, a timeline by day in the user's zone with streamed replies
folded, edits, replies, media and imported history marked, negative group ids, accounts; search as `eventlog search`
(default mode included); the alert queue's filters; the status strip; every text redacted and escaped."""
from __future__ import annotations

import re
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from eventlog.cli.main import cli
from eventlog.web.app import create_app
from web_support import GROUP, XSS, make_log

TOKEN = "another-token-for-the-page-tests_0123456789a"
H = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("web") / "root"
    root.mkdir(mode=0o700)
    info = make_log(root)
    app = create_app(root, token=TOKEN, tz=ZoneInfo("Asia/Tokyo"), status_on_start=False)
    with TestClient(app) as client:
        yield root, client, info, app


def _get(client: TestClient, path: str, **params: str) -> dict:
    r = client.get(path, headers=H, params=params)
    assert r.status_code == 200, (path, r.text)
    return r.json()


def test_chat_list_has_every_chat_of_every_account(site) -> None:
    _, client, _, _ = site
    chats = _get(client, "/api/chats")["chats"]
    got = {(c["chat_id"], c["account"]): c for c in chats}
    assert set(got) == {(GROUP, "default"), ("42", "default"), ("77", "ops")}
    assert got[(GROUP, "default")]["title"] == "Ops team" and got[(GROUP, "default")]["type"] == "supergroup"
    assert got[(GROUP, "default")]["sent"] == 3 and got[(GROUP, "default")]["received"] == 6
    html = client.get("/", headers=H).text
    rows = re.findall(r'data-testid="chat-row" data-chat-id="([^"]+)" data-account="([^"]+)"', html)
    assert sorted(rows) == sorted(got)
    assert f'href="/chats/{GROUP}?account=default&amp;channel=telegram"' in html


def test_timeline_folds_streams_and_marks_edits_replies_media_imports(site) -> None:
    _, client, _, _ = site
    msgs = _get(client, f"/api/chats/{GROUP}/messages")["messages"]
    by_mid = {m["message_id"]: m for m in msgs}
    assert [m["message_id"] for m in msgs] == [10, 11, 12, 14, 15, 16]  # one row per message, oldest first
    stream = by_mid[11]
    assert stream["text"] == "Deploying now, done at 10:00" and stream["edited"]
    assert [v["text"] for v in stream["versions"]] == ["Deploy", "Deploying now"]
    assert stream["reply_to_message_id"] == 10 and stream["direction"] == "out"
    assert by_mid[12]["text"] == "thanks!" and by_mid[12]["edited"] and [v["text"] for v in by_mid[12]["versions"]] == ["thx"]
    assert by_mid[14]["media"] == "[photo]"
    assert not any(m["imported"] for m in msgs)
    old = _get(client, "/api/chats/42/messages")["messages"]
    assert [(m["text"], m["imported"]) for m in old] == [("hello from the old days", True), ("hi again", False)]
    html = client.get(f"/chats/{GROUP}", headers=H).text
    assert html.count('data-testid="message"') == 6 and html.count('data-testid="message-previews"') == 2
    assert 'data-reply-to="10"' in html and 'data-testid="message-media">[photo]<' in html
    assert 'data-imported="true"' in client.get("/chats/42", headers=H).text


def test_days_are_the_user_s_days(site) -> None:
    """In Asia/Tokyo (UTC+9) 2026-11-30T09:00Z is 18:00 that day; the ops chat's 13:00Z is 22:00; 42's 12:00Z on
    11-29 is 21:00 — and an instant after 15:00Z is the next day: the imported 42 message stays on 11-29."""
    _, client, _, _ = site
    msgs = _get(client, f"/api/chats/{GROUP}/messages")["messages"]
    assert [m["day"] for m in msgs] == ["2026-11-30"] * 3 + ["2026-12-01"] * 3
    assert msgs[0]["time"] == "18:00:00" and msgs[0]["local_ts"] == "2026-11-30T18:00:00+09:00"
    html = client.get(f"/chats/{GROUP}", headers=H).text
    assert re.findall(r'data-testid="day" data-day="([^"]+)"', html) == ["2026-11-30", "2026-12-01"]


def test_a_negative_group_id_and_accounts(site) -> None:
    _, client, _, _ = site
    assert client.get(f"/chats/{GROUP}", headers=H).status_code == 200
    assert _get(client, "/api/chats/77/messages", account="ops")["messages"][0]["text"] == "ops account chat"
    assert _get(client, "/api/chats/77/messages")["messages"][0]["account"] == "ops"  # every account by default
    assert _get(client, "/api/chats/77/messages", account="default")["messages"] == []
    assert _get(client, "/api/chats/1234/messages")["messages"] == []  # no such chat: an empty timeline
    for bad in ("bad chat!", ".."):
        r = client.get(f"/api/chats/{bad}/messages", headers=H)
        assert r.status_code in (400, 404) and "error" in r.json()
    assert client.get(f"/api/chats/{GROUP}/messages", headers=H, params={"account": "Bad/Acc"}).status_code == 400
    assert client.get(f"/api/chats/{GROUP}/messages", headers=H, params={"before": "yesterday"}).status_code == 400


def test_hostile_html_is_text(site) -> None:
    _, client, _, _ = site
    html = client.get(f"/chats/{GROUP}", headers=H).text
    assert "<img src=x" not in html and "<script>document" not in html and "onerror=\"" not in html
    assert "&lt;img src=x onerror=&#34;document.title=&#39;pwned&#39;&#34;&gt;&lt;script&gt;" in html
    assert _get(client, f"/api/chats/{GROUP}/messages")["messages"][-1]["text"] == XSS  # JSON keeps the text as is
    assert "<title>Chat " + GROUP + " · eventlog</title>" in html


def _crawl(client: TestClient, alert: str, key: str) -> list[tuple[str, str]]:
    # what a user may paste in: the key itself as a query, a chat id, a cursor, a filter (echoed back masked)
    echoes = [f"/search?q={key}", f"/search?q={key}&mode=text", f"/api/search?q={key}&mode=text", f"/chats/{key}",
              f"/api/chats/{key}/messages", f"/api/chats/{GROUP}/messages?before={key}", f"/alerts?rule={key}",
              f"/alerts?chat={key}", f"/api/alerts?state={key}", f"/alerts?since={key}", f"/api/alerts/{key}"]
    paths = echoes + ["/", f"/chats/{GROUP}", "/chats/42", "/chats/77", "/alerts", f"/alerts/{alert}", "/alerts?state=open",
             "/api/chats", f"/api/chats/{GROUP}/messages", "/api/alerts", f"/api/alerts/{alert}", "/api/status",
             f"/chats/{GROUP}?limit=1", "/static/app.js"]
    for mode in ("text", "fuzzy", "bm25", "hybrid"):
        for q in ("key", "my key is", "sk-ant-api03", "keep it"):
            paths += [f"/search?q={q}&mode={mode}", f"/api/search?q={q}&mode={mode}"]
    return [(p, client.get(p, headers=H).text) for p in paths]


def test_the_fake_key_never_appears_in_any_response(site) -> None:
    root, client, info, _ = site
    alert = _get(client, "/api/alerts")["alerts"][0]["id"]
    key = info["key"]
    assert key in (root / "raw").joinpath("telegram", "chats", GROUP, "2026", "12", "01.jsonl").read_text()
    found_hits = 0
    for path, body in _crawl(client, alert, key):
        # neither the key nor a long piece of its random part (past the fixed prefix)
        assert key not in body and key[13:40] not in body and key[-30:] not in body, path[:40]
        found_hits += body.count("[REDACTED:anthropic-api-key]")
    assert found_hits >= 3  # the timeline, the alert's context and search hits did show the message, masked


def test_search_is_eventlog_search_default_mode_included(site) -> None:
    root, client, _, _ = site
    web = _get(client, "/api/search", q="deploy")
    r = CliRunner().invoke(cli, ["search", "deploy", "--json", "--limit", "20", "--root", str(root)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cli_hits = [orjson.loads(x) for x in r.stdout.splitlines()]
    assert web["mode"] == cli_hits[0]["mode"]
    assert [h["id"] for h in web["hits"]] == [h["id"] for h in cli_hits]
    text = _get(client, "/api/search", q="deploy", mode="text")
    assert text["mode"] == "text" and {h["chat_id"] for h in text["hits"]} == {GROUP}
    html = client.get("/search", headers=H, params={"q": "nothing-like-this-anywhere", "mode": "text"}).text
    assert 'data-testid="search-empty"' in html
    html = client.get("/search", headers=H, params={"q": "deploy"}).text
    assert html.count('data-testid="search-result"') == len(web["hits"])
    assert client.get("/api/search", headers=H, params={"q": "x", "mode": "nope"}).status_code == 400


def test_alert_filters(site) -> None:
    _, client, _, _ = site
    all_ = _get(client, "/api/alerts")["alerts"]
    assert len(all_) == 1 and all_[0]["state"] == "open" and all_[0]["rule"] == "anthropic-api-key"
    assert all_[0]["chat_id"] == GROUP and all_[0]["masked"] and "id" in all_[0]
    for params, n in [({"state": "open"}, 1), ({"state": "resolved"}, 0), ({"resolution": "none"}, 1),
                      ({"rule": "anthropic-api-key"}, 1), ({"rule": "payment-card"}, 0), ({"direction": "in"}, 1),
                      ({"direction": "out"}, 0), ({"chat": GROUP}, 1), ({"chat": "42"}, 0),
                      ({"since": "2026-12-01"}, 1), ({"until": "2026-11-30"}, 0), ({"since": "2026-12-02"}, 0),
                      ({"severity": "low"}, 0), ({"state": ""}, 1)]:
        assert len(_get(client, "/api/alerts", **params)["alerts"]) == n, params
        html = client.get("/alerts", headers=H, params=params).text
        assert html.count('data-testid="alert-row"') == n, params
    for bad in ({"state": "closed"}, {"since": "the other day"}, {"resolution": "maybe"}):
        assert client.get("/api/alerts", headers=H, params=bad).status_code == 400
        assert client.get("/alerts", headers=H, params=bad).status_code == 400
    page = client.get(f"/alerts/{all_[0]['id']}", headers=H).text
    assert 'data-testid="alert-context"' in page and "[REDACTED:anthropic-api-key]" in page
    assert 'data-testid="resolve-form"' in page and f'data-alert-id="{all_[0]["id"]}"' in page


def test_status_strip_says_what_verify_says(tmp_path: Path) -> None:
    from eventlog.doctor import run_checks

    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    make_log(root)
    app = create_app(root, token=TOKEN, doctor=run_checks, tz=ZoneInfo("Asia/Tokyo"))
    web = app.app.state.web
    web.status.wait(120)
    with TestClient(app) as client:
        snap = _get(client, "/api/status")
        assert snap["ready"]
        checks = {c["check"]: c for c in snap["checks"]}
        assert set(checks) == {"tap", "tap-live", "chain", "last-event"}
        assert checks["chain"]["ok"] and checks["last-event"]["detail"] == "2026-12-01T13:00:00.000Z"
        assert checks["last-event"]["local"] == "2026-12-01 22:00:00"  # shown in the user's zone
        html = client.get("/", headers=H).text
        assert 'data-testid="status" data-ready="true"' in html and "last-event: ok 2026-12-01 22:00:00" in html
        assert re.findall(r'data-check="([^"]+)" data-ok="(true|false)"', html)[2:] == [("chain", "true"),
                                                                                        ("last-event", "true")]
        # damage a line that a later line chains to (a file's last line is the seals' and the head's to vouch for):
        # the next refresh says so
        day = root / "raw" / "telegram" / "chats" / GROUP / "2026" / "11" / "30.jsonl"
        day.write_bytes(day.read_bytes().replace(b"deploy today?", b"deploy today!", 1))
        _get(client, "/api/status", refresh="1")
        web.status.wait(120)
        checks = {c["check"]: c for c in _get(client, "/api/status")["checks"]}
        assert not checks["chain"]["ok"] and "damaged" in checks["chain"]["detail"]


def test_the_library_page_in_utc_by_default(site) -> None:
    from eventlog.web.redact import Redactor
    from eventlog.web.timeline import page

    root = site[0]
    p = page(root, GROUP, limit=2, redact=Redactor(root).text)
    assert [m["message_id"] for m in p.messages] == [15, 16] and p.messages[0]["day"] == "2026-12-01"
    assert p.messages[0]["local_ts"].endswith("+00:00") and p.newer is None and p.older is not None
    assert p.messages[0]["text"] == "my key is [REDACTED:anthropic-api-key] please keep it"
