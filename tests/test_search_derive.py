"""The derived, indexed form of a message (eventlog/search/derive.py) and natural-language question handling: a question
finds a message by its sender's name, its date, its media marker or the message it quotes; stop and question words
do not rank; a word in the text still ranks above the same word only in the meta field; the stored event is unchanged;
the agent tool ranks like `eventlog search` for the same query and scope."""
from __future__ import annotations

from pathlib import Path

import pytest

from eventlog.agent.tool import handle
from eventlog.search import SearchQuery, index, search
from eventlog.search.tokens import query_tokens
from eventlog.store.writer import EventLog

CHAT = "-100777"


def _msg(mid: int, ts: str, name: str, text: str, **extra) -> dict:
    return {"event": "message:received", "channel": "telegram", "chat_id": CHAT, "ts": ts, "direction": "in",
            "message_id": mid, "from": {"id": 1000 + len(name), "name": name}, "text": text, **extra}


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    r = tmp_path / "log"
    evs = [
        _msg(1, "2023-05-08T13:56:00.000Z", "Caroline", "I went to a support group yesterday, it was powerful"),
        _msg(2, "2023-05-08T13:57:00.000Z", "Melanie", "That sounds great! How are the kids doing with school?"),
        _msg(3, "2023-06-20T10:00:00.000Z", "Melanie", "Here is the bowl I made",
             media={"media_type": "photo"}),
        _msg(4, "2023-06-20T10:01:00.000Z", "Caroline", "Wow, I love the colours", reply_to_message_id=3),
        _msg(5, "2023-07-02T09:00:00.000Z", "Melanie", "Tell Caroline the pottery class starts Monday"),
        _msg(6, "2023-07-02T09:05:00.000Z", "Caroline", "Thanks, see you at the pottery class"),
    ]
    EventLog(r, fsync="never").append_many(evs)
    index.update(r, vectors=False)
    return r


def ids(root: Path, q: str, **kw) -> list[int]:
    res = search(root, SearchQuery(q, mode="bm25", chats=(CHAT,), limit=10, **kw), refresh=False)
    return [h.event["message_id"] for h in res.hits if h.event]


def test_question_words_do_not_rank() -> None:
    assert query_tokens("What did Caroline say about the pottery class?") == ["carolin", "potteri", "class"]
    assert query_tokens("что он сказал") == [t for t in query_tokens("что он сказал")]  # only stop words: all kept
    assert query_tokens("the") == ["the"]


def test_sender_date_media_and_reply_are_searchable(root: Path) -> None:
    # none of these words is in the message's text (main indexed the text alone and found nothing or other messages)
    assert ids(root, "Caroline support group")[0] == 1
    assert ids(root, "what did Melanie say on 8 May 2023")[0] == 2  # sender and date only
    assert ids(root, "photo of a bowl")[0] == 3
    assert ids(root, "Caroline bowl")[0] == 4  # the reply carries the text it quotes
    assert 1 in ids(root, "May 2023") and 2 in ids(root, "мая")


def test_a_word_in_the_text_outranks_the_same_word_as_sender(root: Path) -> None:
    # "Caroline" is the sender of 1, 4 and 6 and a word in 5's text: the text match comes first
    assert ids(root, "Caroline")[0] == 5
    # a word only in one message's text: that message first, the sender's other messages after it, never before
    assert ids(root, "Caroline powerful")[0] == 1


def test_the_stored_event_is_unchanged(root: Path) -> None:
    raw = sorted((root / "raw").rglob("*.jsonl"))
    before = [p.read_bytes() for p in raw]
    index.update(root, rebuild=True, vectors=False)
    assert [p.read_bytes() for p in raw] == before
    hit = search(root, SearchQuery("bowl", mode="bm25", chats=(CHAT,)), refresh=False).hits[0]
    assert hit.text == "Here is the bowl I made" and "Melanie" not in hit.text


@pytest.mark.parametrize("mode", [None, "bm25"])
def test_the_agent_tool_ranks_like_eventlog_search(root: Path, mode: str | None) -> None:
    for q in ("Caroline pottery", "what did Melanie make", "support group", "May 2023 kids"):
        args = {"query": q, "limit": 5, **({"mode": mode} if mode else {})}
        out = handle({"tool": "search", "chat": CHAT, "args": args}, root, record=False)
        assert out["ok"], out["text"]
        lib = search(root, SearchQuery(q, chats=(CHAT,), limit=5, **({"mode": mode} if mode else {})))
        assert out["mode_used"] == lib.mode != "text"
        assert out["ids"] == [h.id for h in lib.hits], q


def test_a_relative_date_in_the_question_restricts_the_tool(tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from eventlog.agent.relative import question_period

    r = tmp_path / "log"
    now = datetime.now(timezone.utc)
    old = (now - timedelta(days=40)).strftime("%Y-%m-%dT10:00:00.000Z")
    from eventlog.recall import when

    p = when.period("yesterday", when.zone())  # in the zone the tests run in: noon of that day, as UTC
    new = (p.start + (p.end - p.start) / 2).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    EventLog(r, fsync="never").append_many([_msg(1, old, "Ann", "the plumber comes on Friday"),
                                            _msg(2, new, "Ann", "the plumber was late again")])
    index.update(r, vectors=False)
    name, start, end = question_period("what did Ann say about the plumber yesterday?", when.zone())  # type: ignore[misc]
    assert name == "yesterday" and (start, end) == (p.start, p.end)
    assert question_period("что было вчера", when.zone())[0] == "yesterday"  # type: ignore[index]
    assert question_period("what about the plumber", when.zone()) is None
    out = handle({"tool": "search", "chat": CHAT, "args": {"query": "plumber yesterday", "mode": "bm25"}}, r,
                 record=False)
    assert out["ids"] and len(out["ids"]) == 1 and "the period the question names" in out["text"]
    assert "late again" in out["text"]
    # a period with no hit: everything is searched again, and the header says so
    out = handle({"tool": "search", "chat": CHAT, "args": {"query": "who comes last week", "mode": "bm25"}},
                 r, record=False)
    assert len(out["ids"]) == 1 and "comes on Friday" in out["text"] and "nothing in last-week" in out["text"]
