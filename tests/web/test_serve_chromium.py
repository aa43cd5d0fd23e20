"""The page in headless Chromium against a real `eventlog serve` (issue 29; docs/web.md's DOM hooks): the chat list and
timelines, search, resolving an alert, HTML shown as text, no secret in anything the browser receives, and the
browser itself on loopback only. `browser`-marked: `make test` runs it, `make test-fast` deselects it."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from serve_support import (GROUP_CHAT, PRIVATE_CHAT, XSS, Server, Session, Traced, WebLog, alerts, cli, fake_key, http,
                         png_size)

pytestmark = pytest.mark.browser
TID = "[data-testid={}]".format


def _wait_status_ready(server: Server) -> dict[str, Any]:
    """The strip says "checking" until doctor and verify have run once (docs/web.md); wait for that, by polling the
    API the strip reads (an event, not a duration: `ready` turns true once)."""
    import time
    deadline = time.monotonic() + 120
    while True:
        st = http("GET", server.url("/api/status", token=False), {"Authorization": f"Bearer {server.token}"}).json()
        if st["ready"] or time.monotonic() > deadline:
            return st
        time.sleep(0.2)


def _untouched(tab: Session, title: str) -> None:
    """Nothing of the hostile message ran: the title is the page's own, no flag was set, no element came from it, and
    no script was refused by the CSP (the page has no inline script of its own, so a refusal means injected markup)."""
    page = tab.page
    assert page.title() == title and "pwned" not in page.title()
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator('img[src="x"]').count() == 0
    srcs = page.eval_on_selector_all("script", "els => els.map(e => e.getAttribute('src'))")
    assert all(s and s.startswith("/static/") for s in srcs), srcs


def _shoot(tab: Session, name: str, tmp_path: Path, screenshots: Path | None) -> None:
    """A screenshot as tall as the page's content (a short viewport, then the full page)."""
    size = tab.page.viewport_size
    tab.page.set_viewport_size({"width": 1200, "height": 240})
    data = tab.page.screenshot(full_page=True)
    tab.page.set_viewport_size(size)
    w, h = png_size(data)
    assert w == 1200 and h >= 240, (w, h)
    (tmp_path / name).write_bytes(data)
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / name, screenshots / name)


def test_chat_list_and_timelines(tab: Session, web_log: WebLog, server: Server, tmp_path: Path,
                                 screenshots: Path | None) -> None:
    _wait_status_ready(server)
    tab.goto("/")
    page = tab.page
    title = page.title()
    rows = page.locator(TID("chat-row"))
    assert sorted(rows.evaluate_all("els => els.map(e => e.dataset.chatId)")) == sorted([PRIVATE_CHAT, GROUP_CHAT])
    group = page.locator(f'{TID("chat-row")}[data-chat-id="{GROUP_CHAT}"]')
    assert "Ops room" in group.inner_text() and "supergroup" in group.inner_text()
    # the status strip: doctor and verify ran; the chain is intact
    chain = page.locator(f'{TID("status-item")}[data-check="chain"]')
    assert page.locator(TID("status")).get_attribute("data-ready") == "true"
    assert chain.get_attribute("data-ok") == "true", chain.inner_text()

    tab.navigate(group.locator(TID("chat-link")))
    assert page.url.split("?")[0].endswith(f"/chats/{GROUP_CHAT}")  # a negative id, as a plain path segment
    assert page.locator(TID("timeline")).get_attribute("data-chat-id") == GROUP_CHAT
    # 20:00Z is 01:45 the next day in Asia/Kathmandu, the server's --tz
    days = page.locator(TID("day")).evaluate_all("els => els.map(e => e.dataset.day)")
    assert days == ["2026-12-01"], days
    msgs = page.locator(TID("message"))
    assert msgs.count() == 4
    texts = [m.locator(TID("message-text")).inner_text() for m in msgs.all()]
    assert texts[0] == XSS  # shown as the text it is, markup and all
    assert texts[1].startswith("card [REDACTED:payment-card]"), texts[1]
    reply = msgs.nth(2)
    assert reply.get_attribute("data-reply-to") == "10" and texts[2] == "please do not paste html here"
    assert "photo" in msgs.nth(3).locator(TID("message-media")).inner_text().lower()
    assert all(m.get_attribute("data-direction") == "in" for m in msgs.all())
    _untouched(tab, page.title())
    assert "pwned" not in title
    _shoot(tab, "web-timeline.png", tmp_path, screenshots)

    # the private chat: the streamed reply is one message with its final text, the previews folded inside it
    tab.goto(f"/chats/{PRIVATE_CHAT}")
    assert page.locator(TID("day")).evaluate_all("els => els.map(e => e.dataset.day)") == ["2026-11-30"]
    msgs = page.locator(TID("message"))
    assert [m.get_attribute("data-direction") for m in msgs.all()] == ["in", "in", "out", "out"]
    streamed = msgs.nth(3)
    assert streamed.locator(TID("message-text")).inner_text() == "Here is the summary of the quarterly invoice."
    previews = streamed.locator(TID("message-previews"))
    assert previews.count() == 1 and previews.evaluate("e => e.tagName") == "DETAILS"
    assert "Here is the summary" not in previews.inner_text()  # folded: only its summary line shows
    previews.locator("summary").click()  # the expander
    assert previews.get_attribute("open") is not None
    shown = previews.inner_text()
    assert "Here is the summary" in shown and "Here is the" in shown
    assert "[REDACTED:anthropic-api-key]" in msgs.nth(1).locator(TID("message-text")).inner_text()


