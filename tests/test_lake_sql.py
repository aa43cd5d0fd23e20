"""`eventlog lake sql`: the same rows as `eventlog sql` on the same root (events, messages, edits, replies, chats),
plus a gateway column; the same formats and exit codes; a chat id two gateways share stays two chats."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lake_support import extensions_dir_fixture, lake_fixture, run_cli  # noqa: F401
from store_support import ev

from eventlog.lake.catalog import parse_catalog
from eventlog.lake.push import push

DAY = "2026-11-02"


def _conversation(chat: str, text: str, title: str) -> list[dict]:
    """An inbound message, the bot's reply, an edit of that reply, an inbound edit: what every view has rows for."""
    chat_obj = {"id": int(chat), "type": "group", "title": title}
    user = {"id": 5, "first_name": "Ada", "username": "ada"}
    return [
        ev(chat=chat, ts=f"{DAY}T10:00:00.000Z", text=text, direction="in", update_type="message", message_id=1,
           **{"from": {"id": 5, "name": "Ada", "username": "ada"}},
           raw={"update_id": 9, "message": {"message_id": 1, "chat": chat_obj, "from": user, "text": text}}),
        {"event": "message:sent", "channel": "telegram", "chat_id": chat, "ts": f"{DAY}T10:00:01.000Z",
         "direction": "out", "method": "sendMessage", "text": f"re: {text}", "message_id": 2,
         "payload": {"chat_id": int(chat), "text": f"re: {text}", "reply_to_message_id": 1},
         "outcome": {"ok": True, "from": {"id": 77, "name": "Bot", "username": "the_bot"}}},
        {"event": "message:sent", "channel": "telegram", "chat_id": chat, "ts": f"{DAY}T10:00:02.000Z",
         "direction": "out", "method": "editMessageText", "text": f"re: {text}!",
         "payload": {"chat_id": int(chat), "message_id": 2, "text": f"re: {text}!"}, "outcome": {"ok": True}},
        ev(chat=chat, ts=f"{DAY}T10:00:03.000Z", text=f"{text} (edited)", direction="in",
           update_type="edited_message", message_id=1,
           raw={"update_id": 10, "edited_message": {"message_id": 1, "chat": chat_obj, "text": f"{text} (edited)"}}),
    ]


def _root(path: Path, chat: str, text: str, title: str) -> Path:
    from eventlog.store.seal import seal_closed
    from eventlog.store.writer import EventLog
    from datetime import date

    log = EventLog(path, fsync="never", autoseal=False)
    log.append_many(_conversation(chat, text, title))
    log.append(ev(chat="9", ts="2026-11-03T08:00:00.000Z", text="another chat, another day"))
    seal_closed(log, through=date(2026, 11, 3))
    return path


@pytest.fixture
def two(tmp_path: Path, lake: tuple[str, str]) -> tuple[Path, Path, tuple[str, str]]:
    a = _root(tmp_path / "a", "-100", "hello from a", "Group A")
    b = _root(tmp_path / "b", "-100", "hello from b", "Group B")  # the same chat id on another gateway
    push(a, parse_catalog(lake[0]), lake[1] + "/", "alpha")
    push(b, parse_catalog(lake[0]), lake[1] + "/", "beta")
    return a, b, lake


def _local(root: Path, sql: str, fmt: str = "json") -> list[str]:
    r = run_cli("sql", sql, "--format", fmt, "--root", str(root))
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()


def _lake(lake: tuple[str, str], sql: str, fmt: str = "json", code: int = 0):
    r = run_cli("lake", "sql", sql, "--catalog", lake[0], "--data", lake[1], "--format", fmt)
    assert r.exit_code == code, r.output
    return r


@pytest.mark.parametrize("view, order", [("events", "id"), ("messages", "id"), ("edits", "id"),
                                         ("replies", "id"), ("chats", "chat_id")])
def test_each_view_gives_the_rows_eventlog_sql_gives(two, view, order):
    a, b, lake = two
    for root, gw in ((a, "alpha"), (b, "beta")):
        local = _local(root, f"SELECT * FROM {view} ORDER BY {order}")
        got = _lake(lake, f"SELECT * EXCLUDE (gateway) FROM {view} WHERE gateway = $g ORDER BY {order}"
                    .replace("$g", f"'{gw}'")).stdout.splitlines()
        assert got == local and local
        csv_local = _local(root, f"SELECT * FROM {view} ORDER BY {order}", "csv")
        csv_lake = _lake(lake, f"SELECT * EXCLUDE (gateway) FROM {view} WHERE gateway = '{gw}' ORDER BY {order}",
                         "csv").stdout.splitlines()
        assert csv_lake == csv_local


def test_a_chat_id_two_gateways_share_stays_two_chats(two):
    _, _, lake = two
    rows = [json.loads(x) for x in _lake(lake, "SELECT gateway, chat_id, title, events FROM chats "
                                               "WHERE chat_id = '-100' ORDER BY gateway").stdout.splitlines()]
    assert rows == [{"gateway": "alpha", "chat_id": "-100", "title": "Group A", "events": 4},
                    {"gateway": "beta", "chat_id": "-100", "title": "Group B", "events": 4}]
    edits = [json.loads(x) for x in _lake(lake, "SELECT gateway, new_text, original_text FROM edits "
                                                "ORDER BY gateway, edited_ts").stdout.splitlines()]
    assert edits == [  # each edit beside its own gateway's original, never the other's
        {"gateway": "alpha", "new_text": "re: hello from a!", "original_text": "re: hello from a"},
        {"gateway": "alpha", "new_text": "hello from a (edited)", "original_text": "hello from a"},
        {"gateway": "beta", "new_text": "re: hello from b!", "original_text": "re: hello from b"},
        {"gateway": "beta", "new_text": "hello from b (edited)", "original_text": "hello from b"}]


def test_exit_codes_and_refusals_are_eventlog_sql_s(two):
    _, _, lake = two
    assert _lake(lake, "SELECT * FROM messages WHERE false", code=1).stdout == ""
    for sql, says in (("DELETE FROM lake.lines", "read-only"), ("SELEC 1", "syntax"),
                      ("SELECT * FROM read_text('/etc/passwd')", "disabled")):
        r = _lake(lake, sql, code=2)
        assert r.stderr.count("\n") == 1 and says in r.stderr.lower(), r.stderr
    r = _lake(lake, "SELECT count(*) AS n FROM lake.lines")  # the tables are there to query too
    assert json.loads(r.stdout) == {"n": 10}
    r = run_cli("lake", "sql", "SELECT 1", "-p", "x", "1", "--catalog", lake[0], "--data", lake[1], "--json")
    assert r.exit_code == 0


def test_a_lake_nothing_was_pushed_to_is_one_line(tmp_path, lake):
    r = run_cli("lake", "sql", "SELECT 1", "--catalog", lake[0], "--data", lake[1])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "nothing was pushed" in r.stderr
    assert not Path(lake[0][len("sqlite:"):]).exists()  # reading made no catalog
