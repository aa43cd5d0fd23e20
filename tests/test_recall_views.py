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
