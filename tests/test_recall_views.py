"""The `chats`, `messages` (reply links, edits) and `edits` views, erased content fields, and `eventlog export`."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.recall.compact import compact
from eventlog.store.writer import EventLog

from test_compact import age_tree


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def sql(root, q: str) -> list[dict]:
    r = run("sql", q, "--json", "--root", str(root))
    assert r.exit_code in (0, 1), r.output
    return [orjson.loads(x) for x in r.stdout.splitlines()]


@pytest.fixture(params=["jsonl", "parquet"])
def log(request, tmp_path):
    root = tmp_path / "root"
    w = EventLog(root, fsync="never", autoseal=False)
    chat = {"id": -100, "type": "supergroup", "title": "Ops"}
    w.append({"event": "message:received", "channel": "telegram", "chat_id": "-100", "direction": "in",
              "message_id": 5, "update_type": "message", "text": "deploy?", "ts": "2026-10-01T10:00:00.000Z",
              "from": {"id": 1, "username": "ann"}, "raw": {"update_id": 1, "message": {"message_id": 5, "chat": chat}}})
    w.append({"event": "message:sent", "channel": "telegram", "chat_id": "-100", "direction": "out", "message_id": 6,
              "method": "sendMessage", "text": "done", "ts": "2026-10-01T10:00:01.000Z",
              "payload": {"chat_id": -100, "text": "done", "reply_parameters": {"message_id": 5}}})
    w.append({"event": "message:sent", "channel": "telegram", "chat_id": "-100", "direction": "out", "message_id": 6,
              "method": "editMessageText", "text": "done ✅", "ts": "2026-10-01T10:00:02.000Z",
              "payload": {"chat_id": -100, "message_id": 6, "text": "done ✅"}})
    w.append({"event": "message:received", "channel": "telegram", "chat_id": "-100", "direction": "in",
              "message_id": 7, "update_type": "message", "ts": "2026-10-01T10:00:03.000Z",
              "text": {"c": "0" * 64}, "from": {"c": "1" * 64}, "raw": {"c": "2" * 64}})  # erased (format v2)
    if request.param == "parquet":
        age_tree(root)
        compact(root)
    return root


def test_messages_reply_links_and_edits(log):
    rows = sql(log, "SELECT message_id, text, reply_to_message_id, is_edit, edits_message_id FROM messages ORDER BY ts")
    assert rows == [
        {"message_id": 5, "text": "deploy?", "reply_to_message_id": None, "is_edit": False, "edits_message_id": None},
        {"message_id": 6, "text": "done", "reply_to_message_id": 5, "is_edit": False, "edits_message_id": None},
        {"message_id": 6, "text": "done ✅", "reply_to_message_id": None, "is_edit": True, "edits_message_id": 6},
        {"message_id": 7, "text": None, "reply_to_message_id": None, "is_edit": False, "edits_message_id": None}]
    assert sql(log, "SELECT message_id, original_text, new_text, version FROM edits") == [
        {"message_id": 6, "original_text": "done", "new_text": "done ✅", "version": 1}]


def test_chats_view(log):
    assert sql(log, "SELECT chat_id, type, title, received, sent, events FROM chats") == [
        {"chat_id": "-100", "type": "supergroup", "title": "Ops", "received": 2, "sent": 2, "events": 4}]


def test_export_formats(log, tmp_path):
    for fmt in ("jsonl", "csv", "parquet", "md"):
        out = tmp_path / f"chat.{fmt}"
        r = run("export", "--chat", "-100", "--format", fmt, "-o", str(out), "--root", str(log))
        assert r.exit_code == 0, r.output
        assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert len((tmp_path / "chat.jsonl").read_text().splitlines()) == 4
    md = (tmp_path / "chat.md").read_text()
    assert "ann (in): deploy?" in md and "(edit): done ✅" in md
    r = run("export", "--chat", "-100", "-o", str(log / "raw" / "x.jsonl"), "--root", str(log))
    assert r.exit_code == 2 and "inside the log root" in r.stderr
    r = run("export", "--chat", "-100", "--since", "2026-11", "-o", str(tmp_path / "empty.jsonl"), "--root", str(log))
    assert r.exit_code == 1


def test_no_view_uses_the_json_arrow_operator(log):
    """DuckDB 1.5 parses `->>` looser than AND/OR/NOT: `NOT json_valid(body) OR body->>'id' IS NULL` became
    `(NOT json_valid(body) OR body) ->> …` (a cast of every line to BOOL: `eventlog sql` failed on any log). The SQL
    the package writes spells json_extract_string instead: the views as --explain prints them, and every string
    literal in eventlog/ that is not a docstring."""
    import io
    import tokenize
    from pathlib import Path

    explain = run("sql", "SELECT 1", "--explain", "--root", str(log)).stdout
    assert "CREATE VIEW messages" in explain and "->>" not in explain
    for path in Path(__file__).resolve().parents[1].joinpath("eventlog").rglob("*.py"):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type == tokenize.STRING and "->>" in tok.string and not tok.string.startswith(('"""', "'''")):
                raise AssertionError(f"{path}:{tok.start[0]}: `->>` in SQL")
    # the extracted fields still come out: a sender id, a reply link (outbound, from the payload)
    assert sql(log, "SELECT count(*) AS n FROM messages WHERE sender_id = 1 OR reply_to_message_id = 5")[0]["n"] == 2