def test_search_is_eventlog_search(tab: Session, web_log: WebLog) -> None:
    tab.goto("/")
    page = tab.page
    page.locator(TID("search-box")).first.fill("invoice")
    tab.navigate(page.locator(TID("search-submit")).first)
    hits = page.locator(TID("search-result"))
    assert hits.count() >= 2
    ids = hits.evaluate_all("els => els.map(e => e.dataset.id)")
    # the same search as the CLI, default mode included: the same hits in the same order
    r = cli("search", "invoice", "--json", "--limit", str(len(ids)), root=web_log.root)
    assert r.returncode == 0, r.stderr
    assert ids == [json.loads(line)["id"] for line in r.stdout.splitlines()]
    first = hits.first.locator(TID("search-result-text")).inner_text()
    assert "invoice" in first and hits.first.get_attribute("data-chat-id") == PRIVATE_CHAT
    # a hit on the hostile message is text there too
    tab.goto("/search?q=" + "look+at+this" + "&mode=text")
    assert page.locator(TID("search-result")).count() == 1
    assert page.locator(TID("search-result-text")).inner_text() == XSS
    _untouched(tab, page.title())
    # nothing found: the empty state, no hits
    tab.goto("/search?q=zebrafish&mode=text")
    assert page.locator(TID("search-result")).count() == 0 and page.locator(TID("search-empty")).is_visible()


def test_resolve_an_alert_through_the_page(tab: Session, web_log: WebLog, server: Server, tmp_path: Path,
                                           screenshots: Path | None) -> None:
    root = web_log.root
    ant = next(a for a in alerts(root) if a["rule"] == "anthropic-api-key")
    tab.goto("/alerts")
    page = tab.page
    rows = page.locator(TID("alert-row"))
    assert rows.count() == 2
    assert set(rows.evaluate_all("els => els.map(e => e.dataset.state)")) == {"open"}
    row = page.locator(f'{TID("alert-row")}[data-alert-id="{ant["id"]}"]')
    assert row.locator(TID("alert-masked")).inner_text().strip() == ant["masked"]
    form = row.locator(TID("resolve-form"))
    assert form.get_attribute("data-alert-id") == ant["id"]
    message = row.locator(TID("resolve-message"))

    # a note holding a secret is refused, as in the CLI; nothing is recorded
    form.locator(TID("resolve-resolution")).select_option("revoked")
    form.locator(TID("resolve-note")).fill(f"the new one is {fake_key()}")
    form.locator(TID("resolve-submit")).click()
    # the outcome is written once the POST answered (an event, not a duration)
    page.wait_for_selector(f'{TID("alert-row")}[data-alert-id="{ant["id"]}"] '
                           f'{TID("resolve-message")}:is([data-ok="true"], [data-ok="false"])')
    assert message.get_attribute("data-ok") == "false"
    assert row.get_attribute("data-state") == "open"
    assert {a["id"]: a["state"] for a in alerts(root)}[ant["id"]] == "open"

    form.locator(TID("resolve-note")).fill("rotated in the console")
    form.locator(TID("resolve-submit")).click()
    page.wait_for_selector(f'{TID("alert-row")}[data-alert-id="{ant["id"]}"][data-state="resolved"]')
    assert message.get_attribute("data-ok") == "true"
    assert row.get_attribute("data-resolution") == "revoked"
    tab.drain()
    # the CLI sees exactly that resolution; the chain stays intact
    got = {a["id"]: a for a in alerts(root)}
    assert got[ant["id"]]["state"] == "resolved" and got[ant["id"]]["resolution"] == "revoked"
    assert got[ant["id"]]["note"] == "rotated in the console"
    assert [a["state"] for i, a in got.items() if i != ant["id"]] == ["open"]
    r = cli("verify", root=root)
    assert r.returncode == 0, r.stdout + r.stderr

    # the queue's filters
    tab.goto("/alerts?state=open")
    assert page.locator(TID("alert-row")).evaluate_all("els => els.map(e => e.dataset.state)") == ["open"]
    tab.goto("/alerts?state=resolved")
    assert page.locator(TID("alert-row")).evaluate_all("els => els.map(e => e.dataset.alertId)") == [ant["id"]]
    tab.goto("/alerts?rule=payment-card")
    assert page.locator(TID("alert-row")).count() == 1
    tab.goto("/alerts")
    _shoot(tab, "web-alerts.png", tmp_path, screenshots)


