"""The timeline's keyset paging (eventlog/web/timeline.py): pages walk the whole chat both ways with nothing lost or
repeated (ties on ts broken by id), a page binds only the day files it needs (counted, not timed), and a streamed
reply that crosses midnight folds on the older page."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import re

import pytest
from starlette.testclient import TestClient

from eventlog.store.writer import EventLog
from eventlog.web.app import create_app
from eventlog.web.redact import Redactor
from eventlog.web.timeline import page

CHAT = "-1009876543210"
DAYS, PER_DAY = 30, 20
START = datetime(2026, 10, 1, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.fixture(scope="module")
def chat(tmp_path_factory) -> tuple[Path, list[int]]:
    root = tmp_path_factory.mktemp("paging") / "root"
    root.mkdir(mode=0o700)
    evs, mids = [], []
    mid = 0
    for d in range(DAYS):
        for i in range(PER_DAY):
            mid += 1
            # every fifth message shares its ts with the one before: the id breaks the tie
            t = START + timedelta(days=d, hours=1, minutes=i - (i % 5 == 4))
            evs.append({"event": "message:received", "channel": "telegram", "chat_id": CHAT, "direction": "in",
                        "message_id": mid, "update_type": "message", "text": f"m{mid}", "ts": _iso(t)})
            mids.append(mid)
    # a reply streamed across midnight at the end of day 10: sent 23:59:59, its final edit on day 11
    mid += 1
    sent = START + timedelta(days=10, hours=23, minutes=59, seconds=59)
    evs.append({"event": "message:sent", "channel": "telegram", "chat_id": CHAT, "direction": "out",
                "message_id": mid, "method": "sendMessage", "text": "stream 1", "ts": _iso(sent),
                "payload": {"chat_id": int(CHAT), "text": "stream 1"}})
    evs.append({"event": "message:sent", "channel": "telegram", "chat_id": CHAT, "direction": "out",
                "message_id": mid, "method": "editMessageText", "text": "stream 1 2 3",
                "ts": _iso(sent + timedelta(seconds=3)), "payload": {"chat_id": int(CHAT), "message_id": mid}})
    mids.insert(11 * PER_DAY, mid)
    evs.sort(key=lambda e: e["ts"])
    EventLog(root, fsync="never", autoseal=False).append_many(evs)
    return root, mids


def test_pages_walk_the_whole_chat_both_ways(chat) -> None:
    root, mids = chat
    red = Redactor(root).text
    seen: list[int] = []
    p = page(root, CHAT, limit=47, redact=red)
    pages = 1
    assert p.newer is None
    while True:
        seen = [m["message_id"] for m in p.messages] + seen
        assert len(p.messages) <= 47
        if p.older is None:
            break
        p = page(root, CHAT, before=p.older, limit=47, redact=red)
        pages += 1
    assert seen == mids and pages == -(-len(mids) // 47)
    # and forward again from the start
    forward: list[int] = []
    p = page(root, CHAT, after=f"{_iso(START - timedelta(days=1))}~0", limit=47, redact=red)
    while True:
        forward += [m["message_id"] for m in p.messages]
        if p.newer is None:
            break
        p = page(root, CHAT, after=p.newer, limit=47, redact=red)
    assert forward == mids


def test_a_page_binds_only_the_days_it_needs(chat) -> None:
    root, _ = chat
    red = Redactor(root).text
    p = page(root, CHAT, limit=50, redact=red)
    # 50 messages at 20 a day: the newest three days (and the day after the last, for edits: none here)
    assert p.files == 3 and p.days == ["2026-10-28", "2026-10-29", "2026-10-30"]
    # the cursor's day has 8 messages before it: not enough for 10, so the day before joins (and the day after)
    mid = page(root, CHAT, before=p.older, limit=10, redact=red)
    assert mid.days == ["2026-10-27", "2026-10-28"] and mid.files == 3
    big = page(root, CHAT, limit=500, redact=red)
    # 501 lines wanted (one more than the page, to know an older page exists): 25 days hold 502 (10-11 has the stream)
    assert len(big.messages) == 500 and big.files == 25


def test_a_stream_across_midnight_folds_on_its_page(chat) -> None:
    root, _ = chat
    red = Redactor(root).text
    cursor = f"{_iso(START + timedelta(days=11, hours=1))}~0"  # 10-12 01:00, before that day's first message
    p = page(root, CHAT, before=cursor, limit=5, redact=red)
    last = p.messages[-1]
    assert last["direction"] == "out" and last["text"] == "stream 1 2 3" and last["edited"]
    assert [v["text"] for v in last["versions"]] == ["stream 1"]
    # the cursor's day holds nothing before it, so 10-11 joins; 10-13 is bound for edits of 10-12's last messages
    assert p.days == ["2026-10-11", "2026-10-12"] and p.files == 3


def test_the_page_and_its_links(chat) -> None:
    root, mids = chat
    app = create_app(root, token="tok-paging-0123456789abcdefghijklmnopqrstuv", status_on_start=False)
    h = {"Authorization": "Bearer tok-paging-0123456789abcdefghijklmnopqrstuv"}
    with TestClient(app) as client:
        html = client.get(f"/chats/{CHAT}", headers=h, params={"limit": "30"}).text
        assert html.count('data-testid="message"') == 30
        assert 'data-testid="older"' in html and 'data-testid="newer"' not in html
        older = client.get(f"/api/chats/{CHAT}/messages", headers=h, params={"limit": "30"}).json()["older"]
        html = client.get(f"/chats/{CHAT}", headers=h, params={"limit": "30", "before": older}).text
        assert 'data-testid="older"' in html and 'data-testid="newer"' in html
        assert re.search(r'data-testid="older" href="\?limit=30&amp;before=', html)  # the link keeps the limit
        assert client.get(f"/api/chats/{CHAT}/messages", headers=h,
                          params={"before": older, "after": older}).status_code == 400
        # limit is capped, never "the whole chat"
        assert len(client.get(f"/api/chats/{CHAT}/messages", headers=h,
                              params={"limit": "100000"}).json()["messages"]) == 500
        assert client.get(f"/api/chats/{CHAT}/messages", headers=h, params={"limit": "x"}).status_code == 400