def test_every_view_runs_in_a_small_memory_limit(tmp_path):
    """`messages` once spelled the inbound message object (a coalesce of four `raw->…` steps) inside each of its
    media-type tests and forward-origin steps: DuckDB then held ~600 MB for any query that computed `media_type`, on
    any log, and `SELECT * FROM messages ORDER BY ts LIMIT 2000` failed the default 400 MB limit on 52,000 events
    (2,000 here failed at 250 MB). Now the object is one column, computed once a row; every view runs in 150 MB."""
    root = tmp_path / "root"
    w = EventLog(root, fsync="never", autoseal=False)
    events = []
    for i in range(2000):
        chat = str(-1000 - i % 20)
        ts = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:{i % 60:02d}.000Z"
        if i % 3:
            msg = {"message_id": i, "chat": {"id": int(chat), "type": "supergroup", "title": f"chat {chat}"},
                   "text": f"message {i} " + "words " * 40, "from": {"id": 7, "first_name": "Ann"}}
            if i % 7 == 0:
                msg["photo"] = [{"file_id": "x", "width": 90, "height": 90}]
            events.append({"event": "message:received", "channel": "telegram", "chat_id": chat, "direction": "in",
                           "message_id": i, "update_type": "message", "text": msg["text"], "ts": ts,
                           "from": {"id": 7, "name": "Ann"}, "raw": {"update_id": i, "message": msg}})
        else:
            events.append({"event": "message:sent", "channel": "telegram", "chat_id": chat, "direction": "out",
                           "message_id": i, "method": "sendMessage", "text": f"reply {i}", "ts": ts,
                           "payload": {"chat_id": int(chat), "text": f"reply {i}"},
                           "outcome": {"ok": True, "from": {"id": 9, "name": "Bot"}}})
    w.append_many(events)
    for view in ("events", "messages", "edits", "replies", "chats"):
        r = run("sql", f"SELECT * FROM {view} ORDER BY ALL LIMIT 5", "--memory-limit", "150MB", "--json",
                "--root", str(root))
        assert r.exit_code == (1 if view == "edits" else 0) and not r.stderr, (view, r.output)  # no edits: exit 1
    assert sql(root, "SELECT count(*) AS n, count(media_type) AS media FROM messages") == [{"n": 2000, "media": sum(1 for i in range(2000) if i % 3 and i % 7 == 0)}]


# The edits view as it was defined before it became one scan (a join of `messages` to itself): the oracle below.
_EDITS_BY_JOIN = """SELECT e.channel, e.chat_id, e.account, e.edits_message_id AS message_id, e.ts AS edited_ts,
  e.direction, coalesce(e.method, e.update_type) AS via, e.text AS new_text, o.ts AS original_ts,
  o.text AS original_text,
  row_number() OVER (PARTITION BY e.channel, e.chat_id, e.account, e.edits_message_id ORDER BY e.ts, e.id) AS version,
  e.id
FROM messages e LEFT JOIN messages o ON o.channel = e.channel AND o.chat_id = e.chat_id AND o.account = e.account
  AND o.message_id = e.edits_message_id AND NOT o.is_edit
WHERE e.is_edit
UNION ALL
SELECT channel, chat_id, account, message_id, edited_ts, direction, source AS via, text AS new_text,
  ts AS original_ts, CAST(NULL AS VARCHAR) AS original_text, CAST(1 AS BIGINT) AS version, id
FROM messages WHERE NOT is_edit AND edited_ts IS NOT NULL"""