def test_nothing_the_browser_receives_holds_a_secret(tab: Session, web_log: WebLog, chromium: Traced,
                                                   server: Server) -> None:
    ids = {a["rule"]: a["id"] for a in alerts(web_log.root)}
    pages = ["/", f"/chats/{PRIVATE_CHAT}", f"/chats/{GROUP_CHAT}", "/alerts", f"/alerts/{ids['anthropic-api-key']}",
             f"/alerts/{ids['payment-card']}", "/search?q=key", "/search?q=store+key&mode=bm25", "/search?q=visa"]
    contents = []
    for p in pages:
        resp = tab.goto(p)
        assert resp.status == 200, p
        contents.append(tab.page.content())
        _untouched(tab, tab.page.title())
    # the alert page shows its context: the message with the key, masked
    tab.goto(f"/alerts/{ids['anthropic-api-key']}")
    ctx = tab.page.locator(f'{TID("alert-context")} {TID("message")}')
    assert any("[REDACTED:anthropic-api-key]" in t for t in ctx.all_inner_texts())
    tab.drain()
    bodies = [(u, b.decode("utf-8", "replace")) for u, _, b in tab.bodies]
    assert len(bodies) >= len(pages) * 2  # each page, its script and style at least
    assert any(u.endswith("/static/app.js") for u, _ in bodies)
    for url, text in bodies + [("DOM", c) for c in contents]:
        for secret in (web_log.key, web_log.key[20:60], web_log.card):
            assert secret not in text, f"{url} holds a secret of the log"
    assert any("[REDACTED:anthropic-api-key]" in t for _, t in bodies)
    assert any("[REDACTED:payment-card]" in t for _, t in bodies)
    # the browser's own traffic, from its strace: it did reach the server (the trace works) and nothing else
    net = chromium.net()
    assert net.outside == [] and net.loopback > 0, net
    assert re.search(rf'sin_port=htons\({server.port}\), sin_addr=inet_addr\("127.0.0.1"\)',
                     chromium.trace.read_text(errors="replace"))


def test_the_browser_cannot_post_with_the_cookie_alone(tab: Session, web_log: WebLog) -> None:
    """With the cookie set (the page was opened with its token), a same-origin fetch without X-Eventlog-Token and a
    plain HTML form post are both refused, and nothing is recorded."""
    card = next(a for a in alerts(web_log.root) if a["rule"] == "payment-card")
    tab.goto("/alerts")
    page = tab.page
    status = page.evaluate("""async (id) => {
        const r = await fetch(`/api/alerts/${id}/resolution`, {method: "POST", credentials: "same-origin",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({resolution: "wont_fix", note: "no header"})});
        await r.text();  // read to its end: an unread body never finishes loading, and the drain waits for that
        return r.status; }""", card["id"])
    assert status == 403
    # a form as another page would build it: the browser sends the cookie, no custom header can be added
    tab.drain()
    with page.expect_navigation() as nav:
        page.evaluate("""(id) => {
            const f = document.createElement("form");
            f.method = "POST"; f.action = `/api/alerts/${id}/resolution`;
            for (const [k, v] of [["resolution", "wont_fix"], ["note", "a form"]]) {
                const i = document.createElement("input"); i.name = k; i.value = v; f.appendChild(i); }
            document.body.appendChild(f); HTMLFormElement.prototype.submit.call(f); }""", card["id"])
    resp = nav.value
    assert resp is not None and resp.status == 403
    tab.drain()
    got = {a["id"]: a for a in alerts(web_log.root)}[card["id"]]
    assert got["state"] == "open" and got["resolution"] is None, got