def test_edits_in_one_scan_equal_the_self_join(tmp_path):
    """Live inbound and outbound edits (several per message, same message ids in two chats and two accounts), an edit
    whose original is not in the log, an edit naming no message, imported edited messages, media without text: the
    one-scan view gives exactly the rows of the join it replaced."""
    import random

    from eventlog.recall.query import connect, scope_from

    rnd = random.Random(7)
    events = []
    t = 0

    def ts() -> str:
        nonlocal t
        t += rnd.randint(1, 400)
        return f"2026-10-{1 + t // 86400:02d}T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}.000Z"

    for chat in ("-100", "-200"):
        for account in (None, "second"):
            base = {"channel": "telegram", "chat_id": chat, **({"account": account} if account else {})}
            for mid in range(1, 30):
                stamp = ts()
                if mid % 5 == 0:  # an imported message, edited after it was sent (the export's edited time)
                    events.append({**base, "event": "message:received", "direction": "in", "message_id": mid,
                                   "text": f"imported {mid}", "ts": stamp, "source": "import:telegram-desktop",
                                   "edited_ts": ts()})
                    continue
                out = mid % 2 == 0
                if mid % 7 != 0:  # mid % 7 == 0: the original is not in the log
                    if out:
                        events.append({**base, "event": "message:sent", "direction": "out", "message_id": mid,
                                       "method": "sendMessage", "text": f"said {mid}", "ts": stamp,
                                       "payload": {"chat_id": int(chat), "text": f"said {mid}"}})
                    else:
                        events.append({**base, "event": "message:received", "direction": "in", "message_id": mid,
                                       "update_type": "message", "ts": stamp, "from": {"id": 3, "name": "Ann"},
                                       **({} if mid % 3 == 0 else {"text": f"asked {mid}"}),  # a photo: no text
                                       "raw": {"update_id": mid, "message": {"message_id": mid}}})
                for v in range(rnd.randint(0, 3)):
                    if out:
                        events.append({**base, "event": "message:sent", "direction": "out", "message_id": mid,
                                       "method": "editMessageText", "text": f"said {mid} v{v}", "ts": ts(),
                                       "payload": {"chat_id": int(chat), "message_id": mid, "text": f"said {mid} v{v}"}})
                    else:
                        events.append({**base, "event": "message:received", "direction": "in", "message_id": mid,
                                       "update_type": "edited_message", "text": f"asked {mid} v{v}", "ts": ts(),
                                       "raw": {"update_id": 1000 + mid, "edited_message": {"message_id": mid}}})
            events.append({**base, "event": "message:sent", "direction": "out", "method": "sendMessage",
                           "text": "failed: no message id", "ts": ts(), "payload": {"chat_id": int(chat)},
                           "outcome": {"ok": False, "error_code": 400}})
            events.append({**base, "event": "message:sent", "direction": "out", "method": "editMessageCaption",
                           "text": "no message named", "ts": ts(), "payload": {"chat_id": int(chat)}})
    # an edit logged with a time before its original's (a skewed clock): the original is still the original
    events.append({"channel": "telegram", "chat_id": "-100", "event": "message:received", "direction": "in",
                   "message_id": 1, "update_type": "edited_message", "text": "asked 1, early", "ts": "2026-09-30T23:00:00.000Z",
                   "raw": {"update_id": 999, "edited_message": {"message_id": 1}}})
    root = tmp_path / "root"
    EventLog(root, fsync="never", autoseal=False).append_many(events)
    con, _ = connect(scope_from(root, None, None, None))
    want = con.execute(f"SELECT * FROM ({_EDITS_BY_JOIN}) ORDER BY ALL").fetchall()
    got = con.execute("SELECT * FROM edits ORDER BY ALL").fetchall()
    assert len(want) > 60 and any(r[9] is None and r[10] > 1 for r in want)  # the cases are there
    assert got == want
